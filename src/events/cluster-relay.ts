/**
 * Joins the processes that share one database. Events stored by another process are announced
 * on EVENTS_CHANNEL; the relay reads them from the store and hands them to this process's event
 * bus, but only for tasks someone here is listening to. Control messages (wake, cancel, key
 * revoked) go to the handler given.
 */
import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
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

  constructor(private readonly opts: ClusterRelayOptions) {}

  async start(): Promise<void> {
    const { store } = this.opts;
    if (!store.shared) return;
    if (this.opts.relayEvents !== false) this.stops.push(await store.cluster.listen(EVENTS_CHANNEL, (payload) => this.onEvents(payload)));
    this.stops.push(await store.cluster.listen(CONTROL_CHANNEL, (payload) => {
      const message = parseControl(payload);
      if (message) this.opts.onControl(message);
    }));
  }

  private onEvents(payload: string): void {
    const notice = parseEventsNotice(payload);
    if (!notice || notice.origin === this.opts.origin) return;
    if (this.opts.bus.listenerCount(notice.taskId) === 0) return;
    const previous = this.chains.get(notice.taskId) ?? Promise.resolve();
    const next = previous
      .then(async () => {
        const count = Math.min(MAX_EVENTS_PER_NOTICE, notice.lastSeq - notice.firstSeq + 1);
        const events = await this.opts.store.events.list(notice.taskId, notice.firstSeq - 1, count);
        this.opts.bus.publish(events);
      })
      .catch((err) => this.opts.logger.warn({ err, task_id: notice.taskId }, 'relaying events failed'))
      .finally(() => {
        if (this.chains.get(notice.taskId) === next) this.chains.delete(notice.taskId);
      });
    this.chains.set(notice.taskId, next);
  }

  async stop(): Promise<void> {
    await Promise.all(this.stops.splice(0).map((stop) => stop()));
    await Promise.allSettled([...this.chains.values()]);
  }
}
