/**
 * `npm run bench`: measures Quarry against a bare node:http baseline measured in the same run on
 * the same machine, and prints the ratios. The baseline (bench/baseline-server.ts) does each
 * route's work in memory (key check, task look-up, a create's task stored and its turn run) and
 * sends Quarry's own bytes. Quarry (`quarry serve`), the baseline server and the SSE load
 * generators each run in their own process; everything talks over 127.0.0.1 only. Every loop is
 * bounded in count and time, and a watchdog ends the run if anything hangs.
 *
 *   1. state   GET /task/{id}/state requests/s (autocannon) vs the baseline serializing the same
 *              state from memory.
 *   1a. state-pinned  the same with each server pinned to one core (taskset) and wrk pinned to
 *              another: requests/s one core serves, Quarry against the baseline; the same
 *              route on a bare Fastify app (bench/fastify-floor-server.ts) runs in the same
 *              rounds, to tell the framework's own cost from Quarry's request path.
 *   1a'. state-shared  the same three servers sharing that one core at once, each loaded by its
 *              own wrk: requests per CPU-second, so a slow spell of the host slows all alike.
 *   1b. list  GET /task?limit=50 requests/s over 200 tasks (32 connections) vs a bare server
 *              serializing the same 50 tasks from memory per request.
 *   2. creates POST /task creates/s, each stored before it is answered and its turn ended (no
 *              model: it fails at once); then kill -9, restart over the same data dir, and check
 *              that every acknowledged task_id is there.
 *   2b. turns  the same, each create's turn really run: Quarry calls a model in its own process
 *              (bench/instant-model.ts) that answers at once with a final answer; creates/s and
 *              turns completed/s, and every turn must complete. The baseline's turns call the
 *              same model with the request Quarry sent; both rates include the drain.
 *   3. output  GET /task/{id}/output?limit=50000 of a 50,000 × 10 table: ms per request vs the
 *              bare server sending a pre-built body of the same bytes.
 *   4. sse     5,000 concurrent GET /task/{id}/stream clients: latency from an event's stored
 *              `at` to its arrival, vs the bare server pushing the same frames at the same times.
 *
 * Results: a table on stdout and .bench/latest.json. Environment knobs (all optional):
 *   BENCH_ONLY=state,state-pinned,state-shared,list,creates,turns,output,sse   run a subset
 *   BENCH_SERVER_CPU=0 BENCH_LOAD_CPU=1   state-pinned, state-shared: the core each server is pinned to, the load generator's
 *   BENCH_PINNED_CONNECTIONS=32           state-pinned, state-shared: wrk connections (each)
 *   BENCH_PINNED_WARMUP_S=10              state-pinned, state-shared: seconds of load each server gets before the rounds
 *   BENCH_ROUNDS=3 BENCH_ROUND_S=5        autocannon: rounds per server (alternating), seconds each
 *   BENCH_SSE_WINDOW_S=10                 how long the SSE benchmark's turn emits events
 *   BENCH_CONNECTIONS=50                  autocannon connections
 *   BENCH_SSE_CLIENTS=5000                SSE clients (split over BENCH_SSE_PROCS=2 processes)
 *   BENCH_QUIET_WAIT_S=15                 before each benchmark, wait up to this long for other
 *                                         processes to use < 0.5 core (they skew every figure)
 *   BENCH_CPU_PROF=1                      run Quarry (and state-pinned's bare Fastify) with --cpu-prof (profiles in .bench/prof/<bench>/;
 *                                         summarize with bench/profile-summary.ts)
 */
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startFakeOpenAI, type FakeReply } from '../test/kit/fake-openai-server.js';
import {
  OUT_DIR, batchScheduling, cpuWindow, expectOk, fetchEvents, freshDataDir, histLatency, histogramPercentile, loadAverage, log, mapLimit, mergeHist, noteLoad,
  percentile, pinnedLoad, pinToCpu, PINNED_LOAD_TOOL, processCpu, processPreemptions, reportHeader, round, sleep, connectSseClients, sseResult, sseStepReply, sseStreamUrl, startSseTask, startBaseline, startFastifyFloor, startInstantModel, startQuarry, startWatchdog, table,
  timedRequest, waitForQuiet, waitIdle, writeReport, type Child, type CpuUse, type PinnedLoad, type QuarryProcess, type SseClientResult,
} from './lib.js';
import { within } from '../test/kit/bounded-waits.js';
import { fetchJson } from '../test/kit/http.js';

const ALL = ['state', 'state-pinned', 'state-shared', 'list', 'creates', 'turns', 'output', 'sse'] as const;
type BenchName = (typeof ALL)[number];
const ONLY = new Set((process.env.BENCH_ONLY ?? ALL.join(',')).split(',').map((s) => s.trim()).filter(Boolean));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ROUND_S = Number(process.env.BENCH_ROUND_S ?? 5);
const SSE_WINDOW_S = Number(process.env.BENCH_SSE_WINDOW_S ?? 10);
const WARMUP_S = 2;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const SSE_CLIENTS = Number(process.env.BENCH_SSE_CLIENTS ?? 5000);
const SSE_PROCS = Number(process.env.BENCH_SSE_PROCS ?? 2);
const CPU_PROF = process.env.BENCH_CPU_PROF === '1';
const QUIET_WAIT_S = Number(process.env.BENCH_QUIET_WAIT_S ?? 15);
const OUTPUT_ROWS = 50_000;
const ROWS_PER_CALL = 5_000;
const OUTPUT_REQUESTS = 20;
const OUTPUT_WARMUP = 3;
/** Ends the whole run if it is still going (it normally takes 2–4 minutes). */
const WATCHDOG_MS = 12 * 60_000;

interface Result {
  bench: BenchName;
  metric: string;
  unit: string;
  quarry: number;
  baseline: number;
  /** quarry / baseline for rates; baseline / quarry for times, so < 1 always means "slower than the baseline". */
  ratio: number;
  target: string;
  met: boolean;
  details: Record<string, unknown>;
}

const results: Result[] = [];
const failures: { bench: BenchName; error: string }[] = [];

function profArgs(name: string): string[] {
  if (!CPU_PROF) return [];
  // One directory per benchmark: node writes one profile per thread (tsx's loader runs on its
  // own thread); the main thread's is the largest file.
  const dir = path.join(OUT_DIR, 'prof', name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  return ['--cpu-prof', `--cpu-prof-dir=${dir}`];
}

async function cannon(opts: autocannon.Options): Promise<autocannon.Result> {
  return within(autocannon({ timeout: 10, ...opts }), (Number(opts.duration ?? 10) + 30) * 1000, `autocannon ${opts.url}`);
}

function rate(r: autocannon.Result): number {
  return r['2xx'] / r.duration;
}

interface Side {
  runs: autocannon.Result[];
  cpu: CpuUse[];
  /** CPU seconds the server process itself used in each round, its `after` included. */
  serverCpuS: number[];
  /** How long each round's `after` took (ms): a creates round waits there for its turns to end. */
  afterMs: number[];
  /** CPU seconds of the watched process (the model) in each round, its `after` included. */
  watchedCpuS: number[];
}

interface SideTarget {
  opts: autocannon.Options;
  pid: number | undefined;
  /** Runs after each of this side's rounds, as part of the round (its time and CPU count). */
  after?: () => Promise<void>;
}

/**
 * Runs autocannon against Quarry and the baseline in alternating rounds (Q, B, Q, B, …), so that
 * whatever else the machine is doing weighs on both alike. `watchPid`: a process whose CPU is
 * counted per round too (the model both sides call).
 */
async function alternate(quarry: SideTarget, baseline: SideTarget, watchPid?: number): Promise<{ quarry: Side; baseline: Side }> {
  const emptySide = (): Side => ({ runs: [], cpu: [], serverCpuS: [], afterMs: [], watchedCpuS: [] });
  const out = { quarry: emptySide(), baseline: emptySide() };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [side, target] of [['quarry', quarry], ['baseline', baseline]] as const) {
      const cpu = cpuWindow();
      const server = processCpu(target.pid);
      const watched = processCpu(watchPid);
      out[side].runs.push(await cannon({ ...target.opts, duration: ROUND_S }));
      const afterStart = Date.now();
      await target.after?.();
      out[side].afterMs.push(Date.now() - afterStart);
      out[side].serverCpuS.push(server.stop());
      out[side].watchedCpuS.push(watched.stop());
      out[side].cpu.push(cpu.stop());
    }
  }
  return out;
}

/** Server CPU microseconds per successful request: a cost that other load on the machine skews far less than a rate. */
function cpuPerRequestUs(side: Side): number {
  const ok = side.runs.reduce((n, r) => n + r['2xx'], 0);
  return (side.serverCpuS.reduce((n, s) => n + s, 0) * 1e6) / ok;
}

/**
 * Requests per second over all rounds (or round `only`), each round's `after` (the wait for its
 * turns to end) counted in its time.
 */
function sustainedRate(side: Side, only?: number): number {
  const rounds = side.runs.map((_, i) => i).filter((i) => only === undefined || i === only);
  return rounds.reduce((n, i) => n + side.runs[i]!['2xx'], 0) / sustainedSeconds(side, rounds);
}

function sustainedSeconds(side: Side, rounds = side.runs.map((_, i) => i)): number {
  return rounds.reduce((n, i) => n + side.runs[i]!.duration + side.afterMs[i]! / 1000, 0);
}

function sideRate(side: Side): number {
  return side.runs.reduce((n, r) => n + r['2xx'], 0) / side.runs.reduce((n, r) => n + r.duration, 0);
}

function sideSummary(side: Side) {
  return {
    requests_per_s: round(sideRate(side)),
    per_round_per_s: side.runs.map((r) => round(rate(r))),
    server_cpu_us_per_request: round(cpuPerRequestUs(side)),
    server_cpu_cores_per_round: side.serverCpuS.map((s, i) => round(s / side.runs[i]!.duration, 2)),
    ok_2xx: side.runs.reduce((n, r) => n + r['2xx'], 0),
    non_2xx: side.runs.reduce((n, r) => n + r.non2xx, 0),
    errors: side.runs.reduce((n, r) => n + r.errors, 0),
    timeouts: side.runs.reduce((n, r) => n + r.timeouts, 0),
    latency_ms: {
      p50_median_of_rounds: percentile(side.runs.map((r) => r.latency.p50), 50),
      p99_worst_round: Math.max(...side.runs.map((r) => r.latency.p99)),
      max: Math.max(...side.runs.map((r) => r.latency.max)),
    },
    cpu_per_round: side.cpu,
  };
}

function sideErrors(side: Side): number {
  return side.runs.reduce((n, r) => n + r.errors + r.timeouts, 0);
}

// ---- 1. GET /task/{id}/state ------------------------------------------------------------------

/**
 * Quarry's GET `path` against the baseline answering the same body (configured by
 * `baselineConfig`, see baseline-server.ts): warm-up, then alternating rounds; one result.
 */
async function compareGet(q: QuarryProcess, b: Awaited<ReturnType<typeof startBaseline>>, spec: {
  bench: BenchName; metric: string; path: string; body: string; baselineConfig: Record<string, unknown>; connections: number; details?: Record<string, unknown>;
}): Promise<void> {
  await expectOk('POST', `${b.url}/_bench/config`, { body: spec.baselineConfig });
  if ((await expectOk('GET', b.url + spec.path, { key: q.key })).text !== spec.body) throw new Error(`the baseline's ${spec.path} body differs from Quarry’s`);
  const quarryOpts = { url: q.url + spec.path, connections: spec.connections, headers: { 'x-api-key': q.key } };
  const baseOpts = { url: b.url + spec.path, connections: spec.connections, headers: { 'x-api-key': q.key } };
  log(`${spec.bench}: warm-up ${WARMUP_S} s each, then ${ROUNDS} alternating rounds of ${ROUND_S} s × ${spec.connections} connections`);
  await cannon({ ...quarryOpts, duration: WARMUP_S });
  await cannon({ ...baseOpts, duration: WARMUP_S });
  const run = await alternate({ opts: quarryOpts, pid: q.child.proc.pid }, { opts: baseOpts, pid: b.child.proc.pid });
  const quarry = sideRate(run.quarry);
  const baseline = sideRate(run.baseline);
  const ratio = quarry / baseline;
  results.push({
    bench: spec.bench,
    metric: spec.metric,
    unit: 'req/s',
    quarry,
    baseline,
    ratio,
    target: '≥ 50% of baseline',
    met: ratio >= 0.5 && sideErrors(run.quarry) === 0 && run.quarry.runs.every((r) => r.non2xx === 0),
    details: {
      ...spec.details,
      body_bytes: Buffer.byteLength(spec.body),
      connections: spec.connections,
      per_round_ratio: run.quarry.runs.map((r, i) => round(rate(r) / rate(run.baseline.runs[i]!), 3)),
      cpu_cost_ratio: round(cpuPerRequestUs(run.baseline) / cpuPerRequestUs(run.quarry), 3),
      quarry: sideSummary(run.quarry),
      baseline: sideSummary(run.baseline),
    },
  });
}

type Baseline = Awaited<ReturnType<typeof startBaseline>>;

/** An idle task's `/state` path and body in Quarry, and the baseline set to answer the same. */
async function idleStateTask(q: QuarryProcess, b: Baseline): Promise<{ statePath: string; stateBody: string }> {
  const created = await expectOk('POST', `${q.url}/task`, { key: q.key, body: { prompt: 'Benchmark the state route.' } });
  const id = created.body.task_id as string;
  await waitIdle(q, id, 15_000);
  const statePath = `/task/${encodeURIComponent(id)}/state`;
  const stateBody = (await expectOk('GET', q.url + statePath, { key: q.key })).text;
  await expectOk('POST', `${b.url}/_bench/config`, { body: { statePath, stateBody } });
  if ((await expectOk('GET', b.url + statePath, { key: q.key })).text !== stateBody) throw new Error('the baseline\'s /state body differs from Quarry’s');
  return { statePath, stateBody };
}

/** Quarry and the baseline started, both answering one idle task's `/state` alike, for `run`; both stopped after it. */
async function withStateServers(bench: string, run: (q: QuarryProcess, b: Baseline, state: { statePath: string; stateBody: string }) => Promise<void>): Promise<void> {
  const q = await startQuarry({ dataDir: freshDataDir(bench), nodeArgs: profArgs(bench), label: `quarry-${bench}` });
  let b: Baseline | undefined;
  try {
    b = await startBaseline(q.key);
    await run(q, b, await idleStateTask(q, b));
  } finally {
    await q.child.stop('SIGTERM');
    await b?.child.stop('SIGTERM');
  }
}

async function benchState(): Promise<void> {
  await withStateServers('state', async (q, b, { statePath, stateBody }) => {
    await compareGet(q, b, { bench: 'state', metric: 'GET /task/{id}/state', path: statePath, body: stateBody, baselineConfig: { statePath, stateBody }, connections: CONNECTIONS });
  });
}

// ---- 1a. GET /task/{id}/state, server on one core ----------------------------------------------

const SERVER_CPU = Number(process.env.BENCH_SERVER_CPU ?? 0);
const LOAD_CPU = Number(process.env.BENCH_LOAD_CPU ?? 1);
const PINNED_CONNECTIONS = Number(process.env.BENCH_PINNED_CONNECTIONS ?? 32);
/**
 * Each server's load before the rounds. Longer than the other benchmarks' 2 s: started fresh and
 * loaded in 1 s windows, Quarry served 13k, then 23-24k/s for five seconds, and its 26k/s only
 * from the seventh second (V8 optimizes a longer request path over more calls); the bare
 * servers were at their rate by the third second.
 */
const PINNED_WARMUP_S = Number(process.env.BENCH_PINNED_WARMUP_S ?? 10);

/** The three `/state` servers of the pinned benchmarks, each pinned to SERVER_CPU, and a load of one of them. */
interface PinnedStateServers {
  servers: Record<'quarry' | 'baseline' | 'fastify_floor', { url: string; pid: number }>;
  load(url: string, seconds: number): Promise<PinnedLoad>;
  stateBody: string;
}

/**
 * Quarry, the baseline and the same route on bare Fastify, all answering one idle task's `/state`
 * alike and pinned to SERVER_CPU, for `run`; each warmed up with PINNED_WARMUP_S of load first.
 */
async function withPinnedStateServers(bench: string, run: (s: PinnedStateServers) => Promise<void>): Promise<void> {
  await withStateServers(bench, async (q, b, { statePath, stateBody }) => {
    const floor = await startFastifyFloor(q.key, profArgs(`${bench}-fastify-floor`));
    try {
      await expectOk('POST', `${floor.url}/_bench/config`, { body: { statePath, stateBody } });
      const servers = {
        quarry: { url: q.url, pid: q.child.proc.pid! },
        baseline: { url: b.url, pid: b.child.proc.pid! },
        fastify_floor: { url: floor.url, pid: floor.child.proc.pid! },
      };
      for (const server of Object.values(servers)) pinToCpu(server.pid, SERVER_CPU);
      const load = (url: string, seconds: number) =>
        pinnedLoad({ url: url + statePath, headers: { 'x-api-key': q.key }, connections: PINNED_CONNECTIONS, seconds, cpu: LOAD_CPU });
      log(`${bench}: servers on CPU ${SERVER_CPU}, ${PINNED_LOAD_TOOL} on CPU ${LOAD_CPU}; warm-up ${PINNED_WARMUP_S} s each, then ${ROUNDS} rounds of ${ROUND_S} s × ${PINNED_CONNECTIONS} connections`);
      for (const server of Object.values(servers)) await load(server.url, PINNED_WARMUP_S);
      await run({ servers, load, stateBody });
    } finally {
      await floor.child.stop('SIGTERM');
    }
  });
}

type PinnedRound = PinnedLoad & { server_cpu_s: number; cpu: CpuUse };
const rateOf = (rs: PinnedLoad[]) => rs.reduce((n, r) => n + r.ok, 0) / rs.reduce((n, r) => n + r.seconds, 0);
const cpuPerRequest = (rs: PinnedRound[]) => (rs.reduce((n, r) => n + r.server_cpu_s, 0) * 1e6) / rs.reduce((n, r) => n + r.ok, 0);
const pinnedSummary = (rs: PinnedRound[]) => ({
  requests_per_s: round(rateOf(rs)),
  per_round_per_s: rs.map((r) => round(r.ok / r.seconds)),
  server_cpu_us_per_request: round(cpuPerRequest(rs)),
  server_core_share_per_round: rs.map((r) => round(r.server_cpu_s / r.seconds, 2)),
  ok_2xx: rs.reduce((n, r) => n + r.ok, 0),
  non_2xx: rs.reduce((n, r) => n + r.non2xx, 0),
  errors: rs.reduce((n, r) => n + r.errors, 0),
  latency_ms: { p50_median_of_rounds: percentile(rs.map((r) => r.latency_ms.p50), 50), p99_worst_round: Math.max(...rs.map((r) => r.latency_ms.p99)) },
  cpu_per_round: rs.map((r) => r.cpu),
});
const pinnedClean = (rs: PinnedRound[]) => rs.every((r) => r.non2xx === 0 && r.errors === 0);

/**
 * A pinned benchmark's result: Quarry against the baseline by `rate`, with the same route on bare
 * Fastify beside them (what the framework alone keeps of the bare server, and what Quarry's own
 * request path keeps of the framework's ceiling); `details` adds the benchmark's own figures.
 */
function pushPinnedResult(
  bench: 'state-pinned' | 'state-shared', metric: string, rounds: Record<'quarry' | 'baseline' | 'fastify_floor', PinnedRound[]>, rate: (rs: PinnedRound[]) => number,
  perRoundRatio: (a: PinnedRound[], over: PinnedRound[]) => number[], stateBody: string, details: Record<string, unknown>,
): void {
  const quarry = rate(rounds.quarry);
  const baseline = rate(rounds.baseline);
  const fastifyFloor = rate(rounds.fastify_floor);
  results.push({
    bench,
    metric,
    unit: 'req/s',
    quarry,
    baseline,
    ratio: quarry / baseline,
    target: '≥ 80% of baseline',
    met: quarry / baseline >= 0.8 && pinnedClean(rounds.quarry),
    details: {
      load_generator: PINNED_LOAD_TOOL,
      server_cpu: SERVER_CPU,
      load_cpu: LOAD_CPU,
      body_bytes: Buffer.byteLength(stateBody),
      per_round_ratio: perRoundRatio(rounds.quarry, rounds.baseline),
      fastify_floor_vs_baseline: round(fastifyFloor / baseline, 3),
      quarry_vs_fastify_floor: round(quarry / fastifyFloor, 3),
      per_round_quarry_vs_fastify_floor: perRoundRatio(rounds.quarry, rounds.fastify_floor),
      ...details,
      quarry: pinnedSummary(rounds.quarry),
      baseline: pinnedSummary(rounds.baseline),
      fastify_floor: pinnedSummary(rounds.fastify_floor),
    },
  });
}

/**
 * Throughput with the server held to one core: Quarry and the baseline each pinned to
 * SERVER_CPU, the load generator (wrk, one thread) to LOAD_CPU, so neither side can spread its
 * work over the machine's other cores and the rate is what one core serves. Each round runs
 * Quarry, the baseline and bare Fastify one after another, each starting the round in turn; the
 * share of the core each server got is recorded per round (another process on the same core
 * shows as a share below 1).
 */
async function benchStatePinned(): Promise<void> {
  await withPinnedStateServers('state-pinned', async ({ servers, load, stateBody }) => {
    const sides = Object.keys(servers) as (keyof typeof servers)[];
    const rounds = Object.fromEntries(sides.map((side) => [side, [] as PinnedRound[]])) as Record<keyof typeof servers, PinnedRound[]>;
    for (let i = 0; i < ROUNDS; i++) {
      // Each server takes each place in a round equally often: on this machine the place alone
      // moved a server's rate by up to 6% (two copies of one server, measured side by side).
      for (const side of [...sides.slice(i % sides.length), ...sides.slice(0, i % sides.length)]) {
        const cpu = cpuWindow();
        const server = processCpu(servers[side].pid);
        const r = await load(servers[side].url, ROUND_S);
        rounds[side].push({ ...r, server_cpu_s: server.stop(), cpu: cpu.stop() });
      }
    }
    const perRoundRatio = (a: PinnedRound[], over: PinnedRound[]) => a.map((r, i) => round(r.ok / r.seconds / (over[i]!.ok / over[i]!.seconds), 3));
    pushPinnedResult('state-pinned', `GET /task/{id}/state, server on CPU ${SERVER_CPU}, ${PINNED_LOAD_TOOL} on CPU ${LOAD_CPU}`, rounds, rateOf, perRoundRatio, stateBody, {
      connections: PINNED_CONNECTIONS,
      per_round_fastify_floor_vs_baseline: perRoundRatio(rounds.fastify_floor, rounds.baseline),
      cpu_us_per_request: { quarry: round(cpuPerRequest(rounds.quarry)), fastify_floor: round(cpuPerRequest(rounds.fastify_floor)), baseline: round(cpuPerRequest(rounds.baseline)) },
    });
  });
}

/**
 * The pinned `/state` servers measured at once rather than in turn: in each round Quarry, the
 * baseline and bare Fastify all run on SERVER_CPU, each loaded by a wrk of its own on LOAD_CPU,
 * and the kernel shares the core between them in slices of milliseconds. A slow spell of the host
 * (on a shared virtual machine the rate of every server moved by up to half for seconds at a
 * time) then slows all three alike, where in `state-pinned` it fell on whichever server held the
 * round. What one core serves is compared as requests per CPU-second of each server: a server
 * given the whole core serves that many a second. Each server's share of the core, and how often
 * the scheduler switched it out, are reported beside it.
 *
 * The servers run under SCHED_BATCH. Without it, a server woken by its client's request took the
 * core from the one running, every few requests: each request then paid for the switch and the
 * caches it emptied (about 10 µs more per request for every server here), which pushed every
 * ratio towards 1 (bare Fastify read 98% of the baseline, against 91-95% measured alone). Under
 * SCHED_BATCH only the tick ends a slice (about 90 a second each, 11 ms slices, on this machine).
 */
async function benchStateShared(): Promise<void> {
  await withPinnedStateServers('state-shared', async ({ servers, load, stateBody }) => {
    const sides = Object.keys(servers) as (keyof typeof servers)[];
    const rounds = Object.fromEntries(sides.map((side) => [side, [] as PinnedRound[]])) as Record<keyof typeof servers, PinnedRound[]>;
    const preemptionsPerS = Object.fromEntries(sides.map((side) => [side, [] as number[]])) as Record<keyof typeof servers, number[]>;
    for (const server of Object.values(servers)) batchScheduling(server.pid);
    for (let i = 0; i < ROUNDS; i++) {
      const cpu = cpuWindow();
      const serverCpu = sides.map((side) => processCpu(servers[side].pid));
      const preempted = sides.map((side) => processPreemptions(servers[side].pid));
      const loads = await Promise.all(sides.map((side) => load(servers[side].url, ROUND_S)));
      const used = serverCpu.map((c) => c.stop());
      const machine = cpu.stop();
      sides.forEach((side, j) => {
        rounds[side].push({ ...loads[j]!, server_cpu_s: used[j]!, cpu: machine });
        preemptionsPerS[side].push(round(preempted[j]!.stop() / loads[j]!.seconds));
      });
    }
    const perCpuSecond = (rs: PinnedRound[]) => 1e6 / cpuPerRequest(rs);
    const perRoundRatio = (a: PinnedRound[], over: PinnedRound[]) =>
      a.map((r, i) => round(r.ok / r.server_cpu_s / (over[i]!.ok / over[i]!.server_cpu_s), 3));
    pushPinnedResult('state-shared', `GET /task/{id}/state per CPU-second, servers sharing CPU ${SERVER_CPU}, ${PINNED_LOAD_TOOL} on CPU ${LOAD_CPU}`, rounds, perCpuSecond, perRoundRatio, stateBody, {
      connections_each: PINNED_CONNECTIONS,
      // Requests answered while sharing the core, whatever share each got.
      answered_ratio: round(rateOf(rounds.quarry) / rateOf(rounds.baseline), 3),
      preemptions_per_s: preemptionsPerS,
    });
  });
}

// ---- 1b. GET /task?limit=50 ------------------------------------------------------------------

const LIST_TASKS = 200;
const LIST_CONNECTIONS = 32;

async function benchList(): Promise<void> {
  const q = await startQuarry({ dataDir: freshDataDir('list'), nodeArgs: profArgs('list'), label: 'quarry-list' });
  let b: Awaited<ReturnType<typeof startBaseline>> | undefined;
  try {
    b = await startBaseline(q.key);
    // Tasks with a spec of a realistic size (a table of six columns), each with its turn ended.
    const spec = {
      prompt: 'Find every company making Li-ion cells in the EU, with plant location, capacity in GWh a year and the year it opened.',
      outputs: [{ id: 'plants', kind: 'table', columns: ['company', 'country', 'city', 'capacity_gwh', 'opened', 'source'].map((name) => ({ name, description: `The ${name} of the plant.` })) }],
    };
    const ids = await mapLimit(Array.from({ length: LIST_TASKS }, (_, i) => i), 8, async (i) =>
      (await expectOk('POST', `${q.url}/task/start`, { key: q.key, body: { task: { ...spec, name: `Plants ${i}` } } })).body.task_id as string);
    for (const id of ids) await waitIdle(q, id, 15_000);
    const listPath = '/task?limit=50';
    const listBody = (await expectOk('GET', q.url + listPath, { key: q.key })).text;
    await compareGet(q, b, {
      bench: 'list', metric: 'GET /task?limit=50', path: listPath, body: listBody, baselineConfig: { fixed: { [listPath]: listBody } }, connections: LIST_CONNECTIONS,
      details: { tasks: LIST_TASKS },
    });
  } finally {
    await q.child.stop('SIGTERM');
    await b?.child.stop('SIGTERM');
  }
}

// ---- 2. POST /task, 2b. with a real turn each ------------------------------------------------

/** Turns not ended yet, and turns completed so far. */
interface TurnCounts {
  backlog: number;
  completed: number;
}

/** A creates benchmark's turns, read from Quarry's SQLite file. */
function turnCounts(dataDir: string) {
  const db = new Database(path.join(dataDir, 'quarry.db'), { readonly: true, fileMustExist: true });
  const backlog = db.prepare("select count(*) from turns where status in ('pending', 'running')").pluck();
  const completed = db.prepare("select count(*) from turns where status = 'completed'").pluck();
  const byStatus = db.prepare('select status, count(*) as n from turns group by status');
  return {
    counts: (): TurnCounts => ({ backlog: backlog.get() as number, completed: completed.get() as number }),
    byStatus: () => Object.fromEntries((byStatus.all() as { status: string; n: number }[]).map((r) => [r.status, r.n])) as Record<string, number>,
  };
}

/**
 * Waits (bounded) until `read` shows no turn left to run: the backlog it started from, and the
 * count of completed turns once every turn has ended.
 */
async function drainTurns(read: () => TurnCounts | Promise<TurnCounts>, what: string): Promise<TurnCounts> {
  const left = (await read()).backlog;
  const ended = await within((async () => {
    for (;;) {
      const now = await read();
      if (now.backlog === 0) return now;
      await sleep(20);
    }
  })(), 120_000, what);
  return { backlog: left, completed: ended.completed };
}

/** What differs between the two POST /task benchmarks; the measuring is the same. */
const CREATE_MODES = {
  creates: {
    metric: 'POST /task (stored before answered), with every turn ended',
    target: '≥ 2,000 creates/s; every 200 survives kill -9',
    turns: 'run; no model is configured, so each turn is claimed, started and fails at once with an error event',
  },
  turns: {
    metric: 'POST /task (stored before answered), with every turn run and completed',
    target: '≥ 30% of baseline, no refusals, turns keep up',
    turns: 'run through the agent loop: one call to a model in its own process that answers at once with a final text answer (no tool calls), events stored, turn completed',
  },
} as const;

/**
 * POST /task creates/s, the turns they start included, against the bare server answering the
 * same body. `creates`: no model is configured, so each create's turn is claimed, started and
 * fails at once with an `error` event (decisions §4) — the cheapest honest setup; every create
 * still stores its task, its turn and its events before it is answered. `turns`: Quarry calls a
 * model (bench/instant-model.ts, in its own process so that its CPU is neither Quarry's nor the
 * load generator's) that answers every call at once with a final answer, so each turn really runs:
 * a model call over HTTP, its events stored, the turn completed, the task idle again.
 */
async function benchCreates(bench: keyof typeof CREATE_MODES): Promise<void> {
  const mode = CREATE_MODES[bench];
  const dataDir = freshDataDir(bench);
  const model = bench === 'turns' ? await startInstantModel() : undefined;
  // Either way turns end at once, so the default of 32 turns at a time (sized for turns that wait
  // on a model) would leave the worker short of work to group; 256 lets it keep up.
  const quarryEnv: Record<string, string> = {
    QUARRY_MAX_CONCURRENT_TURNS: '256',
    ...(model ? { QUARRY_MODEL_BASE_URL: model.url, QUARRY_MODEL: 'fake-model' } : {}),
  };
  let q: QuarryProcess = await startQuarry({ dataDir, label: `quarry-${bench}`, env: quarryEnv, nodeArgs: profArgs(bench) });
  const key = q.key;
  const turns = turnCounts(dataDir);
  let b: Awaited<ReturnType<typeof startBaseline>> | undefined;
  const body = JSON.stringify({ prompt: 'Find every company making Li-ion cells in the EU, with plant location and capacity.' });
  const acknowledged: string[] = [];
  let unparsed = 0;
  let createBody = '';
  const onResponse = (status: number, text: string) => {
    if (status !== 200) return;
    try {
      acknowledged.push((JSON.parse(text) as { task_id: string }).task_id);
      if (!createBody) createBody = text;
    } catch {
      unparsed++;
    }
  };
  const opts = (url: string, collect: boolean): autocannon.Options => ({
    url,
    connections: CONNECTIONS,
    requests: [{
      method: 'POST',
      path: '/task',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body,
      ...(collect ? { onResponse } : {}),
    }],
  });
  // After each round: how many turns were still to run, and how long finishing them took (the
  // round's time and CPU include it, see alternate). A server that answers creates while its
  // turns fall behind gains nothing. `completed` is the count of completed turns once they have
  // all ended. The baseline's turns are read from the baseline itself.
  const drains: TurnCounts[] = [];
  const drain = async () => {
    drains.push(await drainTurns(turns.counts, `${bench}: turns to finish`));
  };
  const baselineDrains: TurnCounts[] = [];
  const baselineDrain = async () => {
    const read = async () => (await expectOk('GET', `${b!.url}/_bench/turns`)).body as TurnCounts;
    baselineDrains.push(await drainTurns(read, `${bench}: the baseline's turns to finish`));
  };
  let checked = 0;
  let missing = 0;
  let killedAfter = 0;
  let backlogAtKill = 0;
  const statuses: Record<string, number> = {};
  let turnStatusAtEnd: Record<string, number> = {};
  try {
    b = await startBaseline(q.key);
    log(`${bench}: warm-up ${WARMUP_S} s each, then ${ROUNDS} alternating rounds of ${ROUND_S} s × ${CONNECTIONS} connections`);
    await cannon({ ...opts(q.url, true), duration: WARMUP_S });
    await drain();
    const completedBefore = drains[0]!.completed;
    drains.length = 0;
    // The baseline answers with Quarry's create answer and, for `turns`, sends the model the very
    // request Quarry sent it, with as many turns at a time as Quarry runs.
    await expectOk('POST', `${b.url}/_bench/config`, {
      body: {
        createBody,
        maxConcurrentTurns: Number(quarryEnv.QUARRY_MAX_CONCURRENT_TURNS),
        ...(model ? { modelUrl: model.url, modelRequestBody: fs.readFileSync(model.requestFile, 'utf8') } : {}),
      },
    });
    await cannon({ ...opts(b.url, false), duration: WARMUP_S });
    await baselineDrain();
    const baselineCompletedBefore = baselineDrains[0]!.completed;
    baselineDrains.length = 0;
    const run = await alternate(
      { opts: opts(q.url, true), pid: q.child.proc.pid, after: drain },
      { opts: opts(b.url, false), pid: b.child.proc.pid, after: baselineDrain },
      model?.child.proc.pid,
    );
    if (CPU_PROF) {
      // Node writes a profile as it exits and SIGKILL leaves none: the profiled process ends
      // normally, and a fresh one over the same data takes the durability round.
      await q.child.stop('SIGTERM');
      q = await startQuarry({ dataDir, key, label: `quarry-${bench}-durability`, env: quarryEnv });
    }
    // Durability: one more round, then kill -9 right after its last answer, turns still running.
    log(`${bench}: a last ${ROUND_S} s round, then SIGKILL`);
    await cannon({ ...opts(q.url, true), duration: ROUND_S });
    backlogAtKill = turns.counts().backlog;
    await q.child.stop('SIGKILL');
    killedAfter = acknowledged.length;
    log(`${bench}: Quarry was killed with SIGKILL after ${killedAfter} acknowledged creates (${backlogAtKill} turns not ended); restarting over the same data dir`);
    q = await startQuarry({ dataDir, key, label: `quarry-${bench}-restart`, env: quarryEnv });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
    const restarted = q;
    await within(
      mapLimit(acknowledged, 32, async (id) => {
        const res = await getTaskStatus(`${restarted.url}/task/${encodeURIComponent(id)}`, agent, key);
        checked++;
        if (res.status !== 200) missing++;
        else statuses[res.taskStatus] = (statuses[res.taskStatus] ?? 0) + 1;
      }),
      180_000,
      'durability check',
    );
    agent.destroy();
    if (model) {
      // The restarted Quarry takes up the turns the kill cut short; once they have ended, every
      // turn of the run, warm-up and durability round included, must have completed.
      await drainTurns(turns.counts, `${bench}: turns left by the kill to finish`);
      turnStatusAtEnd = turns.byStatus();
    }

    const seconds = sustainedSeconds(run.quarry);
    const sustained = sustainedRate(run.quarry);
    const baseline = sustainedRate(run.baseline);
    const clean = sideErrors(run.quarry) === 0 && run.quarry.runs.every((r) => r.non2xx === 0);
    const durable = missing === 0 && checked === acknowledged.length;
    // Turns keep up when each round ends with less than one second's worth of its creates still
    // to run: a worker that falls behind ends a round with a backlog that grows with its length.
    const keepUp = drains.every((d, i) => d.backlog < rate(run.quarry.runs[i]!));
    const completed = drains.at(-1)!.completed - completedBefore;
    const baselineCompleted = baselineDrains.at(-1)!.completed - baselineCompletedBefore;
    const notCompleted = Object.entries(turnStatusAtEnd).filter(([status]) => status !== 'completed');
    const met = bench === 'creates'
      ? sustained >= 2000 && durable && clean
      : sustained / baseline >= 0.3 && durable && clean && keepUp && notCompleted.length === 0;
    const sumOf = (xs: number[]) => xs.reduce((n, x) => n + x, 0);
    results.push({
      bench,
      metric: mode.metric,
      unit: 'creates/s',
      quarry: sustained,
      baseline,
      ratio: sustained / baseline,
      target: mode.target,
      met,
      details: {
        turns: mode.turns,
        quarry_env: quarryEnv,
        connections: CONNECTIONS,
        sustained_creates_per_s: round(sustained),
        ...(model ? { turns_completed_per_s: round(completed / seconds) } : {}),
        answered_creates_per_s: round(sideRate(run.quarry)),
        baseline_sustained_creates_per_s: round(baseline),
        ...(model ? { baseline_turns_completed_per_s: round(baselineCompleted / sustainedSeconds(run.baseline)) } : {}),
        baseline_answered_creates_per_s: round(sideRate(run.baseline)),
        server_cpu_us_per_create_with_its_turn: round(cpuPerRequestUs(run.quarry)),
        baseline_cpu_us_per_create_with_its_turn: round(cpuPerRequestUs(run.baseline)),
        ...(model ? {
          model_cpu_us_per_turn: round((sumOf(run.quarry.watchedCpuS) * 1e6) / completed),
          baseline_model_cpu_us_per_turn: round((sumOf(run.baseline.watchedCpuS) * 1e6) / baselineCompleted),
          non_2xx: run.quarry.runs.reduce((n, r) => n + r.non2xx, 0),
          errors: sideErrors(run.quarry),
          backlog_after_rounds: drains.map((d) => d.backlog),
          baseline_backlog_after_rounds: baselineDrains.map((d) => d.backlog),
          turns_keep_up: keepUp,
          turn_status_at_end: turnStatusAtEnd,
        } : {}),
        drains_after_rounds: drains.map((d, i) => ({
          turns_left: d.backlog,
          ms: run.quarry.afterMs[i],
          ...(model ? { turns_completed_in_round_and_drain: d.completed - (i > 0 ? drains[i - 1]!.completed : completedBefore) } : {}),
        })),
        per_round_ratio: run.quarry.runs.map((_, i) => round(sustainedRate(run.quarry, i) / sustainedRate(run.baseline, i), 3)),
        cpu_cost_ratio: round(cpuPerRequestUs(run.baseline) / cpuPerRequestUs(run.quarry), 3),
        quarry: sideSummary(run.quarry),
        baseline: sideSummary(run.baseline),
        durability: {
          acknowledged: acknowledged.length,
          turns_not_ended_at_kill: backlogAtKill,
          checked_after_kill_9: checked,
          missing,
          unparsed_answers: unparsed,
          task_status_after_restart: statuses,
        },
      },
    });
    if (notCompleted.length > 0) throw new Error(`${bench}: not every turn completed: ${JSON.stringify(turnStatusAtEnd)}`);
  } finally {
    await q.child.stop('SIGTERM');
    await b?.child.stop('SIGTERM');
    await model?.child.stop('SIGTERM');
  }
}

function getTaskStatus(url: string, agent: http.Agent, key: string): Promise<{ status: number; taskStatus: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers: { 'x-api-key': key }, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let field = '?';
        try {
          field = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { status?: string }).status);
        } catch {
          // counted by its HTTP status
        }
        resolve({ status: res.statusCode ?? 0, taskStatus: field });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}

// ---- 3. GET /task/{id}/output?limit=50000 -------------------------------------------------------

const COLUMNS = [
  { name: 'company', type: 'string', required: true },
  { name: 'country', type: 'string' },
  { name: 'city', type: 'string' },
  { name: 'capacity_gwh', type: 'number' },
  { name: 'employees', type: 'integer' },
  { name: 'operational', type: 'boolean' },
  { name: 'opened', type: 'date' },
  { name: 'source_url', type: 'url' },
  { name: 'notes', type: 'string' },
  { name: 'score', type: 'number' },
];
const COUNTRIES = ['Germany', 'France', 'Poland', 'Hungary', 'Sweden', 'Spain', 'Italy', 'Czechia'];

function benchRow(i: number): Record<string, unknown> {
  return {
    company: `Company ${i}`,
    country: COUNTRIES[i % COUNTRIES.length],
    city: `City ${i % 500}`,
    capacity_gwh: (i % 1000) / 10,
    employees: 100 + (i % 5000),
    operational: i % 3 !== 0,
    opened: `20${10 + (i % 15)}-0${1 + (i % 9)}-1${i % 9}`,
    source_url: `https://example.com/plants/${i}`,
    notes: 'Cell manufacturing plant; capacity from the annual report.',
    score: ((i * 7919) % 1000) / 1000,
  };
}

async function benchOutput(): Promise<void> {
  // The fake model answers the turn's first call with 10 write_rows calls of 5,000 rows each,
  // then ends the turn: the rows go through the real tool, validation and store.
  const fake = await startFakeOpenAI();
  fake.setResponder((_body, index): FakeReply => {
    if (index > 0) return { text: 'All rows written.' };
    const toolCalls = [];
    for (let first = 0; first < OUTPUT_ROWS; first += ROWS_PER_CALL) {
      const rows = Array.from({ length: ROWS_PER_CALL }, (_, j) => benchRow(first + j + 1));
      toolCalls.push({ name: 'write_rows', arguments: { output: 'plants', rows, sources: [{ url: 'https://example.com/registry', title: 'EU battery plant registry' }] } });
    }
    return { toolCalls };
  });
  const q = await startQuarry({ dataDir: freshDataDir('output'), modelUrl: fake.url, nodeArgs: profArgs('output'), label: 'quarry-output' });
  let b: Awaited<ReturnType<typeof startBaseline>> | undefined;
  const bodyFile = path.join(OUT_DIR, 'output-body.json');
  const qAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const bAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    b = await startBaseline(q.key);
    const spec = {
      name: 'EU battery plants (benchmark)',
      prompt: 'Write the plant table.',
      outputs: [{ id: 'plants', kind: 'table', columns: COLUMNS }],
      limits: { max_steps: 10, max_turn_seconds: 600, max_credits_per_turn: 1e9 },
      tools: [],
    };
    const fillStarted = Date.now();
    const created = await expectOk('POST', `${q.url}/task/start`, { key: q.key, body: { task: spec } });
    const id = created.body.task_id as string;
    log(`output: filling ${OUTPUT_ROWS} rows × ${COLUMNS.length} columns through write_rows`);
    await waitIdle(q, id, 180_000);
    const fillMs = Date.now() - fillStarted;
    const outputs = await expectOk('GET', `${q.url}/task/${encodeURIComponent(id)}/outputs`, { key: q.key });
    const count = outputs.body.outputs?.[0]?.row_count;
    if (count !== OUTPUT_ROWS) {
      const last = (await fetchJson('GET', `${q.url}/task/${encodeURIComponent(id)}`, { key: q.key })).body?.events?.slice(-3);
      throw new Error(`expected ${OUTPUT_ROWS} rows, the output has ${count}; last events: ${JSON.stringify(last).slice(0, 2000)}`);
    }
    const outputPath = `/task/${encodeURIComponent(id)}/output`;
    const query = `?limit=${OUTPUT_ROWS}`;
    const full = await expectOk('GET', q.url + outputPath + query, { key: q.key, timeoutMs: 60_000 });
    if (full.body?.total !== OUTPUT_ROWS || full.body?.rows?.length !== OUTPUT_ROWS) throw new Error('the output page does not hold every row');
    fs.mkdirSync(OUT_DIR, { recursive: true });
    fs.writeFileSync(bodyFile, full.text);
    const bytes = Buffer.byteLength(full.text);
    await expectOk('POST', `${b.url}/_bench/config`, { body: { outputPath, outputBodyFile: bodyFile } });

    log(`output: ${OUTPUT_WARMUP} warm-up + ${OUTPUT_REQUESTS} timed requests each of ${(bytes / 1e6).toFixed(1)} MB, alternating Quarry and baseline`);
    const quarryTimes: number[] = [];
    const baseTimes: number[] = [];
    const cpu = cpuWindow();
    const qCpu = processCpu(q.child.proc.pid);
    const bCpu = processCpu(b.child.proc.pid);
    for (let i = 0; i < OUTPUT_WARMUP + OUTPUT_REQUESTS; i++) {
      const tq = await timedOk(q.url + outputPath + query, qAgent, q.key, bytes);
      const tb = await timedOk(b.url + outputPath + query, bAgent, q.key, bytes);
      if (i >= OUTPUT_WARMUP) {
        quarryTimes.push(tq);
        baseTimes.push(tb);
      }
    }
    const cpuUse = cpu.stop();
    const n = OUTPUT_WARMUP + OUTPUT_REQUESTS;
    const qCpuMs = (qCpu.stop() * 1000) / n;
    const bCpuMs = (bCpu.stop() * 1000) / n;

    const qMed = percentile(quarryTimes, 50);
    const qP95 = percentile(quarryTimes, 95);
    const bMed = percentile(baseTimes, 50);
    const bP95 = percentile(baseTimes, 95);
    results.push({
      bench: 'output',
      metric: `GET /task/{id}/output?limit=${OUTPUT_ROWS} (${OUTPUT_ROWS} rows × ${COLUMNS.length} cols)`,
      unit: 'ms (median)',
      quarry: qMed,
      baseline: bMed,
      ratio: bMed / qMed,
      target: '< 250 ms (p95)',
      met: qP95 < 250,
      details: {
        body_bytes: bytes,
        requests: OUTPUT_REQUESTS,
        fill_ms: fillMs,
        quarry_ms: { median: round(qMed), p95: round(qP95), min: round(Math.min(...quarryTimes)), max: round(Math.max(...quarryTimes)) },
        baseline_ms: { median: round(bMed), p95: round(bP95), min: round(Math.min(...baseTimes)), max: round(Math.max(...baseTimes)) },
        server_cpu_ms_per_request: { quarry: round(qCpuMs), baseline: round(bCpuMs) },
        cpu: cpuUse,
      },
    });
  } finally {
    qAgent.destroy();
    bAgent.destroy();
    await q.child.stop('SIGTERM');
    await b?.child.stop('SIGTERM');
    await fake.close();
    fs.rmSync(bodyFile, { force: true });
  }
}

async function timedOk(url: string, agent: http.Agent, key: string, expectBytes: number): Promise<number> {
  const r = await timedRequest('GET', url, agent, { 'x-api-key': key });
  if (r.status !== 200 || r.bytes !== expectBytes) throw new Error(`GET ${url}: status ${r.status}, ${r.bytes} bytes (expected ${expectBytes})`);
  return r.ms;
}

// ---- 4. 5,000 SSE clients on one task -----------------------------------------------------------

interface SseRun {
  clients: number;
  events: number;
  frames: number;
  expectedFrames: number;
  minFramesPerClient: number;
  latency: ReturnType<typeof histLatency>;
  perEventMaxP50: number;
  perEventMaxP99: number;
  byType: Record<string, { events: number; p50_ms: number; p99_ms: number; p99_of_last_delivery_ms: number }>;
  endReasons: string[];
  cpu?: CpuUse;
  /** CPU seconds the server process used from the first event to the last delivery. */
  serverCpuS: number;
}

/** SSE_CLIENTS streams of `url` over SSE_PROCS client processes. */
function connectClients(url: string, key: string, minId: number): Promise<Child[]> {
  return connectSseClients('sse-clients', Array<string>(SSE_PROCS).fill(url), SSE_CLIENTS, { key, deadlineMs: (SSE_WINDOW_S + 120) * 1000, minId });
}

async function collect(procs: Child[], timeoutMs: number, expectedEvents: number, cpu: { stop(): CpuUse }, server: { stop(): number }): Promise<SseRun> {
  const outs: SseClientResult[] = [];
  for (const p of procs) outs.push(await sseResult(p, timeoutMs));
  // Before the client processes exit, so that their CPU time is counted.
  const cpuUse = cpu.stop();
  const serverCpuS = server.stop();
  for (const p of procs) await p.stop('SIGTERM', 5000);
  const hist = new Map<number, number>();
  const histByType = new Map<string, Map<number, number>>();
  const perEvent = new Map<number, { max: number; n: number; type: string }>();
  for (const o of outs) {
    mergeHist(hist, o.hist);
    for (const [type, h] of o.histByType) {
      let th = histByType.get(type);
      if (!th) histByType.set(type, (th = new Map()));
      mergeHist(th, h);
    }
    for (const [id, max, n, type] of o.perEvent) {
      const e = perEvent.get(id);
      if (e) {
        e.max = Math.max(e.max, max);
        e.n += n;
      } else perEvent.set(id, { max, n, type });
    }
  }
  const frames = outs.reduce((s, o) => s + o.frames, 0);
  const maxes = [...perEvent.values()].map((e) => e.max);
  const byType: SseRun['byType'] = {};
  for (const e of perEvent.values()) {
    const t = (byType[e.type] ??= { events: 0, p50_ms: NaN, p99_ms: NaN, p99_of_last_delivery_ms: 0 });
    t.events++;
  }
  for (const type of Object.keys(byType)) {
    byType[type]!.p99_of_last_delivery_ms = percentile([...perEvent.values()].filter((e) => e.type === type).map((e) => e.max), 99);
    byType[type]!.p50_ms = histogramPercentile(histByType.get(type) ?? new Map(), 50);
    byType[type]!.p99_ms = histogramPercentile(histByType.get(type) ?? new Map(), 99);
  }
  return {
    clients: outs.reduce((s, o) => s + o.connected, 0),
    events: perEvent.size,
    frames,
    expectedFrames: expectedEvents * SSE_CLIENTS,
    minFramesPerClient: Math.min(...outs.map((o) => o.minFramesPerClient)),
    latency: histLatency(hist),
    perEventMaxP50: percentile(maxes, 50),
    perEventMaxP99: percentile(maxes, 99),
    byType,
    endReasons: outs.map((o) => o.reason),
    cpu: cpuUse,
    serverCpuS,
  };
}

async function benchSse(): Promise<void> {
  // The turn is kept running by the fake model: its first call waits until every client is
  // connected; then each call is a step of sseStepReply until the window ends.
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let stopAt = Infinity;
  let steps = 0;
  const fake = await startFakeOpenAI();
  fake.setResponder(async (_body, index): Promise<FakeReply> => {
    if (index === 0) await gate;
    steps++;
    return sseStepReply(steps, Date.now() >= stopAt);
  });
  const q = await startQuarry({ dataDir: freshDataDir('sse'), modelUrl: fake.url, nodeArgs: profArgs('sse'), label: 'quarry-sse' });
  let quarryRun: SseRun;
  let frames: { offsetMs: number; id: number; type: string; data: string }[] = [];
  let taskId: string;
  try {
    const started = await startSseTask(q.url, q.key, 'SSE fan-out (benchmark)', 'Keep checking sources.', () => fake.waitForRequests(1, 15_000));
    taskId = started.taskId;
    const afterSeq = started.afterSeq;
    log(`sse: opening ${SSE_CLIENTS} streams to Quarry (${SSE_PROCS} client processes)`);
    const procs = await connectClients(sseStreamUrl(q.url, taskId, afterSeq), q.key, afterSeq + 1);
    await sleep(500);
    log(`sse: releasing the turn; events for ${SSE_WINDOW_S} s`);
    const cpu = cpuWindow();
    const serverCpu = processCpu(q.child.proc.pid);
    stopAt = Date.now() + SSE_WINDOW_S * 1000;
    release();
    await waitIdle(q, taskId, (SSE_WINDOW_S + 60) * 1000);
    // What Quarry stored during the window, to replay through the baseline.
    const events = await fetchEvents(q, taskId, afterSeq);
    quarryRun = await collect(procs, 60_000, events.length, cpu, serverCpu);
    const t0 = Date.parse(events[0]!.at);
    frames = events.map((e) => ({ offsetMs: Date.parse(e.at) - t0, id: e.seq, type: e.type, data: JSON.stringify(e) }));
  } finally {
    await q.child.stop('SIGTERM');
    await fake.close();
  }

  const b = await startBaseline(q.key);
  let baseRun: SseRun;
  try {
    log(`sse: opening ${SSE_CLIENTS} streams to the baseline; replaying the same ${frames.length} frames at the same times`);
    const procs = await connectClients(`${b.url}/task/${encodeURIComponent(taskId)}/stream`, q.key, 0);
    await sleep(500);
    const cpu = cpuWindow();
    const serverCpu = processCpu(b.child.proc.pid);
    await expectOk('POST', `${b.url}/_bench/replay`, { body: { frames } });
    baseRun = await collect(procs, (SSE_WINDOW_S + 60) * 1000, frames.length, cpu, serverCpu);
  } finally {
    await b.child.stop('SIGTERM');
  }

  const complete = quarryRun.frames === quarryRun.expectedFrames && quarryRun.minFramesPerClient === frames.length;
  results.push({
    bench: 'sse',
    metric: `${SSE_CLIENTS} SSE clients, stored → received latency`,
    unit: 'ms (p99)',
    quarry: quarryRun.latency.p99,
    baseline: baseRun.latency.p99,
    ratio: baseRun.latency.p99 / quarryRun.latency.p99,
    target: 'p99 < 100 ms',
    met: quarryRun.latency.p99 < 100 && complete,
    details: {
      events: frames.length,
      event_types: Object.fromEntries(Object.entries(quarryRun.byType).map(([t, v]) => [t, v.events])),
      frame_bytes_avg: Math.round(frames.reduce((s, f) => s + f.data.length, 0) / Math.max(1, frames.length)),
      window_s: SSE_WINDOW_S,
      model_steps: steps,
      all_frames_delivered: complete,
      quarry: summarizeSse(quarryRun),
      baseline: summarizeSse(baseRun),
    },
  });
}

function summarizeSse(r: SseRun) {
  return {
    clients: r.clients,
    frames_received: r.frames,
    frames_expected: r.expectedFrames,
    min_frames_per_client: r.minFramesPerClient,
    latency_ms: r.latency,
    last_delivery_per_event_ms: { p50: r.perEventMaxP50, p99: r.perEventMaxP99 },
    by_type: r.byType,
    client_end: r.endReasons,
    server_cpu_s: round(r.serverCpuS, 2),
    server_cpu_us_per_frame: round((r.serverCpuS * 1e6) / Math.max(1, r.frames), 2),
    cpu: r.cpu,
  };
}

// ---- report -----------------------------------------------------------------------------------

function fmt(n: number, unit: string): string {
  if (!Number.isFinite(n)) return String(n);
  if (unit.startsWith('ms')) return `${round(n, 1)} ms`;
  return `${Math.round(n).toLocaleString('en-US')}/s`;
}

function printTable(): void {
  const rows = [
    ['benchmark', 'Quarry', 'baseline', 'ratio', 'target', 'met'],
    ...results.map((r) => [r.bench, fmt(r.quarry, r.unit), fmt(r.baseline, r.unit), `${round(r.ratio * 100, 0)}%`, r.target, r.met ? 'yes' : 'NO']),
  ];
  process.stdout.write(`\n${table(rows)}\n`);
  process.stdout.write('\nratio: Quarry ÷ baseline for rates, baseline ÷ Quarry for times (100% = as fast as the bare server)\n');
  for (const r of results) {
    const foreign = r.details.foreign_cores_before_start;
    if (typeof foreign === 'number' && foreign > 0.5) process.stdout.write(`${r.bench}: other processes were using ${foreign} of ${os.cpus().length} cores when it started: figures are skewed (see cpu_* in the JSON)\n`);
    if (r.bench === 'state' || r.bench === 'creates' || r.bench === 'turns') {
      const d = r.details as { quarry: { server_cpu_us_per_request: number }; baseline: { server_cpu_us_per_request: number } };
      process.stdout.write(`${r.bench}: server CPU per request: Quarry ${d.quarry.server_cpu_us_per_request} µs, baseline ${d.baseline.server_cpu_us_per_request} µs\n`);
    }
    if (r.bench === 'state-pinned') {
      type Pinned = { server_cpu_us_per_request: number; server_core_share_per_round: number[] };
      const d = r.details as { load_generator: string; per_round_ratio: number[]; fastify_floor_vs_baseline: number; quarry_vs_fastify_floor: number; quarry: Pinned; baseline: Pinned; fastify_floor: Pinned };
      const pct = (x: number) => `${round(x * 100, 0)}%`;
      process.stdout.write(`state-pinned: ${d.load_generator}; ratio per round ${d.per_round_ratio.map(pct).join(', ')}; server CPU per request: Quarry ${d.quarry.server_cpu_us_per_request} µs, bare Fastify ${d.fastify_floor.server_cpu_us_per_request} µs, baseline ${d.baseline.server_cpu_us_per_request} µs; share of the core per round: Quarry ${d.quarry.server_core_share_per_round.join(', ')}, baseline ${d.baseline.server_core_share_per_round.join(', ')}\n`);
      process.stdout.write(`state-pinned: bare Fastify serves ${pct(d.fastify_floor_vs_baseline)} of the baseline; Quarry serves ${pct(d.quarry_vs_fastify_floor)} of bare Fastify\n`);
    }
    if (r.bench === 'state-shared') {
      type Shared = { server_cpu_us_per_request: number; server_core_share_per_round: number[] };
      const d = r.details as { per_round_ratio: number[]; answered_ratio: number; fastify_floor_vs_baseline: number; quarry_vs_fastify_floor: number; preemptions_per_s: Record<string, number[]>; quarry: Shared; baseline: Shared; fastify_floor: Shared };
      const pct = (x: number) => `${round(x * 100, 0)}%`;
      process.stdout.write(`state-shared: ratio per round ${d.per_round_ratio.map(pct).join(', ')}; server CPU per request: Quarry ${d.quarry.server_cpu_us_per_request} µs, bare Fastify ${d.fastify_floor.server_cpu_us_per_request} µs, baseline ${d.baseline.server_cpu_us_per_request} µs; share of the core per round: Quarry ${d.quarry.server_core_share_per_round.join(', ')}, baseline ${d.baseline.server_core_share_per_round.join(', ')}, bare Fastify ${d.fastify_floor.server_core_share_per_round.join(', ')}\n`);
      process.stdout.write(`state-shared: bare Fastify serves ${pct(d.fastify_floor_vs_baseline)} of the baseline per CPU-second; Quarry ${pct(d.quarry_vs_fastify_floor)} of bare Fastify; answered while sharing the core: Quarry ${pct(d.answered_ratio)} of the baseline; switched out a second (median of rounds): ${Object.entries(d.preemptions_per_s).map(([side, n]) => `${side} ${percentile(n, 50)}`).join(', ')}\n`);
    }
    if (r.bench === 'creates') {
      const d = r.details.durability as { acknowledged: number; checked_after_kill_9: number; missing: number };
      const c = r.details as { answered_creates_per_s: number; server_cpu_us_per_create_with_its_turn: number };
      process.stdout.write(`creates: ${c.answered_creates_per_s}/s answered during the rounds; ${c.server_cpu_us_per_create_with_its_turn} µs server CPU per create with its turn\n`);
      process.stdout.write(`creates: ${d.acknowledged} acknowledged, ${d.checked_after_kill_9} checked after kill -9 + restart, ${d.missing} missing\n`);
    }
    if (r.bench === 'turns') {
      const c = r.details as {
        sustained_creates_per_s: number; turns_completed_per_s: number; backlog_after_rounds: number[]; non_2xx: number; errors: number;
        server_cpu_us_per_create_with_its_turn: number; model_cpu_us_per_turn: number; turn_status_at_end: Record<string, number>;
        baseline_sustained_creates_per_s: number; baseline_turns_completed_per_s: number; baseline_answered_creates_per_s: number;
        baseline_cpu_us_per_create_with_its_turn: number; baseline_model_cpu_us_per_turn: number;
      };
      process.stdout.write(`turns: ${c.sustained_creates_per_s} creates/s and ${c.turns_completed_per_s} turns completed/s sustained; turns left after each round: ${c.backlog_after_rounds.join(', ')}; ${c.non_2xx} non-2xx, ${c.errors} errors\n`);
      process.stdout.write(`turns: ${c.server_cpu_us_per_create_with_its_turn} µs Quarry CPU per create with its turn, ${c.model_cpu_us_per_turn} µs model CPU per turn; turns at the end: ${JSON.stringify(c.turn_status_at_end)}\n`);
      process.stdout.write(`turns: baseline ${c.baseline_sustained_creates_per_s} creates/s and ${c.baseline_turns_completed_per_s} turns/s sustained (${c.baseline_answered_creates_per_s}/s answered during its rounds); ${c.baseline_cpu_us_per_create_with_its_turn} µs CPU per create with its turn, ${c.baseline_model_cpu_us_per_turn} µs model CPU per turn\n`);
    }
    if (r.bench === 'output') {
      const d = r.details as { quarry_ms: { median: number; p95: number }; baseline_ms: { median: number; p95: number }; body_bytes: number };
      process.stdout.write(`output: Quarry median ${d.quarry_ms.median} ms / p95 ${d.quarry_ms.p95} ms; baseline median ${d.baseline_ms.median} ms / p95 ${d.baseline_ms.p95} ms; ${(d.body_bytes / 1e6).toFixed(1)} MB\n`);
      const c = (r.details as { server_cpu_ms_per_request: { quarry: number; baseline: number } }).server_cpu_ms_per_request;
      process.stdout.write(`output: server CPU per request: Quarry ${c.quarry} ms, baseline ${c.baseline} ms\n`);
    }
    if (r.bench === 'sse') {
      const d = r.details as { events: number; quarry: { latency_ms: { p50: number; p99: number } }; baseline: { latency_ms: { p50: number; p99: number } }; all_frames_delivered: boolean };
      process.stdout.write(`sse: ${d.events} events × ${SSE_CLIENTS} clients; Quarry p50 ${d.quarry.latency_ms.p50} ms / p99 ${d.quarry.latency_ms.p99} ms; baseline p50 ${d.baseline.latency_ms.p50} ms / p99 ${d.baseline.latency_ms.p99} ms; every frame delivered: ${d.all_frames_delivered}\n`);
      const c = r.details as { quarry: { server_cpu_us_per_frame: number }; baseline: { server_cpu_us_per_frame: number } };
      process.stdout.write(`sse: server CPU per delivered frame: Quarry ${c.quarry.server_cpu_us_per_frame} µs, baseline ${c.baseline.server_cpu_us_per_frame} µs\n`);
    }
  }
  for (const f of failures) process.stdout.write(`FAILED ${f.bench}: ${f.error}\n`);
}

async function main(): Promise<void> {
  startWatchdog('bench', WATCHDOG_MS);
  const started = new Date();
  const loadAtStart = loadAverage();
  noteLoad(loadAtStart);
  const benches: Record<BenchName, () => Promise<void>> = { state: benchState, 'state-pinned': benchStatePinned, 'state-shared': benchStateShared, list: benchList, creates: () => benchCreates('creates'), turns: () => benchCreates('turns'), output: benchOutput, sse: benchSse };
  for (const name of ALL) {
    if (!ONLY.has(name)) continue;
    const quiet = await waitForQuiet(name, 0.5, QUIET_WAIT_S * 1000);
    const t = Date.now();
    const before = results.length;
    try {
      await benches[name]();
      for (const r of results.slice(before)) r.details.foreign_cores_before_start = quiet.foreign_cores;
      log(`${name}: done in ${round((Date.now() - t) / 1000)} s`);
    } catch (err) {
      failures.push({ bench: name, error: (err as Error).stack ?? String(err) });
      log(`${name}: FAILED: ${(err as Error).message}`);
    }
  }
  printTable();
  const report = {
    ...reportHeader(started, loadAtStart),
    settings: { rounds: ROUNDS, round_s: ROUND_S, sse_window_s: SSE_WINDOW_S, warmup_s: WARMUP_S, connections: CONNECTIONS, sse_clients: SSE_CLIENTS, sse_client_processes: SSE_PROCS, cpu_prof: CPU_PROF },
    results: results.map((r) => ({ ...r, quarry: round(r.quarry, 2), baseline: round(r.baseline, 2), ratio: round(r.ratio, 3) })),
    failures,
  };
  writeReport('latest.json', report);
  process.exit(failures.length > 0 ? 1 : 0);
}

void main();
