/**
 * The SQLite store: one process, one database file (sqlite-connection.ts), transactions that
 * queue up committed together (group-commit.ts), the hottest reads on a read-only connection
 * (sqlite-reads.ts), and a cluster link with no one else to talk to (sqlite-link.ts).
 */
import { DIALECT_PROFILES } from '../sql/dialect-profile.js';
import { SqlStore } from '../sql/sql-store.js';
import type { Store } from '../store.js';
import { openSqliteConnections } from './sqlite-connection.js';
import { SQLITE_LINK } from './sqlite-link.js';
import { SqliteReads, SqliteRows, SqliteTasks } from './sqlite-reads.js';

/** The SQLite database's file name in the data dir. */
export const SQLITE_FILE = 'quarry.db';

/** Opens (creating if needed) the SQLite database in `dataDir`. */
export function openSqliteStore(dataDir: string): Store {
  const profile = DIALECT_PROFILES.sqlite;
  // Changes are reported once statements run, by then `reads` is set.
  const { db, reader, runInTransaction } = openSqliteConnections(dataDir, SQLITE_FILE, () => reads.forget());
  const reads = new SqliteReads(reader, db, profile);
  return new SqlStore(db, {
    profile,
    link: SQLITE_LINK,
    own: { tasks: new SqliteTasks(reads), rows: new SqliteRows(reads) },
    runInTransaction,
    close: () => reads.close(),
  });
}
