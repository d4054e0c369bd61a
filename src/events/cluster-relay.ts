/**
 * Joins the processes that share one database. Events stored by another process are announced
 * on EVENTS_CHANNEL; the relay reads them from the store and hands them to this process's event
 * bus, but only for streams someone here is listening to. Control messages (wake, cancel, key
 * revoked) go to the handler given.
 *
 * A notice is a hint, sent after its commit (postgres/postgres-link.ts): one can be lost (its
 * sender died right after the commit, or this process was not listening while the database
 * restarted). So each read starts after the last event this process published for the stream,
 * which fills any gap before the notice's range, and every few seconds one query compares the
 * last stored seq of every stream listened to here with the last one published, reading on
 * where the store is ahead. Listeners skip what they already have, by seq.
 */
import type { Logger } from 'pino';
import type { EventRecord } from '../domain/records.js';
import type { Store } from '../store/store.js';
import type { EventBus } from './event-bus.js';
import { CONTROL_CHANNEL, EVENTS_CHANNEL, parseControl, parseEventsNotice, type ControlMessage } from './cluster-messages.js';

const MAX_EVENTS_PER_NOTICE = 1000;
/** How often the streams listened to here are compared with the store. */
const SWEEP_INTERVAL_MS = 5000;

export interface ClusterRelayOptions {
  store: Store;
  bus: EventBus;
  /** This process's id: its own notices are skipped (its bus already has those events). */
  origin: string;
  logger: Logger;
  onControl: (message: ControlMessage) => void;
  /** Listen for other processes' events (false: control messages only). */
  relayEvents?: boolean;
  /** How often the streams listened to here are compared with the store (default 5 s). */
  sweepIntervalMs?: number;
}

export class ClusterRelay {
  private readonly stops: (() => Promise<void>)[] = [];
  /** Per stream, the reads in flight, chained so events reach the bus in order. */
  private readonly chains = new Map<string, Promise<void>>();
  private sweeping = false;

  constructor(private readonly opts: ClusterRelayOptions) {}

  async start(): Promise<void> {
    const { store } = this.opts;
    if (!store.shared) return;
    if (this.opts.relayEvents !== false) {
      this.stops.push(await store.cluster.listen(EVENTS_CHANNEL, (payload) => this.onEvents(payload)));
      const stopResume = store.cluster.onResume(() => this.readOn(this.opts.bus.listenedTasks()));
      const sweep = setInterval(() => void this.sweep(), this.opts.sweepIntervalMs ?? SWEEP_INTERVAL_MS);
      sweep.unref();
      this.stops.push(async () => {
        stopResume();
        clearInterval(sweep);
      });
    }
    this.stops.push(await store.cluster.listen(CONTROL_CHANNEL, (payload) => {
      const message = parseControl(payload);
      if (message) this.opts.onControl(message);
    }));
  }

  private onEvents(payload: string): void {
    const notice = parseEventsNotice(payload);
    if (!notice || notice.origin === this.opts.origin) return;
    const { bus, store } = this.opts;
    if (bus.listenerCount(notice.taskId) === 0) return;
    this.relay(notice.taskId, async () => {
      // From the last event published here when that is earlier: a lost notice leaves no gap.
      const published = bus.lastPublished(notice.taskId);
      const after = published !== undefined && published < notice.firstSeq - 1 ? published : notice.firstSeq - 1;
      if (published !== undefined && published >= notice.lastSeq) return [];
      return store.events.list(notice.taskId, after, Math.min(MAX_EVENTS_PER_NOTICE, notice.lastSeq - after));
    });
  }

  /** Reads on, for each stream, from the last event published here (or its latest events, before any was). */
  private readOn(streamIds: string[]): void {
    const { bus, store } = this.opts;
    for (const streamId of streamIds) {
      this.relay(streamId, async () => {
        const published = bus.lastPublished(streamId);
        return published !== undefined ? store.events.list(streamId, published, MAX_EVENTS_PER_NOTICE) : store.events.last(streamId, MAX_EVENTS_PER_NOTICE);
      });
    }
  }

  /** Reads on the streams listened to here where the store holds later events than were published. */
  private async sweep(): Promise<void> {
    const listened = this.opts.bus.listenedTasks();
    if (this.sweeping || listened.length === 0) return;
    this.sweeping = true;
    try {
      const stored = await this.opts.store.events.lastSeqs(listened);
      this.readOn(listened.filter((id) => (stored.get(id) ?? 0) > (this.opts.bus.lastPublished(id) ?? 0)));
    } catch (err) {
      this.opts.logger.warn({ err }, 'comparing streams with the store failed');
    } finally {
      this.sweeping = false;
    }
  }

  /** Reads a stream's events and hands them to the bus, after the reads for that stream before it (so they arrive in order). */
  private relay(streamId: string, read: () => Promise<EventRecord[]>): void {
    const previous = this.chains.get(streamId) ?? Promise.resolve();
    const next = previous
      .then(async () => this.opts.bus.publish(await read()))
      .catch((err) => this.opts.logger.warn({ err, task_id: streamId }, 'relaying events failed'))
      .finally(() => {
        if (this.chains.get(streamId) === next) this.chains.delete(streamId);
      });
    this.chains.set(streamId, next);
  }

  async stop(): Promise<void> {
    await Promise.all(this.stops.splice(0).map((stop) => stop()));
    await Promise.allSettled([...this.chains.values()]);
  }
}
