/**
 * Shared pieces of the benchmark harnesses (run.ts, cluster.ts): the servers under test (each in
 * its own process, with a raised open-files limit, started by test/kit/process.ts
 * as the tests start theirs), requests through test/kit/http.ts, the SSE
 * load-generator processes, statistics, CPU accounting from /proc, and report helpers.
 * Every wait here is bounded; every child is killed when the harness exits.
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { FakeReply } from '../test/kit/fake-openai-server.js';
import { fetchJson, httpClient, waitIdle as waitIdleOn, type RequestOptions, type TestResponse } from '../test/kit/http.js';
import { liveProcesses, ROOT, spawnNode, startServer, tempDataDir, type NodeProcess, type ServerProcess } from '../test/kit/process.js';

export { ROOT };
export const OUT_DIR = path.join(ROOT, '.bench');

// Ctrl-C or a kill of the harness still ends its children (through the kit's exit handler).
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => process.exit(130));

/** A child process of the benchmark (a server, the baseline, a load generator). */
export type Child = NodeProcess;

/** A new temporary data dir; every one is removed when the harness exits (BENCH_KEEP_DATA=1 keeps them). */
export function freshDataDir(label: string): string {
  return tempDataDir(`quarry-bench-${label}-`, { keep: process.env.BENCH_KEEP_DATA === '1' });
}

export interface QuarryProcess {
  url: string;
  /** The starter key (or the one passed in); '' when `waitForKey` is false and none was passed. */
  key: string;
  dataDir: string;
  child: ServerProcess;
}

export interface QuarryStartOptions {
  dataDir: string;
  modelUrl?: string;
  /** The key from the first start (a restart over the same store prints none). */
  key?: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
  role?: 'all' | 'api' | 'worker';
  label?: string;
  /** Wait for the printed starter key (default true; false for a node joining a store that has one). */
  waitForKey?: boolean;
  /** How long to wait for the `listening` line (default 30 s). */
  listenTimeoutMs?: number;
}

/**
 * Runs `quarry serve` from the build (what users run, `npm start`; `npm run bench` builds first)
 * in a child process on a free loopback port, with a raised open-files limit.
 */
export async function startQuarry(opts: QuarryStartOptions): Promise<QuarryProcess> {
  const child = await startServer({
    dataDir: opts.dataDir,
    role: opts.role,
    name: opts.label ?? 'quarry',
    nodeArgs: opts.nodeArgs,
    raiseFdLimit: true,
    startTimeoutMs: opts.listenTimeoutMs,
    waitForStarterKey: opts.key === undefined && opts.waitForKey !== false,
    env: {
      QUARRY_RATE_LIMIT_PER_MIN: '1000000000',
      QUARRY_STARTER_CREDITS: '1000000000',
      QUARRY_MODEL_BASE_URL: opts.modelUrl ?? '',
      QUARRY_MODEL: 'fake-model',
      ...opts.env,
    },
  });
  return { url: child.url, key: opts.key ?? child.starterKey ?? '', dataDir: opts.dataDir, child };
}

/** The bare node:http baseline server (bench/baseline-server.ts) in its own process. */
export async function startBaseline(apiKey: string): Promise<{ url: string; child: Child }> {
  const child = spawnNode('bench/baseline-server.ts', [apiKey], { name: 'baseline', raiseFdLimit: true });
  const url = (await child.waitForLine(/^baseline listening on (http:\/\/\S+)/, 30_000))[1]!;
  return { url, child };
}

/** The framework floor (bench/fastify-floor-server.ts): the state route on a bare Fastify app. */
export async function startFastifyFloor(apiKey: string, nodeArgs: string[] = []): Promise<{ url: string; child: Child }> {
  const child = spawnNode('bench/fastify-floor-server.ts', [apiKey], { name: 'fastify-floor', raiseFdLimit: true, nodeArgs });
  const url = (await child.waitForLine(/^fastify floor listening on (http:\/\/\S+)/, 30_000))[1]!;
  return { url, child };
}

/**
 * The `turns` benchmark's model (bench/instant-model.ts) in its own process: every
 * chat-completions call is answered at once with a final answer. `url` is its base URL;
 * `requestFile` holds the body of the first call it answered (Quarry's), for the baseline to send.
 */
export async function startInstantModel(opts: { rowsOutput?: string } = {}): Promise<{ url: string; child: Child; requestFile: string }> {
  const requestFile = path.join(OUT_DIR, 'instant-model-request.json');
  fs.mkdirSync(OUT_DIR, { recursive: true });
  fs.rmSync(requestFile, { force: true });
  const rows = opts.rowsOutput === undefined ? [] : ['--rows', opts.rowsOutput];
  const child = spawnNode('bench/instant-model.ts', [requestFile, ...rows], { name: 'instant-model', raiseFdLimit: true });
  const url = (await child.waitForLine(/^instant model listening on (http:\/\/\S+)/, 30_000))[1]!;
  return { url, child, requestFile };
}

/** One request with fetch that must succeed (for set-up and checks, not for measuring). */
export async function expectOk(method: string, url: string, opts: RequestOptions = {}): Promise<TestResponse> {
  const res = await fetchJson(method, url, opts);
  if (res.status < 200 || res.status >= 300) throw new Error(`${method} ${url} answered ${res.status}: ${res.text.slice(0, 500)}`);
  return res;
}

/** Long-polls /state (bounded) until the task has no running turn. */
export async function waitIdle(q: QuarryProcess, taskId: string, timeoutMs: number): Promise<void> {
  await waitIdleOn(httpClient(q.url, q.key), taskId, { timeoutMs });
}

export interface StoredEvent {
  seq: number;
  type: string;
  at: string;
}

/** Every stored event of a task after `after`, as GET /task/{id}/events returns them, in pages of 1000 (at most 100 pages). */
export async function fetchEvents(q: { url: string; key: string }, taskId: string, after: number): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  for (let page = 0; page < 100; page++) {
    const res = await expectOk('GET', `${q.url}/task/${encodeURIComponent(taskId)}/events?after=${after}&limit=1000`, { key: q.key });
    events.push(...(res.body.events as StoredEvent[]));
    if (res.body.next_after === null) break;
    after = res.body.next_after as number;
  }
  return events;
}

// ---- the SSE benchmarks' turn (bench/run.ts and bench/cluster.ts) ------------------------------

/** The most model calls one SSE benchmark turn makes, whatever its window. */
const SSE_MAX_STEPS = 400;

/**
 * The fake model's answer to call `step` of an SSE benchmark turn: until `finished`, a sentence
 * streamed in chunks 100 ms apart and a call to an unknown tool, which fails at once. That is the
 * real event mix of a working agent: per step Quarry stores and streams task (activity), text,
 * and tool started/failed events, bursts included.
 */
export function sseStepReply(step: number, finished: boolean): FakeReply {
  if (finished || step >= SSE_MAX_STEPS) return { text: 'Finished the checks.' };
  return {
    text: `Step ${step}: compared the plant list with the registry and noted two capacity changes; checking the next source now.`,
    toolCalls: [{ name: 'bench_tick', arguments: { step } }],
    chunkDelayMs: 100,
  };
}

/**
 * Creates an SSE benchmark task on `url` and waits (`firstCall`) until the fake model holds its
 * turn's first call. Returns the task and the last event stored before the window: streams are
 * measured from the next one.
 */
export async function startSseTask(url: string, key: string, name: string, prompt: string, firstCall: () => Promise<unknown>): Promise<{ taskId: string; afterSeq: number }> {
  const spec = { name, prompt, limits: { max_steps: 1000, max_turn_seconds: 600, max_credits_per_turn: 1e9 }, tools: [] };
  const created = await expectOk('POST', `${url}/task/start`, { key, body: { task: spec } });
  const taskId = created.body.task_id as string;
  await firstCall();
  await sleep(200);
  const afterSeq = (await expectOk('GET', `${url}/task/${encodeURIComponent(taskId)}/state`, { key })).body.last_event_id as number;
  return { taskId, afterSeq };
}

/**
 * A task's stream, resumed one event back: Quarry sends a stream's headers with its first frame,
 * so a stream with nothing to replay would not look connected until the next event. The replayed
 * frame is below the measured ids (`afterSeq + 1` on).
 */
export function sseStreamUrl(url: string, taskId: string, afterSeq: number): string {
  return `${url}/task/${encodeURIComponent(taskId)}/stream?after=${afterSeq - 1}`;
}

// ---- SSE load generators (bench/sse-clients.ts) -------------------------------------------------

/** What one bench/sse-clients.ts process reports on its `result` line (the fields the harnesses read). */
export interface SseClientResult {
  /** Why it reported: every stream ended, the deadline, SIGTERM… */
  reason: string;
  connected: number;
  /** Connections that failed, or that errored after connecting. */
  failed: number;
  /** Measured frames over all its streams. */
  frames: number;
  unparsable: number;
  minFramesPerClient: number;
  /** [latency ms, frames] */
  hist: [number, number][];
  /** [event type, [latency ms, frames][]] */
  histByType: [string, [number, number][]][];
  /** [event id, latest delivery ms, clients that got it, event type] */
  perEvent: [number, number, number, string][];
}

/**
 * Opens `total` SSE streams split evenly over client processes, one per entry of `urls` (the
 * stream each of its streams opens), and resolves once every process has all of its streams open.
 * Frames with an id below `minId` are replayed history, not measured. A stream that fails to
 * connect fails the round: the processes are stopped and the error names the shortfall.
 */
export async function connectSseClients(name: string, urls: string[], total: number, opts: { key: string; deadlineMs: number; minId: number }): Promise<Child[]> {
  const per = Math.ceil(total / urls.length);
  const counts = urls.map((_, i) => Math.min(per, total - i * per));
  const procs = urls.map((url, i) =>
    spawnNode('bench/sse-clients.ts', [
      '--url', url, '--count', String(counts[i]), '--key', opts.key, '--deadline-ms', String(opts.deadlineMs), '--min-id', String(opts.minId),
    ], { name: `${name}-${i}`, raiseFdLimit: true }),
  );
  try {
    for (const [i, proc] of procs.entries()) {
      const m = await proc.waitForLine(/^connected (\d+) (\d+)/, 120_000);
      if (Number(m[1]) !== counts[i]) throw new Error(`${name}-${i}: only ${m[1]} of ${counts[i]} streams connected to ${urls[i]} (${m[2]} failed)`);
    }
  } catch (err) {
    await Promise.all(procs.map((p) => p.stop('SIGTERM', 5000)));
    throw err;
  }
  return procs;
}

/** Waits for the client process's `result <json>` line (printed once its streams have ended, or at its deadline). */
export async function sseResult(child: Child, timeoutMs: number): Promise<SseClientResult> {
  return JSON.parse((await child.waitForLine(/^result (.*)$/, timeoutMs))[1]!) as SseClientResult;
}

/** Adds counts per millisecond (a Map or sse-clients.ts's entry list) into `into`. */
export function mergeHist(into: Map<number, number>, from: Iterable<[number, number]>): void {
  for (const [ms, n] of from) into.set(ms, (into.get(ms) ?? 0) + n);
}

/** p50/p90/p99/max of a latency histogram (NaN when it is empty). */
export function histLatency(hist: Map<number, number>): { p50: number; p90: number; p99: number; max: number } {
  return { p50: histogramPercentile(hist, 50), p90: histogramPercentile(hist, 90), p99: histogramPercentile(hist, 99), max: hist.size ? Math.max(...hist.keys()) : NaN };
}

/**
 * A timed request with node:http over `agent`'s keep-alive sockets: ms from sending the request
 * to the last byte of the answer, plus the status and body size. `body` is sent as JSON.
 */
export function timedRequest(
  method: string, url: string, agent: http.Agent, headers: Record<string, string>, opts: { body?: string; timeoutMs?: number } = {},
): Promise<{ ms: number; status: number; bytes: number }> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const sent = opts.body === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(opts.body)) };
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = http.request(url, { method, agent, headers: sent, timeout: timeoutMs }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
      });
      res.on('end', () => resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, status: res.statusCode ?? 0, bytes }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Runs `fn` over `items` with at most `concurrency` in flight. */
export async function mapLimit<T, R>(items: readonly T[], concurrency: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  });
  await Promise.all(workers);
  return results;
}

/** Nearest-rank percentile of an unsorted list (sorts a copy). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

/** Percentile of a histogram given as counts per integer millisecond. */
export function histogramPercentile(hist: Map<number, number>, p: number): number {
  let total = 0;
  for (const n of hist.values()) total += n;
  if (total === 0) return NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * total));
  let seen = 0;
  for (const ms of [...hist.keys()].sort((a, b) => a - b)) {
    seen += hist.get(ms)!;
    if (seen >= rank) return ms;
  }
  return NaN;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** Pids of this harness and its live children (servers, load generators). */
function ourPids(): number[] {
  return [process.pid, ...liveProcesses().map((c) => c.proc.pid).filter((pid): pid is number => pid !== undefined)];
}

/** Machine-wide busy (user + nice + system + irq + softirq) and steal jiffies since boot; undefined without /proc/stat. */
export function machineJiffies(): { busy: number; steal: number } | undefined {
  try {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = f;
    return { busy: user + nice + system + irq + softirq, steal };
  } catch {
    return undefined;
  }
}

/** CPU jiffies (user + system, all threads) one process has used; undefined once it is gone (or without /proc). */
export function processJiffies(pid: number): number | undefined {
  try {
    // Fields after the command name (which may contain spaces): utime is the 12th, stime the 13th.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[11]) + Number(rest[12]);
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system, all threads) one process uses over a window; NaN where /proc is missing or the process is gone. */
export function processCpu(pid: number | undefined): { stop(): number } {
  const j0 = pid === undefined ? undefined : processJiffies(pid);
  return {
    stop() {
      const j1 = pid === undefined ? undefined : processJiffies(pid);
      return j0 === undefined || j1 === undefined ? NaN : (j1 - j0) / 100;
    },
  };
}

/** Pins every thread of a running process, and the threads it starts later, to one CPU (`taskset`). */
export function pinToCpu(pid: number, cpu: number): void {
  execFileSync('taskset', ['-a', '-c', '-p', String(cpu), String(pid)], { stdio: 'ignore' });
}

/**
 * Puts every thread of a running process under SCHED_BATCH (`chrt -b`): it no longer takes the
 * CPU from another process the moment it wakes, so processes sharing a core run in slices the
 * scheduler's tick ends.
 */
export function batchScheduling(pid: number): void {
  execFileSync('chrt', ['-a', '-b', '-p', '0', String(pid)], { stdio: 'ignore' });
}

/** Times the scheduler took the CPU from a process's main thread over a window; NaN where /proc is missing. */
export function processPreemptions(pid: number): { stop(): number } {
  const read = () => {
    try {
      return Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
    } catch {
      return NaN;
    }
  };
  const n0 = read();
  return { stop: () => read() - n0 };
}

/** One round of load from a load generator pinned to a CPU of its own. */
export interface PinnedLoad {
  /** 2xx answers. */
  ok: number;
  non2xx: number;
  /** Socket errors and timeouts. */
  errors: number;
  seconds: number;
  latency_ms: { p50: number; p99: number };
}

/** The pinned load generator: Debian's `wrk` where it is installed, else autocannon's CLI in a child process. */
export const PINNED_LOAD_TOOL: 'wrk' | 'autocannon' = (() => {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return 'wrk';
  } catch (err) {
    // wrk --version prints its version and exits 1; only a missing binary is ENOENT.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'autocannon' : 'wrk';
  }
})();

/** wrk's latency figures ("812.00us", "1.20ms", "1.01s") in ms. */
function wrkMs(text: string | undefined): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text ?? '');
  if (!m) return NaN;
  return Number(m[1]) * ({ us: 1e-3, ms: 1, s: 1e3 } as const)[m[2] as 'us' | 'ms' | 's'];
}

function execText(file: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd: ROOT, timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
  });
}

/**
 * GET `url` from `connections` keep-alive connections for `seconds`, the load generator pinned to
 * `cpu` with taskset (one wrk thread, or autocannon in a process of its own), bounded in time.
 */
export async function pinnedLoad(opts: { url: string; headers: Record<string, string>; connections: number; seconds: number; cpu: number }): Promise<PinnedLoad> {
  const timeoutMs = (opts.seconds + 30) * 1000;
  const cpu = String(opts.cpu);
  if (PINNED_LOAD_TOOL === 'wrk') {
    const headers = Object.entries(opts.headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
    const out = await execText('taskset', ['-c', cpu, 'wrk', '-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency', ...headers, opts.url], timeoutMs);
    const done = /(\d+) requests in ([\d.]+)(ms|s|m)/.exec(out);
    if (!done) throw new Error(`wrk printed no request count:\n${out}`);
    const seconds = Number(done[2]) * ({ ms: 1e-3, s: 1, m: 60 } as const)[done[3] as 'ms' | 's' | 'm'];
    const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
    const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
    return {
      ok: Number(done[1]) - non2xx,
      non2xx,
      errors: socket ? socket.slice(1).reduce((n, x) => n + Number(x), 0) : 0,
      seconds,
      latency_ms: { p50: wrkMs(/ 50%\s+(\S+)/.exec(out)?.[1]), p99: wrkMs(/ 99%\s+(\S+)/.exec(out)?.[1]) },
    };
  }
  const headers = Object.entries(opts.headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]);
  const cli = path.join(ROOT, 'node_modules/autocannon/autocannon.js');
  const out = await execText('taskset', ['-c', cpu, process.execPath, cli, '-c', String(opts.connections), '-d', String(opts.seconds), '-j', ...headers, opts.url], timeoutMs);
  const r = JSON.parse(out) as { '2xx': number; non2xx: number; errors: number; timeouts: number; duration: number; latency: { p50: number; p99: number } };
  return { ok: r['2xx'], non2xx: r.non2xx, errors: r.errors + r.timeouts, seconds: r.duration, latency_ms: { p50: r.latency.p50, p99: r.latency.p99 } };
}

export interface CpuUse {
  /** CPU cores busy on the whole machine, on average over the window. */
  machine_cores: number;
  /** Of which this harness and its children. */
  ours_cores: number;
  /** Of which other processes on the machine (other users' work competes with the benchmark). */
  foreign_cores: number;
  steal_cores: number;
}

/**
 * Measures CPU use over a window from /proc (Linux): how much of the machine this benchmark
 * used and how much other processes did, so a noisy run can be told from a slow one.
 */
export function cpuWindow(): { stop(): CpuUse } {
  const clkTck = 100;
  const t0 = process.hrtime.bigint();
  const m0 = machineJiffies();
  const pids = ourPids();
  const p0 = new Map(pids.map((pid) => [pid, processJiffies(pid)]));
  return {
    stop() {
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      const m1 = machineJiffies();
      if (!m0 || !m1 || seconds <= 0) return { machine_cores: NaN, ours_cores: NaN, foreign_cores: NaN, steal_cores: NaN };
      let ours = 0;
      // A process that exited within the window is not counted (stop windows before children exit).
      for (const pid of new Set([...pids, ...ourPids()])) {
        const now = processJiffies(pid);
        if (now !== undefined) ours += now - (p0.get(pid) ?? 0);
      }
      const cores = (j: number) => round(j / clkTck / seconds, 2);
      const busy = m1.busy - m0.busy;
      return { machine_cores: cores(busy), ours_cores: cores(ours), foreign_cores: cores(Math.max(0, busy - ours)), steal_cores: cores(m1.steal - m0.steal) };
    },
  };
}

/**
 * Waits (bounded) until other processes use less than `maxForeignCores` over a one-second sample,
 * so the benchmark `label` does not start in the middle of someone else's burst; says so when it
 * starts anyway. Returns the last sample.
 */
export async function waitForQuiet(label: string, maxForeignCores: number, maxWaitMs: number): Promise<{ waited_ms: number; foreign_cores: number }> {
  const started = Date.now();
  let foreign = NaN;
  do {
    const w = cpuWindow();
    await sleep(1000);
    foreign = w.stop().foreign_cores;
    if (!(foreign > maxForeignCores)) break;
  } while (Date.now() - started < maxWaitMs);
  const waited = Date.now() - started;
  if (foreign > maxForeignCores) log(`${label}: other processes still use ${foreign} cores after waiting ${round(waited / 1000)} s; running anyway`);
  return { waited_ms: waited, foreign_cores: foreign };
}

/** A small deterministic generator (xorshift32) of numbers in [0, 1): every run of a benchmark seeded alike sees the same data. */
export function seededRandom(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

export function round(n: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

// ---- report ---------------------------------------------------------------------------------------

/** Ends the run (exit code 2) if it is still going after `ms`. */
export function startWatchdog(name: string, ms: number): void {
  setTimeout(() => {
    process.stderr.write(`${name}: still running after ${ms / 60_000} min; giving up\n`);
    process.exit(2);
  }, ms).unref();
}

/** The 1, 5 and 15 minute load averages, rounded. */
export function loadAverage(): number[] {
  return os.loadavg().map((n) => round(n, 2));
}

export function noteLoad(load: number[]): void {
  if (load[0]! > 0.5) log(`note: load average ${load.join(' ')} at start: other work on this machine competes with the benchmark`);
}

/** The code measured: HEAD, and whether src/ differs from it (read-only git commands; no index refresh). */
function revision(): { head: string; src_dirty: boolean } | null {
  try {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['--no-optional-locks', 'status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return { head, src_dirty: dirty };
  } catch {
    return null;
  }
}

/** What every report starts with: when, on what, which code, and how busy the machine was. */
export function reportHeader(started: Date, loadAtStart: number[], extra: Record<string, unknown> = {}) {
  return { started_at: started.toISOString(), finished_at: new Date().toISOString(), machine: machine(), ...extra, revision: revision(), load_average_at_start: loadAtStart };
}

function machine() {
  const cpus = os.cpus();
  return { cpus: cpus.length, cpu_model: cpus[0]?.model ?? 'unknown', memory_gb: round(os.totalmem() / 2 ** 30, 1), os: `${os.type()} ${os.release()} ${os.arch()}`, node: process.version };
}

/** Rows as aligned columns under a rule, two spaces apart (the first row is the header). */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const line = (r: string[]) => r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ').trimEnd();
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

/** Writes the report to .bench/<file> and says so on stdout. */
export function writeReport(file: string, report: unknown): void {
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const out = path.join(OUT_DIR, file);
  fs.writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\nwritten: ${path.relative(process.cwd(), out)}\n`);
}
