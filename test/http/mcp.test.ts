/**
 * Quarry as an MCP server (decisions §15.4), driven only by the official MCP SDK client over real
 * HTTP: the tools and their schemas, a task started, waited on with progress, read, continued
 * while it runs (queued) and stopped; refusals as tool errors carrying Quarry's code; no key, no
 * connection. Then the same on an `--role api` node of a cluster, whose turns run on a worker.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply } from '../kit/fake-openai-server.js';
import { until } from '../kit/bounded-waits.js';
import { fetchJson } from '../kit/http.js';
import { startHarness, waitIdle, type Harness } from '../kit/harness.js';
import { dropSchemas, skipWithoutPostgres, TEST_DATABASE_URL } from '../kit/postgres.js';
import { killAll, makeDataDir, removeDataDir, startServer } from '../kit/process.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

async function connect(url: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'quarry-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }));
  return client;
}

/** The error body an MCP tool error carries, checked to be one. */
function quarryError(result: Json): Json {
  assert.equal(result.isError, true, JSON.stringify(result));
  const body = result._meta?.['quarry/error'];
  assert.ok(body, `the tool error carries Quarry's error body: ${JSON.stringify(result)}`);
  assert.match(result.content[0].text, new RegExp(`^${body.error}: `));
  return body;
}

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const TABLE = { id: 'quarries', kind: 'table', columns: [{ name: 'name', type: 'string', required: true }, { name: 'state', type: 'string' }] };

describe('MCP server at /mcp', () => {
  let h: Harness;
  let client: Client;

  before(async () => {
    h = await startHarness({ listen: true });
    client = await connect(h.url, { 'X-API-Key': h.key });
  });
  after(async () => {
    await client?.close();
    await h?.close();
  });

  it('lists the seven tools, each with input and output schemas', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['continue_task', 'get_task', 'list_tasks', 'read_rows', 'start_task', 'stop_task', 'wait_for_task']);
    for (const tool of tools) {
      assert.equal(tool.inputSchema.type, 'object', tool.name);
      assert.equal(tool.outputSchema?.type, 'object', `${tool.name} declares its result`);
      assert.ok(tool.description && tool.description.length > 20, tool.name);
    }
    const wait = tools.find((t) => t.name === 'wait_for_task')!;
    assert.equal((wait.inputSchema.properties as Json).timeout_s.maximum, 50);
    assert.deepEqual(wait.inputSchema.required, ['task_id']);
  });

  it('starts a task, waits for it with progress, reads its rows, lists and gets it', async () => {
    h.model!.script(
      { toolCalls: [{ name: 'update_spec', arguments: { outputs: [TABLE] } }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'quarries', rows: [{ name: 'Rock of Ages', state: 'VT' }, { name: 'Barre Gray', state: 'VT' }], sources: [{ url: 'https://example.org/granite' }] } }] },
      { text: 'Found two quarries.' },
    );
    const started = await client.callTool({ name: 'start_task', arguments: { prompt: 'List granite quarries in Vermont.' } });
    assert.equal(started.isError, undefined, JSON.stringify(started));
    const task = started.structuredContent as Json;
    assert.match(task.task_id, /^tsk_/);
    assert.equal(task.status, 'execute');
    assert.match((started.content as Json)[0].text, new RegExp(task.task_id));

    const progress: { progress: number; message?: string }[] = [];
    const waited = await client.callTool({ name: 'wait_for_task', arguments: { task_id: task.task_id, timeout_s: 20 } }, undefined, { onprogress: (p) => progress.push(p) });
    const state = waited.structuredContent as Json;
    assert.equal(state.active, false, JSON.stringify(state));
    assert.equal(state.last_error, null);
    assert.ok(progress.length > 0, 'progress notifications arrived while it waited');
    assert.deepEqual(progress.map((p) => p.progress), progress.map((_, i) => i + 1), 'progress counts up, one per event');
    assert.ok(progress.some((p) => /write_rows finished/.test(p.message ?? '')), JSON.stringify(progress));
    assert.ok(progress.some((p) => p.message === 'turn completed'), JSON.stringify(progress));

    const rows = (await client.callTool({ name: 'read_rows', arguments: { task_id: task.task_id } })).structuredContent as Json;
    assert.equal(rows.total, 2);
    assert.deepEqual(rows.output, { id: 'quarries', kind: 'table', path: 'outputs/quarries.csv' });
    assert.deepEqual(rows.rows.map((r: Json) => [r._row, r.name, r._sources[0].url, r._sources[0].check]), [[1, 'Rock of Ages', 'https://example.org/granite', 'not_read'], [2, 'Barre Gray', 'https://example.org/granite', 'not_read']]);
    // The same rows as the REST route gives.
    const rest = await h.request('GET', `/task/${task.task_id}/output`);
    assert.deepEqual(rows.rows, rest.body.rows);
    const page = (await client.callTool({ name: 'read_rows', arguments: { task_id: task.task_id, limit: 1, offset: 1 } })).structuredContent as Json;
    assert.deepEqual(page.rows.map((r: Json) => r.name), ['Barre Gray']);

    const got = (await client.callTool({ name: 'get_task', arguments: { task_id: task.task_id } })).structuredContent as Json;
    const { events: _events, spec: _spec, ...restTask } = (await h.request('GET', `/task/${task.task_id}`)).body;
    assert.deepEqual(got, restTask, 'the same Task as GET /task/{id} shows');
    assert.equal(got.output_count, 1);
    assert.equal(got.activity, 'idle');

    const listed = (await client.callTool({ name: 'list_tasks', arguments: { limit: 1 } })).structuredContent as Json;
    assert.equal(listed.tasks.length, 1);
    assert.equal(typeof listed.next_cursor === 'string' || listed.next_cursor === null, true);
  });

  it('queues a message while a turn runs, then stops the turn; the task outlives the client that started it', async () => {
    const held = deferred<FakeReply>();
    const asked = h.model!.requests.length;
    // This task's first model call is held: its turn runs until stopped.
    h.model!.setResponder((_body, index) => (index === asked ? held.promise : { text: 'Done.' }));
    const other = await connect(h.url, { Authorization: `Bearer ${h.key}` });
    const task = (await other.callTool({ name: 'start_task', arguments: { prompt: 'A long one.' } })).structuredContent as Json;
    await other.close();
    // The agent that started it is gone; the task still runs, and another session follows it.
    await until('the model to be asked', () => h.model!.requests.length > asked);
    const queued = await client.callTool({ name: 'continue_task', arguments: { task_id: task.task_id, message: 'Also look at Maine.' } });
    const queuedTask = queued.structuredContent as Json;
    assert.equal(queuedTask.status, 'accepted', JSON.stringify(queued));
    assert.equal(queuedTask.queued_messages, 1);
    assert.match((queued.content as Json)[0].text, /Queued/);

    const stillRunning = (await client.callTool({ name: 'wait_for_task', arguments: { task_id: task.task_id, timeout_s: 1 } })).structuredContent as Json;
    assert.equal(stillRunning.active, true, 'a wait that times out says the task is still active');

    // A client that leaves mid-wait takes the wait with it: nothing keeps listening to the task.
    const bus = h.quarry.bus;
    const leaving = await connect(h.url, { 'X-API-Key': h.key });
    const abandoned = leaving.callTool({ name: 'wait_for_task', arguments: { task_id: task.task_id, timeout_s: 50 } }, undefined, { onprogress: () => {} }).catch(() => 'closed');
    await until('the wait to listen', () => bus.listenerCount(task.task_id) === 1);
    await leaving.close();
    assert.equal(await abandoned, 'closed');
    await until('the abandoned wait to stop listening', () => bus.listenerCount(task.task_id) === 0, { timeoutMs: 3000 });

    const stopped = (await client.callTool({ name: 'stop_task', arguments: { task_id: task.task_id, clear_queue: true } })).structuredContent as Json;
    assert.equal(stopped.queued_messages, 0);
    assert.equal(stopped.activity, 'idle');
    held.resolve({ text: 'Too late.' });
    const events = (await h.request('GET', `/task/${task.task_id}/events?limit=1000`)).body.events;
    assert.ok(events.some((e: Json) => e.type === 'done' && e.outcome === 'stopped'), 'the turn ended stopped');
    h.model!.setResponder(null);
  });

  it('continues a task offline: that turn is offered no web_search', async () => {
    h.model!.setResponder(() => ({ text: 'Done.' }));
    const task = (await client.callTool({ name: 'start_task', arguments: { task: { prompt: 'An offline one.' } } })).structuredContent as Json;
    await waitIdle(h, task.task_id);
    const asked = h.model!.requests.length;
    const answer = await client.callTool({ name: 'continue_task', arguments: { task_id: task.task_id, message: 'Again, from what you read.', offline: true } });
    assert.ok(!answer.isError, JSON.stringify(answer));
    await waitIdle(h, task.task_id);
    h.model!.setResponder(null);
    const tools = (h.model!.requests[asked]!.body.tools ?? []).map((t) => t.function.name);
    assert.ok(tools.includes('fetch_url') && !tools.includes('web_search'), String(tools));
  });

  it('refuses with MCP tool errors that carry Quarry\'s code', async () => {
    const missing = quarryError(await client.callTool({ name: 'get_task', arguments: { task_id: 'tsk_nope' } }));
    assert.equal(missing.error, 'task_not_found');
    assert.equal(missing.task_id, 'tsk_nope');

    const bad = quarryError(await client.callTool({ name: 'wait_for_task', arguments: { task_id: 'x', timeout_s: 51 } }));
    assert.equal(bad.error, 'invalid_request');
    assert.equal(bad.param, 'timeout_s');

    const neither = quarryError(await client.callTool({ name: 'start_task', arguments: {} }));
    assert.equal(neither.error, 'invalid_request');
    assert.equal(neither.param, 'prompt');

    const blank = quarryError(await client.callTool({ name: 'continue_task', arguments: { task_id: 'x', message: 42 } }));
    assert.equal(blank.param, 'message');

    await assert.rejects(client.callTool({ name: 'delete_everything', arguments: {} }), (err: unknown) => err instanceof McpError && /No tool "delete_everything"/.test(err.message));

    // Another account's task is not there for this key.
    const account = await fetchJson('POST', `${h.url}/admin/accounts`, { key: 'admin-secret-for-tests', body: { name: 'other', credits: 5 } });
    const stranger = await connect(h.url, { 'X-API-Key': account.body.api_key });
    const mine = (await h.request('GET', '/task?limit=1')).body[0].task_id;
    assert.equal(quarryError(await stranger.callTool({ name: 'read_rows', arguments: { task_id: mine } })).error, 'task_not_found');
    await stranger.close();
  });

  it('answers no one without a valid key, and has no GET stream or session to DELETE', async () => {
    for (const headers of [{}, { 'X-API-Key': 'qry_wrong' }] as Record<string, string>[]) {
      await assert.rejects(connect(h.url, headers), (err: unknown) => err instanceof StreamableHTTPError && err.code === 401, JSON.stringify(headers));
    }
    for (const method of ['GET', 'DELETE']) {
      const res = await h.request(method, '/mcp');
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'POST');
      assert.equal(res.body.error, 'method_not_allowed');
    }
  });
});

describe('MCP and the Origin of a browser\'s request (DNS rebinding)', () => {
  let h: Harness;
  let pinned: Harness;

  before(async () => {
    h = await startHarness({ listen: true });
    pinned = await startHarness({ model: false, env: { QUARRY_PUBLIC_URL: 'https://quarry.example.com', QUARRY_CORS_ORIGINS: 'https://app.example.com' } });
  });
  after(async () => {
    await h?.close();
    await pinned?.close();
  });

  it('refuses a foreign Origin with 403 origin_not_allowed, before the key is read; the service\'s own origin and no Origin pass', async () => {
    const foreign = { 'X-API-Key': h.key, Origin: 'http://rebound.example:8080' };
    await assert.rejects(connect(h.url, foreign), (err: unknown) => err instanceof StreamableHTTPError && err.code === 403);
    for (const method of ['POST', 'GET', 'DELETE']) {
      for (const key of [h.key, null]) {
        const res = await h.request(method, '/mcp', { key, headers: { Origin: 'http://rebound.example:8080' }, ...(method === 'POST' ? { body: {} } : {}) });
        assert.equal(res.status, 403, `${method} ${key ? 'with' : 'without'} a key`);
        assert.equal(res.body.error, 'origin_not_allowed');
        assert.equal(res.body.retryable, false);
      }
    }
    assert.equal((await h.request('POST', '/mcp', { headers: { Origin: 'null' }, body: {} })).status, 403, 'an opaque origin is foreign');

    // The page the service serves itself (same scheme, host and port), and a client that is no browser.
    const own = await connect(h.url, { 'X-API-Key': h.key, Origin: new URL(h.url).origin });
    assert.equal((await own.listTools()).tools.length, 7);
    await own.close();
    const plain = await connect(h.url, { 'X-API-Key': h.key });
    assert.equal((await plain.listTools()).tools.length, 7);
    await plain.close();
    // Other routes are not MCP's to guard.
    assert.equal((await h.request('GET', '/task', { headers: { Origin: 'http://rebound.example:8080' } })).status, 200);
  });

  it('with QUARRY_PUBLIC_URL the own origin is that one, not the request\'s Host; QUARRY_CORS_ORIGINS are allowed too', async () => {
    const status = async (origin: string) => (await pinned.request('GET', '/mcp', { headers: { Origin: origin } })).status;
    assert.equal(await status('https://quarry.example.com'), 405, 'the public origin reaches the route');
    assert.equal(await status('https://app.example.com'), 405, 'an origin QUARRY_CORS_ORIGINS allows');
    assert.equal(await status('http://localhost:80'), 403, 'the Host the request came to is not the public origin');
    assert.equal(await status('https://quarry.example.com.evil.example'), 403);
  });
});

describe('MCP on an --role api node of a PostgreSQL cluster', async () => {
  const skip = await skipWithoutPostgres();
  let model: FakeOpenAI | undefined;
  const schema = `t_mcp_${process.pid}`;
  const dirs: string[] = [];
  after(async () => {
    await killAll();
    await model?.close();
    for (const d of dirs) removeDataDir(d);
    if (!skip) await dropSchemas(schema);
  });

  it('starts a task on the api node, a worker runs it, and the api node waits and reads the rows', { skip }, async () => {
    model = await startFakeOpenAI();
    model.script(
      { toolCalls: [{ name: 'update_spec', arguments: { outputs: [TABLE] } }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'quarries', rows: [{ name: 'Rock of Ages' }] } }] },
      { text: 'Done.' },
    );
    const env = { QUARRY_DATABASE_URL: TEST_DATABASE_URL, QUARRY_DATABASE_SCHEMA: schema, QUARRY_MODEL_BASE_URL: model.url, QUARRY_MODEL: 'fake-model', QUARRY_ADMIN_KEY: 'mcp-admin' };
    const apiDir = makeDataDir();
    const workerDir = makeDataDir();
    dirs.push(apiDir, workerDir);
    const api = await startServer({ dataDir: apiDir, role: 'api', env, waitForStarterKey: true });
    await startServer({ dataDir: workerDir, role: 'worker', env });
    const client = await connect(api.url, { 'X-API-Key': api.starterKey! });
    try {
      const task = (await client.callTool({ name: 'start_task', arguments: { prompt: 'One quarry.' } })).structuredContent as Json;
      const progress: unknown[] = [];
      const state = (await client.callTool({ name: 'wait_for_task', arguments: { task_id: task.task_id, timeout_s: 30 } }, undefined, { onprogress: (p) => progress.push(p) })).structuredContent as Json;
      assert.equal(state.active, false, JSON.stringify(state));
      assert.ok(progress.length > 0, 'events from the worker reach the api node\'s waiter as progress');
      const rows = (await client.callTool({ name: 'read_rows', arguments: { task_id: task.task_id } })).structuredContent as Json;
      assert.deepEqual(rows.rows.map((r: Json) => r.name), ['Rock of Ages']);
    } finally {
      await client.close();
    }
  });
});
