/**
 * The provider-limits benchmark (`npm run bench:limits`, docs/performance.md#provider-limits).
 * Quarry runs as `quarry serve` from the build on SQLite; the fake model
 * (test/kit/fake-openai-server.ts) runs in this process.
 *
 *   1. group    A group of BENCH_LIMITS_INPUTS (500) inputs against a fake provider that allows
 *               BENCH_LIMITS_PER_WINDOW (120) requests in any BENCH_LIMITS_WINDOW_S (6 s; 60 is
 *               the unscaled provider, 120 a minute) and answers 429 beyond it, with OpenAI's
 *               rate-limit headers. Each run is three model calls (write_rows, the answer, and
 *               the answer to the engine's check of the outputs).
 *               Twice: `configured` (QUARRY_MODEL_RPM set to the provider's rate, 5% under it;
 *               BENCH_LIMITS_MARGIN=1 sets the provider's own rate)
 *               and `learned` (nothing set: Quarry keeps to what the 429s and headers say).
 *               Reported: failed runs, 429s as a share of model calls, and the makespan (create
 *               to the group's end) against the ideal the limit allows (calls answered ÷ rate).
 *   2. idle     BENCH_LIMITS_TURNS (1,000) turns at once in one worker
 *               (QUARRY_MAX_CONCURRENT_TURNS the same) against a model that answers each call
 *               after BENCH_LIMITS_REPLY_S (30) s: Quarry's peak RSS (VmHWM), its event-loop
 *               delay while the turns wait (perf_hooks' monitorEventLoopDelay, loaded into the
 *               server by bench/loop-delay-probe.mjs), and GET /task/{id}/state latency meanwhile.
 *
 * Results: a table on stdout and .bench/provider-limits.json. BENCH_LIMITS_ONLY=group,idle and
 * BENCH_LIMITS_MODES=configured,learned run a subset.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startFakeOpenAI, type FakeReply, type FakeRequestBody } from '../test/kit/fake-openai-server.js';
import { expectOk, freshDataDir, OUT_DIR, ROOT, loadAverage, log, mapLimit, percentile, reportHeader, round, sleep, startQuarry, table, writeReport, type QuarryProcess } from './lib.js';

const MODES = (process.env.BENCH_LIMITS_MODES ?? 'configured,learned').split(',').map((s) => s.trim()) as ('configured' | 'learned')[];
const ONLY = new Set((process.env.BENCH_LIMITS_ONLY ?? 'group,idle').split(',').map((s) => s.trim()));
const INPUTS = Number(process.env.BENCH_LIMITS_INPUTS ?? 500);
const PER_WINDOW = Number(process.env.BENCH_LIMITS_PER_WINDOW ?? 120);
const WINDOW_S = Number(process.env.BENCH_LIMITS_WINDOW_S ?? 6);
const PARALLEL = Number(process.env.BENCH_LIMITS_PARALLEL ?? 64);
const TURNS = Number(process.env.BENCH_LIMITS_TURNS ?? 1000);
const REPLY_S = Number(process.env.BENCH_LIMITS_REPLY_S ?? 30);
/** `configured`: QUARRY_MODEL_RPM as this share of the provider's rate (deploy.md advises 5% under it). */
const MARGIN = Number(process.env.BENCH_LIMITS_MARGIN ?? 0.95);

const COLUMNS = [{ name: 'fact', type: 'string' }];

/** Two calls a run: write one row, then answer without a tool call. */
function respond(body: FakeRequestBody): FakeReply {
  const wrote = (body.messages ?? []).some((m) => m.role === 'tool');
  if (wrote) return { text: 'Done.' };
  return { toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows: [{ fact: 'Founded in 1950.' }] } }] };
}

async function groupRound(mode: 'configured' | 'learned') {
  const model = await startFakeOpenAI();
  model.setResponder(respond);
  // The engine's check of the outputs before a turn ends is a model call too: counted with the others.
  model.recordChecks();
  const perMinute = (PER_WINDOW * 60) / WINDOW_S;
  const env: Record<string, string> = { QUARRY_MAX_CONCURRENT_TURNS: String(PARALLEL), QUARRY_SANDBOX: 'off', QUARRY_LOG_LEVEL: 'warn' };
  if (mode === 'configured') env.QUARRY_MODEL_RPM = String(Math.floor(perMinute * MARGIN));
  const q = await startQuarry({ dataDir: freshDataDir(`limits-${mode}`), modelUrl: model.url, env });
  try {
    model.limitRate({ requests: PER_WINDOW, windowMs: WINDOW_S * 1000 });
    const inputs = Array.from({ length: INPUTS }, (_, i) => ({ company: `Company ${i}`, founded: 1900 + (i % 120) }));
    const t0 = Date.now();
    const created = await expectOk('POST', `${q.url}/group`, {
      key: q.key,
      body: { task: { name: 'limits', prompt: 'Write one row.', input_columns: [{ name: 'company', type: 'string' }, { name: 'founded', type: 'integer' }], outputs: [{ id: 'facts', kind: 'table', columns: COLUMNS }], tools: [], limits: { max_turn_seconds: 3600 } }, inputs, max_parallel: PARALLEL },
    });
    const id = created.body.group_id as string;
    let group: Record<string, unknown>;
    for (;;) {
      group = (await expectOk('GET', `${q.url}/group/${id}`, { key: q.key })).body;
      if (group.status !== 'running') break;
      await sleep(200);
    }
    const seconds = (Date.now() - t0) / 1000;
    const answered = model.requests.length;
    const refused = model.rateLimited();
    const ideal = answered / (perMinute / 60);
    const counts = group.counts as Record<string, number>;
    return {
      mode, runs: INPUTS, counts, failed_runs: counts.failed ?? 0, model_calls: answered + refused, answered, refused_429: refused,
      share_429_pct: round((100 * refused) / (answered + refused), 2), makespan_s: round(seconds, 1), ideal_s: round(ideal, 1), makespan_vs_ideal: round(seconds / ideal, 3),
    };
  } finally {
    await q.child.kill9();
    await model.close();
  }
}

function vm(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
}

async function idleRound() {
  const model = await startFakeOpenAI();
  model.setResponder(() => ({ text: 'Done.', delayMs: REPLY_S * 1000 }));
  const delayFile = path.join(OUT_DIR, 'loop-delay.json');
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const q: QuarryProcess = await startQuarry({
    dataDir: freshDataDir('limits-idle'), modelUrl: model.url,
    env: { QUARRY_MAX_CONCURRENT_TURNS: String(TURNS), QUARRY_MAX_PENDING_TURNS: String(TURNS * 2), QUARRY_SANDBOX: 'off', QUARRY_LOG_LEVEL: 'warn', QUARRY_MODEL_TIMEOUT_S: String(REPLY_S * 4), BENCH_LOOP_DELAY_FILE: delayFile },
    nodeArgs: ['--import', path.join(ROOT, 'bench/loop-delay-probe.mjs')],
  });
  const pid = q.child.proc.pid!;
  try {
    const rssBefore = vm(pid, 'VmRSS');
    const ids = await mapLimit(Array.from({ length: TURNS }, (_, i) => i), 32, async (i) =>
      (await expectOk('POST', `${q.url}/task/start`, { key: q.key, body: { task: { name: `idle ${i}`, prompt: 'Answer.', outputs: [], tools: [] } } })).body.task_id as string);
    const created = Date.now();
    log(`idle: ${TURNS} turns created; waiting for ${TURNS} model calls in flight`);
    while (model.pending() < TURNS && Date.now() - created < REPLY_S * 1000) await sleep(100);
    const inFlight = model.pending();
    // The loop delay from here on: the creates are over, the turns wait on the model.
    process.kill(pid, 'SIGUSR2');
    // GET /state while they all wait; the loop delay as the server's own timer sees it (lateness of a 10 ms interval, from this process: a probe of answers).
    const latencies: number[] = [];
    const until = Date.now() + Math.max(5000, REPLY_S * 1000 - (Date.now() - created) - 3000);
    let i = 0;
    while (Date.now() < until) {
      const t = process.hrtime.bigint();
      await expectOk('GET', `${q.url}/task/${ids[i++ % ids.length]}/state`, { key: q.key });
      latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
      await sleep(20);
    }
    process.kill(pid, 'SIGUSR2');
    await sleep(200);
    const lag = JSON.parse(fs.readFileSync(delayFile, 'utf8')) as { p50_ms: number; p99_ms: number; max_ms: number };
    const peak = vm(pid, 'VmHWM');
    return {
      turns: TURNS, in_flight: inFlight, reply_s: REPLY_S, rss_before_mb: round(rssBefore), peak_rss_mb: round(peak),
      state_ms: { n: latencies.length, p50: round(percentile(latencies, 50), 2), p99: round(percentile(latencies, 99), 2), max: round(Math.max(...latencies), 2) },
      eventloop_delay_ms: lag,
    };
  } finally {
    await q.child.kill9();
    await model.close();
  }
}

async function main(): Promise<void> {
  const started = new Date();
  const load = loadAverage();
  const report: Record<string, unknown> = { settings: { inputs: INPUTS, per_window: PER_WINDOW, window_s: WINDOW_S, parallel: PARALLEL, turns: TURNS, reply_s: REPLY_S } };
  const lines: string[][] = [['measure', 'value', 'goal']];
  if (ONLY.has('group')) {
    for (const mode of MODES) {
      log(`group: ${INPUTS} runs, ${PER_WINDOW} requests per ${WINDOW_S} s, limits ${mode}`);
      const r = await groupRound(mode);
      report[`group_${mode}`] = r;
      lines.push(
        [`${mode}: failed runs`, String(r.failed_runs), '0'],
        [`${mode}: 429s / model calls`, `${r.share_429_pct}% (${r.refused_429} of ${r.model_calls})`, mode === 'configured' ? '≤ 2%' : '≤ 10%'],
        [`${mode}: makespan / ideal`, `${r.makespan_vs_ideal}× (${r.makespan_s} s / ${r.ideal_s} s)`, '≤ 1.15×'],
      );
    }
  }
  if (ONLY.has('idle')) {
    log(`idle: ${TURNS} turns, replies after ${REPLY_S} s`);
    const r = await idleRound();
    report.idle = r;
    lines.push(
      [`idle: ${r.in_flight} model calls waiting, peak RSS`, `${r.peak_rss_mb} MB (${r.rss_before_mb} MB before)`, '≤ 1024 MB'],
      ['idle: event-loop delay p99 (max) while they wait', `${r.eventloop_delay_ms.p99_ms} ms (${r.eventloop_delay_ms.max_ms} ms)`, '≤ 50 ms'],
      ['idle: GET /state p50 / p99', `${r.state_ms.p50} / ${r.state_ms.p99} ms (${r.state_ms.n} requests)`, ''],
    );
  }
  process.stdout.write(`\n${table(lines)}\n`);
  writeReport('provider-limits.json', { ...reportHeader(started, load), ...report });
}

await main();
