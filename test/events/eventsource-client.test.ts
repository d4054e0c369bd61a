/**
 * A standard EventSource (the `eventsource` package, which follows the WHATWG spec) on a task's
 * stream, as a browser app would use it: it sees the turn to its end, reconnects once after the
 * server ends the stream, gets 204 and stops — no reconnect storm. Our `error` event reaches the
 * same listener as EventSource's connection error; the one carries data, the other none (the
 * rule docs/api.md gives).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventSource } from 'eventsource';
import type { Harness } from '../kit/harness.js';
import { startTestHarness } from '../kit/task-api.js';

interface Followed {
  /** Every event dispatched, `message` (an unnamed frame) included. */
  events: { type: string; data: string | undefined; lastEventId: string }[];
  /** Requests the EventSource made (its first connection and each reconnect). */
  connections: { lastEventId: string | null; status: number }[];
  source: EventSource;
}

/**
 * Follows `path` until the EventSource closes for good: it does so on its own once a reconnect is
 * answered 204. Bounded: a reconnect storm, or a stream that never ends, keeps it open; the
 * connections it made then show what went wrong.
 */
async function follow(h: Harness, path: string): Promise<Followed> {
  const connections: Followed['connections'] = [];
  const events: Followed['events'] = [];
  const source = new EventSource(`${h.url}${path}`, {
    fetch: async (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('X-API-Key', h.key);
      const res = await fetch(input, { ...init, headers });
      connections.push({ lastEventId: headers.get('Last-Event-ID'), status: res.status });
      return res;
    },
  });
  // EventSource sets CLOSED before it dispatches the error of a connection it gives up on.
  const closed = new Promise<void>((resolve) => source.addEventListener('error', () => source.readyState === EventSource.CLOSED && resolve()));
  for (const type of ['task', 'tool', 'text', 'done', 'error', 'message']) {
    source.addEventListener(type, (event) => {
      const data = (event as MessageEvent).data as string | undefined;
      events.push({ type, data, lastEventId: (event as MessageEvent).lastEventId });
    });
  }
  let limit: NodeJS.Timeout | undefined;
  await Promise.race([closed, new Promise((resolve) => (limit = setTimeout(resolve, 20_000)))]);
  clearTimeout(limit);
  source.close();
  return { events, connections, source };
}

/**
 * What every stream must hold to: no unnamed (`message`) event, which no event kind names; no id
 * seen twice, and ids only moving on; the last id seen is the task's last stored seq, and from it
 * the EventSource's one reconnect is answered 204. (This EventSource gives each event the id of
 * its own frame, empty when the frame has none; it keeps the last one for the reconnect.)
 */
async function assertFramesKept(h: Harness, taskId: string, { events, connections }: Followed): Promise<void> {
  assert.deepEqual(events.filter((e) => e.type === 'message'), [], 'no unnamed event');
  const withData = events.filter((e) => e.data !== undefined);
  for (const e of withData) {
    const seq = (JSON.parse(e.data!) as { seq?: number }).seq;
    if (seq !== undefined) assert.equal(e.lastEventId, String(seq), 'a stored event\'s id is its seq');
  }
  const ids = withData.map((e) => Number(e.lastEventId)).filter((id) => id > 0);
  assert.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]!), `ids never repeat and only move on: ${JSON.stringify(ids)}`);
  const state = await h.request('GET', `/task/${taskId}/state`);
  assert.equal(withData.at(-1)!.type, 'done');
  assert.equal(ids.at(-1), state.body.last_event_id, 'the stream leaves the client at the last stored seq');
  assert.deepEqual(connections.map((c) => c.status), [200, 204], 'one reconnect, answered 204, and no more');
  assert.equal(connections[1]!.lastEventId, String(state.body.last_event_id), 'the reconnect says where it got to');
}

// Each case waits out EventSource's reconnection delay (3 s) on a harness of its own: side by side.
describe('a standard EventSource on a task stream', { concurrency: true }, () => {
  it('follows a turn to done, reconnects once, gets 204 and stops', async (t) => {
    const h = await startTestHarness(t, { listen: true, model: false, env: { QUARRY_MODEL_PROVIDER: 'demo' } });
    const created = await h.request('POST', '/task', { body: { prompt: 'Granite quarries of Vermont.' } });
    assert.equal(created.status, 200, created.text);
    const { events, connections, source } = await follow(h, `/task/${created.body.task_id}/stream`);

    assert.equal(events.filter((e) => e.type === 'done').length, 1, JSON.stringify(events));
    assert.equal(JSON.parse(events.find((e) => e.type === 'done')!.data!).type, 'done');
    assert.deepEqual(connections.map((c) => c.status), [200, 204], 'one reconnect, answered 204, and no more');
    assert.ok(connections[1]!.lastEventId, 'the reconnect says how far it got');
    await assertFramesKept(h, created.body.task_id, { events, connections, source });
  });

  it('on an idle task: one connection with the snapshot, one reconnect answered 204', async (t) => {
    const h = await startTestHarness(t, { listen: true, model: false, env: { QUARRY_MODEL_PROVIDER: 'demo' } });
    const created = await h.request('POST', '/task', { body: { prompt: 'Marble.' } });
    const state = await h.request('GET', `/task/${created.body.task_id}/state?wait=5`);
    assert.equal(state.body.active, false, state.text);
    const followed = await follow(h, `/task/${created.body.task_id}/stream`);
    // Then EventSource's own connection errors, without data: the end of the stream, and the 204.
    assert.deepEqual(followed.events.map((e) => [e.type, e.data === undefined]), [['task', false], ['done', false], ['error', true], ['error', true]]);
    const [snapshot, done] = followed.events as [Followed['events'][number], Followed['events'][number]];
    assert.equal(snapshot.lastEventId, '', 'the snapshot carries no id');
    assert.equal(done.lastEventId, String(state.body.last_event_id), 'the done carries the last stored seq');
    assert.equal(JSON.parse(done.data!).seq, undefined, 'the done is not stored');
    await assertFramesKept(h, created.body.task_id, followed);
  });

  it('resumed on an idle task: the missed events, the snapshot and done, one reconnect answered 204', async (t) => {
    const h = await startTestHarness(t, { listen: true, model: false, env: { QUARRY_MODEL_PROVIDER: 'demo' } });
    const created = await h.request('POST', '/task', { body: { prompt: 'Slate.' } });
    const state = await h.request('GET', `/task/${created.body.task_id}/state?wait=5`);
    assert.equal(state.body.active, false, state.text);
    // `?after=1`: as a page that kept its place would open it (an EventSource cannot set Last-Event-ID itself).
    const followed = await follow(h, `/task/${created.body.task_id}/stream?after=1`);
    const withData = followed.events.filter((e) => e.data !== undefined);
    assert.deepEqual(withData.slice(-2).map((e) => e.type), ['task', 'done']);
    assert.ok(withData.length > 2, 'the missed events came first');
    // The replay ended on the last stored event: the done that follows repeats no id.
    assert.equal(withData.at(-1)!.lastEventId, '');
    await assertFramesKept(h, created.body.task_id, followed);
  });

  it('our error event carries data; EventSource\'s own connection error carries none', async (t) => {
    const h = await startTestHarness(t, { listen: true, model: false });
    const created = await h.request('POST', '/task', { body: { prompt: 'No model here.' } });
    await h.request('GET', `/task/${created.body.task_id}/state?wait=5`);
    const followed = await follow(h, `/task/${created.body.task_id}/stream`);
    const { events, connections } = followed;

    const errors = events.filter((e) => e.type === 'error');
    const fromQuarry = errors.filter((e) => e.data !== undefined);
    const fromConnection = errors.filter((e) => e.data === undefined);
    assert.equal(fromQuarry.length, 1, JSON.stringify(errors));
    assert.equal(JSON.parse(fromQuarry[0]!.data!).error, 'service_unavailable');
    // The end of the stream and the 204 that ends the reconnect are connection errors, without data.
    assert.equal(fromConnection.length, 2, JSON.stringify(errors));
    assert.deepEqual(connections.map((c) => c.status), [200, 204]);
    await assertFramesKept(h, created.body.task_id, followed);
  });
});
