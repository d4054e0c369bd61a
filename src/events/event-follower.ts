/**
 * The one way to follow a stream of stored events (a task's, or a group's: a group's events are
 * stored under its id), for every reader that waits on one — SSE, A2A streams, MCP's progress,
 * long polls: the events after a sequence number, replayed from the store, then live from the
 * event bus, in order, with no gap and no repeat.
 *
 * No gap: a follower joins the bus before its first read, so an event published while the store
 * is read is held and handed over once the replay has caught up; events published before it
 * joined were committed before it read (the bus publishes after commit), so the replay has them.
 * No repeat: an event held from the bus that a later replay page already gave is skipped by seq.
 */
import { readWithin } from '../store/store-errors.js';
import type { EventRecord } from '../domain/records.js';
import type { EventsRepository } from '../store/store.js';
import type { EventBus } from './event-bus.js';
import { EventFanout } from './event-fanout.js';

/** Events per page of a replay: one store read, and for an SSE stream one write (about 60 KiB of frames). */
const REPLAY_PAGE = 500;
/** The most time replays take in one turn of the event loop before other I/O gets its turn. */
const REPLAY_SLICE_MS = 4;

/**
 * Replays take turns, one page at a time, oldest waiter first, and together they take at most
 * REPLAY_SLICE_MS of each turn of the event loop. Without this, hundreds of streams opened at
 * once on a long history hold the process: the store answers at once (SQLite), a loopback
 * socket takes megabytes before it pushes back, and libuv accepts one new connection per turn
 * of the loop, so a /healthz behind 500 stream connections waits for 500 turns, each as long as
 * the pages written in it. A read that waits on the database (PostgreSQL) gives its turn up
 * meanwhile: held, it would keep every other replay waiting for as long as it takes, for ever
 * if it never answers.
 */
class ReplayTurns {
  /** The waiters, oldest first: each is handed the function that ends its turn. */
  private readonly waiting: ((over: () => void) => void)[] = [];
  private running = false;

  /** Resolves when it is the caller's turn, with the function to call once its page is handled. */
  take(): Promise<() => void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (!this.running) {
        this.running = true;
        setImmediate(() => void this.run());
      }
    });
  }

  private async run(): Promise<void> {
    while (this.waiting.length > 0) {
      const sliceEnd = performance.now() + REPLAY_SLICE_MS;
      while (this.waiting.length > 0 && performance.now() < sliceEnd) await new Promise<void>((over) => this.waiting.shift()!(over));
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.running = false;
  }
}
const replayTurns = new ReplayTurns();

/** A turn that ends once, however many times it is ended. */
function onceOver(over: () => void): () => void {
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    over();
  };
}

/** `promise`'s answer, or undefined as soon as `signal` aborts (the promise is left to settle on its own). */
function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

export interface FollowOptions {
  /** Replay only, through this seq, then end instead of going live (a stream that closes with frames of its own). */
  through?: number;
  /** Awaited between replay pages, holding no turn: an SSE stream waits there for its client to read. */
  pace?: () => Promise<void>;
}

export interface EventFollowerOptions {
  events: Pick<EventsRepository, 'list'>;
  bus: EventBus;
  /** The longest one replay read may take; past it the follow fails with 503 `service_unavailable` (retryable). */
  readTimeoutMs: number;
}

export class EventFollower {
  private readonly fanout: EventFanout;

  constructor(private readonly opts: EventFollowerOptions) {
    this.fanout = new EventFanout(opts.bus);
  }

  /**
   * The stored events of `streamId` with a seq above `after`, in batches, oldest first: replay
   * pages, then whatever was published since the last batch. Ends when `signal` aborts (or, with
   * `through`, at the end of the replay); a replay read that does not answer within the time
   * limit fails it. A consumer that handles a batch synchronously has it counted in its replay
   * turn; one that awaits gives the turn up at the next turn of the event loop.
   */
  async *follow(streamId: string, after: number, signal: AbortSignal, options: FollowOptions = {}): AsyncGenerator<readonly EventRecord[], void, undefined> {
    if (signal.aborted) return;
    const { through } = options;
    let lastSeq = after;
    const held: EventRecord[] = [];
    let wake: (() => void) | null = null;
    // Joined before the first read, so nothing published meanwhile is missed.
    const leave = through === undefined
      ? this.fanout.follow(streamId, {
          deliver(events) {
            held.push(...events);
            wake?.();
          },
        })
      : () => {};
    const onAbort = () => wake?.();
    signal.addEventListener('abort', onAbort);
    try {
      let more = true;
      while (more) {
        let done = onceOver(await replayTurns.take());
        let page: EventRecord[] | undefined;
        try {
          const reading = readWithin(this.opts.events.list(streamId, lastSeq, REPLAY_PAGE), this.opts.readTimeoutMs);
          // An embedded store (SQLite) answers within the turn, and its read counts in the turn's
          // time. A read that waits on the network (PostgreSQL) gives the turn up while it waits,
          // so that a slow read, or one that never answers, holds no other replay.
          page = await Promise.race([reading, new Promise<undefined>((resolve) => setImmediate(() => resolve(undefined)))]);
          if (!page) {
            done();
            page = await unlessAborted(reading, signal);
            if (!page) return;
            done = onceOver(await replayTurns.take());
          }
          if (signal.aborted) return;
          const wanted = (page.at(-1)?.seq ?? 0) > (through ?? Infinity) ? page.filter((event) => event.seq <= through!) : page;
          more = wanted === page && page.length === REPLAY_PAGE;
          if (wanted.length > 0) {
            lastSeq = wanted.at(-1)!.seq;
            // A consumer still busy with the page at the next turn of the loop holds no turn meanwhile.
            const release = setImmediate(done);
            try {
              yield wanted;
            } finally {
              clearImmediate(release);
            }
          }
        } finally {
          done();
        }
        if (more && options.pace) await options.pace();
        if (signal.aborted) return;
      }
      if (through !== undefined) return;
      for (;;) {
        if (signal.aborted) return;
        if (held.length === 0) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
          continue;
        }
        const batch = held.splice(0);
        const fresh = (batch[0]?.seq ?? 0) > lastSeq ? batch : batch.filter((event) => event.seq > lastSeq);
        if (fresh.length === 0) continue;
        lastSeq = fresh.at(-1)!.seq;
        yield fresh;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      leave();
    }
  }
}
