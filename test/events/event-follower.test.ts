/**
 * The follower behind every stream and long-poll: a stream's stored events after a seq, replayed
 * and then live, each exactly once and in order, even when an event is committed and published
 * while the replay is reading; an abort ends the follow and leaves nothing listening.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventBus } from '../../src/events/event-bus.js';
import { EventFollower } from '../../src/events/event-follower.js';
import type { EventRecord } from '../../src/domain/records.js';

function event(seq: number): EventRecord {
  return { taskId: 't1', seq, type: 'text', turnId: null, data: `{"seq":${seq}}` };
}

/**
 * A stream's stored events, read as the store reads them. `duringFirstRead` runs inside the first
 * read, after the read has taken its snapshot (`snapshot: 'before'`) or before (`'after'`).
 */
function storedEvents(stored: EventRecord[], duringFirstRead: () => void, snapshot: 'before' | 'after') {
  let reads = 0;
  return {
    async list(_streamId: string, afterSeq: number, limit: number): Promise<EventRecord[]> {
      const read = () => stored.filter((e) => e.seq > afterSeq).slice(0, limit);
      if (reads++ > 0) return read();
      if (snapshot === 'after') duringFirstRead();
      const page = read();
      if (snapshot === 'before') duringFirstRead();
      return page;
    },
  };
}

const seqs = (batch: readonly EventRecord[] | void) => (batch ?? []).map((e) => e.seq);

for (const snapshot of ['before', 'after'] as const) {
  test(`an event committed and published during the replay read (the read's snapshot taken ${snapshot} it) is delivered once, then live events follow`, async () => {
    const bus = new EventBus();
    const stored = [event(1), event(2)];
    const commit = (e: EventRecord) => {
      stored.push(e);
      bus.publish([e]);
    };
    const follower = new EventFollower({ events: storedEvents(stored, () => commit(event(3)), snapshot), bus, readTimeoutMs: 5_000 });
    const stop = new AbortController();
    const follow = follower.follow('t1', 0, stop.signal);

    const got: number[] = [];
    got.push(...seqs((await follow.next()).value));
    assert.equal(bus.listenerCount('t1'), 1, 'the follower listens on the bus');
    // Live from here: whatever the replay did not give comes next, and nothing it gave again.
    if (!got.includes(3)) got.push(...seqs((await follow.next()).value));
    commit(event(4));
    got.push(...seqs((await follow.next()).value));
    assert.deepEqual(got, [1, 2, 3, 4]);

    const pending = follow.next();
    stop.abort();
    assert.deepEqual(await pending, { done: true, value: undefined });
    assert.equal(bus.listenerCount('t1'), 0, 'nothing listens once the follow ended');
  });
}

test('a replay pages through a long history, waiting on `pace` between pages, and starts after `after`', async () => {
  const bus = new EventBus();
  const stored = Array.from({ length: 1200 }, (_, i) => event(i + 1));
  const follower = new EventFollower({ events: storedEvents(stored, () => {}, 'before'), bus, readTimeoutMs: 5_000 });
  const stop = new AbortController();
  let paced = 0;
  const got: number[] = [];
  for await (const batch of follower.follow('t1', 100, stop.signal, { pace: async () => void paced++ })) {
    got.push(...seqs(batch));
    if (got.at(-1) === 1200) stop.abort();
  }
  assert.deepEqual(got, stored.slice(100).map((e) => e.seq));
  assert.equal(paced, 2, 'one wait between each two of the three pages');
});

test('with `through`, the follow replays up to that event and ends without listening', async () => {
  const bus = new EventBus();
  const stored = [event(1), event(2), event(3)];
  const follower = new EventFollower({ events: storedEvents(stored, () => assert.equal(bus.listenerCount('t1'), 0), 'before'), bus, readTimeoutMs: 5_000 });
  const got: number[] = [];
  for await (const batch of follower.follow('t1', 0, new AbortController().signal, { through: 2 })) got.push(...seqs(batch));
  assert.deepEqual(got, [1, 2]);
});

test('an abort while the replay read is pending ends the follow at once', async () => {
  const bus = new EventBus();
  let readStarted!: () => void;
  const reading = new Promise<void>((resolve) => (readStarted = resolve));
  const never = () => {
    readStarted();
    return new Promise<EventRecord[]>(() => {});
  };
  const follower = new EventFollower({ events: { list: never }, bus, readTimeoutMs: 1_000 });
  const stop = new AbortController();
  const follow = follower.follow('t1', 0, stop.signal);
  const pending = follow.next();
  await reading;
  stop.abort();
  assert.deepEqual(await pending, { done: true, value: undefined });
  assert.equal(bus.listenerCount('t1'), 0);
});
