import type { Logger } from 'pino';
import type { TurnQueue } from '../tasks/turn-queue.js';

/**
 * Renews a running turn's lease every third of its length, so that it outlives a renewal or two
 * that fail (the store briefly unavailable) before it runs out and another worker takes the turn.
 * Calls `onLost` when the lease turns out to be held by another worker. Returns the stop.
 */
export function startLeaseHeartbeat(
  opts: { queue: TurnQueue; turnId: string; workerId: string; leaseSeconds: number; logger: Logger },
  onLost: () => void,
): () => void {
  const { queue, turnId, workerId, leaseSeconds, logger } = opts;
  const heartbeat = setInterval(() => {
    queue.renewLease(turnId, workerId, leaseSeconds).then(
      (held) => { if (!held) onLost(); },
      (err) => logger.warn({ err, turn_id: turnId }, 'lease renewal failed'),
    );
  }, Math.max(200, (leaseSeconds * 1000) / 3));
  return () => clearInterval(heartbeat);
}
