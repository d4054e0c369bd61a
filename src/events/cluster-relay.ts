/**
 * Joins the processes that share one database. Events stored by another process are announced
 * on EVENTS_CHANNEL; the relay reads them from the store and hands them to this process's event
 * bus, but only for tasks someone here is listening to. Control messages (wake, cancel, key
 * revoked) go to the handler given. When the database restarts, the notices sent while this
 * process was not listening are lost: once it listens again, the relay reads the recent events of
 * every task listened to here from the store (listeners skip what they already have, by seq).
 */
import type { Logger } from 'pino';
import type { EventRecord, Store } from '../store/store.js';
import type { EventBus } from './event-bus.js';
import { CONTROL_CHANNEL, EVENTS_CHANNEL, parseControl, parseEventsNotice, type ControlMessage } from './cluster-messages.js';

const MAX_EVENTS_PER_NOTICE = 1000;

export interface ClusterRelayOptions {
  store: Store;
  bus: EventBus;
  /** This process's id: its own notices are skipped (its bus already has those events). */
  origin: string;
  logger: Logger;
  onControl: (message: ControlMessage) => void;
  /** Listen for other processes' events (false: control messages only). */
  relayEvents?: boolean;
}

export class ClusterRelay {
  private readonly stops: (() => Promise<void>)[] = [];
  /** Per task, the fetches in flight, chained so events reach the bus in order. */
  private readonly chains = new Map<string, Promise<void>>();
  /** Per task listened to here, the last seq relayed: where a catch-up after lost notices starts. */
  private readonly relayed = new Map<string, number>();

  constructor(private readonly opts: ClusterRelayOptions) {}

  async start(): Promise<void> {
    const { store } = this.opts;
    if (!store.shared) return;
    if (this.opts.relayEvents !== false) {
      this.stops.push(await store.cluster.listen(EVENTS_CHANNEL, (payload) => this.onEvents(payload)));
      const stopResume = store.cluster.onResume(() => this.catchUp());
      this.stops.push(async () => stopResume());
    }
    this.stops.push(await store.cluster.listen(CONTROL_CHANNEL, (payload) => {
      const message = parseControl(payload);
      if (message) this.opts.onControl(message);
    }));
  }

  private onEvents(payload: string): void {
    const notice = parseEventsNotice(payload);
    if (!notice || notice.origin === this.opts.origin) return;
    if (this.opts.bus.listenerCount(notice.taskId) === 0) {
      this.relayed.delete(notice.taskId);
      return;
    }
    this.relay(notice.taskId, async () => {
      const count = Math.min(MAX_EVENTS_PER_NOTICE, notice.lastSeq - notice.firstSeq + 1);
      return this.opts.store.events.list(notice.taskId, notice.firstSeq - 1, count);
    });
  }

  /**
   * Listening again after the connection was lost: the events stored meanwhile were announced to
   * no one here. For each stream listened to (a task's or a group's), reads on from the last seq
   * relayed, or (one that had no notice yet) its latest events.
   */
  private catchUp(): void {
    const listened = new Set(this.opts.bus.listenedTasks());
    for (const taskId of this.relayed.keys()) if (!listened.has(taskId)) this.relayed.delete(taskId);
    for (const taskId of listened) {
      this.relay(taskId, async () => {
        const known = this.relayed.get(taskId);
        if (known !== undefined) return this.opts.store.events.list(taskId, known, MAX_EVENTS_PER_NOTICE);
        return this.opts.store.events.last(taskId, MAX_EVENTS_PER_NOTICE);
      });
    }
  }

  /** Reads a task's events and hands them to the bus, after the reads for that task before it (so they arrive in order). */
  private relay(taskId: string, read: () => Promise<EventRecord[]>): void {
    const previous = this.chains.get(taskId) ?? Promise.resolve();
    const next = previous
      .then(async () => {
        const events = await read();
        const last = events.at(-1);
        if (last && last.seq > (this.relayed.get(taskId) ?? 0)) this.relayed.set(taskId, last.seq);
        this.opts.bus.publish(events);
      })
      .catch((err) => this.opts.logger.warn({ err, task_id: taskId }, 'relaying events failed'))
      .finally(() => {
        if (this.chains.get(taskId) === next) this.chains.delete(taskId);
      });
    this.chains.set(taskId, next);
  }

  async stop(): Promise<void> {
    await Promise.all(this.stops.splice(0).map((stop) => stop()));
    await Promise.allSettled([...this.chains.values()]);
  }
}
