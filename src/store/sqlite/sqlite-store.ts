import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';
import type { Database } from '../database.js';
import { KyselyStore, toTaskState, type DialectProfile, type StateRow } from '../kysely-store.js';
import type { TaskStateRecord } from '../store.js';

const SQLITE_PROFILE: DialectProfile = { kind: 'sqlite', rowLocks: false, skipLocked: false, shared: false, groupCommit: true };

/** Distinct SQL texts are few (one per query shape), so a small cache holds them all. */
const STATEMENT_CACHE_SIZE = 500;

/** How many /state rows are kept between writes. */
const STATE_CACHE_SIZE = 10_000;

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
 * Writes (and every read inside a transaction) go through Kysely on one connection. The two
 * hottest reads, the /state poll and output pages, run synchronously on a second, read-only
 * connection instead: WAL gives it the last committed snapshot, so it neither waits behind a
 * transaction in progress nor sees one's uncommitted writes, and it skips Kysely's per-query
 * promises.
 *
 * /state rows are also kept in memory until the next change: this process is the only writer of
 * an embedded database, and every commit (and every write outside a transaction) empties the
 * cache, so a cached row is never older than the last commit. Between commits, polls cost no
 * query at all.
 */
class SqliteStore extends KyselyStore {
  private statements: { state: SQLite.Statement; rows: SQLite.Statement } | undefined;
  private readonly stateRows = new Map<string, StateRow | null>();

  constructor(root: Kysely<Database>, private readonly reader: SQLite.Database) {
    super(root, SQLITE_PROFILE);
  }

  /** Called whenever a change may have become visible to the read connection. */
  forgetReads(): void {
    if (this.stateRows.size > 0) this.stateRows.clear();
  }

  /** Prepared on first use: the tables exist only once migrations ran. */
  private readStatements() {
    return (this.statements ??= {
      state: this.reader.prepare(this.stateQuery('').compile().sql),
      rows: this.reader.prepare(this.rowsQuery('', '', 0, 0).compile().sql).pluck(),
    });
  }

  override async getTaskState(id: string): Promise<TaskStateRecord | undefined> {
    let row = this.stateRows.get(id);
    if (row === undefined) {
      row = (this.readStatements().state.get(id) as StateRow | undefined) ?? null;
      if (this.stateRows.size >= STATE_CACHE_SIZE) this.stateRows.clear();
      this.stateRows.set(id, row);
    }
    return row ? toTaskState(row) : undefined;
  }

  override async readRows(taskId: string, outputId: string, offset: number, limit: number): Promise<Buffer[]> {
    return this.readStatements().rows.all(taskId, outputId, offset, offset + limit) as Buffer[];
  }

  override async close(): Promise<void> {
    await super.close();
    this.reader.close();
  }
}

/**
 * Opens (creating if needed) the SQLite database in `dataDir`. WAL with synchronous=NORMAL: a
 * commit is in the OS before the call returns, so it survives the process being killed; only a
 * power loss can take the last few commits.
 */
export function openSqliteStore(dataDir: string, fileName = 'quarry.db'): KyselyStore {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, fileName);
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('cache_size = -65536');
  db.pragma('temp_store = MEMORY');
  const reader = new SQLite(file, { readonly: true });
  reader.pragma('busy_timeout = 5000');
  reader.pragma('cache_size = -65536');
  const store: SqliteStore = new SqliteStore(
    new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(db, () => store.forgetReads()) }) }),
    reader,
  );
  return store;
}
