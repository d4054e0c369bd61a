/**
 * Many streams opened at once on a task with a long stored history: each replays the history,
 * and the replays must share the process. A replay that reads and writes its whole history in
 * one go holds the event loop, and every other request (here /healthz) waits behind it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startHarness, waitIdle, type Harness } from '../kit/harness.js';
import type { EventRecord } from '../../src/domain/records.js';

/**
 * Sized so that the replays take seconds in all. Measured on a 2-core machine (25 streams of
 * 40,000 events): a replay that runs to its end in one go kept /healthz waiting 8.4 s; replays
 * taking turns answered it within 0.35 s at worst (the wait is mostly libuv accepting one new
 * connection per turn of the event loop: /healthz's connection queues behind the streams'),
 * 20 ms typically. The bound sits far from both, for a CI machine running two test files at once.
 */
const HISTORY = Number(process.env.REPLAY_TEST_EVENTS ?? 30_000);
const STREAMS = Number(process.env.REPLAY_TEST_STREAMS ?? 25);
/** The slowest /healthz answer allowed while the replays run. */
const HEALTHZ_BOUND_MS = Number(process.env.REPLAY_TEST_HEALTHZ_MS ?? 2000);

/** A GET over a fresh connection; resolves with the status once the whole answer is read. */
function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
        res.once('error', reject);
      })
      .once('error', reject);
  });
}

interface Replay {
  /** The ids of the stored events received, in order. */
  ids: number[];
  /** The `event:` of the last frame. */
  lastType: string | undefined;
}

/**
 * Reads one stream to its end, keeping only what the test checks: the id of each event and the
 * type of the last one. Kept light on purpose: the client runs in the server's process, and its
 * own parsing must not be what holds the event loop.
 */
function readStream(url: string, key: string): Promise<Replay> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: { accept: 'text/event-stream', 'x-api-key': key } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      res.setEncoding('utf8');
      const replay: Replay = { ids: [], lastType: undefined };
      let rest = '';
      res.on('data', (chunk: string) => {
        const frames = (rest + chunk).split('\n\n');
        rest = frames.pop()!;
        for (const f of frames) {
          const type = /^event: (.*)$/m.exec(f)?.[1];
          if (type !== undefined) replay.lastType = type;
          const id = /^id: (\d+)$/m.exec(f)?.[1];
          // Stored events only (their data starts with their seq): an unstored frame may carry an id too.
          if (id !== undefined && f.includes('\ndata: {"seq":')) replay.ids.push(Number(id));
        }
      });
      res.once('end', () => resolve(replay));
      res.once('error', reject);
    });
    req.once('error', reject);
  });
}

describe('replays of a long history', () => {
  let h: Harness;
  let taskId: string;
  let lastSeq: number;

  before(async () => {
    h = await startHarness({ listen: true, env: { QUARRY_RATE_LIMIT_PER_MIN: '1000000' } });
    const created = await h.request('POST', '/task', { body: { prompt: 'A task with a long history.' } });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    taskId = (created.body as { task_id: string }).task_id;
    await waitIdle(h, taskId);
    const [stored] = await h.quarry.store.events.last(taskId, 1);
    assert.ok(stored);
    // The history, written straight to the store in batches: what a long-lived task accumulates.
    const at = new Date().toISOString();
    let seq = stored.seq;
    while (seq < stored.seq + HISTORY) {
      const batch: EventRecord[] = [];
      for (let i = 0; i < 1000 && seq < stored.seq + HISTORY; i++) {
        seq++;
        const data = JSON.stringify({ seq, type: 'text', task_id: taskId, turn_id: null, at, text: `Line ${seq} of the research notes.` });
        batch.push({ taskId, seq, type: 'text', turnId: null, data });
      }
      await h.quarry.store.events.insert(batch);
    }
    // The task's row says which event is its last, as a unit of work keeps it.
    await h.quarry.store.tasks.update(taskId, { lastEventSeq: seq });
    lastSeq = seq;
  });

  after(async () => {
    await h?.close();
  });

  it(`${STREAMS} streams replaying ${HISTORY} events each leave /healthz answering, and each gets the whole history in order`, async () => {
    // after=1: an idle task's stream replays what came after the client's resume point.
    const streamUrl = `${h.url}/task/${taskId}/stream?after=1`;
    const healthz = `${h.url}/healthz`;
    assert.equal(await get(healthz), 200);

    let replaying = true;
    const latencies: number[] = [];
    const probe = (async () => {
      while (replaying) {
        const started = performance.now();
        assert.equal(await get(healthz), 200);
        latencies.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    const started = performance.now();
    const replays = await Promise.all(Array.from({ length: STREAMS }, () => readStream(streamUrl, h.key)));
    const replayMs = performance.now() - started;
    replaying = false;
    await probe;

    const worst = Math.max(...latencies);
    const sorted = [...latencies].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    console.log(`# replays took ${replayMs.toFixed(0)} ms; /healthz answered ${latencies.length} times, median ${median.toFixed(0)} ms, worst ${worst.toFixed(0)} ms`);

    for (const [i, replay] of replays.entries()) {
      assert.equal(replay.ids.length, lastSeq - 1, `stream ${i} got ${replay.ids.length} events`);
      assert.ok(replay.ids.every((id, k) => id === k + 2), `stream ${i} got its events out of order`);
      assert.equal(replay.lastType, 'done', `stream ${i} ends with the idle task's done`);
    }
    assert.ok(latencies.length >= 3, `the replays took ${replayMs.toFixed(0)} ms: too short to say anything; make the history longer`);
    assert.ok(worst < HEALTHZ_BOUND_MS, `/healthz took ${worst.toFixed(0)} ms while the replays ran (bound ${HEALTHZ_BOUND_MS} ms)`);
  });
});
