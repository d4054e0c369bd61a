/**
 * One database transaction around `fn`, committed when it resolves and rolled back when it (or
 * the COMMIT) fails, rejecting with the error that made it fail. Kysely's own `transaction()`
 * rejects with the ROLLBACK's error when the ROLLBACK fails too, and SQLite makes it fail
 * exactly when the cause matters: a COMMIT that finds the disk full (SQLITE_FULL) or an I/O error
 * rolls the transaction back itself, the ROLLBACK then answers "cannot rollback - no transaction
 * is active", and a 503 (the store is unavailable) would turn into a 500.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../database.js';

export async function runTransaction<T>(db: Kysely<Database>, fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  const trx = await db.startTransaction().execute();
  try {
    const result = await fn(trx);
    await trx.commit().execute();
    return result;
  } catch (err) {
    // The ROLLBACK releases the connection even when it fails; its own failure (no transaction
    // left to roll back, or the connection is gone) says nothing the first error does not.
    await trx.rollback().execute().catch(() => {});
    throw err;
  }
}
