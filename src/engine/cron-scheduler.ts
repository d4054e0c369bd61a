/**
 * Fires due cron ticks (TaskService.runDueCronTicks, then GroupService.runDueCronTicks) every `intervalMs`, on one process of a
 * cluster only: the holder of the scheduler lock. If that process dies its lock goes with its
 * connection, and the next process to try takes over.
 */
import type { HeldLock, StoreCluster } from '../store/store.js';
import type { TaskService } from '../tasks/task-service.js';
import type { GroupService } from '../groups/group-service.js';

const CRON_LOCK = 'quarry:cron-scheduler';

export interface CronSchedulerOptions {
  tasks: Pick<TaskService, 'runDueCronTicks'>;
  /** Scheduled groups' ticks, and their runs waiting for a free slot. */
  groups?: Pick<GroupService, 'runDueCronTicks'>;
  /** Where the scheduler lock is taken. */
  locks: Pick<StoreCluster, 'tryLock'>;
  /** How often to look for due ticks; 0 disables the scheduler on this node. */
  intervalMs: number;
  /** A failed tick: the next one tries again. */
  onError: (err: unknown) => void;
}

export class CronScheduler {
  private timer: NodeJS.Timeout | undefined;
  private lock: HeldLock | undefined;
  /** The tick under way, which stop() waits for: it may be taking the lock. */
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly opts: CronSchedulerOptions) {}

  start(): void {
    if (this.opts.intervalMs <= 0) return;
    this.timer = setInterval(() => {
      if (this.running || this.stopped) return;
      this.running = this.tick()
        .catch(this.opts.onError)
        .finally(() => {
          this.running = undefined;
        });
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (!this.lock?.held) this.lock = (await this.opts.locks.tryLock(CRON_LOCK)) ?? undefined;
    if (!this.lock?.held || this.stopped) return;
    await this.opts.tasks.runDueCronTicks();
    await this.opts.groups?.runDueCronTicks();
  }

  /** No more ticks; waits for the one under way, then lets go of the lock for another process to take. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
    await this.lock?.release();
  }
}
