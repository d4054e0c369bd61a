import type { EventRecord } from '../domain/records.js';
import type { Repositories } from '../store/store.js';
import { EVENTS_CHANNEL, eventsNotice } from './cluster-messages.js';

/**
 * Stores one stream's new events (a task's or a group's, in sequence order) in the caller's
 * transaction, and announces them to the processes sharing the store: the notice goes out when
 * the transaction commits, and they read the events from the store by its sequence range.
 */
export async function storeEvents(tx: Repositories, origin: string, events: readonly EventRecord[]): Promise<void> {
  const first = events[0];
  const last = events.at(-1);
  if (!first || !last) return;
  await tx.events.insert([...events]);
  await tx.cluster.notify(EVENTS_CHANNEL, eventsNotice(origin, first.taskId, first.seq, last.seq));
}
