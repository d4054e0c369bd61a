/**
 * The webhook benchmark (`npm run bench:webhooks`): what webhooks cost a turn, and how fast the
 * outbox drains. Quarry runs as `quarry serve` over SQLite with no model, so every create's turn
 * fails at once and ends with `task.turn_failed`; the receiver (bench/webhook-receiver.ts) runs in
 * its own process and answers 204 at once. Everything talks over 127.0.0.1.
 *
 *   1. cost   CPU per create-with-its-turn, without any endpoint (A) and with one endpoint that
 *             takes every turn's end (B): BENCH_WEBHOOK_TURNS creates at 32 in flight per round,
 *             rounds A B A B after a warm-up round, each measured until every turn ended (and, in
 *             B, every delivery arrived). The difference is what a delivery adds to a turn: the outbox row written
 *             with the turn's end, the claim, the signed POST and the recorded attempt.
 *   2. drain  Deliveries per second out of a backlog: Quarry is stopped, BENCH_WEBHOOK_BACKLOG
 *             deliveries (copies of a real one) are put into its outbox, and Quarry is started
 *             again; timed from the first arrival to the last. Same-run baseline: this process
 *             POSTs the same body, signed the same way (HMAC-SHA256), to the same receiver, 16 at
 *             a time (Quarry's in-flight limit), a fresh connection each (as Quarry connects to
 *             the checked address of every attempt).
 *
 * Results: a table on stdout and .bench/webhooks.json.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
import { within } from '../test/kit/bounded-waits.js';
import { spawnNode } from '../test/kit/process.js';
import {
  expectOk, freshDataDir, log, mapLimit, processCpu, reportHeader, round, sleep, startQuarry, startWatchdog, table, loadAverage, noteLoad, writeReport, type QuarryProcess,
} from './lib.js';

const TURNS = Number(process.env.BENCH_WEBHOOK_TURNS ?? 1000);
const BACKLOG = Number(process.env.BENCH_WEBHOOK_BACKLOG ?? 5000);
const CREATE_CONCURRENCY = 32;
const SEND_CONCURRENCY = 16;
const QUARRY_ENV = { QUARRY_FETCH_ALLOW_PRIVATE: '1', QUARRY_MAX_CONCURRENT_TURNS: '256' };

async function receiverCount(url: string): Promise<number> {
  return ((await expectOk('GET', `${url}/_count`)).body as { count: number }).count;
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 300_000): Promise<void> {
  await within((async () => {
    while (!(await check())) await sleep(10);
  })(), timeoutMs, what);
}

/** One round: TURNS creates, then the wait until every turn ended and `deliveries` more arrived. */
async function round_(q: QuarryProcess, receiver: string, deliveries: number): Promise<{ cpuMsPerTurn: number; seconds: number }> {
  const db = new Database(path.join(q.dataDir, 'quarry.db'), { readonly: true, fileMustExist: true });
  const backlog = db.prepare("select count(*) from turns where status in ('pending', 'running')").pluck();
  const before = await receiverCount(receiver);
  const cpu = processCpu(q.child.proc.pid);
  const t = Date.now();
  await mapLimit(Array.from({ length: TURNS }), CREATE_CONCURRENCY, async () => {
    await expectOk('POST', `${q.url}/task`, { key: q.key, body: { prompt: 'What does a webhook cost a turn?' } });
  });
  await until('turns to end', () => backlog.get() === 0);
  await until('deliveries to arrive', async () => (await receiverCount(receiver)) >= before + deliveries);
  const seconds = (Date.now() - t) / 1000;
  const cpuS = cpu.stop();
  db.close();
  return { cpuMsPerTurn: (cpuS * 1000) / TURNS, seconds };
}

async function benchCost(q: QuarryProcess, receiver: string) {
  // A warm-up round, not counted: the first round would otherwise pay for the JIT.
  await round_(q, receiver, 0);
  const rounds: { webhook: boolean; cpuMsPerTurn: number; seconds: number }[] = [];
  for (const webhook of [false, true, false, true]) {
    let endpoint: string | undefined;
    if (webhook) endpoint = (await expectOk('POST', `${q.url}/webhooks`, { key: q.key, body: { url: `${receiver}/hook`, events: ['task.turn_failed'] } })).body.webhook_id as string;
    const r = await round_(q, receiver, webhook ? TURNS : 0);
    if (endpoint) await expectOk('DELETE', `${q.url}/webhooks/${endpoint}`, { key: q.key });
    log(`cost: ${webhook ? 'with' : 'without'} a webhook: ${round(r.cpuMsPerTurn, 3)} ms CPU per create with its turn, ${round(TURNS / r.seconds)} turns/s`);
    rounds.push({ webhook, ...r });
  }
  const mean = (webhook: boolean) => rounds.filter((r) => r.webhook === webhook).reduce((n, r) => n + r.cpuMsPerTurn, 0) / 2;
  return { without_ms: round(mean(false), 3), with_ms: round(mean(true), 3), added_ms: round(mean(true) - mean(false), 3), rounds };
}

/** Fills the stopped Quarry's outbox with BACKLOG copies of one real delivery. */
function fillOutbox(dataDir: string, endpointId: string): string {
  const db = new Database(path.join(dataDir, 'quarry.db'));
  try {
    const template = db.prepare('select * from webhook_deliveries where endpoint_id = ? limit 1').get(endpointId) as Record<string, unknown>;
    const now = new Date().toISOString();
    const insert = db.prepare(`insert into webhook_deliveries (id, endpoint_id, event, payload, status, attempts, next_attempt_at, retry_since, created_at)
      values (?, ?, ?, ?, 'pending', 0, ?, ?, ?)`);
    db.transaction(() => {
      for (let i = 0; i < BACKLOG; i++) insert.run(`msg_bench${String(i).padStart(8, '0')}`, endpointId, template.event, template.payload, now, now, now);
    })();
    return template.payload as string;
  } finally {
    db.close();
  }
}

/** The baseline: the same signed POSTs from this process, SEND_CONCURRENCY at a time, a fresh connection each. */
async function bareSender(receiver: string, payload: string, secret: Buffer): Promise<number> {
  const url = new URL(`${receiver}/hook`);
  const t = Date.now();
  await mapLimit(Array.from({ length: BACKLOG }, (_, i) => i), SEND_CONCURRENCY, (i) => new Promise<void>((resolve, reject) => {
    const id = `msg_bare${i}`;
    const ts = Math.floor(Date.now() / 1000);
    const signature = `v1,${crypto.createHmac('sha256', secret).update(`${id}.${ts}.${payload}`).digest('base64')}`;
    const req = http.request({
      host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signature },
    }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode! < 300 ? resolve() : reject(new Error(`receiver answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(payload);
  }));
  return BACKLOG / ((Date.now() - t) / 1000);
}

async function benchDrain(q: QuarryProcess, receiver: string) {
  const created = (await expectOk('POST', `${q.url}/webhooks`, { key: q.key, body: { url: `${receiver}/hook`, events: ['task.turn_failed'] } })).body;
  const before = await receiverCount(receiver);
  await expectOk('POST', `${q.url}/task`, { key: q.key, body: { prompt: 'One delivery to copy.' } });
  await until('the template delivery', async () => (await receiverCount(receiver)) > before);
  await q.child.stop('SIGTERM');
  const payload = fillOutbox(q.dataDir, created.webhook_id as string);
  const start = await receiverCount(receiver);
  const restarted = await startQuarry({ dataDir: q.dataDir, key: q.key, label: 'quarry-webhooks-drain', env: QUARRY_ENV });
  const cpu = processCpu(restarted.child.proc.pid);
  await until('the first backlog delivery', async () => (await receiverCount(receiver)) > start);
  const t = Date.now();
  const first = await receiverCount(receiver);
  await until('the backlog to drain', async () => (await receiverCount(receiver)) >= start + BACKLOG);
  const quarryRate = (start + BACKLOG - first) / ((Date.now() - t) / 1000);
  const cpuMs = (cpu.stop() * 1000) / BACKLOG;
  await restarted.child.stop('SIGTERM');
  const secret = Buffer.from((created.secret as string).slice('whsec_'.length), 'base64');
  const bare = await bareSender(receiver, payload, secret);
  return { quarry_per_s: round(quarryRate), baseline_per_s: round(bare), ratio: round(quarryRate / bare, 3), quarry_cpu_ms_per_delivery: round(cpuMs, 3), payload_bytes: Buffer.byteLength(payload) };
}

async function main(): Promise<void> {
  startWatchdog('bench:webhooks', 15 * 60_000);
  const started = new Date();
  const load = loadAverage();
  noteLoad(load);
  const receiverProc = spawnNode('bench/webhook-receiver.ts', [], { name: 'receiver' });
  const receiver = (await receiverProc.waitForLine(/^receiver listening on (http:\/\/\S+)/, 30_000))[1]!;
  const q = await startQuarry({ dataDir: freshDataDir('webhooks'), label: 'quarry-webhooks', env: QUARRY_ENV });
  try {
    const cost = await benchCost(q, receiver);
    const drain = await benchDrain(q, receiver);
    process.stdout.write(`\n${table([
      ['measure', 'Quarry', 'baseline', 'ratio'],
      ['CPU per create with its turn, ms (with a webhook / without)', String(cost.with_ms), String(cost.without_ms), String(round(cost.without_ms / cost.with_ms, 3))],
      ['deliveries/s out of a backlog (bare signed POSTs)', String(drain.quarry_per_s), String(drain.baseline_per_s), String(drain.ratio)],
    ])}\n`);
    process.stdout.write(`a delivery adds ${cost.added_ms} ms of Quarry CPU to a turn; draining a backlog costs ${drain.quarry_cpu_ms_per_delivery} ms per delivery\n`);
    writeReport('webhooks.json', { ...reportHeader(started, load), settings: { turns: TURNS, backlog: BACKLOG }, cost, drain });
  } finally {
    await q.child.stop('SIGTERM').catch(() => undefined);
    await receiverProc.stop('SIGTERM').catch(() => undefined);
  }
  process.exit(0);
}

void main();
