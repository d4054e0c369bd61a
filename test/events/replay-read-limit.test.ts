/**
 * A stream's replay reads stored events page by page. When one of those reads never answers (a
 * stalled database connection), that stream ends with a retryable `error` once the read's time
 * limit passes, and every other stream, replaying or not, goes on as if nothing happened. Any
 * other follow of the events (A2A, MCP, long polls) fails the same way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QuarryError } from '../../src/errors.js';
import { EventFollower } from '../../src/events/event-follower.js';
import type { EventRecord } from '../../src/domain/records.js';
import { until, within } from '../kit/bounded-waits.js';
import { waitIdle, type Harness } from '../kit/harness.js';
import { startTestHarness } from '../kit/task-api.js';
import { isStored, openSse, readSse } from '../kit/sse-client.js';

async function idleTask(h: Harness, prompt: string): Promise<string> {
  const created = await h.request('POST', '/task', { body: { prompt } });
  assert.equal(created.status, 200, created.text);
  await waitIdle(h, created.body.task_id);
  return created.body.task_id;
}

/** The store's event reads, as they are, except that those of `taskId` never answer while `hung` says so. */
function hangReadsOf(h: Harness, taskId: string): { started: () => number; answerAgain: () => void } {
  const events = h.quarry.store.events;
  const list = events.list.bind(events);
  let started = 0;
  let hung = true;
  events.list = (id: string, afterSeq: number, limit: number): Promise<EventRecord[]> => {
    if (id !== taskId || !hung) return list(id, afterSeq, limit);
    started++;
    return new Promise<EventRecord[]>(() => {});
  };
  return { started: () => started, answerAgain: () => (hung = false) };
}

test('a replay whose store read never answers ends with a retryable error, and other streams go on', async (t) => {
  const h = await startTestHarness(t, { listen: true, model: false, env: { QUARRY_MODEL_PROVIDER: 'demo' }, config: { sseReadTimeoutMs: 3000 } });
  const stuckId = await idleTask(h, 'Basalt columns.');
  const otherId = await idleTask(h, 'Limestone.');
  const reads = hangReadsOf(h, stuckId);

  const stuck = await openSse(h.url, `/task/${stuckId}/stream?after=1`, { key: h.key });
  assert.equal(stuck.status, 200);
  await until('the stuck stream\'s read has started', () => reads.started() === 1);

  // While that read hangs: another task's replay, and a group of streams that read nothing.
  const others = await Promise.all([
    readSse(h.url, `/task/${otherId}/stream?after=1`, { key: h.key }, 2500),
    readSse(h.url, `/task/${otherId}/stream`, { key: h.key }, 2500),
  ]);
  for (const other of others) {
    assert.ok(other.completed, 'the other stream went through');
    assert.equal(other.events.at(-1)?.json.outcome, 'idle');
  }
  assert.ok(others[0]!.events.filter(isStored).length > 0, 'the other replay sent its events');
  assert.equal(stuck.ended, false, 'the stuck stream is still waiting for its read');

  // Its read's time passes: an unstored, retryable error, and the end of the stream.
  await stuck.finished(5_000);
  assert.ok(stuck.completed, 'the server ended the stream properly');
  assert.deepEqual(stuck.events.map((e) => [e.id, e.event]), [[undefined, 'error']]);
  assert.equal(stuck.events[0]!.json.error, 'service_unavailable');
  assert.equal(stuck.events[0]!.json.retryable, true);

  // Once the store answers again, the client resumes where it was.
  reads.answerAgain();
  const resumed = await readSse(h.url, `/task/${stuckId}/stream`, { key: h.key, headers: { 'last-event-id': '1' } }, 5_000);
  assert.ok(resumed.events.filter(isStored).length > 0);
  assert.equal(resumed.events.at(-1)?.json.outcome, 'idle');
});

test('a follow whose store read never answers fails with a retryable 503 once the limit passes', async (t) => {
  const h = await startTestHarness(t, { model: false, env: { QUARRY_MODEL_PROVIDER: 'demo' } });
  const taskId = await idleTask(h, 'Granite.');
  hangReadsOf(h, taskId);
  const follow = new EventFollower({ events: h.quarry.store.events, bus: h.quarry.bus, readTimeoutMs: 200 }).follow(taskId, 0, new AbortController().signal);
  await assert.rejects(within(follow.next(), 5_000, 'the follow to give up'), (err: unknown) => {
    assert.ok(err instanceof QuarryError, String(err));
    assert.equal(err.code, 'service_unavailable');
    assert.equal(err.retryable, true);
    return true;
  });
});
