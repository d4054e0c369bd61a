/**
 * Several real Quarry processes on one PostgreSQL database: API nodes and worker nodes started
 * as `quarry serve --role …`, a fake model, and kill -9.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from './fake-model/fake-openai-server.js';
import { dropSchemas, skipWithoutPostgres, TEST_DATABASE_URL, withClient } from './helpers/postgres.js';

const DATABASE_URL = TEST_DATABASE_URL;
const ADMIN_KEY = 'cluster-admin-key';
const root = path.resolve(import.meta.dirname, '..');

interface Node {
  name: string;
  url: string;
  proc: ChildProcess;
  output: string[];
}

async function startNode(name: string, role: 'api' | 'worker', schema: string, model: FakeOpenAI, env: Record<string, string> = {}): Promise<Node> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/cli/quarry.ts', 'serve', '--role', role], {
    cwd: root,
    env: {
      ...process.env,
      QUARRY_PORT: '0',
      QUARRY_DATABASE_URL: DATABASE_URL,
      QUARRY_DATABASE_SCHEMA: schema,
      QUARRY_ADMIN_KEY: ADMIN_KEY,
      QUARRY_MODEL_BASE_URL: model.url,
      QUARRY_WORKER_ID: name,
      QUARRY_LEASE_SECONDS: '2',
      QUARRY_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${output.join('')}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output.push(chunk.toString());
      const m = /quarry listening on (\S+)/.exec(output.join(''));
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
    proc.on('exit', (code) => reject(new Error(`${name} exited with ${code}: ${output.join('')}`)));
  });
  return { name, url, proc, output };
}

function kill9(node: Node): Promise<void> {
  return new Promise((resolve) => {
    if (node.proc.exitCode !== null || node.proc.signalCode !== null) return resolve();
    node.proc.once('exit', () => resolve());
    node.proc.kill('SIGKILL');
  });
}

async function call(node: Node, key: string, method: string, p: string, body?: unknown) {
  const res = await fetch(node.url + p, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Reads an SSE stream to its end; returns the events (id, type, data). */
async function readStream(node: Node, key: string, p: string) {
  const res = await fetch(node.url + p, { headers: { 'x-api-key': key } });
  assert.equal(res.status, 200);
  const text = await res.text();
  return text.split('\n\n').filter((f) => f.includes('event:')).map((f) => {
    const id = /^id: (\d+)$/m.exec(f)?.[1];
    return { id: id === undefined ? null : Number(id), type: /^event: (\w+)$/m.exec(f)![1]!, data: JSON.parse(/^data: (.*)$/m.exec(f)![1]!) };
  });
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('a cluster of API and worker processes on PostgreSQL', { timeout: 180_000, skip: await skipWithoutPostgres() }, () => {
  const schema = `t_cluster_${process.pid}_${Date.now()}`;
  const nodes: Node[] = [];
  let model: FakeOpenAI;
  let key: string;
  let api1: Node;
  let api2: Node;

  before(async () => {
    model = await startFakeOpenAI();
    // The first node migrates the empty schema and creates the starter account; the rest join it.
    api1 = await startNode('api-1', 'api', schema, model);
    nodes.push(api1);
    key = await until('the starter key', async () => /starter api key: (\S+)/.exec(api1.output.join(''))?.[1]);
    const rest = await Promise.all([
      startNode('api-2', 'api', schema, model),
      startNode('worker-1', 'worker', schema, model),
      startNode('worker-2', 'worker', schema, model),
    ]);
    nodes.push(...rest);
    api2 = rest[0]!;
  });

  after(async () => {
    await Promise.all(nodes.map(kill9));
    await model?.close();
    await dropSchemas(schema);
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
    const events = await readStream(api2, key, `/task/${created.body.task_id}/stream`);
    const stored = events.filter((e) => e.id !== null);
    assert.deepEqual(stored.map((e) => e.id), stored.map((_, i) => i + 1), 'every stored event once, in order');
    assert.equal(events.at(-1)!.type, 'done');
    assert.equal(events.at(-1)!.data.outcome, 'completed');
    assert.ok(events.some((e) => e.type === 'text' && /across nodes/.test(events.filter((x) => x.type === 'text').map((x) => x.data.text).join(''))));
    const rows = await call(api2, key, 'GET', `/task/${created.body.task_id}/output`);
    assert.equal(rows.body.total, 2);
  });

  it('rate limits hold across API nodes', async () => {
    const account = await fetch(`${api1.url}/admin/accounts`, {
      method: 'POST', headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'limited', credits: 10 }),
    }).then((r) => r.json());
    const limited = account.api_key as string;
    // Limits count one-minute windows; start early in one so every request below falls in it.
    await until('the start of a minute', async () => new Date().getSeconds() < 40, 65_000);
    const allowed = await Promise.all(Array.from({ length: 600 }, (_, i) => call(i % 2 ? api1 : api2, limited, 'GET', '/task?limit=1')));
    assert.equal(allowed.filter((r) => r.status === 429).length, 0, 'the default 600 a minute are all served');
    const over = await Promise.all(Array.from({ length: 20 }, (_, i) => call(i % 2 ? api1 : api2, limited, 'GET', '/task?limit=1')));
    assert.deepEqual(over.map((r) => r.status), Array(20).fill(429), 'past 600 across both nodes, each node refuses');
    assert.equal(over[0]!.body.error, 'rate_limited');
    assert.ok(over[0]!.body.retry_after >= 1);
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
    for (const id of ids) {
      await until(`task ${id} idle`, async () => (await call(api1, key, 'GET', `/task/${id}/state`)).body.active === false);
    }
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
    await until('the first model call', async () => calls >= 1);
    const owner = await ownerOf(created.body.task_id, schema);
    const victim = nodes.find((n) => n.name === owner)!;
    assert.ok(victim, `owner ${owner} is one of our workers`);
    const killedAt = Date.now();
    await kill9(victim);
    release?.();
    await until('the turn to finish', async () => (await call(api2, key, 'GET', `/task/${created.body.task_id}/state`)).body.active === false, 15_000);
    const tookMs = Date.now() - killedAt;
    assert.ok(tookMs < 2_000 + 5_000, `finished ${tookMs} ms after the kill (lease 2 s)`);
    const events = (await call(api2, key, 'GET', `/task/${created.body.task_id}/events?limit=1000`)).body.events as { type: string; outcome?: string }[];
    assert.deepEqual(events.filter((e) => e.type === 'done').map((e) => e.outcome), ['completed']);
    model.setResponder(null);
    // Bring a worker back for the next test.
    nodes.splice(nodes.indexOf(victim), 1);
    nodes.push(await startNode('worker-3', 'worker', schema, model));
  });

  it('cron ticks go on when the scheduler node is killed', async () => {
    const created = await call(api1, key, 'POST', '/task/start', { task: { prompt: 'tick', schedule: { cron: '* * * * * *' } } });
    assert.equal(created.status, 200);
    const taskId = created.body.task_id;
    const turnsStarted = async () =>
      ((await call(api1, key, 'GET', `/task/${taskId}/events?limit=1000`)).body.events as { type: string; reason?: string }[]).filter((e) => e.type === 'task' && e.reason === 'turn_started').length;
    await until('two ticks', async () => (await turnsStarted()) >= 3);
    const holder = await cronHolder(schema);
    const victim = nodes.find((n) => n.name === holder)!;
    assert.ok(victim, `the scheduler lock is held by one of our workers (${holder})`);
    await kill9(victim);
    const before = await turnsStarted();
    await until('ticks after the scheduler died', async () => (await turnsStarted()) >= before + 2, 15_000);
    const next = await until('a new lock holder', async () => cronHolder(schema));
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

/** The process holding the cron scheduler's advisory lock, by its connection's application_name. */
async function cronHolder(schema: string): Promise<string | undefined> {
  void schema;
  return withClient(async (c) => {
    const r = await c.query(
      `select a.application_name from pg_locks l join pg_stat_activity a on a.pid = l.pid
       where l.locktype = 'advisory' and l.granted and a.application_name like 'quarry %'`,
    );
    const names = r.rows.map((row) => String(row.application_name).replace(/^quarry /, ''));
    return names[0];
  });
}
