/**
 * The per-key rate limit across a cluster (decisions §18): two real API processes on one
 * PostgreSQL database, QUARRY_RATE_LIMIT_PER_MIN=5. However the requests are spread over the
 * nodes, five are served in the minute and the rest answered 429; the cluster holds the limit to
 * within one request per node (here it holds exactly).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fetchJson } from '../kit/http.js';
import { dropSchemas, skipWithoutPostgres, startClusterNode } from '../kit/postgres.js';
import { makeDataDir, removeDataDir, type ServerProcess } from '../kit/process.js';

const ADMIN_KEY = 'rate-admin-key';
const LIMIT = 5;

describe('the rate limit across two API nodes on PostgreSQL', { timeout: 120_000, skip: await skipWithoutPostgres() }, () => {
  const schema = `t_rate_${process.pid}_${Date.now()}`;
  const dataDir = makeDataDir('quarry-rate-');
  const nodes: ServerProcess[] = [];

  const startNode = (name: string, waitForStarterKey = false) => startClusterNode({
    name, role: 'api', schema, dataDir, waitForStarterKey,
    env: { QUARRY_ADMIN_KEY: ADMIN_KEY, QUARRY_RATE_LIMIT_PER_MIN: String(LIMIT) },
  });

  before(async () => {
    // The first node migrates the empty schema; the second joins it.
    nodes.push(await startNode('api-1', true));
    nodes.push(await startNode('api-2'));
  });

  after(async () => {
    await Promise.all(nodes.map((n) => n.kill9()));
    await dropSchemas(schema);
    removeDataDir(dataDir);
  });

  it('serves the limit across both nodes, whichever receives the requests, and refuses the rest', async () => {
    const [api1, api2] = nodes as [ServerProcess, ServerProcess];
    // Limits count fixed one-minute windows of the clock this machine shares with the nodes, so
    // every request below must fall in one minute: a run that a new minute cut in two proves
    // nothing and runs again with a fresh account.
    const minute = (ms: number) => Math.floor(ms / 60_000);
    for (let attempt = 1; ; attempt++) {
      const account = await fetchJson('POST', `${api1.url}/admin/accounts`, { key: ADMIN_KEY, body: { name: `limited-${attempt}`, credits: 10 } });
      assert.equal(account.status, 201, account.text);
      const key = account.body.api_key as string;
      const startedIn = minute(Date.now());
      // One request on each node (each then knows the count), at once a burst spread over both,
      // then one at a time on each.
      const statuses: number[] = [];
      const one = async (node: ServerProcess) => statuses.push((await fetchJson('GET', `${node.url}/task?limit=1`, { key })).status);
      await one(api1);
      await one(api2);
      statuses.push(...(await Promise.all(Array.from({ length: 12 }, (_, i) => fetchJson('GET', `${(i % 2 ? api1 : api2).url}/task?limit=1`, { key })))).map((r) => r.status));
      for (const node of [api1, api2, api1, api2]) await one(node);
      if (minute(Date.now()) !== startedIn) {
        assert.ok(attempt < 3, 'a new minute began during each of three runs');
        continue;
      }
      assert.equal(statuses.filter((s) => s === 200).length, LIMIT, `${LIMIT} of ${statuses.length} served across both nodes (${statuses.join(' ')})`);
      assert.equal(statuses.filter((s) => s === 429).length, statuses.length - LIMIT);
      return;
    }
  });
});
