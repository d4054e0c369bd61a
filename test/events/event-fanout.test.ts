/**
 * The fan-out behind live streams: every stream gets every event published while it follows,
 * once and in order; a burst reaches each stream in fewer writes than events; streams may come
 * and go between a publish and its delivery.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventBus } from '../../src/events/event-bus.js';
import { EventFanout } from '../../src/events/event-fanout.js';
import type { EventRecord } from '../../src/domain/records.js';
import { until } from '../kit/bounded-waits.js';

function event(taskId: string, seq: number): EventRecord {
  return { taskId, seq, type: 'text', turnId: null, data: `{"seq":${seq}}` };
}

class Recorder {
  readonly seqs: number[] = [];
  deliveries = 0;
  deliver(events: readonly EventRecord[]): void {
    this.deliveries++;
    for (const e of events) this.seqs.push(e.seq);
  }
}

test('each of 2,000 streams gets every event once, in order, and a burst in fewer deliveries than events', async () => {
  const bus = new EventBus();
  const fanout = new EventFanout(bus);
  const streams = Array.from({ length: 2000 }, () => new Recorder());
  for (const s of streams) fanout.follow('t1', s);
  // Three bursts of five events, published the way commits publish them (one call per commit).
  let seq = 0;
  for (let burst = 0; burst < 3; burst++) {
    for (let i = 0; i < 5; i++) bus.publish([event('t1', ++seq)]);
    await new Promise((resolve) => setImmediate(resolve));
  }
  await until('every stream to get the last event', () => streams.every((s) => s.seqs.includes(15)));
  const all = Array.from({ length: 15 }, (_, i) => i + 1);
  for (const s of streams) assert.deepEqual(s.seqs, all);
  const writes = streams.reduce((n, s) => n + s.deliveries, 0);
  assert.ok(writes <= streams.length * 3, `${writes} deliveries for 15 events to ${streams.length} streams: bursts were not coalesced`);
});

test('a stream that joins before pending events are delivered gets only what is published after it joined; one that leaves gets nothing more', async () => {
  const bus = new EventBus();
  const fanout = new EventFanout(bus);
  const early = Array.from({ length: 1000 }, () => new Recorder());
  const leavers = early.slice(500, 510).map((s) => ({ s, stop: fanout.follow('t2', s) }));
  for (const s of early) if (!leavers.some((l) => l.s === s)) fanout.follow('t2', s);
  bus.publish([event('t2', 1)]);
  // Published, not yet delivered: a stream joining now replays event 1 from the store instead.
  const late = new Recorder();
  fanout.follow('t2', late);
  for (const l of leavers) l.stop();
  bus.publish([event('t2', 2), event('t2', 3)]);
  const stayed = early.filter((s) => !leavers.some((l) => l.s === s));
  await until('the streams that stayed to get event 3', () => late.seqs.includes(3) && stayed.every((s) => s.seqs.includes(3)));
  assert.deepEqual(late.seqs, [2, 3]);
  for (const l of leavers) assert.ok(!l.s.seqs.includes(2), 'a stream that left still got an event');
  for (const s of stayed) assert.deepEqual(s.seqs, [1, 2, 3]);
  // Another task's events reach none of these streams: this task's next event comes right after 3.
  bus.publish([event('t3', 1)]);
  bus.publish([event('t2', 4)]);
  await until('the late stream to get event 4', () => late.seqs.includes(4));
  assert.deepEqual(late.seqs, [2, 3, 4]);
});

test('when the last stream of a task leaves, the task no longer listens on the bus', async () => {
  const bus = new EventBus();
  const fanout = new EventFanout(bus);
  const stops = [new Recorder(), new Recorder()].map((s) => fanout.follow('t4', s));
  assert.equal(bus.listenerCount('t4'), 1);
  for (const stop of stops) stop();
  assert.equal(bus.listenerCount('t4'), 0);
});
