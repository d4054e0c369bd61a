import type { Logger } from 'pino';
import type { Metrics } from '../metrics/metrics.js';
import { RetryPolicy } from '../retry-policy.js';
import { sleep } from '../sleep.js';
import { isStoreUnavailable } from '../store/store-errors.js';
import { LeaseLost } from '../tasks/turn-writes.js';
import { TurnAbort } from './turn-abort.js';

/**
 * Waits between tries of a store write that found the store unavailable (disk full, database
 * restarting): short at first, since most outages are a moment, then up to a few seconds. Drawn
 * at random below that, so that the turns an outage caught together do not all come back at once.
 */
const STORE_RETRIES = new RetryPolicy({ baseMs: 100, capMs: 3000, jitter: 'full' });

/**
 * Runs `write` until it succeeds, trying again while the store is unavailable (isStoreUnavailable)
 * after STORE_RETRIES' wait, until `signal` aborts: then it throws the signal's reason. Any other
 * failure is thrown at once. A turn waits out a short outage this way instead of failing; the
 * signal bounds the wait (the turn's own time limit, a stop, a lost lease, shutdown). Only for
 * writes that are safe to send again: nothing of a failed transaction is stored. A write that
 * finds the turn's lease held by another worker (LeaseLost) throws TurnAbort('lease_lost'), as
 * the lease's heartbeat aborts the turn when it learns the same.
 */
export async function retryWhileStoreUnavailable<T>(
  write: () => Promise<T>,
  signal: AbortSignal,
  log: { logger: Logger; turnId: string; metrics: Pick<Metrics, 'storeUnavailable'> },
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (err instanceof LeaseLost) throw new TurnAbort('lease_lost');
      if (!isStoreUnavailable(err)) throw err;
      log.metrics.storeUnavailable('turns');
      // Said now and then, not at every try.
      if (attempt === 1 || attempt % 20 === 0) log.logger.warn({ err, turn_id: log.turnId, attempt }, 'the store is unavailable: the turn waits and tries again');
      await sleep(STORE_RETRIES.delay(attempt), signal);
    }
  }
}
