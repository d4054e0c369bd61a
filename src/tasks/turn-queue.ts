/**
 * The store's queue of turns as a worker sees it: claiming ready turns under a lease, renewing
 * the lease of one that runs, handing leases back. The lease rules themselves (who may take a
 * turn, when an expired lease is taken over) are the store's (TurnsRepository).
 */
import type { TurnRecord } from '../domain/records.js';
import type { Store } from '../store/store.js';

export class TurnQueue {
  constructor(private readonly store: Store) {}

  /**
   * Takes up to `limit` ready turns for `workerId`, leased for `leaseSeconds`; with
   * `takeOverExpired`, turns whose worker's lease ran out as well.
   */
  claim(workerId: string, limit: number, leaseSeconds: number, opts: { takeOverExpired: boolean }): Promise<TurnRecord[]> {
    const now = new Date();
    const leaseUntil = new Date(now.getTime() + leaseSeconds * 1000).toISOString();
    return this.store.turns.claim(workerId, limit, now.toISOString(), leaseUntil, opts);
  }

  /** Extends a running turn's lease by `leaseSeconds` from now; false when `workerId` no longer holds it. */
  renewLease(turnId: string, workerId: string, leaseSeconds: number): Promise<boolean> {
    return this.store.turns.renewLease(turnId, workerId, new Date(Date.now() + leaseSeconds * 1000).toISOString());
  }

  /** Hands back the leases of `workerId` (every lease when left out), so the turns are claimed again at once; how many. */
  releaseLeases(workerId?: string): Promise<number> {
    return this.store.turns.releaseLeases(workerId);
  }
}
