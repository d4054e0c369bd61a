import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';
import type { Database } from '../database.js';
import { KyselyStore, type DialectProfile } from '../kysely-store.js';

const SQLITE_PROFILE: DialectProfile = { kind: 'sqlite', rowLocks: false, skipLocked: false, shared: false };

/** Distinct SQL texts are few (one per query shape), so a small cache holds them all. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Hands Kysely prepared statements from a cache: preparing costs more than running most of our
 * queries, and the hot routes run the same few shapes again and again.
 */
function withStatementCache(db: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => db.close(),
    prepare(sql: string): SqliteStatement {
      let stmt = cache.get(sql);
      if (!stmt) {
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.clear();
        stmt = db.prepare(sql) as unknown as SqliteStatement;
        cache.set(sql, stmt);
      }
      return stmt;
    },
  };
}

/**
 * Opens (creating if needed) the SQLite database in `dataDir`. WAL with synchronous=NORMAL: a
 * commit is in the OS before the call returns, so it survives the process being killed; only a
 * power loss can take the last few commits.
 */
export function openSqliteStore(dataDir: string, fileName = 'quarry.db'): KyselyStore {
  fs.mkdirSync(dataDir, { recursive: true });
  const db = new SQLite(path.join(dataDir, fileName));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('cache_size = -65536');
  db.pragma('temp_store = MEMORY');
  return new KyselyStore(new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(db) }) }), SQLITE_PROFILE);
}
