/**
 * Task groups across kill -9 (decisions §15.2 groups, §5 durability): real `quarry serve`
 * processes from the build (test/kit/process.ts), the fake model, and crashes in the middle
 * of a group.
 *
 * 1. One process SIGKILLs itself at a crash point while a group of 40 inputs runs 4 at a time
 *    (QUARRY_CRASH_AT, src/crash-points.ts): right after the group's create committed, before it
 *    was answered (`group.created`); after a turn was claimed (`turn.claimed`); after a run's
 *    write_rows committed (`rows.appended`); after a run's end committed, which started the next
 *    run in the same transaction (`turn.finished`), and once more while recovering; after the
 *    last run's end committed with the group's `done` and its group.finished webhook. It is
 *    restarted over the same store each time; the group.finished webhook goes out exactly once.
 *    On SQLite; on PostgreSQL too with QUARRY_TEST_STORE=postgres (a restart there takes the dead
 *    process's turns once their leases run out).
 * 2. PostgreSQL only (QUARRY_TEST_STORE=postgres): one API process and two worker processes on
 *    one schema, each worker with a fake model of its own so every model call says which worker
 *    made it. A group of 100 inputs, 8 at a time, runs over both workers, each run on one; then
 *    in a second group one worker is kill -9ed while the model holds its calls, and the other
 *    worker finishes the group once the dead worker's leases run out.
 *
 * After every case (checkGroup): the group finished with every input completed once; one task
 * per input (GET /task?group_id=), each with one turn that started once and ended completed, and
 * the group's credits_used the sum of what those turns used; one merged row per input, written
 * by that input's task; the group's stream, replayed from the start, has gap-free seq numbers,
 * one `run` running and one `run` completed per input, and ends at `done`; what a client saw on the streams of the processes that died, each resumed with
 * Last-Event-ID, is exactly a prefix of it; no model call was ever made twice for the same step
 * of a run except one in flight when a process died, and no step was asked for again once a later
 * step had been asked for (its reply was stored); at most max_parallel runs were at the model at
 * once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply, type FakeRequestBody } from '../kit/fake-openai-server.js';
import { until, within } from '../kit/bounded-waits.js';
import { fetchJson, type TestResponse } from '../kit/http.js';
import { dropSchemas, skipWithoutPostgres, TEST_DATABASE_URL, testStoreEnv, withClient } from '../kit/postgres.js';
import { killAll, makeDataDir, removeDataDir, startServer, type ServerProcess } from '../kit/process.js';
import { startWebhookReceiver, type WebhookReceiver } from '../kit/webhook-receiver.js';
import { openSse, readSse, type SseEvent, type SseStream } from '../kit/sse-client.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const onPostgres = process.env.QUARRY_TEST_STORE === 'postgres';
const skipCluster = onPostgres ? await skipWithoutPostgres() : 'PostgreSQL only: runs with QUARRY_TEST_STORE=postgres (npm run test:postgres)';
/** A dead process's turns are taken over this long after its last lease renewal (PostgreSQL). */
const LEASE_SECONDS = 2;

// ---- the fake model: every call recorded by case, input, step and the server that got it ------------

interface ModelCall {
  input: number;
  /** Assistant messages already in the request: 0 asks for the write_rows step, 1 for the final text. */
  step: number;
  /** Which fake model server (so which worker) got it. */
  server: string;
  /** How many processes of the case had died when it arrived. */
  epoch: number;
}

interface GroupCase {
  id: string;
  calls: ModelCall[];
  /** Calls being answered now, and the most at once. */
  inFlight: number;
  maxInFlight: number;
  /** Processes of this case that died so far. */
  deaths: number;
  delayMs: number;
  /** Rows a run's write_rows step writes (default 1), in calls of at most 5,000. */
  rows?: number;
  /** Runs before the answer (a test may hold a call here). */
  gate?: (call: ModelCall) => Promise<void> | void;
}

const cases = new Map<string, GroupCase>();

function newCase(id: string, delayMs: number): GroupCase {
  const c: GroupCase = { id, calls: [], inFlight: 0, maxInFlight: 0, deaths: 0, delayMs };
  cases.set(id, c);
  return c;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The responder of the fake model server named `server`: step 0 writes the input's row, step 1 ends the turn. */
function responder(server: string) {
  return async (body: FakeRequestBody): Promise<FakeReply> => {
    const messages = body.messages ?? [];
    const users = messages.filter((m) => m.role === 'user').map((m) => String(m.content)).join('\n');
    const c = cases.get(/\[case:([\w.:-]+)\]/.exec(users)?.[1] ?? '');
    const input = /Input (\d+):\n(\{.*\})/.exec(users);
    if (!c || !input) return { text: 'Not a run of these tests.' };
    const call: ModelCall = { input: Number(input[1]), step: messages.filter((m) => m.role === 'assistant').length, server, epoch: c.deaths };
    c.calls.push(call);
    c.inFlight++;
    c.maxInFlight = Math.max(c.maxInFlight, c.inFlight);
    try {
      await c.gate?.(call);
      await sleep(c.delayMs);
    } finally {
      c.inFlight--;
    }
    const { company } = JSON.parse(input[2]!) as { company: string };
    if (call.step > 0) return { text: `Done with input ${call.input}.` };
    if (!c.rows) return { toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows: [{ hq: hqOf(company) }] } }] };
    const toolCalls = [];
    for (let first = 0; first < c.rows; first += 5000) {
      const rows = Array.from({ length: Math.min(5000, c.rows - first) }, (_, j) => ({ hq: `${hqOf(company)}, office ${first + j}` }));
      toolCalls.push({ name: 'write_rows', arguments: { output: 'facts', rows } });
    }
    return { toolCalls };
  };
}

const hqOf = (company: string) => `HQ of ${company}`;

function groupBody(c: GroupCase, inputs: number, maxParallel: number) {
  return {
    name: `durable ${c.id}`,
    task: {
      name: `durable ${c.id}`,
      prompt: `[case:${c.id}] For each company, find the city of its headquarters.`,
      input_columns: [{ name: 'company', type: 'string', required: true }],
      outputs: [{ id: 'facts', kind: 'table', columns: [{ name: 'hq', type: 'string' }] }],
      tools: [],
      limits: { max_credits_per_turn: 1e6 },
    },
    inputs: Array.from({ length: inputs }, (_, i) => ({ company: `${c.id} company ${i}` })),
    max_parallel: maxParallel,
  };
}

// ---- talking to the servers ---------------------------------------------------------------------

async function call(base: string, key: string, method: string, p: string, body?: unknown): Promise<TestResponse> {
  return fetchJson(method, base + p, { key, body });
}

async function waitSettled(base: string, key: string, groupId: string, timeoutMs: number): Promise<Json> {
  let group: Json;
  await until(`group ${groupId} to settle`, async () => {
    const res = await call(base, key, 'GET', `/group/${groupId}`);
    assert.equal(res.status, 200, res.text);
    group = res.body;
    return group.counts.pending + group.counts.running === 0;
  }, { timeoutMs, pollMs: 50 });
  return group;
}

/** Every run of the group, page after page of GET /task?group_id=. */
async function groupRuns(base: string, key: string, groupId: string): Promise<Json[]> {
  const runs: Json[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const res = await call(base, key, 'GET', `/task?limit=200&group_id=${groupId}${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(res.status, 200, res.text);
    runs.push(...res.body);
    cursor = res.headers.get('x-next-cursor');
    if (!cursor) return runs;
  }
  throw new Error(`more than 100 pages of runs in ${groupId}`);
}

/** The group's stream as a client sees it: from the start, or from after `lastId` as a resuming client asks. */
function openGroupStream(base: string, key: string, groupId: string, lastId?: string): Promise<SseStream> {
  return openSse(base, `/group/${groupId}/stream`, { key, headers: lastId ? { 'last-event-id': lastId } : {} });
}

const micros = (credits: number) => Math.round(credits * 1e6);
const idsOf = (events: SseEvent[]) => events.map((e) => Number(e.id));
const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

// ---- the checks ---------------------------------------------------------------------------------

interface Expect {
  inputs: number;
  maxParallel: number;
  /** What a client saw on the streams of the processes that died (each resumed from the one before). */
  seenBeforeDeaths: SseEvent[];
}

/** Everything a group must show once it settled, however many processes died on the way. */
async function checkGroup(base: string, key: string, groupId: string, c: GroupCase, expect: Expect): Promise<{ full: SseEvent[]; runs: Json[] }> {
  const n = expect.inputs;
  const group = (await call(base, key, 'GET', `/group/${groupId}`)).body;
  assert.equal(group.status, 'finished');
  assert.equal(group.inputs, n);
  assert.deepEqual(group.counts, { pending: 0, running: 0, completed: n, failed: 0, stopped: 0 }, 'every input completed once');

  // One task per input, each with one turn that started once and ended completed.
  const runs = await groupRuns(base, key, groupId);
  assert.equal(runs.length, n, `one task per input, got ${runs.length} tasks for ${n} inputs`);
  assert.deepEqual(runs.map((t) => t.input_index).sort((a, b) => a - b), range(0, n - 1), 'each input has exactly one task');
  assert.ok(runs.every((t) => t.group_id === groupId));
  const taskOf = new Map<number, string>(runs.map((t) => [t.input_index as number, t.task_id as string]));
  let runMicros = 0;
  await Promise.all(runs.map(async (t) => {
    const res = await call(base, key, 'GET', `/task/${t.task_id}/events?limit=1000`);
    assert.equal(res.status, 200, res.text);
    const events = res.body.events as Json[];
    const turns = new Set(events.map((e) => e.turn_id).filter(Boolean));
    assert.equal(turns.size, 1, `input ${t.input_index}: one turn (${[...turns].join(', ')})`);
    assert.equal(events.filter((e) => e.type === 'task' && e.reason === 'turn_started').length, 1, `input ${t.input_index}: its turn started once`);
    const dones = events.filter((e) => e.type === 'done');
    assert.deepEqual(dones.map((e) => e.outcome), ['completed'], `input ${t.input_index}: its turn ended once, completed`);
    runMicros += micros(dones[0].credits_used);
    assert.deepEqual(events.map((e) => e.seq), range(1, events.length), `input ${t.input_index}: gap-free task events`);
  }));
  assert.equal(micros(group.credits_used), runMicros, 'the group\'s credits_used is what its runs\' turns used, each counted once');

  // One merged row per input, written by its one task.
  const page = await call(base, key, 'GET', `/group/${groupId}/rows?limit=10000`);
  assert.equal(page.status, 200, page.text);
  assert.equal(page.body.total, n, `one row per input, got ${page.body.total}`);
  assert.deepEqual(page.body.rows.map((r: Json) => r._input), range(0, n - 1), 'rows in input order, each input once');
  for (const row of page.body.rows as Json[]) {
    assert.equal(row.hq, hqOf(row.company), `input ${row._input} has its own row`);
    assert.equal(row.company, `${c.id} company ${row._input}`);
    assert.equal(row._run.status, 'completed');
    assert.equal(row._run.task_id, taskOf.get(row._input), `input ${row._input}: the row is its task's`);
  }

  // The stream, replayed from the start on the process that is left: gap-free, one start and one end per input.
  const replay = await readSse(base, `/group/${groupId}/stream`, { key }, 30_000);
  assert.equal(replay.status, 200);
  assert.ok(replay.completed, 'the stream ended at done');
  const full = replay.events;
  assert.deepEqual(idsOf(full), range(1, full.length), 'gap-free seq numbers across the restarts');
  assert.equal(full.at(-1)!.event, 'done');
  assert.deepEqual(full.at(-1)!.json.group.counts, group.counts);
  assert.equal(full.filter((e) => e.event === 'done').length, 1, 'done once');
  assert.equal(full[0]!.event, 'group');
  assert.equal(full[0]!.json.reason, 'created');
  const runEvents = full.filter((e) => e.event === 'run').map((e) => e.json);
  for (let i = 0; i < n; i++) {
    const mine = runEvents.filter((r) => r.input === i);
    assert.deepEqual(mine.map((r) => r.status), ['running', 'completed'], `input ${i}: started once, completed once`);
    assert.ok(mine.every((r) => r.task_id === taskOf.get(i)), `input ${i}: its run events name its task`);
  }
  // What a client saw before the crashes is exactly what was stored, without a gap or a repeat.
  const seen = expect.seenBeforeDeaths;
  assert.deepEqual(seen.map((e) => [e.id, e.event, e.data]), full.slice(0, seen.length).map((e) => [e.id, e.event, e.data]), 'the streams of the dead processes showed a prefix of the stored events');

  // The model: each step of each run asked for once, but for a call in flight when a process died;
  // never a step whose reply was stored (a later step had been asked for) in an earlier life.
  for (let i = 0; i < n; i++) {
    const mine = c.calls.filter((x) => x.input === i);
    for (const step of [0, 1]) {
      const asked = mine.filter((x) => x.step === step);
      assert.ok(asked.length >= 1, `input ${i}: step ${step} was asked for`);
      const perEpoch = new Map<number, number>();
      for (const x of asked) perEpoch.set(x.epoch, (perEpoch.get(x.epoch) ?? 0) + 1);
      for (const [epoch, count] of perEpoch) assert.equal(count, 1, `input ${i}: step ${step} asked ${count} times between deaths ${epoch} and ${epoch + 1}`);
      const laterStepAt = Math.min(...mine.filter((x) => x.step > step).map((x) => x.epoch));
      assert.ok(asked.every((x) => x.epoch <= laterStepAt), `input ${i}: step ${step} asked for again after its reply was stored (${JSON.stringify(mine)})`);
    }
  }
  assert.ok(c.maxInFlight <= expect.maxParallel, `at most max_parallel (${expect.maxParallel}) runs at the model at once, saw ${c.maxInFlight}`);
  return { full, runs };
}

// ---- 1. kill -9 at crash points, one process ------------------------------------------------------

interface CrashCase {
  name: string;
  crashAt: string;
  /** QUARRY_CRASH_AT of each process that recovers in turn (each crashes once more). */
  recovery?: string[];
}

const CRASH_CASES: CrashCase[] = [
  { name: 'group.created (the create committed, not answered)', crashAt: 'group.created' },
  { name: 'turn.claimed:12', crashAt: 'turn.claimed:12' },
  { name: 'rows.appended:15', crashAt: 'rows.appended:15' },
  { name: 'turn.finished:10 (a run ended and the next started), then turn.finished:5 while recovering', crashAt: 'turn.finished:10', recovery: ['turn.finished:5'] },
  { name: 'turn.finished:40 (the last run ended: the group\'s done and its webhook committed, not published)', crashAt: 'turn.finished:40' },
];
const CRASH_INPUTS = 40;
const CRASH_PARALLEL = 4;

describe(`a group survives kill -9 of its only process (${onPostgres ? 'PostgreSQL' : 'SQLite'})`, { concurrency: true, timeout: 180_000 }, () => {
  let model: FakeOpenAI;
  let receiver: WebhookReceiver;
  before(async () => {
    model = await startFakeOpenAI();
    model.setResponder(responder('model'));
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await killAll();
    await model?.close();
    await receiver?.close();
  });

  for (const [i, crash] of CRASH_CASES.entries()) {
    it(`kill -9 at ${crash.name}: every input runs exactly once`, { timeout: 120_000 }, async (t) => {
      const c = newCase(`crash${i}`, 10);
      const dataDir = makeDataDir('quarry-groups-');
      const store = testStoreEnv('t_grpd');
      const env = {
        ...store.env,
        QUARRY_MODEL_BASE_URL: model.url,
        QUARRY_MODEL: 'fake-model',
        QUARRY_RATE_LIMIT_PER_MIN: '1000000',
        QUARRY_LEASE_SECONDS: String(LEASE_SECONDS),
        // The webhook receiver listens on loopback.
        QUARRY_FETCH_ALLOW_PRIVATE: '1',
      };
      const servers: ServerProcess[] = [];
      try {
        const first = await startServer({ dataDir, env, crashAt: crash.crashAt, waitForStarterKey: true });
        servers.push(first);
        const key = first.starterKey!;
        const hookPath = `/hook/${c.id}`;
        const endpoint = await call(first.url, key, 'POST', '/webhooks', { url: receiver.url + hookPath, events: ['group.finished'] });
        assert.equal(endpoint.status, 201, endpoint.text);
        let groupId: string | undefined;
        const created = await call(first.url, key, 'POST', '/group', groupBody(c, CRASH_INPUTS, CRASH_PARALLEL)).catch((err: Error) => err);
        if (!(created instanceof Error)) {
          assert.equal(created.status, 200, created.text);
          groupId = created.body.group_id as string;
        }
        const seen: SseEvent[] = [];
        // Each process that is to die: a client follows the group's stream until it dies, then
        // the next one resumes with Last-Event-ID.
        const follow = async (s: ServerProcess) => {
          if (!groupId || !s.url) return;
          const stream = await openGroupStream(s.url, key, groupId, seen.at(-1)?.id).catch(() => undefined);
          await within(s.exited, 60_000, `${s.name} to reach its crash point`);
          if (stream) {
            await stream.finished(5000);
            seen.push(...stream.events);
          }
        };
        await follow(first);
        const died = async (s: ServerProcess) => {
          const exit = await within(s.exited, 60_000, `${s.name} to reach its crash point`);
          assert.equal(exit.signal, 'SIGKILL', `${s.name} died at its crash point:\n${s.output()}`);
          c.deaths++;
        };
        await died(first);

        for (const again of crash.recovery ?? []) {
          const s = await startServer({ dataDir, env, crashAt: again });
          servers.push(s);
          groupId ??= s.url ? await onlyGroup(s.url, key) : undefined;
          await follow(s);
          await died(s);
        }

        const last = await startServer({ dataDir, env });
        servers.push(last);
        // An unanswered create is found in the list: it was stored before the crash.
        groupId ??= await onlyGroup(last.url, key);
        const resumed = seen.length > 0 ? await openGroupStream(last.url, key, groupId, seen.at(-1)!.id) : undefined;
        await waitSettled(last.url, key, groupId, 60_000);
        const { full } = await checkGroup(last.url, key, groupId, c, { inputs: CRASH_INPUTS, maxParallel: CRASH_PARALLEL, seenBeforeDeaths: seen });
        if (resumed) {
          await resumed.finished(10_000);
          assert.deepEqual(idsOf(resumed.events), idsOf(full).slice(seen.length), 'the stream resumed with Last-Event-ID went on from there, each event once, to done');
        }
        await checkFinishedWebhook(last.url, key, endpoint.body.webhook_id, receiver, hookPath, groupId, CRASH_INPUTS);
        t.diagnostic(`${c.deaths} deaths; ${seen.length} of ${full.length} group events seen before them; ${c.calls.length} model calls for ${CRASH_INPUTS * 2} steps; at most ${c.maxInFlight} runs at the model at once`);
      } finally {
        await Promise.all(servers.map((s) => s.kill9()));
        removeDataDir(dataDir);
        if (store.schema) await dropSchemas(store.schema);
      }
    });
  }
});

/** The group's end was announced once: one group.finished delivery, delivered, whatever was resent carrying its id and body. */
async function checkFinishedWebhook(base: string, key: string, webhookId: string, receiver: WebhookReceiver, hookPath: string, groupId: string, inputs: number): Promise<void> {
  let deliveries: Json[] = [];
  await until('the group.finished delivery to be delivered', async () => {
    const res = await call(base, key, 'GET', `/webhooks/${webhookId}/deliveries`);
    assert.equal(res.status, 200, res.text);
    deliveries = res.body.deliveries;
    return deliveries.length > 0 && deliveries.every((d) => d.status === 'delivered');
  }, { timeoutMs: 20_000, pollMs: 50 });
  assert.equal(deliveries.length, 1, `one group.finished delivery: ${JSON.stringify(deliveries)}`);
  assert.equal(deliveries[0].event, 'group.finished');
  const sent = receiver.received.filter((r) => r.path === hookPath);
  assert.ok(sent.length >= 1);
  assert.ok(sent.every((r) => r.headers['webhook-id'] === deliveries[0].delivery_id && r.body === sent[0]!.body), 'every request was that delivery, with the same body');
  const payload = JSON.parse(sent[0]!.body);
  assert.equal(payload.type, 'group.finished');
  assert.equal(payload.data.group_id, groupId);
  assert.equal(payload.data.group.status, 'finished');
  assert.equal(payload.data.group.counts.completed, inputs);
}

/** The account's one group (the test made one). */
async function onlyGroup(base: string, key: string): Promise<string> {
  const list = await call(base, key, 'GET', '/group');
  assert.equal(list.status, 200, list.text);
  assert.equal(list.body.length, 1, `the create committed before the crash: one group, got ${list.text}`);
  return list.body[0].group_id;
}

/** How many turns in `schema` run under `worker`'s lease. */
async function runningOn(schema: string, worker: string): Promise<number> {
  return withClient(async (c) => {
    const r = await c.query(`select count(*)::int as n from "${schema}".turns where status = 'running' and lease_owner = $1`, [worker]);
    return r.rows[0].n as number;
  });
}

// ---- 2. two workers on one PostgreSQL schema ------------------------------------------------------

const CLUSTER_INPUTS = 100;
const CLUSTER_PARALLEL = 8;

describe('a group over two worker processes on PostgreSQL', { timeout: 180_000, skip: skipCluster }, () => {
  const schema = `t_grpd_cluster_${process.pid}_${Date.now()}`;
  const dataDir = makeDataDir('quarry-groups-cluster-');
  const models = new Map<string, FakeOpenAI>();
  const workers = new Map<string, ServerProcess>();
  let api: ServerProcess;
  let key: string;

  const nodeEnv = (modelUrl: string, name: string) => ({
    QUARRY_DATABASE_URL: TEST_DATABASE_URL,
    QUARRY_DATABASE_SCHEMA: schema,
    QUARRY_MODEL_BASE_URL: modelUrl,
    QUARRY_MODEL: 'fake-model',
    QUARRY_WORKER_ID: name,
    QUARRY_LEASE_SECONDS: String(LEASE_SECONDS),
    QUARRY_RATE_LIMIT_PER_MIN: '1000000',
    QUARRY_STARTER_CREDITS: '100000',
  });

  before(async () => {
    for (const name of ['worker-1', 'worker-2']) {
      const model = await startFakeOpenAI();
      model.setResponder(responder(name));
      models.set(name, model);
    }
    // The first node migrates the empty schema and makes the starter account; the workers join it.
    api = await startServer({ name: 'api', role: 'api', dataDir, waitForStarterKey: true, env: nodeEnv(models.get('worker-1')!.url, 'api') });
    key = api.starterKey!;
    await Promise.all([...models.entries()].map(async ([name, model]) => {
      workers.set(name, await startServer({ name, role: 'worker', dataDir, env: nodeEnv(model.url, name) }));
    }));
  });

  after(async () => {
    await Promise.all([api, ...workers.values()].map((n) => n?.kill9()));
    await Promise.all([...models.values()].map((m) => m.close()));
    await dropSchemas(schema);
    removeDataDir(dataDir);
  });

  it(`runs ${CLUSTER_INPUTS} inputs over both workers, each once, at most max_parallel at once`, async (t) => {
    const c = newCase('cluster-both', 20);
    const created = await call(api.url, key, 'POST', '/group', groupBody(c, CLUSTER_INPUTS, CLUSTER_PARALLEL));
    assert.equal(created.status, 200, created.text);
    const groupId = created.body.group_id as string;
    await waitSettled(api.url, key, groupId, 60_000);
    await checkGroup(api.url, key, groupId, c, { inputs: CLUSTER_INPUTS, maxParallel: CLUSTER_PARALLEL, seenBeforeDeaths: [] });

    // Which worker ran each run: all of a run's calls reached one worker's model.
    const servedBy = new Map<number, Set<string>>();
    for (const x of c.calls) servedBy.set(x.input, (servedBy.get(x.input) ?? new Set()).add(x.server));
    for (const [input, servers] of servedBy) assert.equal(servers.size, 1, `input ${input} ran on one worker, not ${[...servers].join(' and ')}`);
    const perWorker = [...workers.keys()].map((w) => [...servedBy.values()].filter((s) => s.has(w)).length);
    t.diagnostic(`runs per worker: ${perWorker.join(' / ')}; at most ${c.maxInFlight} runs at the model at once`);
    assert.ok(perWorker.every((runs) => runs > 0), `both workers ran runs of the group (${perWorker.join(' / ')})`);
    assert.ok(c.maxInFlight >= 2, `runs overlapped (at most ${c.maxInFlight} at once)`);
  });

  it('finishes the group on the other worker when one is kill -9ed mid-group', async (t) => {
    const c = newCase('cluster-kill', 20);
    // Once 30 runs have started, the next worker to call the model is the victim: its calls are
    // held until it has been killed, so it dies with runs in flight.
    let victim: string | undefined;
    let release!: () => void;
    const released = new Promise<void>((r) => { release = r; });
    const held = new Set<number>();
    c.gate = async (x) => {
      if (c.deaths > 0 || new Set(c.calls.map((y) => y.input)).size < 30) return;
      victim ??= x.server;
      if (x.server !== victim) return;
      held.add(x.input);
      await released;
    };
    const created = await call(api.url, key, 'POST', '/group', groupBody(c, CLUSTER_INPUTS, CLUSTER_PARALLEL));
    assert.equal(created.status, 200, created.text);
    const groupId = created.body.group_id as string;
    // A client follows the group on the API node throughout.
    const stream = await openGroupStream(api.url, key, groupId);

    await until('the victim to hold a call', () => held.size > 0, { timeoutMs: 30_000 });
    // Its other runs reach the model too: every turn it holds a lease on is held at the model.
    await until('every run the victim leased to call the model', async () => held.size === (await runningOn(schema, victim!)), { timeoutMs: 30_000 });
    const victimProc = workers.get(victim!)!;
    await victimProc.kill9();
    c.deaths++;
    const killedAt = Date.now();
    const heldAtKill = [...held];
    release();

    const group = await waitSettled(api.url, key, groupId, 60_000);
    const tookMs = Date.now() - killedAt;
    await stream.finished(10_000);
    assert.ok(stream.completed, 'the stream on the API node followed the group to done');
    const { full } = await checkGroup(api.url, key, groupId, c, { inputs: CLUSTER_INPUTS, maxParallel: CLUSTER_PARALLEL, seenBeforeDeaths: [] });
    assert.deepEqual(idsOf(stream.events), idsOf(full), 'the client following the group saw every event once, in order');
    assert.equal(group.status, 'finished');

    const survivor = [...workers.keys()].find((w) => w !== victim)!;
    assert.ok(c.calls.every((x) => x.epoch === 0 || x.server === survivor), 'after the kill only the survivor called the model');
    for (const input of heldAtKill) {
      assert.ok(c.calls.some((x) => x.input === input && x.server === survivor && x.epoch === 1), `input ${input}, held by the dead worker, was finished by the survivor`);
    }
    t.diagnostic(`victim ${victim} died holding inputs ${heldAtKill.join(', ')}; the group finished ${tookMs} ms later (lease ${LEASE_SECONDS} s)`);
    assert.ok(tookMs < LEASE_SECONDS * 1000 + 40_000, `finished ${tookMs} ms after the kill`);
  });
});
