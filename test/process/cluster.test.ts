/**
 * Several real Quarry processes on one PostgreSQL database: API nodes and worker nodes started
 * as `quarry serve --role …`, a fake model, and kill -9.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from '../kit/fake-openai-server.js';
import { until } from '../kit/bounded-waits.js';
import { fetchJson, httpClient, waitIdle } from '../kit/http.js';
import { dropSchemas, skipWithoutPostgres, startClusterNode, withClient } from '../kit/postgres.js';
import { makeDataDir, removeDataDir, type ServerProcess } from '../kit/process.js';
import { readSse } from '../kit/sse-client.js';

const ADMIN_KEY = 'cluster-admin-key';

/** A node of the cluster under test, on `schema`, calling `model`. */
function startNode(name: string, role: 'api' | 'worker', schema: string, dataDir: string, model: FakeOpenAI, waitForStarterKey = false): Promise<ServerProcess> {
  return startClusterNode({ name, role, schema, dataDir, waitForStarterKey, env: { QUARRY_ADMIN_KEY: ADMIN_KEY, QUARRY_MODEL_BASE_URL: model.url, QUARRY_LEASE_SECONDS: '2' } });
}

async function call(node: ServerProcess, key: string, method: string, p: string, body?: unknown) {
  return fetchJson(method, node.url + p, { key, body });
}

/** Reads a task's stream on `node` to its end; returns the events (id, type, data). */
async function readStream(node: ServerProcess, key: string, p: string) {
  const stream = await readSse(node.url, p, { key }, 30_000);
  assert.equal(stream.status, 200);
  return stream.events.map((e) => ({ id: e.id === undefined ? null : Number(e.id), type: e.event, data: e.json }));
}

describe('a cluster of API and worker processes on PostgreSQL', { timeout: 180_000, skip: await skipWithoutPostgres() }, () => {
  const schema = `t_cluster_${process.pid}_${Date.now()}`;
  const dataDir = makeDataDir('quarry-cluster-');
  const nodes: ServerProcess[] = [];
  let model: FakeOpenAI;
  let key: string;
  let api1: ServerProcess;
  let api2: ServerProcess;

  before(async () => {
    model = await startFakeOpenAI();
    // The first node migrates the empty schema and creates the starter account; the rest join it.
    api1 = await startNode('api-1', 'api', schema, dataDir, model, true);
    nodes.push(api1);
    key = api1.starterKey!;
    const rest = await Promise.all([
      startNode('api-2', 'api', schema, dataDir, model),
      startNode('worker-1', 'worker', schema, dataDir, model),
      startNode('worker-2', 'worker', schema, dataDir, model),
    ]);
    nodes.push(...rest);
    api2 = rest[0]!;
  });

  after(async () => {
    await Promise.all(nodes.map((n) => n.kill9()));
    await model?.close();
    await dropSchemas(schema);
    removeDataDir(dataDir);
  });

  it('a worker node serves only its health probes', async () => {
    const worker = nodes.find((n) => n.name === 'worker-1')!;
    assert.equal((await fetch(`${worker.url}/healthz`)).status, 200);
    assert.equal((await call(worker, key, 'GET', '/task')).status, 404);
  });

  it('a stream on one API node follows a turn created on another and run by a worker', async () => {
    model.script(
      { toolCalls: [{ name: 'update_spec', arguments: { outputs: [{ id: 'items', kind: 'table', columns: [{ name: 'name', type: 'string', required: true }] }] } }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'items', rows: [{ name: 'a' }, { name: 'b' }], sources: [{ url: 'https://example.com/' }] } }], chunkDelayMs: 20 },
      { text: 'Finished across nodes.', chunkDelayMs: 20 },
    );
    const created = await call(api1, key, 'POST', '/task', { prompt: 'cross-node' });
    assert.equal(created.status, 200);
    const events = await readStream(api2, key, `/task/${created.body.task_id}/stream?after=0`);
    const stored = events.filter((e) => e.data?.seq !== undefined);
    assert.deepEqual(stored.map((e) => e.id), stored.map((_, i) => i + 1), 'every stored event once, in order');
    assert.equal(events.at(-1)!.type, 'done');
    assert.equal(events.at(-1)!.data.outcome, 'completed');
    assert.ok(events.some((e) => e.type === 'text' && /across nodes/.test(events.filter((x) => x.type === 'text').map((x) => x.data.text).join(''))));
    const rows = await call(api2, key, 'GET', `/task/${created.body.task_id}/output`);
    assert.equal(rows.body.total, 2);
  });

  it('rate limits hold across API nodes', async () => {
    // Limits count fixed one-minute windows of the clock this machine shares with the nodes, so
    // every request below must fall in one minute: a run that a new minute cut in two proves
    // nothing and runs again (at the start of that new minute) with a fresh account.
    const minute = (ms: number) => Math.floor(ms / 60_000);
    for (let attempt = 1; ; attempt++) {
      const account = await call(api1, ADMIN_KEY, 'POST', '/admin/accounts', { name: `limited-${attempt}`, credits: 10 });
      assert.equal(account.status, 201, account.text);
      const limited = account.body.api_key as string;
      const startedIn = minute(Date.now());
      const allowed = await Promise.all(Array.from({ length: 600 }, (_, i) => call(i % 2 ? api1 : api2, limited, 'GET', '/task?limit=1')));
      // Each node adds its count to the store's every 50 ms (http/rate-limiter.ts): once both
      // refuse, each knows of the other's.
      const refused = async (node: ServerProcess) => (await call(node, limited, 'GET', '/task?limit=1')).status === 429;
      await until('both nodes to count the other\'s requests', async () => (await refused(api1)) && (await refused(api2)));
      const over = await Promise.all(Array.from({ length: 20 }, (_, i) => call(i % 2 ? api1 : api2, limited, 'GET', '/task?limit=1')));
      if (minute(Date.now()) !== startedIn) {
        assert.ok(attempt < 3, 'a new minute began during each of three runs');
        continue;
      }
      assert.equal(allowed.filter((r) => r.status === 429).length, 0, 'the default 600 a minute are all served');
      assert.deepEqual(over.map((r) => r.status), Array(20).fill(429), 'past 600 across both nodes, each node refuses');
      assert.equal(over[0]!.body.error, 'rate_limited');
      assert.ok(over[0]!.body.retry_after >= 1);
      return;
    }
  });

  it('no turn runs twice at once, and every turn runs once', async () => {
    let maxConcurrentPerTask = 0;
    const inFlight = new Map<string, number>();
    model.setResponder(async (body) => {
      const prompt = String((body.messages ?? []).find((m) => m.role === 'user')?.content);
      const n = (inFlight.get(prompt) ?? 0) + 1;
      inFlight.set(prompt, n);
      maxConcurrentPerTask = Math.max(maxConcurrentPerTask, n);
      await new Promise((r) => setTimeout(r, 30));
      inFlight.set(prompt, (inFlight.get(prompt) ?? 1) - 1);
      return { text: 'ok' };
    });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await call(i % 2 ? api1 : api2, key, 'POST', '/task', { prompt: `job ${i}` })).body.task_id);
    for (const id of ids) await waitIdle(httpClient(api1.url, key), id, { timeoutMs: 20_000 });
    model.setResponder(null);
    assert.equal(maxConcurrentPerTask, 1);
    for (const id of ids) {
      const events = (await call(api2, key, 'GET', `/task/${id}/events?limit=1000`)).body.events as { type: string; reason?: string; outcome?: string }[];
      assert.equal(events.filter((e) => e.type === 'task' && e.reason === 'turn_started').length, 1, `${id} started once`);
      assert.deepEqual(events.filter((e) => e.type === 'done').map((e) => e.outcome), ['completed']);
    }
  });

  it('a turn whose worker is killed is finished by another worker within the lease time', async () => {
    let release: (() => void) | undefined;
    let calls = 0;
    model.setResponder(async () => {
      calls++;
      if (calls === 1) await new Promise<void>((r) => { release = r; });
      return { text: 'finished by the survivor' };
    });
    const created = await call(api1, key, 'POST', '/task', { prompt: 'survive a crash' });
    await until('the first model call', () => calls >= 1, { timeoutMs: 20_000 });
    const owner = await ownerOf(created.body.task_id, schema);
    const victim = nodes.find((n) => n.name === owner)!;
    assert.ok(victim, `owner ${owner} is one of our workers`);
    const killedAt = Date.now();
    await victim.kill9();
    release?.();
    await waitIdle(httpClient(api2.url, key), created.body.task_id, { timeoutMs: 15_000 });
    const tookMs = Date.now() - killedAt;
    assert.ok(tookMs < 2_000 + 5_000, `finished ${tookMs} ms after the kill (lease 2 s)`);
    const events = (await call(api2, key, 'GET', `/task/${created.body.task_id}/events?limit=1000`)).body.events as { type: string; outcome?: string }[];
    assert.deepEqual(events.filter((e) => e.type === 'done').map((e) => e.outcome), ['completed']);
    model.setResponder(null);
    // Bring a worker back for the next test.
    nodes.splice(nodes.indexOf(victim), 1);
    nodes.push(await startNode('worker-3', 'worker', schema, dataDir, model));
  });

  it('cron ticks go on when the scheduler node is killed', async () => {
    const created = await call(api1, key, 'POST', '/task/start', { task: { prompt: 'tick', schedule: { cron: '* * * * * *' } } });
    assert.equal(created.status, 200);
    const taskId = created.body.task_id;
    const turnsStarted = async () =>
      ((await call(api1, key, 'GET', `/task/${taskId}/events?limit=1000`)).body.events as { type: string; reason?: string }[]).filter((e) => e.type === 'task' && e.reason === 'turn_started').length;
    await until('two ticks', async () => (await turnsStarted()) >= 3, { timeoutMs: 20_000, pollMs: 100 });
    const holder = await cronHolder(nodes);
    const victim = nodes.find((n) => n.name === holder)!;
    assert.ok(victim, `the scheduler lock is held by one of our workers (${holder})`);
    await victim.kill9();
    const before = await turnsStarted();
    await until('ticks after the scheduler died', async () => (await turnsStarted()) >= before + 2, { timeoutMs: 15_000, pollMs: 100 });
    const next = await until('a new lock holder', () => cronHolder(nodes), { timeoutMs: 20_000, pollMs: 100 });
    assert.notEqual(next, holder);
    await call(api1, key, 'PATCH', `/task/${taskId}`, { schedule: null });
  });
});

/** The worker holding the lease of the task's running turn. */
async function ownerOf(taskId: string, schema: string): Promise<string> {
  return withClient(async (c) => {
    const r = await c.query(`select t.lease_owner from "${schema}".turns t where t.task_id = $1 and t.status = 'running'`, [taskId]);
    return r.rows[0]?.lease_owner as string;
  });
}

/**
 * The node holding the cron scheduler's advisory lock, by its connection's application_name
 * (`quarry <worker id>`); only our nodes count, as other tests' servers may share the database.
 */
async function cronHolder(nodes: ServerProcess[]): Promise<string | undefined> {
  return withClient(async (c) => {
    const r = await c.query(
      `select a.application_name from pg_locks l join pg_stat_activity a on a.pid = l.pid
       where l.locktype = 'advisory' and l.granted and a.application_name = any($1::text[])`,
      [nodes.map((n) => `quarry ${n.name}`)],
    );
    const names = r.rows.map((row) => String(row.application_name).replace(/^quarry /, ''));
    return names[0];
  });
}
