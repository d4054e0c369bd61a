/**
 * The model provider's limits are the cluster's (decisions §18): two worker processes on one
 * PostgreSQL database share QUARRY_MODEL_RPM through the store, so together they keep to it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from '../kit/fake-openai-server.js';
import { fetchJson, httpClient, waitIdle } from '../kit/http.js';
import { dropSchemas, skipWithoutPostgres, startClusterNode } from '../kit/postgres.js';
import { makeDataDir, removeDataDir, type ServerProcess } from '../kit/process.js';

const ADMIN_KEY = 'limits-admin-key';

function startNode(name: string, role: 'api' | 'worker', schema: string, dataDir: string, model: FakeOpenAI, waitForStarterKey = false): Promise<ServerProcess> {
  return startClusterNode({
    name, role, schema, dataDir, waitForStarterKey,
    // 10% under the provider's 300 a minute: in its 4 s window that leaves room for two calls sent
    // late on a loaded host (5%, as docs/deploy.md#provider-limits advises for a minute's window,
    // is one call here).
    env: { QUARRY_ADMIN_KEY: ADMIN_KEY, QUARRY_MODEL_BASE_URL: model.url, QUARRY_MODEL_RPM: '270' },
  });
}

describe('two worker processes share the model provider\'s limits', { timeout: 120_000, skip: await skipWithoutPostgres() }, () => {
  const schema = `t_limits_${process.pid}_${Date.now()}`;
  const dataDir = makeDataDir('quarry-limits-');
  const nodes: ServerProcess[] = [];
  let model: FakeOpenAI;

  before(async () => {
    model = await startFakeOpenAI();
    nodes.push(await startNode('api-1', 'api', schema, dataDir, model, true));
    nodes.push(...(await Promise.all([startNode('worker-1', 'worker', schema, dataDir, model), startNode('worker-2', 'worker', schema, dataDir, model)])));
  });

  after(async () => {
    await Promise.all(nodes.map((n) => n.kill9()));
    await model?.close();
    await dropSchemas(schema);
    removeDataDir(dataDir);
  });

  it('together they send no more than QUARRY_MODEL_RPM, and every turn completes', async () => {
    const api = nodes[0]!;
    const key = api.starterKey!;
    // 20 in any 4 s is 300 a minute: each worker alone at 270 a minute would go over it with the other.
    model.limitRate({ requests: 20, windowMs: 4000 });
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await fetchJson('POST', `${api.url}/task`, { key, body: { prompt: `task ${i}` } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      ids.push((res.body as { task_id: string }).task_id);
    }
    for (const id of ids) await waitIdle(httpClient(api.url, key), id, { timeoutMs: 60_000 });
    for (const id of ids) {
      const state = await fetchJson('GET', `${api.url}/task/${id}/state`, { key });
      assert.equal((state.body as { last_error: unknown }).last_error, null, id);
    }
    assert.equal(model.rateLimited(), 0, 'no call went over the provider\'s limit');
    assert.ok(model.requests.length >= 30);
  });
});
