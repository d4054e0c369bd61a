/**
 * What differs between the databases, declared in one place: the repositories (sql/) are written
 * once and branch on these flags, never on a driver. Both profiles stand side by side so the
 * differences read at a glance.
 */
export interface DialectProfile {
  kind: 'sqlite' | 'postgres';
  /** `SELECT … FOR UPDATE` exists (PostgreSQL). SQLite serializes every write transaction anyway. */
  rowLocks: boolean;
  /** `FOR UPDATE SKIP LOCKED` exists, so concurrent workers claim different turns without waiting. */
  skipLocked: boolean;
  /** Other processes may use the same database, so notifications and shared locks matter. */
  shared: boolean;
  /**
   * Transactions that queue up behind each other share one commit (group-commit.ts). For a
   * database that writes one transaction at a time anyway; PostgreSQL runs them side by side.
   */
  groupCommit: boolean;
  /**
   * The hidden column that addresses a row where it lies, which a batched delete picks its rows
   * by: neither database deletes with LIMIT, and picking by address needs no key of the table.
   */
  rowAddress: 'rowid' | 'ctid';
  /** The LIKE that ignores case: SQLite's own LIKE does (for ASCII letters); PostgreSQL's ILIKE. */
  caseInsensitiveLike: 'like' | 'ilike';
}

export const DIALECT_PROFILES = {
  sqlite: { kind: 'sqlite', rowLocks: false, skipLocked: false, shared: false, groupCommit: true, rowAddress: 'rowid', caseInsensitiveLike: 'like' },
  postgres: { kind: 'postgres', rowLocks: true, skipLocked: true, shared: true, groupCommit: false, rowAddress: 'ctid', caseInsensitiveLike: 'ilike' },
} as const satisfies Record<DialectProfile['kind'], DialectProfile>;
