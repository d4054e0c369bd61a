/**
 * PostgreSQL going away under a running Quarry (docs/durability.md): a `pg_ctl stop` of either
 * kind, while a turn waits on the model and a stream is open, must not end the process. While
 * the database is down, requests answer 503 service_unavailable with retry_after; once it is back,
 * the same process answers again, and the turn in flight (its model reply arriving during the
 * outage) finishes instead of failing. A second process (role api, as in a cluster) follows the
 * task's stream through LISTEN/NOTIFY, so its link must reconnect too.
 *
 * The database is a private server the test starts and stops itself (test/kit/private-postgres.ts),
 * never the shared test database.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply } from '../kit/fake-openai-server.js';
import { until, within } from '../kit/bounded-waits.js';
import { assertUnavailable, fetchJson, waitIdle, type TestResponse } from '../kit/http.js';
import { skipWithoutPrivatePostgres, startPrivatePostgres, type PrivatePostgres } from '../kit/private-postgres.js';
import { killAll, startServer, tempDataDir, type ServerProcess } from '../kit/process.js';
import { isStored, openSse, type SseStream } from '../kit/sse-client.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const ADMIN_KEY = 'faults-postgres-admin-key';
const FINAL_TEXT = 'Finished after the outage.';

const skip = skipWithoutPrivatePostgres();

describe('PostgreSQL stops and starts again under a running Quarry', { skip, timeout: 120_000 }, () => {
  let pg: PrivatePostgres;
  let model: FakeOpenAI;
  let worker: ServerProcess;
  let api: ServerProcess;
  let release: () => void = () => {};

  before(async () => {
    pg = await startPrivatePostgres();
    model = await startFakeOpenAI();
    const held = new Promise<void>((resolve) => (release = resolve));
    // The first reply waits until the test lets it go (during the second outage); then the turn ends.
    model.setResponder((_body, index): Promise<FakeReply> | FakeReply =>
      index === 0 ? held.then(() => ({ text: FINAL_TEXT })) : { text: FINAL_TEXT });
    const env = {
      QUARRY_DATABASE_URL: pg.url,
      QUARRY_ADMIN_KEY: ADMIN_KEY,
      QUARRY_MODEL_BASE_URL: model.url,
      QUARRY_MODEL: 'fake-model',
    };
    worker = await startServer({ dataDir: tempDataDir(), env, name: 'quarry (all)' });
    api = await startServer({ dataDir: tempDataDir(), env, role: 'api', name: 'quarry (api)' });
  });

  after(async () => {
    if (process.env.DUMP) console.log(`---- worker\n${worker?.output()}\n---- api\n${api?.output()}`);
    release();
    await killAll();
    await model?.close();
    await pg?.destroy();
  });

  const send = (s: ServerProcess, key: string, method: string, path: string, body?: unknown): Promise<TestResponse> =>
    fetchJson(method, s.url + path, { key, body, timeoutMs: 10_000 });

  const s = (name: string): ServerProcess => (name === 'api' ? api : worker);

  function assertAlive(): void {
    for (const s of [worker, api]) assert.ok(s.alive(), `${s.name} died (${s.exitStatus()}):\n${s.output().slice(-4000)}`);
  }

  it('answers 503 with retry_after while it is down, recovers without a restart, and the turn in flight finishes', async () => {
    const account = await send(worker, ADMIN_KEY, 'POST', '/admin/accounts', { name: 'faults', credits: 100 });
    assert.equal(account.status, 201, account.text);
    const key: string = account.body.api_key;
    const accountId: string = account.body.account_id;
    // A key no request has shown yet: no process has it among the keys it verified in the last few seconds.
    const unseen = await send(worker, ADMIN_KEY, 'POST', `/admin/accounts/${accountId}/keys`);
    assert.equal(unseen.status, 201, unseen.text);
    const created = await send(worker, key, 'POST', '/task/start', { task: { prompt: 'Research something slowly.' } });
    assert.equal(created.status, 200, created.text);
    const taskId: string = created.body.task_id;
    await model.waitForRequests(1);
    // Streams opened before the outage, on the process running the turn and on the api-only one.
    const streams: [string, SseStream][] = [
      ['worker', await openSse(worker.url, `/task/${taskId}/stream`, { key })],
      ['api', await openSse(api.url, `/task/${taskId}/stream`, { key })],
    ];
    for (const [name, stream] of streams) {
      assert.equal(stream.status, 200, name);
      // The replay read the store: from here on the stream is fed live.
      await stream.waitFor(isStored, 10_000, `the first stored event on the ${name} stream`);
    }

    for (const mode of ['fast', 'immediate'] as const) {
      await pg.stop(mode);
      for (const s of [worker, api]) {
        // The first request after the stop may still find a pooled connection it has not yet seen die.
        const res = await until(`503 from ${s.name} after pg_ctl stop -m ${mode}`, async () => {
          assertAlive();
          const r = await send(s, key, 'GET', `/task/${taskId}`);
          return r.status === 503 ? r : undefined;
        }, { timeoutMs: 10_000, pollMs: 50 }) as TestResponse;
        assertUnavailable(res, `GET /task/{id} on ${s.name}, stopped ${mode}`, { keyed: true });
        assertUnavailable(await send(s, key, 'POST', `/task/${taskId}/continue`, { message: 'more' }), `continue on ${s.name}, stopped ${mode}`, { keyed: true });
        assertUnavailable(await send(s, key, 'POST', '/task/start', { task: { prompt: 'another' } }), `start on ${s.name}, stopped ${mode}`, { keyed: true });
        assertUnavailable(await fetchJson('GET', `${s.url}/readyz`), `/readyz on ${s.name}, stopped ${mode}`);
        assertUnavailable(await send(s, ADMIN_KEY, 'GET', `/admin/accounts/${accountId}`), `an admin route on ${s.name}, stopped ${mode}`);
        // A key that cannot be checked: auth_unavailable, before the route is reached.
        const unchecked = await send(s, unseen.body.api_key, 'GET', '/task');
        assert.equal(unchecked.status, 503, unchecked.text);
        assert.equal(unchecked.body.error, 'auth_unavailable', unchecked.text);
        assert.equal(unchecked.body.retryable, true);
        assert.equal(unchecked.headers.get('retry-after'), String(unchecked.body.retry_after));
        assert.equal((await fetchJson('GET', `${s.url}/healthz`)).status, 200, `/healthz on ${s.name}, stopped ${mode}`);
      }
      if (mode === 'immediate') {
        // The model answers now: the turn's checkpoint meets the outage and must wait it out.
        release();
        await within(worker.waitForLine(/the turn waits and tries again/, 10_000), 11_000, 'the worker to log that its turn waits for the store');
      }
      assertAlive();

      await pg.start();
      for (const s of [worker, api]) {
        await until(`${s.name} answering again after pg_ctl start`, async () => {
          assertAlive();
          return (await send(s, key, 'GET', `/task/${taskId}`)).status === 200;
        }, { timeoutMs: 15_000, pollMs: 100 });
        const ready = await fetchJson('GET', `${s.url}/readyz`);
        assert.equal(ready.status, 200, `/readyz on ${s.name} after pg_ctl start: ${ready.text}`);
      }
      assertAlive();
    }

    await waitIdle((method, path, o) => send(worker, key, method, path, o?.body), taskId, { timeoutMs: 30_000 });
    const events: Json[] = (await send(worker, key, 'GET', `/task/${taskId}/events?limit=1000`)).body.events;
    assert.deepEqual(events.filter((e) => e.type === 'error'), [], 'the turn ended without an error');
    const done = events.find((e) => e.type === 'done');
    assert.ok(done, `the turn finished: ${events.map((e) => e.type).join(' ')}`);
    assert.ok(events.some((e) => e.type === 'text' && JSON.stringify(e).includes(FINAL_TEXT)), 'the reply given during the outage was stored');
    const task = await send(worker, key, 'GET', `/task/${taskId}`);
    assert.equal(task.body.last_error ?? null, null);

    // Both streams see every event of the turn, in order and once: through the outages, or
    // (where a stream was ended with an error event) resumed with Last-Event-ID as a client does.
    const seqs = events.map((e) => e.seq as number);
    for (const [name, opened] of streams) {
      let stream = opened;
      const seen: number[] = [];
      for (let reconnects = 0; ; reconnects++) {
        const ended = await Promise.race([
          stream.waitFor((e) => e.event === 'done', 15_000, `done on the ${name} stream`).then(() => false),
          stream.finished(15_000).then(() => true),
        ]);
        seen.push(...stream.events.filter(isStored).map((e) => Number(e.id)));
        if (!ended || stream.events.some((e) => e.event === 'done')) break;
        const last = stream.events.at(-1);
        assert.equal(last?.event, 'error', `the ${name} stream ended without done or an error event`);
        assert.equal(last?.json?.retryable, true, `${name}: ${last?.data}`);
        assert.ok(reconnects < 3, `${name} stream: too many reconnects`);
        stream = await openSse(s(name).url, `/task/${taskId}/stream`, { key, headers: { 'last-event-id': String(seen.at(-1) ?? 0) } });
      }
      stream.close();
      assert.deepEqual(seen, seqs.slice(seqs.indexOf(seen[0]!)), `the ${name} stream saw every event once, in order`);
    }

    // New work is taken and finished by the same processes.
    const again = await send(api, key, 'POST', `/task/${taskId}/continue`, { message: 'One more thing.' });
    assert.ok(again.status === 200 || again.status === 202, again.text);
    await waitIdle((method, path, o) => send(api, key, method, path, o?.body), taskId, { timeoutMs: 15_000, queueEmpty: true });
    assertAlive();
  });
});
