/**
 * The connections to the SQLite database file: the one that writes (and reads inside
 * transactions), through Kysely with cached prepared statements, and a read-only one for the
 * hottest reads (sqlite-reads.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, type QueryResult, type SqliteDatabase, type SqliteStatement } from 'kysely';
import type { Database } from '../database.js';
import type { RunInTransaction } from '../sql/sql-repository.js';

/** Distinct SQL texts are few (one per query shape), so a small cache holds them all. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Hands Kysely prepared statements from a cache: preparing costs more than running most of our
 * queries, and the hot routes run the same few shapes again and again. `afterChange` runs when
 * a change has become visible to other connections: after a write outside a transaction, and
 * after a COMMIT (which SQLite counts as read-only). Writes inside a transaction are not visible
 * until then.
 */
function withStatementCache(db: SQLite.Database, afterChange: () => void): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  const settled = () => {
    if (!db.inTransaction) afterChange();
  };
  const watched = (stmt: SQLite.Statement): SqliteStatement => ({
    reader: stmt.reader,
    all: (parameters) => {
      try {
        return stmt.all(parameters);
      } finally {
        settled();
      }
    },
    run: (parameters) => {
      try {
        return stmt.run(parameters);
      } finally {
        settled();
      }
    },
    iterate: (parameters) => stmt.iterate(parameters),
  });
  return {
    close: () => db.close(),
    prepare(sql: string): SqliteStatement {
      let stmt = cache.get(sql);
      if (!stmt) {
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.clear();
        const prepared = db.prepare(sql);
        stmt = prepared.reader && prepared.readonly ? (prepared as unknown as SqliteStatement) : watched(prepared);
        cache.set(sql, stmt);
      }
      return stmt;
    },
  };
}

/**
 * Runs a statement on `db` the way Kysely's SQLite driver does (all rows of a statement that
 * returns rows, else the count of changed rows), without Kysely's executor around it.
 */
export function statementRunner(db: SqliteDatabase): RunInTransaction {
  return <R>(sql: string, parameters: readonly unknown[]): QueryResult<R> => {
    const stmt = db.prepare(sql);
    if (stmt.reader) return { rows: stmt.all(parameters) as R[] };
    const { changes, lastInsertRowid } = stmt.run(parameters);
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
  };
}

/**
 * Opens (creating if needed) `fileName` in `dataDir`. WAL with synchronous=NORMAL: a commit is in
 * the OS before the call returns, so it survives the process being killed; only a power loss can
 * take the last few commits. `afterChange` is told whenever a change may have become visible to
 * the read-only connection. `runInTransaction` runs a statement on the writer straight away: for
 * transactions only, which hold the writer (see RunInTransaction).
 */
export function openSqliteConnections(dataDir: string, fileName: string, afterChange: () => void): { db: Kysely<Database>; reader: SQLite.Database; runInTransaction: RunInTransaction } {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, fileName);
  const writer = new SQLite(file);
  writer.pragma('journal_mode = WAL');
  writer.pragma('synchronous = NORMAL');
  writer.pragma('busy_timeout = 5000');
  writer.pragma('cache_size = -65536');
  writer.pragma('temp_store = MEMORY');
  const reader = new SQLite(file, { readonly: true });
  reader.pragma('busy_timeout = 5000');
  reader.pragma('cache_size = -65536');
  const database = withStatementCache(writer, afterChange);
  return { db: new Kysely<Database>({ dialect: new SqliteDialect({ database }) }), reader, runInTransaction: statementRunner(database) };
}
