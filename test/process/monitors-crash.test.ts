/**
 * A keyed output's changes survive kill -9 exactly (decisions §19): a write's rows and its change
 * records commit together, and the resumed turn, replaying the tool call under the same write
 * key, counts nothing twice. The process is killed right after each write commits
 * (QUARRY_CRASH_AT=rows.appended:<n>) and restarted without a crash point.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { startFakeOpenAI, type FakeReply, type FakeRequestBody } from '../kit/fake-openai-server.js';
import { fetchJson, waitIdle } from '../kit/http.js';
import { killAll, makeDataDir, removeDataDir, startServer, type ServerProcess } from '../kit/process.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const PRICES = { id: 'prices', kind: 'table', key: ['sku'], columns: [{ name: 'sku', type: 'string', required: true }, { name: 'price', type: 'number' }] };
const write = (rows: unknown[]): FakeReply => ({ toolCalls: [{ name: 'write_rows', arguments: { output: 'prices', rows, sources: [{ url: 'https://example.com/p' }] } }] });

/** The turn's replies by how many tool results it has seen: two writes, then the end. */
function responder(body: FakeRequestBody): FakeReply {
  const results = (body.messages ?? []).filter((m) => m.role === 'tool').length;
  if (results === 0) return write([{ sku: 'a', price: 1 }, { sku: 'b', price: 2 }]);
  if (results === 1) return write([{ sku: 'b', price: 3 }, { sku: 'c', price: 4 }]);
  return { text: 'Done.' };
}

describe('keyed outputs under kill -9', () => {
  after(() => killAll());

  for (const crashAt of ['rows.appended:1', 'rows.appended:2']) {
    it(`QUARRY_CRASH_AT=${crashAt}: the restarted turn ends with each change recorded once`, async () => {
      const model = await startFakeOpenAI();
      model.setResponder(responder);
      const dataDir = makeDataDir('quarry-monitors-crash-');
      const env = { QUARRY_MODEL_BASE_URL: model.url, QUARRY_MODEL: 'fake-model' };
      let server: ServerProcess | undefined;
      try {
        server = await startServer({ dataDir, env, crashAt, waitForStarterKey: true });
        const key = server.starterKey!;
        const created = await fetchJson('POST', `${server.url}/task/start`, { key, body: { task: { prompt: 'Track prices.', outputs: [PRICES] } } });
        assert.equal(created.status, 200, created.text);
        const taskId = created.body.task_id;
        const exit = await server.exited;
        assert.equal(exit.signal, 'SIGKILL', 'the process died at its crash point');

        server = await startServer({ dataDir, env });
        const api = (method: string, path: string) => fetchJson(method, server!.url + path, { key });
        await waitIdle((method, path, o) => fetchJson(method, server!.url + path, { key, ...o }), taskId, { timeoutMs: 30_000 });

        const events: Json[] = (await api('GET', `/task/${taskId}/events?limit=1000`)).body.events;
        const done = events.filter((e) => e.type === 'done');
        assert.equal(done.length, 1, JSON.stringify(done));
        assert.equal(done[0].outcome, 'completed');
        assert.deepEqual(done[0].changes, { added: 3, changed: 1, unconfirmed: 0 });
        const changes: Json[] = (await api('GET', `/task/${taskId}/changes`)).body.changes;
        assert.deepEqual(changes.map((c) => [c.change, c.key.sku]), [['added', 'a'], ['added', 'b'], ['changed', 'b'], ['added', 'c']]);
        const rows: Json[] = (await api('GET', `/task/${taskId}/outputs/prices`)).body.rows;
        assert.deepEqual(rows.map((r) => [r._row, r.sku, r.price]), [[1, 'a', 1], [2, 'b', 3], [3, 'c', 4]]);
      } finally {
        await server?.kill9();
        await model.close();
        removeDataDir(dataDir);
      }
    });
  }
});
