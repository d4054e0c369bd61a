/**
 * Claims work in passes when woken, the way the turn runner claims turns and the webhook
 * dispatcher claims deliveries: the wakes of one event-loop turn share one pass, a pass under
 * way looks at `mayHaveWork` again before it ends, and a pass that ends while work may be
 * waiting starts another once there is room.
 */
export interface ClaimLoopOptions {
  /** Claims what it can; loops while `mayHaveWork`, clearing it before each claim. */
  pass: () => Promise<void>;
  /** Whether a slot is free for more work. */
  hasRoom: () => boolean;
  onError: (err: unknown) => void;
}

export class ClaimLoop {
  /** Something may be claimable that this process has not claimed yet. */
  mayHaveWork = false;
  private queued = false;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly opts: ClaimLoopOptions) {}

  /** Work may have become claimable (a commit, a notice, a poll). Safe to call often. */
  wake(): void {
    this.mayHaveWork = true;
    this.soon();
  }

  /** Runs a pass soon if none is queued or running (a slot was freed: a pass claims only if work may be waiting). */
  soon(): void {
    if (this.stopped || this.queued) return;
    this.queued = true;
    setImmediate(() => {
      this.queued = false;
      if (this.running || this.stopped) return;
      this.running = this.opts.pass()
        .catch(this.opts.onError)
        .finally(() => {
          this.running = undefined;
          if (this.mayHaveWork && this.opts.hasRoom()) this.soon();
        });
    });
  }

  /** No more passes; resolves once the one under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }
}
