/**
 * Which database failures mean "the store cannot answer right now" (busy, locked, disk full,
 * connection lost) as opposed to a bug. Those become 503 service_unavailable with retry_after:
 * the same request may succeed later. Recognized by the drivers' error codes, so nothing outside
 * store/ needs to know a driver.
 */
import { QuarryError, type ErrorExtras } from '../errors.js';

const SQLITE_TRANSIENT = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|READONLY|PROTOCOL|NOMEM)/;
/**
 * PostgreSQL SQLSTATE classes and codes: connection (08, but not 08P01: a protocol violation is
 * a statement the server refused, such as one with too many parameters, and fails again the same
 * way), resources (53), operator intervention (57P), serialization (40001, 40P01).
 */
const POSTGRES_TRANSIENT = /^(08(?!P01)|53|57P)|^(40001|40P01)$/;
const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND']);
/** The data dir cannot take more (disk full, quota) or no writes at all: uploads and SQLite files alike. */
const FILE_SYSTEM = new Set(['ENOSPC', 'EDQUOT', 'EROFS']);

export function isStoreUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as Error & { code?: unknown }).code;
  if (typeof code === 'string' && (SQLITE_TRANSIENT.test(code) || POSTGRES_TRANSIENT.test(code) || NETWORK.has(code) || FILE_SYSTEM.has(code))) return true;
  // A closed pool or database (shutdown in progress, or the connection is gone).
  return /driver has already been destroyed|database connection is not open|Connection terminated|Cannot use a pool after calling end/i.test(err.message);
}

/**
 * `read`'s answer, or 503 `service_unavailable` once `ms` pass without one: a read that hangs (a
 * stalled connection, a lock that is never released) must not hold what waits on it for ever.
 * The read is left to settle on its own; nothing waits on it any more. `extras` go on the error
 * (an HTTP answer's `retry_after`).
 */
export function readWithin<T>(read: Promise<T>, ms: number, extras: ErrorExtras = {}): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new QuarryError('service_unavailable', `The store did not answer within ${ms} ms.`, extras)), ms);
    read.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
