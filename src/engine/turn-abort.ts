/** Why a running turn's work was abandoned. */
export type AbortReason = 'stopped' | 'shutdown' | 'lease_lost' | 'timeout';

/** The reason a turn's signal aborts with, and what its port throws when TurnWrites says the turn no longer runs. */
export class TurnAbort extends Error {
  constructor(readonly reason: AbortReason) {
    super(`turn aborted: ${reason}`);
    this.name = 'AbortError';
  }
}
