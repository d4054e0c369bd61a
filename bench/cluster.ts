/**
 * The cluster benchmark: Quarry as several `quarry serve --role …` processes on one PostgreSQL
 * database. Run with `npm run bench:cluster` (builds, then runs the nodes from the build). Everything talks over 127.0.0.1; every
 * wait is bounded in count and time; a watchdog ends the run if anything hangs.
 *
 *   1. turns  Turns completed per second with an instantly answering fake model: one API node plus
 *             1 worker against one API node plus 2 workers, each layout on a fresh schema, in
 *             alternating rounds (1, 2, 2, 1). Per layout and round:
 *               - end-to-end: a batch of POST /task at a bounded concurrency while the workers run;
 *                 timed from the first create to the last turn's stored `ended_at`;
 *               - backlog drain: the workers are paused (SIGSTOP), the same batch is created, the
 *                 workers are resumed (SIGCONT) together; timed from the resume to the last
 *                 `ended_at`. This isolates the worker side from the API's create rate.
 *             Afterwards SQL checks that every acknowledged create has exactly one turn, started
 *             once, ended once as `completed`, and that the model was called once per turn.
 *   2. sse    SSE fan-out over two API nodes: `--role api` A and B plus one `--role worker`; one
 *             task whose turn emits events for BENCH_CLUSTER_SSE_WINDOW_S; the clients split half
 *             on A, half on B. Same-run baseline: the same number of clients, in the same number
 *             of client processes, all on node A of the same cluster, for a second task driven the
 *             same way. Latency = client receive time − the event's stored `at`.
 *
 * Per batch, the database's side besides CPU: write transactions (the transaction-id counter) and
 * the notifications and notices Quarry sent (a connection listening on its channels).
 *
 * CPU is accounted from /proc, sampled every 200 ms: each Quarry process, each SSE client process,
 * the harness (load generator and fake model), PostgreSQL working for this run (its nodes' and the
 * harness's backends, by application_name, plus the server's background processes), and the rest
 * of the machine (`foreign`, which includes other clients' PostgreSQL backends).
 *
 * Results: a table on stdout and .bench/cluster.json. Environment knobs (all optional):
 *   BENCH_CLUSTER_DATABASE_URL=postgres://root@127.0.0.1:5432/test   (else QUARRY_TEST_DATABASE_URL)
 *   BENCH_CLUSTER_ONLY=turns,sse          run a subset
 *   BENCH_CLUSTER_WORKERS=1,2             worker counts compared, one fresh schema each
 *   BENCH_CLUSTER_TURN_ROUNDS=2           rounds over the worker counts, the order alternating from
 *                                         round to round (1, 2, 2, 1), each layout on a fresh schema
 *   BENCH_CLUSTER_TURNS=1500              tasks (one turn each) per measured batch
 *   BENCH_CLUSTER_CONCURRENCY=32          creates in flight
 *   BENCH_CLUSTER_ACCOUNTS=1              accounts the tasks are spread over (more than one spreads
 *                                         the per-account rows: credits, rate-limit window)
 *   BENCH_CLUSTER_BACKLOG=1               0: skip the backlog-drain measurement
 *   BENCH_CLUSTER_SSE_CLIENTS=2000        SSE clients in all (one client process per half)
 *   BENCH_CLUSTER_SSE_WINDOW_S=10         how long each SSE turn emits events
 *   BENCH_CLUSTER_SSE_ROUNDS=2            rounds of (split, single-node), the order alternating
 *                                         from round to round (split, single, single, split)
 *   BENCH_QUIET_WAIT_S=10                 before each measurement, wait up to this long for other
 *                                         processes to use < 0.5 core
 *   BENCH_CLUSTER_KEEP_SCHEMAS=1          keep the PostgreSQL schemas (default: dropped on exit)
 *   BENCH_KEEP_DATA=1                     keep the nodes' temporary data dirs
 *   BENCH_CPU_PROF=1                      run every node with --cpu-prof: one profile per node and
 *                                         layout in .bench/prof/cluster/<schema>-<node>/ (written
 *                                         as the node stops); summarize with bench/profile-summary.ts
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { isAlive } from '../src/sandbox/cgroups.js';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply } from '../test/kit/fake-openai-server.js';
import {
  ROOT, expectOk, fetchEvents, freshDataDir, histLatency, loadAverage, log, machineJiffies, mapLimit, mergeHist, noteLoad, percentile,
  processJiffies, reportHeader, round, sleep, connectSseClients, sseResult, sseStepReply, sseStreamUrl, startSseTask, startQuarry, startWatchdog, table, timedRequest,
  waitForQuiet, writeReport,
  type Child, type SseClientResult,
} from './lib.js';
import { within } from '../test/kit/bounded-waits.js';

const DATABASE_URL = process.env.BENCH_CLUSTER_DATABASE_URL || process.env.QUARRY_TEST_DATABASE_URL || 'postgres://root@127.0.0.1:5432/test';
const ALL = ['turns', 'sse'] as const;
type BenchName = (typeof ALL)[number];
const ONLY = new Set((process.env.BENCH_CLUSTER_ONLY ?? ALL.join(',')).split(',').map((s) => s.trim()).filter(Boolean));
const WORKER_COUNTS = (process.env.BENCH_CLUSTER_WORKERS ?? '1,2').split(',').map((s) => Number(s.trim())).filter((n) => Number.isInteger(n) && n > 0);
const BATCH = Number(process.env.BENCH_CLUSTER_TURNS ?? 1500);
const TURN_ROUNDS = Math.max(1, Number(process.env.BENCH_CLUSTER_TURN_ROUNDS ?? 2));
const CONCURRENCY = Number(process.env.BENCH_CLUSTER_CONCURRENCY ?? 32);
const ACCOUNTS = Math.max(1, Number(process.env.BENCH_CLUSTER_ACCOUNTS ?? 1));
const BACKLOG = process.env.BENCH_CLUSTER_BACKLOG !== '0';
const SSE_CLIENTS = Number(process.env.BENCH_CLUSTER_SSE_CLIENTS ?? 2000);
const SSE_WINDOW_S = Number(process.env.BENCH_CLUSTER_SSE_WINDOW_S ?? 10);
const SSE_ROUNDS = Math.max(1, Number(process.env.BENCH_CLUSTER_SSE_ROUNDS ?? 2));
const QUIET_WAIT_S = Number(process.env.BENCH_QUIET_WAIT_S ?? 10);
const KEEP_SCHEMAS = process.env.BENCH_CLUSTER_KEEP_SCHEMAS === '1';
/** Small enough not to matter, large enough that connection pools, JIT and caches are warm when timing starts. */
const WARMUP_TURNS = 100;
/** A turn that takes longer than this per batch means something is stuck, not slow. */
const BATCH_TIMEOUT_MS = 240_000;
const WATCHDOG_MS = 10 * 60_000;
/** Every name this run gives a schema, a node or a PostgreSQL connection starts with this, so leftovers can be traced to a (dead) run. */
const RUN_TAG = `bench_cluster_${process.pid}`;
const ADMIN_KEY = `bench-admin-${randomUUID()}`;

// ---- PostgreSQL: the harness's own connection, schemas, and cleanup ----------------------------

let db: pg.Client | undefined;

async function sql<T extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<T[]> {
  if (!db) {
    db = new pg.Client({ connectionString: DATABASE_URL, application_name: `${RUN_TAG} harness` });
    await db.connect();
  }
  return (await db.query<T>(text, params)).rows;
}

/**
 * What a batch costs PostgreSQL besides CPU: write transactions (each takes a transaction id, so
 * the id counter moves by exactly their number, unlike pg_stat_database, whose counts backends
 * report up to seconds late) and the notifications Quarry sends, counted by listening to its
 * channels, with the notices they carry (one per line).
 */
interface DbActivity {
  write_transactions: number;
  notifications: number;
  notices: number;
}

async function dbActivityWindow(): Promise<{ stop(): Promise<DbActivity> }> {
  const listener = new pg.Client({ connectionString: DATABASE_URL, application_name: `${RUN_TAG} notify counter` });
  await listener.connect();
  let notifications = 0;
  let notices = 0;
  listener.on('notification', (msg) => {
    notifications++;
    notices += (msg.payload ?? '').split('\n').length;
  });
  for (const channel of ['quarry_events', 'quarry_control']) await listener.query(`LISTEN ${channel}`);
  const xid = async () => Number((await sql<{ xid: string }>('select pg_current_xact_id()::text as xid'))[0]!.xid);
  const first = await xid();
  return {
    async stop() {
      // Notifications sent just before the end are delivered within moments.
      await sleep(200);
      // The second read takes an id of its own.
      const writes = (await xid()) - first - 1;
      await listener.end();
      return { write_transactions: writes, notifications, notices };
    },
  };
}

const liveSchemas = new Set<string>();

function newSchema(label: string): string {
  const name = `${RUN_TAG}_${label}_${Date.now().toString(36)}`;
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`schema name "${name}" is not a plain identifier`);
  liveSchemas.add(name);
  return name;
}

/** Drops a schema once the nodes using it have stopped (their connections are gone, so nothing holds a lock). */
async function dropSchema(schema: string): Promise<void> {
  if (KEEP_SCHEMAS) return;
  await sql(`drop schema if exists "${schema}" cascade`);
  liveSchemas.delete(schema);
}

/**
 * On any exit (error, watchdog, Ctrl-C: lib.ts turns signals into process.exit) only synchronous
 * work runs, so the leftover schemas are dropped by a short child process. lib.ts's own exit
 * handler, registered first, has already SIGKILLed the nodes; their backends may still be ending,
 * so they are terminated first and the drop waits for locks only briefly.
 */
const DROP_SCRIPT = `
const pg = require('pg');
(async () => {
  const c = new pg.Client({ connectionString: process.env.BENCH_DROP_URL });
  await c.connect();
  const prefix = process.env.BENCH_DROP_APP_PREFIX;
  await c.query('select pg_terminate_backend(pid) from pg_stat_activity where left(application_name, length($1)) = $1 and pid <> pg_backend_pid()', [prefix]);
  await c.query("set lock_timeout = '10s'");
  for (const s of JSON.parse(process.env.BENCH_DROP_SCHEMAS)) await c.query('drop schema if exists "' + s + '" cascade');
  await c.end();
})().catch((err) => { process.stderr.write('dropping the benchmark schemas failed: ' + err.message + '\\n'); process.exit(1); });
`;

function dropSchemasSync(schemas: string[]): void {
  const r = spawnSync(process.execPath, ['-e', DROP_SCRIPT], {
    cwd: ROOT,
    env: { ...process.env, BENCH_DROP_URL: DATABASE_URL, BENCH_DROP_SCHEMAS: JSON.stringify(schemas), BENCH_DROP_APP_PREFIX: `quarry ${RUN_TAG}` },
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 30_000,
  });
  if (r.status === 0) process.stderr.write(`[bench] dropped leftover schemas: ${schemas.join(', ')}\n`);
}

process.on('exit', () => {
  if (!KEEP_SCHEMAS && liveSchemas.size > 0) dropSchemasSync([...liveSchemas]);
});

/** Schemas left by an earlier run that was SIGKILLed (its pid is gone): the exit handler never ran there. */
async function sweepStaleSchemas(): Promise<string[]> {
  const rows = await sql<{ nspname: string }>(`select nspname from pg_namespace where nspname like 'bench\\_cluster\\_%'`);
  const dropped: string[] = [];
  // Orphaned nodes of that run may still hold locks in it: give up on a schema rather than wait.
  await sql(`set lock_timeout = '5s'`);
  try {
    for (const { nspname } of rows) {
      const pid = Number(/^bench_cluster_(\d+)_/.exec(nspname)?.[1]);
      if (!pid || pid === process.pid || isAlive(pid)) continue;
      try {
        await sql(`drop schema if exists "${nspname}" cascade`);
        dropped.push(nspname);
      } catch (err) {
        log(`could not drop ${nspname} (left by a killed run): ${(err as Error).message}`);
      }
    }
  } finally {
    await sql('reset lock_timeout');
  }
  return dropped;
}

// ---- CPU accounting: every process of ours, PostgreSQL's, and the rest of the machine ----------

/** Every process whose command is `postgres`: the postmaster, its helpers and all backends. */
function postgresPids(): number[] {
  const pids: number[] = [];
  let entries: string[] = [];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return pids;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * The PostgreSQL processes that work for this benchmark: the backends of this run's nodes and of
 * the harness (told apart by application_name), plus the server's background processes (WAL
 * writer, checkpointer, autovacuum…). Other clients' backends (on a shared server, other test
 * runs) are foreign load.
 */
async function ourPostgresPids(): Promise<number[]> {
  const rows = await sql<{ pid: number }>(
    `select pid from pg_stat_activity where backend_type <> 'client backend' or strpos(coalesce(application_name, ''), $1) > 0`,
    [RUN_TAG],
  );
  return rows.map((r) => r.pid);
}

interface Usage {
  seconds: number;
  /** Cores busy machine-wide, and the share of: this harness and its children, PostgreSQL working for them, anything else. */
  machine_cores: number;
  ours_cores: number;
  postgres_cores: number;
  foreign_cores: number;
  steal_cores: number;
  /** CPU seconds per Quarry node and client process (by name), the harness (load generator + fake model), and PostgreSQL. */
  cpu_s: Record<string, number>;
}

const SAMPLE_MS = 200;
/** Every this many samples, /proc is scanned for new PostgreSQL processes and pg_stat_activity read to learn which are ours. */
const PG_REFRESH_SAMPLES = 3;

/**
 * CPU use over a window, sampled every SAMPLE_MS rather than read only at both ends: SSE client
 * processes exit as soon as their streams end, and PostgreSQL backends come and go with the
 * pools, so a process gone by the end still counts up to its last sample (otherwise its work
 * would be booked as foreign load). A backend first seen after the start was born within the
 * window and counts in full.
 */
async function usageWindow(nodes: QNode[], extra: Child[] = []): Promise<{ stop(): Promise<Usage> }> {
  const named = new Map<number, string>([[process.pid, 'harness']]);
  for (const c of [...nodes.map((n) => n.child), ...extra]) if (c.proc.pid) named.set(c.proc.pid, c.name);
  const ownPg = new Set(await ourPostgresPids());
  const t0 = process.hrtime.bigint();
  const m0 = machineJiffies();
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  const pgFirst = new Map<number, number>();
  const pgLast = new Map<number, number>();
  for (const pid of named.keys()) {
    const j = processJiffies(pid);
    if (j === undefined) continue;
    first.set(pid, j);
    last.set(pid, j);
  }
  let pgPids = postgresPids();
  for (const pid of pgPids) {
    const j = processJiffies(pid);
    if (j === undefined) continue;
    pgFirst.set(pid, j);
    pgLast.set(pid, j);
  }
  let refreshing: Promise<void> | undefined;
  const refresh = () => {
    refreshing ??= ourPostgresPids()
      .then((pids) => pids.forEach((pid) => ownPg.add(pid)))
      .catch(() => undefined)
      .finally(() => (refreshing = undefined));
    return refreshing;
  };
  let samples = 0;
  /** `rescan`: look for PostgreSQL processes born since the last scan (a new one counts from 0: it was born within the window). */
  const sample = (rescan: boolean) => {
    if (rescan) pgPids = postgresPids();
    for (const pid of named.keys()) {
      const j = processJiffies(pid);
      if (j !== undefined) last.set(pid, j);
    }
    for (const pid of pgPids) {
      const j = processJiffies(pid);
      if (j === undefined) continue;
      if (!pgFirst.has(pid)) pgFirst.set(pid, 0);
      pgLast.set(pid, j);
    }
    if (rescan) void refresh();
  };
  const timer = setInterval(() => sample(++samples % PG_REFRESH_SAMPLES === 0), SAMPLE_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      sample(true);
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      const m1 = machineJiffies();
      await refresh();
      const cpu_s: Record<string, number> = {};
      let ours = 0;
      for (const [pid, name] of named) {
        const used = first.has(pid) ? (last.get(pid)! - first.get(pid)!) / 100 : NaN;
        cpu_s[name] = round(used, 2);
        if (Number.isFinite(used)) ours += used;
      }
      let pgS = 0;
      let pgOtherS = 0;
      for (const [pid, j0] of pgFirst) {
        const used = ((pgLast.get(pid) ?? j0) - j0) / 100;
        if (ownPg.has(pid)) pgS += used;
        else pgOtherS += used;
      }
      cpu_s.postgres = round(pgS, 2);
      cpu_s.postgres_other_clients = round(pgOtherS, 2);
      const machineS = m0 && m1 ? (m1.busy - m0.busy) / 100 : NaN;
      const cores = (x: number) => round(x / seconds, 2);
      return {
        seconds: round(seconds, 2),
        machine_cores: cores(machineS),
        ours_cores: cores(ours),
        postgres_cores: cores(pgS),
        foreign_cores: cores(Math.max(0, machineS - ours - pgS)),
        steal_cores: m0 && m1 ? cores((m1.steal - m0.steal) / 100) : NaN,
        cpu_s,
      };
    },
  };
}

// ---- Quarry nodes ---------------------------------------------------------------------------------

type Role = 'api' | 'worker';

interface QNode {
  name: string;
  role: Role;
  url: string;
  child: Child;
}

/** `quarry serve --role <role>` on the schema (lib.ts's startQuarry sets the loopback port, limits, log level, sandbox and model). */
async function startNode(schema: string, role: Role, name: string, modelUrl: string): Promise<QNode> {
  const q = await startQuarry({
    // A worker caches uploads here; nothing else is written to disk in cluster mode.
    dataDir: freshDataDir(`cluster-${name}`),
    nodeArgs: process.env.BENCH_CPU_PROF === '1' ? ['--cpu-prof', `--cpu-prof-dir=${path.join(ROOT, '.bench', 'prof', 'cluster', `${schema}-${name}`)}`] : [],
    modelUrl,
    role,
    label: name,
    // startCluster reads the starter key from the first node only.
    waitForKey: false,
    listenTimeoutMs: 60_000,
    env: {
      QUARRY_DATABASE_URL: DATABASE_URL,
      QUARRY_DATABASE_SCHEMA: schema,
      QUARRY_ADMIN_KEY: ADMIN_KEY,
      // Names the node's connections (application_name `quarry <id>`), so the exit handler can end them.
      QUARRY_WORKER_ID: `${RUN_TAG}-${name}`,
      // A backlog of BATCH turns must be accepted, not answered 503 at_capacity.
      QUARRY_MAX_PENDING_TURNS: '1000000',
    },
  });
  if (!q.child.proc.pid) throw new Error(`${name} has no pid`);
  return { name, role, url: q.url, child: q.child };
}

/**
 * The first node migrates the fresh schema and creates the starter account (its key is printed
 * once); the others join after it, as in test/process/cluster.test.ts.
 */
async function startCluster(schema: string, modelUrl: string, layout: { name: string; role: Role }[]): Promise<{ nodes: QNode[]; key: string }> {
  const nodes: QNode[] = [];
  try {
    const first = await startNode(schema, layout[0]!.role, layout[0]!.name, modelUrl);
    nodes.push(first);
    const key = (await first.child.waitForLine(/^starter api key: (\S+)/, 10_000))[1]!;
    const rest = await Promise.all(layout.slice(1).map((n) => startNode(schema, n.role, n.name, modelUrl)));
    nodes.push(...rest);
    return { nodes, key };
  } catch (err) {
    await stopNodes(nodes);
    throw err;
  }
}

async function stopNodes(nodes: QNode[]): Promise<void> {
  for (const n of nodes) resume(n);
  await Promise.all(nodes.map((n) => n.child.stop('SIGTERM', 10_000)));
}

/** A node that died mid-run would turn every later figure into nonsense: stop with its last words instead. */
function assertAlive(nodes: QNode[]): void {
  for (const n of nodes) {
    const exit = n.child.exitStatus();
    if (exit !== null) throw new Error(`${n.name} exited (${exit}) during the run; stderr tail:\n${n.child.stderr().slice(-2000)}`);
  }
}

function pause(n: QNode): void {
  process.kill(n.child.proc.pid!, 'SIGSTOP');
}

function resume(n: QNode): void {
  try {
    process.kill(n.child.proc.pid!, 'SIGCONT');
  } catch {
    // already gone
  }
}

/** The starter key plus ACCOUNTS − 1 accounts made through the admin API, each with its own key. */
async function accountKeys(api: QNode, starterKey: string): Promise<string[]> {
  const keys = [starterKey];
  for (let i = 1; i < ACCOUNTS; i++) {
    const r = await expectOk('POST', `${api.url}/admin/accounts`, { key: ADMIN_KEY, body: { name: `bench ${i}`, credits: 1e9 } });
    keys.push(r.body.api_key as string);
  }
  return keys;
}

interface Submitted {
  requested: number;
  acknowledged: number;
  /** 429/503 answers that were retried (they should not happen with the limits raised). */
  retried: number;
  /** Final answers other than 200, by status (or `error:<message>`). */
  failed: Record<string, number>;
  ms: number;
  creates_per_s: number;
}

/** `n` POST /task at CONCURRENCY in flight, spread round-robin over the accounts' keys. */
async function submit(api: QNode, keys: string[], n: number, label: string): Promise<Submitted> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const out: Submitted = { requested: n, acknowledged: 0, retried: 0, failed: {}, ms: 0, creates_per_s: 0 };
  const t0 = Date.now();
  try {
    await mapLimit(Array.from({ length: n }, (_, i) => i), CONCURRENCY, async (i) => {
      const body = JSON.stringify({ prompt: `Cluster benchmark ${label} task ${i}: answer in one line.` });
      for (let attempt = 0; attempt < 5; attempt++) {
        let status: number;
        try {
          status = (await timedRequest('POST', `${api.url}/task`, agent, { 'x-api-key': keys[i % keys.length]! }, { body, timeoutMs: 60_000 })).status;
        } catch (err) {
          const k = `error:${(err as Error).message.slice(0, 80)}`;
          out.failed[k] = (out.failed[k] ?? 0) + 1;
          return;
        }
        if (status === 200) {
          out.acknowledged++;
          return;
        }
        if (status !== 429 && status !== 503) {
          out.failed[status] = (out.failed[status] ?? 0) + 1;
          return;
        }
        out.retried++;
        await sleep(500);
      }
      out.failed.gave_up = (out.failed.gave_up ?? 0) + 1;
    });
  } finally {
    agent.destroy();
  }
  out.ms = Date.now() - t0;
  out.creates_per_s = round((out.acknowledged * 1000) / out.ms, 1);
  if (out.acknowledged < n) {
    const exit = api.child.exitStatus();
    log(`${label}: only ${out.acknowledged} of ${n} creates acknowledged: ${JSON.stringify(out.failed)}${exit !== null ? `; ${api.name} exited (${exit}): ${api.child.stderr().slice(-1500)}` : ''}`);
  }
  return out;
}

// ---- 1. turns/s, 1 worker against 2 -------------------------------------------------------------

/** Polls a cheap count until `total` turns have ended; returns the latest stored `ended_at` (ms). */
async function waitTurnsEnded(schema: string, total: number, timeoutMs: number): Promise<number> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    // No index on ended_at: a scan of a few thousand narrow rows five times a second, small next
    // to the turns' own queries; the end time comes from the stored ended_at, not from this poll.
    const [row] = await sql<{ ended: string; last: string | null }>(`select count(*) as ended, max(ended_at) as last from "${schema}".turns where ended_at is not null`);
    if (Number(row!.ended) >= total) return Date.parse(row!.last!);
    if (Date.now() > until) throw new Error(`only ${row!.ended} of ${total} turns ended within ${timeoutMs} ms`);
    await sleep(200);
  }
}

interface BatchResult {
  turns: number;
  /** ms from the start (first create, or the workers' resume) to the last turn's `ended_at`. */
  ms: number;
  turns_per_s: number;
  creates: Submitted;
  /** CPU seconds by who spent them; `all` is every process of the benchmark plus PostgreSQL. */
  cpu_s: CpuByGroup;
  /** The same per turn, in ms. */
  cpu_ms_per_turn: CpuByGroup;
  usage: Usage;
  db: DbActivity;
  /** db per turn. */
  db_per_turn: { write_transactions: number; notifications: number; notices: number };
}

interface CpuByGroup {
  workers: number;
  api: number;
  postgres: number;
  harness: number;
  all: number;
}

function byGroup(value: (group: keyof CpuByGroup) => number): CpuByGroup {
  return { workers: value('workers'), api: value('api'), postgres: value('postgres'), harness: value('harness'), all: value('all') };
}

function perTurnMs(cpuS: CpuByGroup, turns: number): CpuByGroup {
  return byGroup((k) => round((cpuS[k] * 1000) / turns, 2));
}

/** A batch's figures; each acknowledged create is one turn. */
function batchResult(ms: number, creates: Submitted, usage: Usage, db: DbActivity, nodes: QNode[]): BatchResult {
  const turns = creates.acknowledged;
  if (turns === 0) throw new Error(`no create was acknowledged: ${JSON.stringify(creates.failed)}`);
  const nodeCpu = (workers: boolean) => nodes.filter((n) => (n.role === 'worker') === workers).reduce((s, n) => s + (usage.cpu_s[n.name] ?? 0), 0);
  const cpuS: CpuByGroup = {
    workers: nodeCpu(true),
    api: nodeCpu(false),
    postgres: usage.cpu_s.postgres ?? 0,
    harness: usage.cpu_s.harness ?? 0,
    all: Object.entries(usage.cpu_s).filter(([k]) => k !== 'postgres_other_clients').reduce((sum, [, v]) => sum + v, 0),
  };
  return { turns, ms, turns_per_s: round((turns * 1000) / ms, 1), creates, cpu_s: cpuS, cpu_ms_per_turn: perTurnMs(cpuS, turns), usage, db, db_per_turn: dbPerTurn(db, turns) };
}

function dbPerTurn(db: DbActivity, turns: number): BatchResult['db_per_turn'] {
  return { write_transactions: round(db.write_transactions / turns, 2), notifications: round(db.notifications / turns, 2), notices: round(db.notices / turns, 2) };
}

interface Verification {
  acknowledged_creates: number;
  tasks: number;
  turns: number;
  turns_by_status: Record<string, number>;
  tasks_without_exactly_one_turn: number;
  turns_not_started_once: number;
  turns_without_exactly_one_done: number;
  turns_not_completed: number;
  error_events: number;
  model_calls: number;
  anomalies: string[];
}

async function verifyTurns(schema: string, acknowledged: number, modelCalls: number): Promise<Verification> {
  const s = `"${schema}"`;
  const [counts] = await sql<{ tasks: string; turns: string; multi: string; errors: string }>(
    `select (select count(*) from ${s}.tasks) as tasks, (select count(*) from ${s}.turns) as turns,
            (select count(*) from (select t.id from ${s}.tasks t left join ${s}.turns u on u.task_id = t.id group by t.id having count(u.id) <> 1) x) as multi,
            (select count(*) from ${s}.events where type = 'error') as errors`,
  );
  const byStatus = await sql<{ status: string; n: string }>(`select status, count(*) as n from ${s}.turns group by status order by status`);
  const [perTurn] = await sql<{ started_bad: string; done_bad: string; not_completed: string }>(
    `select count(*) filter (where started <> 1) as started_bad, count(*) filter (where done <> 1) as done_bad, count(*) filter (where completed <> 1) as not_completed
       from (select t.id,
                    count(e.seq) filter (where e.type = 'task' and e.data::jsonb->>'reason' = 'turn_started') as started,
                    count(e.seq) filter (where e.type = 'done') as done,
                    count(e.seq) filter (where e.type = 'done' and e.data::jsonb->>'outcome' = 'completed') as completed
               from ${s}.turns t left join ${s}.events e on e.task_id = t.task_id and e.turn_id = t.id
              group by t.id) x`,
  );
  const v: Verification = {
    acknowledged_creates: acknowledged,
    tasks: Number(counts!.tasks),
    turns: Number(counts!.turns),
    turns_by_status: Object.fromEntries(byStatus.map((r) => [r.status, Number(r.n)])),
    tasks_without_exactly_one_turn: Number(counts!.multi),
    turns_not_started_once: Number(perTurn!.started_bad),
    turns_without_exactly_one_done: Number(perTurn!.done_bad),
    turns_not_completed: Number(perTurn!.not_completed),
    error_events: Number(counts!.errors),
    model_calls: modelCalls,
    anomalies: [],
  };
  const a = v.anomalies;
  if (v.tasks !== acknowledged) a.push(`${acknowledged} creates acknowledged but ${v.tasks} tasks stored`);
  if (v.turns !== v.tasks) a.push(`${v.tasks} tasks but ${v.turns} turns`);
  if (v.tasks_without_exactly_one_turn) a.push(`${v.tasks_without_exactly_one_turn} tasks without exactly one turn`);
  if ((v.turns_by_status.completed ?? 0) !== v.turns) a.push(`turns by status: ${JSON.stringify(v.turns_by_status)}`);
  if (v.turns_not_started_once) a.push(`${v.turns_not_started_once} turns without exactly one turn_started event`);
  if (v.turns_without_exactly_one_done) a.push(`${v.turns_without_exactly_one_done} turns without exactly one done event`);
  if (v.turns_not_completed) a.push(`${v.turns_not_completed} turns whose done is not completed`);
  if (v.error_events) a.push(`${v.error_events} error events`);
  // Each turn is one model call (a final text, no tools): more means a turn ran, or retried, twice.
  if (modelCalls !== v.turns) a.push(`${modelCalls} model calls for ${v.turns} turns`);
  return v;
}

interface TurnsRun {
  workers: number;
  round: number;
  schema: string;
  end_to_end: BatchResult;
  backlog?: BatchResult;
  verification: Verification;
  foreign_cores_before_start: number;
}

async function benchTurns(workers: number, roundNo: number): Promise<TurnsRun> {
  const schema = newSchema(`turns_w${workers}_r${roundNo}`);
  // The model answers every call at once with a short final text: a turn is one model call, and
  // everything measured is Quarry's and PostgreSQL's own work per turn.
  const fake: FakeOpenAI = await startFakeOpenAI();
  fake.setResponder(() => ({ text: 'Done: nothing further to check.' }));
  let nodes: QNode[] = [];
  try {
    log(`turns: ${workers} worker(s): starting 1 api + ${workers} worker node(s) on schema ${schema}`);
    const layout: { name: string; role: Role }[] = [{ name: 'api', role: 'api' }, ...Array.from({ length: workers }, (_, i) => ({ name: `worker-${i + 1}`, role: 'worker' as const }))];
    const cluster = await startCluster(schema, fake.url, layout);
    nodes = cluster.nodes;
    const api = nodes[0]!;
    const workerNodes = nodes.filter((n) => n.role === 'worker');
    const keys = await accountKeys(api, cluster.key);
    /** Creates acknowledged so far: each is a turn that must end. */
    let acknowledged = 0;

    const warm = await submit(api, keys, WARMUP_TURNS, 'warm-up');
    acknowledged += warm.acknowledged;
    await waitTurnsEnded(schema, acknowledged, 60_000);

    const quiet = await waitForQuiet('turns', 0.5, QUIET_WAIT_S * 1000);

    log(`turns: ${workers} worker(s): end-to-end, ${BATCH} creates at ${CONCURRENCY} in flight while the workers run`);
    let usage = await usageWindow(nodes);
    let activity = await dbActivityWindow();
    const t0 = Date.now();
    const e2eCreates = await submit(api, keys, BATCH, 'e2e');
    acknowledged += e2eCreates.acknowledged;
    let last = await waitTurnsEnded(schema, acknowledged, BATCH_TIMEOUT_MS);
    assertAlive(nodes);
    const e2e = batchResult(last - t0, e2eCreates, await usage.stop(), await activity.stop(), nodes);
    log(`turns: ${workers} worker(s): end-to-end ${e2e.turns_per_s} turns/s (creates ${e2eCreates.creates_per_s}/s)`);

    let backlog: BatchResult | undefined;
    if (BACKLOG) {
      log(`turns: ${workers} worker(s): backlog, ${BATCH} creates with the workers paused, then the workers resumed together`);
      // SIGSTOP, not a stop: the workers keep their connections and warm state, and resume at the
      // same instant, so the timing is the workers' (and PostgreSQL's) alone.
      for (const w of workerNodes) pause(w);
      let blCreates: Submitted;
      try {
        blCreates = await submit(api, keys, BATCH, 'backlog');
        acknowledged += blCreates.acknowledged;
        await sleep(300);
        usage = await usageWindow(nodes);
        activity = await dbActivityWindow();
      } finally {
        for (const w of workerNodes) resume(w);
      }
      const t1 = Date.now();
      last = await waitTurnsEnded(schema, acknowledged, BATCH_TIMEOUT_MS);
      assertAlive(nodes);
      backlog = batchResult(last - t1, blCreates, await usage.stop(), await activity.stop(), nodes);
      log(`turns: ${workers} worker(s): backlog drained at ${backlog.turns_per_s} turns/s (creates alone: ${blCreates.creates_per_s}/s)`);
    }

    const verification = await verifyTurns(schema, acknowledged, fake.requests.length);
    for (const [what, c] of [['warm-up', warm], ['end-to-end', e2eCreates], ['backlog', backlog?.creates]] as const) {
      if (c && (c.retried > 0 || Object.keys(c.failed).length > 0)) verification.anomalies.push(`${what} creates: ${c.retried} retried after 429/503, failed: ${JSON.stringify(c.failed)}`);
    }
    for (const a of verification.anomalies) log(`turns: ${workers} worker(s): ANOMALY: ${a}`);
    return { workers, round: roundNo, schema, end_to_end: e2e, backlog, verification, foreign_cores_before_start: quiet.foreign_cores };
  } finally {
    await stopNodes(nodes);
    await fake.close();
    await dropSchema(schema);
  }
}

interface BatchSummary {
  turns: number;
  seconds: number;
  turns_per_s: number;
  creates_per_s: number;
  cpu_ms_per_turn: BatchResult['cpu_ms_per_turn'];
  db_per_turn: BatchResult['db_per_turn'];
  /**
   * Turns per CPU-second of everything the benchmark runs (nodes, harness, PostgreSQL's share):
   * on a CPU-bound machine, throughput ≈ free cores × this, so it compares layouts even when
   * other load on the machine differed between them.
   */
  turns_per_cpu_s: number;
  /** Averages over the batches' windows, weighted by their length. */
  cores: { machine: number; postgres: number; foreign: number };
}

interface TurnsSummary {
  workers: number;
  rounds: number;
  end_to_end: BatchSummary;
  backlog: BatchSummary | null;
  turns_verified: number;
  anomalies: number;
}

/** One layout's rounds taken together: rates as total turns over total time, CPU as total over total turns. */
function summarizeBatches(batches: BatchResult[]): BatchSummary {
  const turns = batches.reduce((s, b) => s + b.turns, 0);
  const ms = batches.reduce((s, b) => s + b.ms, 0);
  const createMs = batches.reduce((s, b) => s + b.creates.ms, 0);
  const cpuS = byGroup((k) => batches.reduce((s, b) => s + b.cpu_s[k], 0));
  const cpuMsPerTurn = perTurnMs(cpuS, turns);
  const windowS = batches.reduce((s, b) => s + b.usage.seconds, 0);
  const weighted = (k: 'machine_cores' | 'postgres_cores' | 'foreign_cores') => round(batches.reduce((s, b) => s + b.usage[k] * b.usage.seconds, 0) / windowS, 2);
  return {
    turns,
    seconds: round(ms / 1000, 2),
    turns_per_s: round((turns * 1000) / ms, 1),
    creates_per_s: round((turns * 1000) / createMs, 1),
    cpu_ms_per_turn: cpuMsPerTurn,
    db_per_turn: dbPerTurn({
      write_transactions: batches.reduce((s, b) => s + b.db.write_transactions, 0),
      notifications: batches.reduce((s, b) => s + b.db.notifications, 0),
      notices: batches.reduce((s, b) => s + b.db.notices, 0),
    }, turns),
    turns_per_cpu_s: round(turns / cpuS.all, 1),
    cores: { machine: weighted('machine_cores'), postgres: weighted('postgres_cores'), foreign: weighted('foreign_cores') },
  };
}

function summarizeTurns(runs: TurnsRun[]): TurnsSummary[] {
  return [...new Set(runs.map((r) => r.workers))].sort((a, b) => a - b).map((workers) => {
    const mine = runs.filter((r) => r.workers === workers);
    const backlogs = mine.flatMap((r) => (r.backlog ? [r.backlog] : []));
    return {
      workers,
      rounds: mine.length,
      end_to_end: summarizeBatches(mine.map((r) => r.end_to_end)),
      backlog: backlogs.length ? summarizeBatches(backlogs) : null,
      turns_verified: mine.reduce((s, r) => s + r.verification.turns, 0),
      anomalies: mine.reduce((s, r) => s + r.verification.anomalies.length, 0),
    };
  });
}

// ---- 2. SSE fan-out over two API nodes ----------------------------------------------------------

/**
 * One turn per round, told apart by a marker in its prompt: the fake model holds the turn's first
 * call until every stream is open, then answers with sseStepReply (as bench/run.ts's SSE
 * benchmark does) until the window ends.
 */
interface Phase {
  started: boolean;
  release: () => void;
  gate: Promise<void>;
  stopAt: number;
  steps: number;
}

function sseResponder(phases: Map<string, Phase>) {
  return async (body: { messages?: Record<string, unknown>[] }): Promise<FakeReply> => {
    const marker = /bench-phase:(\w+)/.exec(JSON.stringify(body.messages ?? []))?.[1];
    const phase = marker ? phases.get(marker) : undefined;
    if (!phase) return { text: 'Done.' };
    if (!phase.started) {
      phase.started = true;
      await phase.gate;
    }
    phase.steps++;
    return sseStepReply(phase.steps, Date.now() >= phase.stopAt);
  };
}

type Layout = 'split' | 'single';

interface NodeLatency {
  clients: number;
  frames: number;
  frames_expected: number;
  min_frames_per_client: number;
  failed_connects: number;
  latency_ms: { p50: number; p90: number; p99: number; max: number };
  server_cpu_us_per_frame: number;
}

interface SseRound {
  layout: Layout;
  label: string;
  clients: number;
  events: number;
  model_steps: number;
  every_client_every_event: boolean;
  per_node: Record<string, NodeLatency>;
  overall: { latency_ms: { p50: number; p90: number; p99: number; max: number }; last_delivery_per_event_ms: { p50: number; p99: number } };
  client_end: string[];
  usage: Usage;
}

/** A round's report plus its latency histogram per API node, kept out of the JSON; the per-layout summary merges them. */
interface MeasuredRound {
  round: SseRound;
  hists: Map<string, Map<number, number>>;
}

async function sseRound(
  phases: Map<string, Phase>, label: string, layout: Layout, clients: number, windowS: number,
  cluster: { a: QNode; b: QNode; worker: QNode; key: string },
): Promise<MeasuredRound> {
  const { a, b, key } = cluster;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const phase: Phase = { started: false, release, gate, stopAt: Infinity, steps: 0 };
  phases.set(label, phase);
  const procs: { node: QNode; child: Child }[] = [];
  try {
    const { taskId, afterSeq } = await startSseTask(a.url, key, `SSE fan-out ${label} (benchmark)`, `bench-phase:${label} Keep checking sources.`, async () => {
      for (let i = 0; i < 300 && !phase.started; i++) await sleep(50);
      if (!phase.started) throw new Error(`${label}: the turn's first model call did not arrive`);
    });

    // Same client processes and counts in both layouts: only where the streams land differs.
    // Every stream must connect (else this round fails here); one that errors after connecting
    // misses frames, which the counts below catch.
    const targets = layout === 'split' ? [a, b] : [a, a];
    const children = await connectSseClients(`sse-${label}`, targets.map((node) => sseStreamUrl(node.url, taskId, afterSeq)), clients, {
      key, deadlineMs: (windowS + 120) * 1000, minId: afterSeq + 1,
    });
    procs.push(...children.map((child, i) => ({ node: targets[i]!, child })));
    await sleep(500);

    const usage = await usageWindow([a, b, cluster.worker], procs.map((p) => p.child));
    phase.stopAt = Date.now() + windowS * 1000;
    phase.release();
    // The clients end by themselves on the turn's `done`; their result lines mark the end of delivery.
    const outs: SseClientResult[] = [];
    for (const p of procs) outs.push(await sseResult(p.child, (windowS + 120) * 1000));
    const use = await usage.stop();

    const events = await fetchEvents({ url: a.url, key }, taskId, afterSeq);

    const perNode: Record<string, NodeLatency> = {};
    const nodeHists = new Map<string, Map<number, number>>();
    const all = new Map<number, number>();
    const lastDelivery = new Map<number, number>();
    let complete = true;
    for (const name of [...new Set(procs.map((p) => p.node.name))]) {
      const mine = procs.map((p, i) => ({ p, o: outs[i]! })).filter((x) => x.p.node.name === name);
      const hist = new Map<number, number>();
      nodeHists.set(name, hist);
      for (const { o } of mine) {
        mergeHist(hist, o.hist);
        mergeHist(all, o.hist);
        for (const [id, max] of o.perEvent) lastDelivery.set(id, Math.max(lastDelivery.get(id) ?? 0, max));
      }
      const nodeClients = mine.reduce((s, x) => s + x.o.connected, 0);
      const frames = mine.reduce((s, x) => s + x.o.frames, 0);
      const minFrames = Math.min(...mine.map((x) => x.o.minFramesPerClient));
      const ok = frames === events.length * nodeClients && minFrames === events.length && mine.every((x) => x.o.unparsable === 0);
      complete &&= ok;
      perNode[name] = {
        clients: nodeClients,
        frames,
        frames_expected: events.length * nodeClients,
        min_frames_per_client: minFrames,
        failed_connects: mine.reduce((s, x) => s + x.o.failed, 0),
        latency_ms: histLatency(hist),
        server_cpu_us_per_frame: round(((use.cpu_s[name] ?? NaN) * 1e6) / Math.max(1, frames), 1),
      };
    }
    const maxes = [...lastDelivery.values()];
    const result: SseRound = {
      layout,
      label,
      clients,
      events: events.length,
      model_steps: phase.steps,
      every_client_every_event: complete,
      per_node: perNode,
      overall: { latency_ms: histLatency(all), last_delivery_per_event_ms: { p50: percentile(maxes, 50), p99: percentile(maxes, 99) } },
      client_end: outs.map((o) => o.reason),
      usage: use,
    };
    return { round: result, hists: nodeHists };
  } finally {
    // Ends the turn at its next model call, also when this round failed half-way.
    phase.stopAt = 0;
    phase.release();
    await Promise.all(procs.map((p) => p.child.stop('SIGTERM', 5000)));
    phases.delete(label);
  }
}

interface LayoutSummary {
  rounds: number;
  every_client_every_event: boolean;
  per_node: Record<string, { latency_ms: { p50: number; p90: number; p99: number; max: number }; server_cpu_us_per_frame: number }>;
  overall: { latency_ms: { p50: number; p90: number; p99: number; max: number } };
}

interface SseReport {
  schema: string;
  /** `split`: half the clients on API node A, half on B. `single`: the same clients all on A (the baseline). */
  summary: Partial<Record<Layout, LayoutSummary>>;
  rounds: SseRound[];
  foreign_cores_before_start: number;
}

/** Merges a layout's rounds: latency over every frame of every round, CPU per frame over all of them. */
function summarize(rounds: MeasuredRound[]): LayoutSummary {
  const all = new Map<number, number>();
  const perNode = new Map<string, { hist: Map<number, number>; cpuS: number; frames: number }>();
  for (const { round: r, hists } of rounds) {
    for (const [name, hist] of hists) {
      let acc = perNode.get(name);
      if (!acc) perNode.set(name, (acc = { hist: new Map(), cpuS: 0, frames: 0 }));
      mergeHist(acc.hist, hist);
      mergeHist(all, hist);
      acc.cpuS += r.usage.cpu_s[name] ?? NaN;
      acc.frames += r.per_node[name]!.frames;
    }
  }
  return {
    rounds: rounds.length,
    every_client_every_event: rounds.every((r) => r.round.every_client_every_event),
    per_node: Object.fromEntries([...perNode].map(([name, acc]) => [name, { latency_ms: histLatency(acc.hist), server_cpu_us_per_frame: round((acc.cpuS * 1e6) / Math.max(1, acc.frames), 1) }])),
    overall: { latency_ms: histLatency(all) },
  };
}

async function benchSse(): Promise<SseReport> {
  const schema = newSchema('sse');
  const phases = new Map<string, Phase>();
  const fake = await startFakeOpenAI();
  fake.setResponder(sseResponder(phases));
  let nodes: QNode[] = [];
  try {
    log(`sse: starting api A, api B and one worker on schema ${schema}`);
    const cluster = await startCluster(schema, fake.url, [{ name: 'api-A', role: 'api' }, { name: 'api-B', role: 'api' }, { name: 'worker', role: 'worker' }]);
    nodes = cluster.nodes;
    const [a, b, worker] = nodes as [QNode, QNode, QNode];
    const c = { a, b, worker, key: cluster.key };
    // Warms both nodes' stream and relay paths (and the worker's turn loop), so the first measured layout pays no JIT.
    log('sse: warm-up turn (100 clients split, 2 s)');
    await sseRound(phases, 'warmup', 'split', 100, 2, c);
    const quiet = await waitForQuiet('sse', 0.5, QUIET_WAIT_S * 1000);
    const rounds: MeasuredRound[] = [];
    for (let r = 0; r < SSE_ROUNDS; r++) {
      // Alternate the order from round to round so neither layout always goes first.
      const order: Layout[] = r % 2 === 0 ? ['split', 'single'] : ['single', 'split'];
      for (const layout of order) {
        log(`sse: round ${r + 1}, ${layout === 'split' ? `${SSE_CLIENTS / 2} clients on A + ${SSE_CLIENTS / 2} on B` : `all ${SSE_CLIENTS} clients on A`}, events for ${SSE_WINDOW_S} s`);
        const measured = await sseRound(phases, `${layout}${r + 1}`, layout, SSE_CLIENTS, SSE_WINDOW_S, c);
        assertAlive(nodes);
        rounds.push(measured);
        const res = measured.round;
        log(`sse: ${layout}: p50 ${res.overall.latency_ms.p50} ms, p99 ${res.overall.latency_ms.p99} ms; every client got every event: ${res.every_client_every_event}`);
      }
    }
    const summary: SseReport['summary'] = {};
    for (const layout of ['split', 'single'] as const) summary[layout] = summarize(rounds.filter((r) => r.round.layout === layout));
    return { schema, summary, rounds: rounds.map((r) => r.round), foreign_cores_before_start: quiet.foreign_cores };
  } finally {
    await stopNodes(nodes);
    await fake.close();
    await dropSchema(schema);
  }
}

// ---- report ---------------------------------------------------------------------------------------

function ratio(a: number | undefined, b: number | undefined): string {
  return a !== undefined && b !== undefined && b > 0 ? `${round(a / b, 2)}×` : '—';
}

function printTurns(runs: TurnsRun[], summaries: TurnsSummary[]): void {
  const one = summaries.find((r) => r.workers === 1);
  const two = summaries.find((r) => r.workers === 2);
  const compare = one !== undefined && two !== undefined;
  const rows = [['turns (PostgreSQL, instant model)', ...summaries.map((r) => `${r.workers} worker${r.workers > 1 ? 's' : ''}`), ...(compare ? ['2 : 1'] : [])]];
  /** A figure per layout, with the 2 : 1 ratio where it means something. */
  const figure = (label: string, f: (r: TurnsSummary) => number | undefined, withRatio = true) => {
    rows.push([label, ...summaries.map((r) => String(f(r) ?? '—')), ...(compare ? [withRatio ? ratio(f(two), f(one)) : ''] : [])]);
  };
  const text = (label: string, f: (r: TurnsSummary) => string) => rows.push([label, ...summaries.map(f), ...(compare ? [''] : [])]);
  const perTurn = (b: BatchSummary | null) => (b ? `${b.db_per_turn.write_transactions} / ${b.db_per_turn.notifications} / ${b.db_per_turn.notices}` : '—');
  const cores = (b: BatchSummary | null) => (b ? `${b.cores.machine} / ${b.cores.postgres} / ${b.cores.foreign}` : '—');
  figure('end-to-end turns/s', (r) => r.end_to_end.turns_per_s);
  figure('  creates/s meanwhile', (r) => r.end_to_end.creates_per_s, false);
  figure('  worker CPU per turn (ms)', (r) => r.end_to_end.cpu_ms_per_turn.workers, false);
  figure('  API CPU per turn (ms)', (r) => r.end_to_end.cpu_ms_per_turn.api, false);
  figure('  PostgreSQL CPU per turn (ms)', (r) => r.end_to_end.cpu_ms_per_turn.postgres, false);
  figure('  harness CPU per turn (ms)', (r) => r.end_to_end.cpu_ms_per_turn.harness, false);
  figure('  all CPU per turn (ms)', (r) => r.end_to_end.cpu_ms_per_turn.all, false);
  figure('  turns per CPU-second', (r) => r.end_to_end.turns_per_cpu_s);
  text('  cores: machine / postgres / foreign', (r) => cores(r.end_to_end));
  text('  per turn: write transactions / notifications / notices', (r) => perTurn(r.end_to_end));
  if (BACKLOG) {
    figure('backlog drain turns/s', (r) => r.backlog?.turns_per_s);
    figure('  creates/s, workers paused', (r) => r.backlog?.creates_per_s, false);
    figure('  worker CPU per turn (ms)', (r) => r.backlog?.cpu_ms_per_turn.workers, false);
    figure('  PostgreSQL CPU per turn (ms)', (r) => r.backlog?.cpu_ms_per_turn.postgres, false);
    figure('  all CPU per turn (ms)', (r) => r.backlog?.cpu_ms_per_turn.all, false);
    figure('  turns per CPU-second', (r) => r.backlog?.turns_per_cpu_s);
    text('  cores: machine / postgres / foreign', (r) => cores(r.backlog));
    text('  per turn: write transactions / notifications / notices', (r) => perTurn(r.backlog));
  }
  text('turns verified / anomalies', (r) => `${r.turns_verified} / ${r.anomalies}`);
  process.stdout.write(`\n${table(rows)}\n`);
  for (const r of runs) {
    const e = r.end_to_end;
    const b = r.backlog;
    process.stdout.write(`${r.workers} worker(s), round ${r.round}: end-to-end ${e.turns_per_s} turns/s (foreign ${e.usage.foreign_cores} cores)` +
      `${b ? `, backlog ${b.turns_per_s} turns/s (foreign ${b.usage.foreign_cores} cores)` : ''}\n`);
    for (const a of r.verification.anomalies) process.stdout.write(`ANOMALY (${r.workers} worker(s), round ${r.round}): ${a}\n`);
  }
}

function printSse(report: SseReport): void {
  const rows = [['sse (2 api + 1 worker)', 'node', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'CPU µs/frame', 'all events']];
  const names: Record<Layout, string> = { split: 'split: half on A, half on B', single: 'single: all on A (baseline)' };
  for (const layout of ['split', 'single'] as const) {
    const sum = report.summary[layout];
    if (!sum) continue;
    const cells = (l: { p50: number; p90: number; p99: number; max: number }) => [String(l.p50), String(l.p90), String(l.p99), String(l.max)];
    for (const [name, n] of Object.entries(sum.per_node)) rows.push([names[layout], name, ...cells(n.latency_ms), String(n.server_cpu_us_per_frame), '']);
    rows.push([names[layout], 'overall', ...cells(sum.overall.latency_ms), '', sum.every_client_every_event ? 'yes' : 'NO']);
  }
  process.stdout.write(`\n${table(rows)}\n`);
  for (const r of report.rounds) {
    const u = r.usage;
    const o = r.overall.latency_ms;
    process.stdout.write(`${r.label}: ${r.events} events × ${r.clients} clients, p50 ${o.p50} / p99 ${o.p99} ms; cores: machine ${u.machine_cores}, postgres ${u.postgres_cores}, foreign ${u.foreign_cores}; CPU s: ${Object.entries(u.cpu_s).map(([k, v]) => `${k} ${v}`).join(', ')}\n`);
  }
}

async function main(): Promise<void> {
  startWatchdog('bench/cluster', WATCHDOG_MS);
  const started = new Date();
  const loadAtStart = loadAverage();
  const failures: { bench: BenchName; error: string }[] = [];
  const turnRuns: TurnsRun[] = [];
  let sse: SseReport | undefined;
  let postgresVersion = '';
  try {
    postgresVersion = (await within(sql<{ v: string }>('select version() as v'), 10_000, 'connecting to PostgreSQL'))[0]!.v;
    const swept = await sweepStaleSchemas();
    if (swept.length) log(`dropped ${swept.length} schema(s) left by earlier runs that were killed: ${swept.join(', ')}`);
  } catch (err) {
    process.stderr.write(`bench/cluster needs PostgreSQL at ${DATABASE_URL} (BENCH_CLUSTER_DATABASE_URL): ${(err as Error).message}\n`);
    process.exit(1);
  }
  noteLoad(loadAtStart);

  if (ONLY.has('turns')) {
    for (let r = 1; r <= TURN_ROUNDS; r++) {
      // Alternate the order (1, 2, 2, 1, …): load from elsewhere on the machine then weighs on both layouts alike.
      for (const n of r % 2 === 1 ? WORKER_COUNTS : [...WORKER_COUNTS].reverse()) {
        try {
          turnRuns.push(await benchTurns(n, r));
        } catch (err) {
          failures.push({ bench: 'turns', error: (err as Error).stack ?? String(err) });
          log(`turns (${n} worker(s), round ${r}): FAILED: ${(err as Error).message}`);
        }
      }
    }
  }
  if (ONLY.has('sse')) {
    try {
      sse = await benchSse();
    } catch (err) {
      failures.push({ bench: 'sse', error: (err as Error).stack ?? String(err) });
      log(`sse: FAILED: ${(err as Error).message}`);
    }
  }

  const turnSummaries = summarizeTurns(turnRuns);
  if (turnRuns.length) printTurns(turnRuns, turnSummaries);
  if (sse) printSse(sse);
  for (const f of failures) process.stdout.write(`FAILED ${f.bench}: ${f.error}\n`);
  const one = turnSummaries.find((r) => r.workers === 1);
  const two = turnSummaries.find((r) => r.workers === 2);
  const report = {
    ...reportHeader(started, loadAtStart, { postgres: postgresVersion }),
    settings: {
      database_url: DATABASE_URL.replace(/\/\/[^@/]*@/, '//…@'), worker_counts: WORKER_COUNTS, turn_rounds: TURN_ROUNDS, batch: BATCH, concurrency: CONCURRENCY, accounts: ACCOUNTS,
      backlog: BACKLOG, warmup_turns: WARMUP_TURNS, sse_clients: SSE_CLIENTS, sse_window_s: SSE_WINDOW_S, sse_rounds: SSE_ROUNDS,
    },
    turns: {
      summary: turnSummaries,
      runs: turnRuns,
      ratio_2_to_1: one && two ? {
        end_to_end: round(two.end_to_end.turns_per_s / one.end_to_end.turns_per_s, 3),
        backlog: one.backlog && two.backlog ? round(two.backlog.turns_per_s / one.backlog.turns_per_s, 3) : null,
        end_to_end_per_cpu_s: round(two.end_to_end.turns_per_cpu_s / one.end_to_end.turns_per_cpu_s, 3),
        backlog_per_cpu_s: one.backlog && two.backlog ? round(two.backlog.turns_per_cpu_s / one.backlog.turns_per_cpu_s, 3) : null,
      } : null,
    },
    sse: sse ?? null,
    failures,
  };
  writeReport('cluster.json', report);
  await db?.end().catch(() => undefined);
  const anomalies = turnRuns.some((r) => r.verification.anomalies.length > 0) || (sse?.rounds.some((r) => !r.every_client_every_event) ?? false);
  process.exit(failures.length > 0 || anomalies ? 1 : 0);
}

void main();
