/**
 * The live half of following a stream (event-follower.ts): one bus subscription per task however
 * many followers it has. Each socket write costs about the same whatever it carries, and
 * thousands of streams on one task make a single event thousands of writes; so events are not
 * written as they are published but on the next turn of the event loop, in one pass over the
 * task's streams, each stream handed everything published since its last delivery in one write.
 * A burst of events then costs each socket one write, not one per event. The pass does not yield
 * halfway: the I/O of other sockets (thousands closing at a turn's end) would be handled in
 * between and hold back the streams not yet written. (Each follower takes its batch in the
 * microtasks right after the pass, which still run before any other I/O.)
 */
import type { EventBus } from './event-bus.js';
import type { EventRecord } from '../domain/records.js';

export interface LiveStream {
  /** Events published since the last delivery to this stream, oldest first. */
  deliver(events: readonly EventRecord[]): void;
}

class TaskStreams {
  /** Each stream, with the sequence number of the last event handed to it. */
  readonly cursors = new Map<LiveStream, number>();
  /** Published events not delivered yet, in sequence order. */
  events: EventRecord[] = [];
  /** The sequence number of the last event published. */
  lastSeq = -1;
  delivering = false;
  unsubscribe: () => void = () => {};
}

/** The index of the first event after `seq` (events are in ascending order). */
function firstAfter(events: readonly EventRecord[], seq: number): number {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (events[mid]!.seq <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class EventFanout {
  private readonly tasks = new Map<string, TaskStreams>();

  constructor(private readonly bus: EventBus) {}

  /**
   * Hands `stream` every event of the task published from now on, until the returned function
   * is called. Events published before are in the store, which is where a stream replays from.
   */
  follow(taskId: string, stream: LiveStream): () => void {
    let task = this.tasks.get(taskId);
    if (!task) {
      const created = new TaskStreams();
      created.unsubscribe = this.bus.subscribe(taskId, (event) => this.published(created, event));
      this.tasks.set(taskId, created);
      task = created;
    }
    const joined = task;
    joined.cursors.set(stream, joined.lastSeq);
    return () => {
      joined.cursors.delete(stream);
      if (joined.cursors.size === 0 && this.tasks.get(taskId) === joined) {
        joined.unsubscribe();
        this.tasks.delete(taskId);
      }
    };
  }

  private published(task: TaskStreams, event: EventRecord): void {
    if (event.seq <= task.lastSeq) return;
    task.lastSeq = event.seq;
    task.events.push(event);
    if (task.delivering) return;
    task.delivering = true;
    setImmediate(() => this.deliverPass(task));
  }

  /** One pass over the task's streams: afterwards every stream has every event published so far. */
  private deliverPass(task: TaskStreams): void {
    const latest = task.lastSeq;
    // A stream may end (and leave the map) in its own delivery, which a Map iteration allows.
    for (const [stream, cursor] of task.cursors) {
      if (cursor >= latest) continue;
      task.cursors.set(stream, latest);
      const from = firstAfter(task.events, cursor);
      stream.deliver(from === 0 ? task.events : task.events.slice(from));
    }
    task.events = [];
    task.delivering = false;
  }
}
