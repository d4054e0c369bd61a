/**
 * A task's stored events after a sequence number, in order: replayed from the store, then live
 * as they are published, without a gap or a duplicate. The event bus only wakes the follower;
 * every event is read from the store by seq, so events published while a page was being read
 * (or before the follower caught up) are read on the next pass, never lost, never sent twice.
 */
import type { EventBus } from '../../events/event-bus.js';
import { readWithin } from '../../store/store-errors.js';
import type { EventRecord } from '../../domain/records.js';
import type { Store } from '../../store/store.js';

const PAGE = 200;

export interface FollowOptions {
  store: Store;
  bus: EventBus;
  taskId: string;
  /** Yield events with a seq above this. */
  afterSeq: number;
  /** Ends the follow (the client left): waits are cut short. */
  signal: AbortSignal;
  /** The longest one store read may take; past it the follow fails with 503 `service_unavailable`. */
  readTimeoutMs: number;
}

/**
 * Yields the events; ends when the signal aborts, or when it has caught up for the first time
 * and the task has no running turn (nothing more will come for the stream to wait for). The
 * caller ends it earlier, at the event it decides is its last. A store read that does not answer
 * within the time limit fails it (503, retryable): the stream ends with an error, not never.
 */
export async function* followEvents(opts: FollowOptions): AsyncGenerator<EventRecord, void, undefined> {
  const { store, taskId, signal } = opts;
  let published = false;
  let wake: (() => void) | null = null;
  // Listen before the first read, so an event published meanwhile wakes the next pass.
  const unsubscribe = opts.bus.subscribe(taskId, () => {
    published = true;
    wake?.();
  });
  const onAbort = () => wake?.();
  signal.addEventListener('abort', onAbort);
  try {
    let lastSeq = opts.afterSeq;
    let caughtUp = false;
    while (!signal.aborted) {
      published = false;
      const page = await readWithin(store.events.list(taskId, lastSeq, PAGE), opts.readTimeoutMs);
      for (const event of page) {
        if (signal.aborted) return;
        lastSeq = event.seq;
        yield event;
      }
      if (page.length === PAGE) continue;
      if (!caughtUp) {
        const state = await readWithin(store.tasks.getState(taskId), opts.readTimeoutMs);
        if (!state) return;
        if (state.lastEventSeq > lastSeq) continue;
        caughtUp = true;
        if (!state.currentTurnId && state.queuedCount === 0) return;
      }
      if (published || signal.aborted) continue;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = null;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    unsubscribe();
  }
}
