/**
 * Whether a new turn may start: the account has credits (else out_of_credits) and the queue of
 * pending turns is below QUARRY_MAX_PENDING_TURNS (else at_capacity). Both are checked in the
 * transaction that would make the turn pending.
 */
import { requireCredits } from '../accounts/accounts.js';
import type { Config } from '../config.js';
import { QuarryError } from '../errors.js';
import type { Repositories } from '../store/store.js';

const PENDING_RECOUNT_MS = 1000;

export class Admission {
  private pendingCount = { value: 0, at: 0 };

  constructor(private readonly config: Pick<Config, 'platformUrl' | 'maxPendingTurns'>) {}

  async requireCredits(tx: Repositories, accountId: string, extras: { task_id?: string; task_created?: false }): Promise<void> {
    await requireCredits(tx, accountId, { platformUrl: this.config.platformUrl, notStarted: 'turn', extras });
  }

  /**
   * Counting pending turns costs a scan that grows with the backlog, so the count is taken at most
   * every PENDING_RECOUNT_MS and kept in between by adding the turns made pending here. Turns
   * claimed meanwhile make that estimate high, and it is checked against an exact count before
   * anything is refused; queued messages promoted to pending, and turns made by other
   * processes, make it low, so the limit can be passed by what arrives within one recount
   * interval.
   */
  async requireCapacity(tx: Repositories): Promise<void> {
    const now = Date.now();
    const stale = now - this.pendingCount.at >= PENDING_RECOUNT_MS;
    if (stale || this.pendingCount.value >= this.config.maxPendingTurns) this.pendingCount = { value: await tx.turns.countPending(), at: now };
    if (this.pendingCount.value >= this.config.maxPendingTurns) {
      throw new QuarryError('at_capacity', 'Too many turns are waiting to run: wait retry_after seconds, then resend.', { retry_after: 5 });
    }
    this.pendingCount.value++;
  }
}
