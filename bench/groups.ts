/**
 * The task-group benchmark (`npm run bench:groups`): what running many inputs as one group costs
 * against running them as single tasks, and what exporting a large merged table costs against
 * exporting one task's output. Quarry runs as `quarry serve` from the build (SQLite, or
 * PostgreSQL with BENCH_GROUPS_STORE=postgres); the fake model (test/kit/fake-openai-server.ts, OpenAI wire
 * protocol) runs in this process and answers every call at once. Everything talks over 127.0.0.1.
 *
 *   1. runs    A group of BENCH_GROUPS_INPUTS (1,000) inline inputs in one POST /group,
 *              max_parallel BENCH_GROUPS_PARALLEL (16), Quarry's QUARRY_MAX_CONCURRENT_TURNS the
 *              same: runs/s from the create to the group's end and Quarry's CPU per run.
 *              Same-run baseline: as many single tasks (POST /task/start with the same output and
 *              the input in the prompt), 16 creates in flight, timed from the first create to the
 *              last turn's end. Every run and every task is the same work: two model calls
 *              (write_rows of one row, then a final answer). After a warm-up of each, rounds in
 *              the order group, tasks, tasks, group (BENCH_GROUPS_ROUNDS pairs), so a drift over
 *              the run weighs on both alike. The end is read from the store, not over HTTP, so
 *              watching costs Quarry nothing.
 *   2. export  Memory and speed of GET /group/{id}/rows?format=csv over BENCH_GROUPS_EXPORT_ROWS
 *              (100,000) merged rows, written by 1,000 runs of 100 rows each. Same-run baseline:
 *              GET /task/{id}/output?format=csv of one task whose 100,000 rows carry the same
 *              cells (written as 20 write_rows calls of 5,000). Each export runs on a freshly
 *              started Quarry over the seeded store, so one export's heap is not the next one's
 *              starting point; exports alternate group, task, task, group, … Peak RSS growth is
 *              the process's VmHWM at the end (reset to the current RSS through
 *              /proc/<pid>/clear_refs just before the request) minus its VmRSS before; RSS is
 *              also sampled every 10 ms as a check.
 *
 * Results: a table on stdout and .bench/groups.json. Environment knobs (all optional):
 *   BENCH_GROUPS_ONLY=runs,export          run a subset
 *   BENCH_GROUPS_INPUTS=1000               runs per round (a group takes 1,000 inputs per request)
 *   BENCH_GROUPS_PARALLEL=16               the group's max_parallel, the creates in flight and
 *                                          QUARRY_MAX_CONCURRENT_TURNS
 *   BENCH_GROUPS_ROUNDS=2                  pairs of rounds (group, tasks, tasks, group, …)
 *   BENCH_GROUPS_EXPORT_ROWS=100000        rows exported; BENCH_GROUPS_ROWS_PER_RUN=100 of them per run
 *   BENCH_GROUPS_EXPORT_REPS=3             exports of each kind, each on a fresh process
 *   BENCH_GROUPS_EXPORT_NODE_ARGS=         Node flags of the exporting processes (e.g.
 *                                          --max-old-space-size=64: does an export fit a small heap?)
 *   BENCH_GROUPS_QUIET_WAIT_S=10           before each measured round and export, wait up to this long
 *                                          for other processes to use < 0.3 core
 *   BENCH_GROUPS_STORE=postgres            PostgreSQL (BENCH_GROUPS_DATABASE_URL, else
 *                                          QUARRY_TEST_DATABASE_URL, else postgres://root@127.0.0.1:5432/test),
 *                                          a fresh schema per benchmark, dropped at the end; the
 *                                          CPU of Quarry's PostgreSQL backends is reported apart
 *   BENCH_GROUPS_KEEP_SCHEMAS=1            keep the PostgreSQL schemas (BENCH_KEEP_DATA=1 keeps SQLite's data dirs)
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply, type FakeRequestBody } from '../test/kit/fake-openai-server.js';
import { within } from '../test/kit/bounded-waits.js';
import {
  cpuWindow, expectOk, freshDataDir, loadAverage, log, mapLimit, noteLoad, processCpu, processJiffies, reportHeader, round, sleep, startQuarry, startWatchdog, table,
  waitForQuiet, writeReport, type CpuUse, type QuarryProcess,
} from './lib.js';

const ONLY = new Set((process.env.BENCH_GROUPS_ONLY ?? 'runs,export').split(',').map((s) => s.trim()));
const INPUTS = Number(process.env.BENCH_GROUPS_INPUTS ?? 1000);
const PARALLEL = Number(process.env.BENCH_GROUPS_PARALLEL ?? 16);
const ROUNDS = Number(process.env.BENCH_GROUPS_ROUNDS ?? 2);
const WARMUP_INPUTS = 500;
const EXPORT_ROWS = Number(process.env.BENCH_GROUPS_EXPORT_ROWS ?? 100_000);
const ROWS_PER_RUN = Number(process.env.BENCH_GROUPS_ROWS_PER_RUN ?? 100);
const EXPORT_REPS = Number(process.env.BENCH_GROUPS_EXPORT_REPS ?? 3);
/** write_rows takes at most this many rows per call (src/outputs/row-validation.ts). */
const ROWS_PER_CALL = 5000;
/** A POST /group takes at most this many inline inputs; more go through POST /group/{id}/inputs. */
const INLINE_INPUTS = 1000;
const POSTGRES = process.env.BENCH_GROUPS_STORE === 'postgres';
const DATABASE_URL = process.env.BENCH_GROUPS_DATABASE_URL || process.env.QUARRY_TEST_DATABASE_URL || 'postgres://root@127.0.0.1:5432/test';
const RUN_TAG = `bench_groups_${process.pid}`;
const KEEP_SCHEMAS = process.env.BENCH_GROUPS_KEEP_SCHEMAS === '1';
const QUIET_WAIT_S = Number(process.env.BENCH_GROUPS_QUIET_WAIT_S ?? 10);
/** Node flags of the exporting processes, e.g. `--max-old-space-size=64` to see whether an export fits a small heap. */
const EXPORT_NODE_ARGS = (process.env.BENCH_GROUPS_EXPORT_NODE_ARGS ?? '').split(' ').filter(Boolean);

const LIMITS = { max_steps: 10, max_turn_seconds: 600, max_credits_per_turn: 1e9 };
const SOURCE = { url: 'https://example.com/registry', title: 'Company registry' };

// ---- the fake model ------------------------------------------------------------------------------

/**
 * What the model does, by phase. `runs`: a run's (or single task's) first call writes one row for
 * its input, the second ends the turn. `export-group`: a run writes ROWS_PER_RUN rows in one call.
 * `export-task`: the one task writes EXPORT_ROWS rows in calls of 5,000.
 */
let mode: 'runs' | 'export-group' | 'export-task' = 'runs';

function respond(body: FakeRequestBody): FakeReply {
  const messages = body.messages ?? [];
  if (messages.some((m) => m.role === 'assistant')) return { text: 'Done.' };
  const users = messages.filter((m) => m.role === 'user').map((m) => String(m.content)).join('\n');
  const index = Number(/Input (\d+):/.exec(users)?.[1] ?? 0);
  if (mode === 'runs') return { toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows: [{ hq: `City ${index % 500}`, employees: 100 + index }] } }] };
  if (mode === 'export-group') {
    const rows = Array.from({ length: ROWS_PER_RUN }, (_, j) => exportCells(index * ROWS_PER_RUN + j));
    return { toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows, sources: [SOURCE] } }] };
  }
  const toolCalls = [];
  for (let first = 0; first < EXPORT_ROWS; first += ROWS_PER_CALL) {
    const rows = Array.from({ length: Math.min(ROWS_PER_CALL, EXPORT_ROWS - first) }, (_, j) => {
      const i = first + j;
      return { ...inputOf(Math.floor(i / ROWS_PER_RUN)), ...exportCells(i) };
    });
    toolCalls.push({ name: 'write_rows', arguments: { output: 'facts', rows, sources: [SOURCE] } });
  }
  return { toolCalls };
}

// ---- specs and rows ------------------------------------------------------------------------------

const INPUT_COLUMNS = [{ name: 'company', type: 'string', required: true }, { name: 'founded', type: 'integer' }];
const RUN_COLUMNS = [{ name: 'hq', type: 'string' }, { name: 'employees', type: 'integer' }];
const EXPORT_COLUMNS = [
  { name: 'hq', type: 'string' },
  { name: 'country', type: 'string' },
  { name: 'employees', type: 'integer' },
  { name: 'revenue_musd', type: 'number' },
  { name: 'listed', type: 'boolean' },
  { name: 'website', type: 'url' },
  { name: 'note', type: 'string' },
];
const COUNTRIES = ['Germany', 'France', 'Poland', 'Hungary', 'Sweden', 'Spain', 'Italy', 'Czechia'];

function inputOf(i: number): { company: string; founded: number } {
  return { company: `Company ${i}`, founded: 1900 + (i % 120) };
}

function exportCells(i: number): Record<string, unknown> {
  return {
    hq: `City ${i % 500}`,
    country: COUNTRIES[i % COUNTRIES.length],
    employees: 100 + (i % 5000),
    revenue_musd: (i % 10_000) / 10,
    listed: i % 3 !== 0,
    website: `https://example.com/companies/${i}`,
    note: 'Head office and head count from the annual report.',
  };
}

const PROMPT = 'For each company, find the city of its headquarters and its head count.';

function groupSpec(columns: unknown[]) {
  return { name: 'Company facts (benchmark)', prompt: PROMPT, input_columns: INPUT_COLUMNS, outputs: [{ id: 'facts', kind: 'table', columns }], limits: LIMITS, tools: [] };
}

/** A single task doing what one run does: the same output, its input given in the prompt as a run's turn is given it. */
function singleSpec(i: number) {
  return {
    name: `Company facts ${i} (benchmark)`,
    prompt: `${PROMPT}\n\nInput ${i}:\n${JSON.stringify(inputOf(i))}`,
    outputs: [{ id: 'facts', kind: 'table', columns: RUN_COLUMNS }],
    limits: LIMITS,
    tools: [],
  };
}

// ---- the store, read from outside Quarry ------------------------------------------------------------

/** Reads the store Quarry writes, so that watching for the end costs Quarry nothing. */
interface Probe {
  /** Turns pending or running. */
  busyTurns(): Promise<number>;
  /** The group's inputs pending or running. */
  groupBusy(groupId: string): Promise<number>;
  totals(): Promise<{ completed: number; failed: number; rows: number }>;
  /** CPU seconds of the store's own processes working for Quarry over a window (PostgreSQL backends; 0 for SQLite, which runs in Quarry's process). */
  storeCpu(): { stop(): Promise<number> };
  close(): Promise<void>;
}

interface Store {
  env: Record<string, string>;
  dataDir: string;
  probe(): Promise<Probe>;
  drop(): Promise<void>;
}

let schemas = 0;

function newStore(label: string): Store {
  const dataDir = freshDataDir(`groups-${label}`);
  if (!POSTGRES) {
    return {
      env: {},
      dataDir,
      async probe() {
        const db = new Database(path.join(dataDir, 'quarry.db'), { readonly: true, fileMustExist: true });
        const busy = db.prepare("select count(*) from turns where status in ('pending', 'running')").pluck();
        const group = db.prepare('select pending + running from groups where id = ?').pluck();
        const totals = db.prepare("select (select count(*) from turns where status = 'completed') as completed, (select count(*) from turns where status = 'failed') as failed, (select count(*) from rows) as rows");
        return {
          busyTurns: async () => busy.get() as number,
          groupBusy: async (id) => group.get(id) as number,
          totals: async () => totals.get() as { completed: number; failed: number; rows: number },
          storeCpu: () => ({ stop: async () => 0 }),
          close: async () => void db.close(),
        };
      },
      drop: async () => {},
    };
  }
  const schema = `${RUN_TAG}_${Date.now()}_${schemas++}`;
  const workerId = `${RUN_TAG}-${label}`;
  liveSchemas.add(schema);
  return {
    env: { QUARRY_DATABASE_URL: DATABASE_URL, QUARRY_DATABASE_SCHEMA: schema, QUARRY_WORKER_ID: workerId },
    dataDir,
    async probe() {
      const c = new pg.Client({ connectionString: DATABASE_URL, application_name: `${RUN_TAG} harness` });
      await c.connect();
      const one = async (text: string, params: unknown[] = []) => Number(Object.values((await c.query(text, params)).rows[0] as object)[0]);
      const backends = async () => (await c.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [`quarry ${workerId}`])).rows.map((r) => r.pid);
      return {
        busyTurns: () => one(`select count(*) from "${schema}".turns where status in ('pending', 'running')`),
        groupBusy: (id) => one(`select pending + running from "${schema}".groups where id = $1`, [id]),
        totals: async () => ({
          completed: await one(`select count(*) from "${schema}".turns where status = 'completed'`),
          failed: await one(`select count(*) from "${schema}".turns where status = 'failed'`),
          rows: await one(`select count(*) from "${schema}".rows`),
        }),
        storeCpu() {
          // Quarry's pool opens and closes backends: sampled every 200 ms, each counted from its
          // first sample (from 0 when it was born within the window) to its last.
          const first = new Map<number, number>();
          const last = new Map<number, number>();
          let started = false;
          const sample = async () => {
            for (const pid of await backends()) {
              const j = processJiffies(pid);
              if (j === undefined) continue;
              if (!first.has(pid)) first.set(pid, started ? 0 : j);
              last.set(pid, j);
            }
            started = true;
          };
          const ready = sample();
          const timer = setInterval(() => void sample().catch(() => undefined), 200);
          return {
            async stop() {
              await ready;
              clearInterval(timer);
              await sample();
              let jiffies = 0;
              for (const [pid, j] of last) jiffies += j - first.get(pid)!;
              return jiffies / 100;
            },
          };
        },
        close: () => c.end(),
      };
    },
    async drop() {
      if (KEEP_SCHEMAS) return void log(`kept schema ${schema}`);
      await withPg((c) => c.query(`drop schema if exists "${schema}" cascade`));
      liveSchemas.delete(schema);
    },
  };
}

const liveSchemas = new Set<string>();

async function withPg<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: DATABASE_URL, application_name: `${RUN_TAG} harness` });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

function startStoreQuarry(store: Store, model: FakeOpenAI, label: string, key?: string, nodeArgs?: string[]): Promise<QuarryProcess> {
  return startQuarry({
    dataDir: store.dataDir, key, label, modelUrl: model.url, nodeArgs,
    env: { ...store.env, QUARRY_MAX_CONCURRENT_TURNS: String(PARALLEL), QUARRY_MAX_PENDING_TURNS: '1000000' },
  });
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 600_000): Promise<void> {
  await within((async () => {
    while (!(await check())) await sleep(10);
  })(), timeoutMs, what);
}

// ---- 1. runs: a group against single tasks -----------------------------------------------------------

interface Round {
  kind: 'group' | 'tasks';
  runs: number;
  seconds: number;
  runs_per_s: number;
  quarry_cpu_ms_per_run: number;
  store_cpu_ms_per_run: number;
  cpu: CpuUse;
  /** Cores other processes used in the second before the round (it waited up to BENCH_GROUPS_QUIET_WAIT_S for < 0.3). */
  foreign_before: number;
}

/** Creates a group of `n` inputs (in requests of at most 1,000) and returns its id. */
async function createGroup(q: QuarryProcess, n: number, first: number, columns: unknown[], maxParallel: number): Promise<string> {
  const inputs = (from: number, to: number) => Array.from({ length: to - from }, (_, j) => inputOf(first + from + j));
  const created = await expectOk('POST', `${q.url}/group`, { key: q.key, body: { task: groupSpec(columns), inputs: inputs(0, Math.min(n, INLINE_INPUTS)), max_parallel: maxParallel } });
  const id = created.body.group_id as string;
  for (let from = INLINE_INPUTS; from < n; from += INLINE_INPUTS) {
    await expectOk('POST', `${q.url}/group/${id}/inputs`, { key: q.key, body: { inputs: inputs(from, Math.min(n, from + INLINE_INPUTS)) } });
  }
  return id;
}

async function measureRound(kind: Round['kind'], q: QuarryProcess, probe: Probe, n: number, first: number, quiet = true): Promise<Round> {
  const foreign = quiet ? (await waitForQuiet(`runs: ${kind}`, 0.3, QUIET_WAIT_S * 1000)).foreign_cores : NaN;
  const before = await probe.totals();
  const cpu = cpuWindow();
  const quarryCpu = processCpu(q.child.proc.pid);
  const storeCpu = probe.storeCpu();
  const t = process.hrtime.bigint();
  if (kind === 'group') {
    const id = await createGroup(q, n, first, RUN_COLUMNS, PARALLEL);
    await until(`group ${id} to finish`, async () => (await probe.groupBusy(id)) === 0);
  } else {
    await mapLimit(Array.from({ length: n }, (_, i) => first + i), PARALLEL, async (i) => {
      await expectOk('POST', `${q.url}/task/start`, { key: q.key, body: { task: singleSpec(i) } });
    });
    await until('the tasks\' turns to end', async () => (await probe.busyTurns()) === 0);
  }
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  const quarryS = quarryCpu.stop();
  const storeS = await storeCpu.stop();
  const use = cpu.stop();
  const after = await probe.totals();
  // Every run completed once and wrote its one row: a figure for work not done means nothing.
  const got = { completed: after.completed - before.completed, failed: after.failed - before.failed, rows: after.rows - before.rows };
  if (got.completed !== n || got.failed !== 0 || got.rows !== n) throw new Error(`${kind}: ${n} runs should have completed with one row each, got ${JSON.stringify(got)}`);
  return {
    kind, runs: n, seconds: round(seconds, 2), runs_per_s: round(n / seconds), quarry_cpu_ms_per_run: round((quarryS * 1000) / n, 3), store_cpu_ms_per_run: round((storeS * 1000) / n, 3), cpu: use,
    foreign_before: foreign,
  };
}

async function benchRuns(model: FakeOpenAI) {
  mode = 'runs';
  const store = newStore('runs');
  const q = await startStoreQuarry(store, model, 'quarry-groups-runs');
  const probe = await store.probe();
  let next = 0;
  const take = (n: number) => {
    next += n;
    return next - n;
  };
  try {
    // Warm-up, not counted: the first rounds would otherwise pay for the JIT.
    await measureRound('group', q, probe, WARMUP_INPUTS, take(WARMUP_INPUTS), false);
    await measureRound('tasks', q, probe, WARMUP_INPUTS, take(WARMUP_INPUTS), false);
    const rounds: Round[] = [];
    for (let pair = 0; pair < ROUNDS; pair++) {
      const order: Round['kind'][] = pair % 2 === 0 ? ['group', 'tasks'] : ['tasks', 'group'];
      for (const kind of order) {
        const r = await measureRound(kind, q, probe, INPUTS, take(INPUTS));
        log(`runs: ${kind}: ${r.runs} runs in ${r.seconds} s = ${r.runs_per_s}/s, ${r.quarry_cpu_ms_per_run} ms Quarry CPU per run${POSTGRES ? ` + ${r.store_cpu_ms_per_run} ms PostgreSQL` : ''}; cores busy ${r.cpu.machine_cores} (foreign ${r.cpu.foreign_cores})`);
        rounds.push(r);
      }
    }
    const mean = (kind: Round['kind'], f: (r: Round) => number) => {
      const mine = rounds.filter((r) => r.kind === kind);
      return mine.reduce((s, r) => s + f(r), 0) / mine.length;
    };
    const summary = (kind: Round['kind']) => ({
      runs_per_s: round(mean(kind, (r) => r.runs_per_s)),
      quarry_cpu_ms_per_run: round(mean(kind, (r) => r.quarry_cpu_ms_per_run), 3),
      store_cpu_ms_per_run: round(mean(kind, (r) => r.store_cpu_ms_per_run), 3),
    });
    const group = summary('group');
    const tasks = summary('tasks');
    return {
      group, tasks,
      ratio_runs_per_s: round(group.runs_per_s / tasks.runs_per_s, 3),
      ratio_cpu_per_run: round(group.quarry_cpu_ms_per_run / tasks.quarry_cpu_ms_per_run, 3),
      ratio_store_cpu_per_run: POSTGRES ? round(group.store_cpu_ms_per_run / tasks.store_cpu_ms_per_run, 3) : null,
      rounds,
    };
  } finally {
    await probe.close();
    await q.child.stop('SIGTERM').catch(() => undefined);
    await store.drop();
  }
}

// ---- 2. export: a group's merged CSV against one task's ---------------------------------------------

function vm(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]) / 1024;
}

/** Resets the process's peak RSS (VmHWM) to its current RSS; false where the kernel does not allow it. */
function resetPeak(pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

interface ExportRun {
  kind: 'group' | 'task';
  rows: number;
  bytes: number;
  seconds: number;
  rows_per_s: number;
  mb_per_s: number;
  rss_before_mb: number;
  peak_rss_mb: number;
  peak_growth_mb: number;
  sampled_peak_mb: number;
  quarry_cpu_ms: number;
}

/** Streams `p` to its end, counting bytes and lines; returns the seconds to the last byte. */
function download(url: string, key: string): Promise<{ bytes: number; lines: number; seconds: number; status: number }> {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    const req = http.get(url, { headers: { 'x-api-key': key }, agent: false, timeout: 300_000 }, (res) => {
      let bytes = 0;
      let lines = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) lines++;
      });
      res.on('end', () => resolve({ bytes, lines, seconds: Number(process.hrtime.bigint() - t) / 1e9, status: res.statusCode ?? 0 }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}

/** One export on a fresh Quarry over the seeded store. */
async function measureExport(kind: ExportRun['kind'], store: Store, model: FakeOpenAI, key: string, p: string): Promise<ExportRun> {
  const q = await startStoreQuarry(store, model, `quarry-groups-export-${kind}`, key, EXPORT_NODE_ARGS);
  try {
    const pid = q.child.proc.pid!;
    await expectOk('GET', `${q.url}/healthz`);
    await waitForQuiet(`export: ${kind}`, 0.3, QUIET_WAIT_S * 1000);
    const before = vm(pid, 'VmRSS');
    const peakReset = resetPeak(pid);
    let sampled = before;
    const sampler = setInterval(() => {
      try {
        sampled = Math.max(sampled, vm(pid, 'VmRSS'));
      } catch {
        // gone
      }
    }, 10);
    const cpu = processCpu(pid);
    const got = await download(q.url + p, q.key);
    clearInterval(sampler);
    const cpuS = cpu.stop();
    if (got.status !== 200) throw new Error(`GET ${p} answered ${got.status}`);
    const rows = got.lines - 1;
    if (rows !== EXPORT_ROWS) throw new Error(`GET ${p}: ${rows} rows, not ${EXPORT_ROWS}`);
    sampled = Math.max(sampled, vm(pid, 'VmRSS'));
    const peak = peakReset ? Math.max(vm(pid, 'VmHWM'), sampled) : sampled;
    return {
      kind, rows, bytes: got.bytes, seconds: round(got.seconds, 3), rows_per_s: Math.round(rows / got.seconds), mb_per_s: round(got.bytes / 1e6 / got.seconds),
      rss_before_mb: round(before), peak_rss_mb: round(peak), peak_growth_mb: round(peak - before), sampled_peak_mb: round(sampled), quarry_cpu_ms: Math.round(cpuS * 1000),
    };
  } finally {
    await q.child.stop('SIGTERM').catch(() => undefined);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function benchExport(model: FakeOpenAI) {
  const store = newStore('export');
  const q = await startStoreQuarry(store, model, 'quarry-groups-export-seed');
  const key = q.key;
  const probe = await store.probe();
  let groupPath: string;
  let taskPath: string;
  const seed: Record<string, number> = {};
  try {
    const inputs = Math.ceil(EXPORT_ROWS / ROWS_PER_RUN);
    log(`export: seeding a group of ${inputs} runs × ${ROWS_PER_RUN} rows, and one task of ${EXPORT_ROWS} rows`);
    mode = 'export-group';
    let t = Date.now();
    const groupId = await createGroup(q, inputs, 0, EXPORT_COLUMNS, PARALLEL);
    await until('the seed group to finish', async () => (await probe.groupBusy(groupId)) === 0);
    seed.group_seconds = round((Date.now() - t) / 1000);
    const total = (await expectOk('GET', `${q.url}/group/${groupId}/rows?limit=1`, { key })).body.total as number;
    if (total !== EXPORT_ROWS) throw new Error(`the seed group has ${total} merged rows, not ${EXPORT_ROWS}`);

    mode = 'export-task';
    t = Date.now();
    const task = await expectOk('POST', `${q.url}/task/start`, {
      key, body: { task: { name: 'Company facts, one task (benchmark)', prompt: PROMPT, outputs: [{ id: 'facts', kind: 'table', columns: [...INPUT_COLUMNS, ...EXPORT_COLUMNS] }], limits: LIMITS, tools: [] } },
    });
    const taskId = task.body.task_id as string;
    await until('the seed task to finish', async () => (await probe.busyTurns()) === 0);
    seed.task_seconds = round((Date.now() - t) / 1000);
    const outputs = await expectOk('GET', `${q.url}/task/${taskId}/outputs`, { key });
    if (outputs.body.outputs?.[0]?.row_count !== EXPORT_ROWS) throw new Error(`the seed task has ${JSON.stringify(outputs.body)} rows, not ${EXPORT_ROWS}`);
    groupPath = `/group/${groupId}/rows?format=csv`;
    taskPath = `/task/${taskId}/output?format=csv`;
  } finally {
    await probe.close();
    await q.child.stop('SIGTERM').catch(() => undefined);
  }

  try {
    const runs: ExportRun[] = [];
    for (let rep = 0; rep < EXPORT_REPS; rep++) {
      const order: ExportRun['kind'][] = rep % 2 === 0 ? ['group', 'task'] : ['task', 'group'];
      for (const kind of order) {
        const r = await measureExport(kind, store, model, key, kind === 'group' ? groupPath : taskPath);
        log(`export: ${kind}: ${r.rows} rows, ${round(r.bytes / 1e6)} MB in ${r.seconds} s = ${r.rows_per_s} rows/s; RSS ${r.rss_before_mb} → peak ${r.peak_rss_mb} MB (+${r.peak_growth_mb}); ${r.quarry_cpu_ms} ms CPU`);
        runs.push(r);
      }
    }
    const summary = (kind: ExportRun['kind']) => {
      const mine = runs.filter((r) => r.kind === kind);
      return {
        rows_per_s: median(mine.map((r) => r.rows_per_s)), mb_per_s: median(mine.map((r) => r.mb_per_s)), seconds: median(mine.map((r) => r.seconds)),
        peak_growth_mb: median(mine.map((r) => r.peak_growth_mb)), rss_before_mb: median(mine.map((r) => r.rss_before_mb)),
        quarry_cpu_ms: median(mine.map((r) => r.quarry_cpu_ms)), bytes: mine[0]!.bytes,
      };
    };
    const group = summary('group');
    const task = summary('task');
    return {
      seed, group, task,
      ratio_rows_per_s: round(group.rows_per_s / task.rows_per_s, 3),
      ratio_peak_growth: round(group.peak_growth_mb / task.peak_growth_mb, 2),
      runs,
    };
  } finally {
    await store.drop();
  }
}

// ---- main ---------------------------------------------------------------------------------------

async function main(): Promise<void> {
  startWatchdog('bench:groups', 20 * 60_000);
  const started = new Date();
  const load = loadAverage();
  noteLoad(load);
  const model = await startFakeOpenAI();
  model.setResponder(respond);
  const report: Record<string, unknown> = {};
  const lines: string[][] = [['measure', 'group', 'single tasks / one task (baseline)', 'group : baseline']];
  try {
    if (ONLY.has('runs')) {
      const r = await benchRuns(model);
      report.runs = r;
      lines.push(
        [`runs/s, ${INPUTS} runs, ${PARALLEL} at once`, String(r.group.runs_per_s), String(r.tasks.runs_per_s), `${r.ratio_runs_per_s}×`],
        ['Quarry CPU per run, ms', String(r.group.quarry_cpu_ms_per_run), String(r.tasks.quarry_cpu_ms_per_run), `${r.ratio_cpu_per_run}×`],
      );
      if (POSTGRES) lines.push(['PostgreSQL CPU per run, ms', String(r.group.store_cpu_ms_per_run), String(r.tasks.store_cpu_ms_per_run), `${r.ratio_store_cpu_per_run}×`]);
    }
    if (ONLY.has('export')) {
      const e = await benchExport(model);
      report.export = e;
      lines.push(
        [`CSV export of ${EXPORT_ROWS} rows, rows/s`, String(e.group.rows_per_s), String(e.task.rows_per_s), `${e.ratio_rows_per_s}×`],
        ['  peak RSS growth, MB', String(e.group.peak_growth_mb), String(e.task.peak_growth_mb), `${e.ratio_peak_growth}×`],
        ['  MB/s (file size)', `${e.group.mb_per_s} (${round(e.group.bytes / 1e6)} MB)`, `${e.task.mb_per_s} (${round(e.task.bytes / 1e6)} MB)`, ''],
        ['  Quarry CPU per export, ms', String(e.group.quarry_cpu_ms), String(e.task.quarry_cpu_ms), `${round(e.group.quarry_cpu_ms / e.task.quarry_cpu_ms, 2)}×`],
      );
    }
    process.stdout.write(`\n${table(lines)}\n`);
    writeReport('groups.json', {
      ...reportHeader(started, load, { store: POSTGRES ? 'postgres' : 'sqlite' }),
      settings: { inputs: INPUTS, parallel: PARALLEL, rounds: ROUNDS, export_rows: EXPORT_ROWS, rows_per_run: ROWS_PER_RUN, export_reps: EXPORT_REPS, export_node_args: EXPORT_NODE_ARGS },
      ...report,
    });
  } finally {
    await model.close();
    if (!KEEP_SCHEMAS) for (const schema of liveSchemas) await withPg((c) => c.query(`drop schema if exists "${schema}" cascade`)).catch(() => undefined);
  }
  process.exit(0);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:groups failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
