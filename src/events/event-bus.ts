/**
 * Fan-out of stored events to live listeners in this process (the event followers' fan-out,
 * event-fanout.ts). Events are published only after the transaction that stored them commits, so a listener
 * never sees an event that a reader of the store could not.
 */
import type { EventRecord } from '../domain/records.js';

export type EventListener = (event: EventRecord) => void;

export class EventBus {
  private readonly listeners = new Map<string, Set<EventListener>>();
  /** Per stream listened to, the seq of the last event published to its listeners. */
  private readonly published = new Map<string, number>();

  subscribe(taskId: string, listener: EventListener): () => void {
    let set = this.listeners.get(taskId);
    if (!set) {
      set = new Set();
      this.listeners.set(taskId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(taskId) === set) {
        this.listeners.delete(taskId);
        this.published.delete(taskId);
      }
    };
  }

  publish(events: readonly EventRecord[]): void {
    for (const event of events) {
      const set = this.listeners.get(event.taskId);
      if (!set) continue;
      if (event.seq > (this.published.get(event.taskId) ?? 0)) this.published.set(event.taskId, event.seq);
      for (const listener of [...set]) listener(event);
    }
  }

  listenerCount(taskId: string): number {
    return this.listeners.get(taskId)?.size ?? 0;
  }

  /**
   * The seq of the last event published here to the listeners of a stream, while anyone listens
   * to it; undefined before the first (its listeners read what came before from the store).
   */
  lastPublished(taskId: string): number | undefined {
    return this.published.get(taskId);
  }

  /** The tasks someone in this process listens to. */
  listenedTasks(): string[] {
    return [...this.listeners.keys()];
  }
}
