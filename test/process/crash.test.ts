/**
 * The crash suite (decisions §5 durability, §10 events; docs/durability.md). A real
 * `quarry serve` process (from the build, started by test/kit/process.ts) over a temp SQLite
 * data dir is killed with SIGKILL in the middle of scripted turns — at every named crash point of
 * src/crash-points.ts (QUARRY_CRASH_AT=<name>:<n>, at several occurrence counts each), at a few
 * moments the test observes from outside, and again while it recovers (walks: each restarted
 * process crashes at the next place) — then restarted over the same data dir. The client then
 * resends what was not answered, with its Idempotency-Key, and the suite checks what was promised:
 * everything acknowledged (200/202) and every event seen on a stream is still there; nothing is
 * done twice; the turns finish; no row is written twice; each step is charged once; a stored model
 * reply is never asked for again; and a client resuming its stream with Last-Event-ID sees every
 * event exactly once, in order. A last test does the same for SIGTERM. What is checked and why:
 * docs/durability.md.
 *
 * One fake model serves every case: it answers by case, turn and reply number (read from the
 * conversation it is sent), with fixed usage, so credits are exact: with the prices below a
 * model step costs 3 credits and a tool call 1.
 *
 * QUARRY_CRASH_ONLY=<text> runs only the cases whose name contains it; QUARRY_CRASH_CONCURRENCY
 * (default 4) is how many cases run at once. A case is mostly CPU (two or more process starts,
 * about 0.85 s each) with waits between (a held model call, a cron tick): on two cores, four at
 * once also fill the time the test files running beside this one spend waiting; more gain nothing.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { GAPS_HEADING } from '../../src/agent/output-check.js';
import { CRASH_POINTS } from '../../src/crash-points.js';
import { ModelText } from '../../packages/client/src/index.js';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply, type FakeRequestBody } from '../kit/fake-openai-server.js';
import { within } from '../kit/bounded-waits.js';
import { fetchJson, waitIdle, type TestResponse } from '../kit/http.js';
import { killAll, makeDataDir, removeDataDir, startServer, type ServerProcess } from '../kit/process.js';
import { isStored, openSse, readSse, type SseEvent, type SseStream } from '../kit/sse-client.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

// ---- the script -------------------------------------------------------------------------------

const ADMIN_KEY = 'crash-suite-admin-key';
const START_CREDITS = 1000;
/** 1000 tokens in at 1 a thousand + 1000 out at 2 a thousand: 3 credits a model step; 1 a tool call. */
const USAGE = { prompt_tokens: 1000, completion_tokens: 1000 };
const MODEL_STEP_CREDITS = 3;
const TOOL_CALL_CREDITS = 1;
const SOURCE = { url: 'https://example.com/crash-suite' };
const MESSAGES = ['Second message: one more row for b.', 'Third message: wrap up.'];
const TEXTS = ['Turn one done.', 'Turn two done.', 'Turn three done.'];
/** The answer to the message listing what the outputs lack (their sources were never read), which ends each turn. */
const CHECKED: FakeReply = { text: 'Nothing more to add.' };
const EVERY_SECOND = '* * * * * *';

type Kind = 'main' | 'cron' | 'upload';

function writeRows(id: string, output: string, names: string[]) {
  return { id, name: 'write_rows', arguments: { output, rows: names.map((name) => ({ name, n: Number(name.slice(1)) })), sources: [SOURCE] } };
}

/**
 * The main script: three turns of one task (the create, then two messages queued while the first
 * turn runs). Keys are `<turn>:<reply>`: turn = user messages in the request, reply = assistant
 * messages already in it (the engine's message listing what the outputs lack is not counted as a
 * user message). Turn 1 writes a1..a4 and b1, b2 over four replies (one with two calls); turn 2
 * writes b3; turn 3 only answers. Each turn then answers that message once.
 */
const MAIN: Record<string, FakeReply> = {
  '1:0': { toolCalls: [writeRows('t1r1c0', 'a', ['a1', 'a2'])] },
  '1:1': { toolCalls: [writeRows('t1r2c0', 'a', ['a3']), writeRows('t1r2c1', 'b', ['b1', 'b2'])] },
  '1:2': { toolCalls: [writeRows('t1r3c0', 'a', ['a4'])] },
  '1:3': { text: TEXTS[0] },
  '1:4': CHECKED,
  '2:0': { toolCalls: [writeRows('t2r1c0', 'b', ['b3'])] },
  '2:1': { text: TEXTS[1] },
  '2:2': CHECKED,
  '3:0': { text: TEXTS[2] },
  '3:1': CHECKED,
};
/** Per turn of the main script: replies, tool calls, rows (a, b) and its final text. */
const MAIN_TURNS = [
  { replies: 5, calls: 4, a: ['a1', 'a2', 'a3', 'a4'], b: ['b1', 'b2'], text: TEXTS[0] },
  { replies: 3, calls: 1, a: [], b: ['b3'], text: TEXTS[1] },
  { replies: 2, calls: 0, a: [], b: [], text: TEXTS[2] },
];
const turnCredits = (t: { replies: number; calls: number }) => t.replies * MODEL_STEP_CREDITS + t.calls * TOOL_CALL_CREDITS;

function script(run: CaseRun, key: string): FakeReply | undefined {
  if (run.kind === 'main') return MAIN[key];
  if (run.kind === 'cron') return key === '1:0' ? { text: 'Tick done.' } : undefined;
  if (key === '1:0') return { toolCalls: [{ id: 'u1', name: 'read_input', arguments: { upload_id: run.uploadId } }] };
  if (key === '1:1') return { text: 'Read the notes.' };
  return undefined;
}

const COLUMNS = [{ name: 'name', type: 'string', required: true }, { name: 'n', type: 'integer' }];
function mainSpec(run: CaseRun) {
  return {
    name: `crash ${run.id}`,
    prompt: `[case:${run.id}] Collect the rows of a and b.`,
    outputs: [{ id: 'a', kind: 'table', columns: COLUMNS }, { id: 'b', kind: 'table', columns: COLUMNS }],
    tools: [],
  };
}

// ---- the fake model, shared by every case -------------------------------------------------------

interface Deferred<T = void> { promise: Promise<T>; resolve: (v: T) => void }
function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Holds the first request for one key until released. */
interface Gate { arrived: Deferred; release: Deferred; used: boolean }

interface CaseRun {
  id: string;
  kind: Kind;
  taskId: string;
  uploadId?: string;
  gates: Map<string, Gate>;
  /** Keys whose first answer is streamed slowly. */
  slow: Set<string>;
  /** Every model request of this case, in order. */
  requests: { key: string; users: string[]; tools: { content: string }[] }[];
  /** The key of the last model request at each crash: that reply may be asked for again. */
  inFlightAtCrash: string[];
}

const runs = new Map<string, CaseRun>();

function gate(run: CaseRun, key: string): Gate {
  let g = run.gates.get(key);
  if (!g) {
    g = { arrived: deferred(), release: deferred(), used: false };
    run.gates.set(key, g);
  }
  return g;
}

function respond(body: FakeRequestBody): FakeReply | Promise<FakeReply> {
  const messages = body.messages ?? [];
  const users = messages.filter((m) => m.role === 'user' && !String(m.content).startsWith(GAPS_HEADING)).map((m) => String(m.content));
  const run = runs.get(/\[case:([\w-]+)\]/.exec(users[0] ?? '')?.[1] ?? '');
  if (!run) return { text: 'unknown case', usage: USAGE };
  const key = `${users.length}:${messages.filter((m) => m.role === 'assistant').length}`;
  run.requests.push({ key, users, tools: messages.filter((m) => m.role === 'tool').map((m) => ({ content: String(m.content) })) });
  const reply: FakeReply = { ...(script(run, key) ?? { text: 'An unscripted reply.' }), usage: USAGE };
  const g = run.gates.get(key);
  if (g && !g.used) {
    g.used = true;
    g.arrived.resolve();
    return g.release.promise.then(() => reply);
  }
  if (run.slow.delete(key)) return { ...reply, chunkDelayMs: 150 };
  return reply;
}

// ---- the table of cases -------------------------------------------------------------------------

type Kill =
  /** kill -9 while the model holds this request. */
  | { type: 'hold'; key: string }
  /** kill -9 right after the first 202 (a queued message). */
  | { type: 'after-202' }
  /** kill -9 as soon as the stream shows a matching event (optionally while reply `slow` streams slowly). */
  | { type: 'event'; what: string; match: (e: SseEvent) => boolean; slow?: string }
  /** kill -9 right after the upload PUT was answered. */
  | { type: 'after-put' };

interface CrashCase {
  name: string;
  kind: Kind;
  /** QUARRY_CRASH_AT of the first process. */
  crashAt?: string;
  /** An external kill -9 of the first process instead. */
  kill?: Kill;
  /** QUARRY_CRASH_AT of each process that recovers in turn: each crashes once more before the last one finishes. */
  recovery?: string[];
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const at = (name: string, counts: number[], kind: Kind = 'main'): CrashCase[] =>
  counts.map((n) => ({ name: `${name}:${n}`, kind, crashAt: `${name}:${n}` }));

const CASES: CrashCase[] = [
  ...at('create.committed', [1]),
  ...at('message.committed', [1, 2]),
  ...at('turn.claimed', [1, 2]),
  ...at('model.replied', range(1, 5)),
  ...at('step.checkpointed', range(1, 8)),
  ...at('tool.started', range(1, 4)),
  ...at('rows.appended', range(1, 3)),
  ...at('turn.finishing', [1, 2]),
  ...at('turn.finished', [1, 2, 3]),
  ...at('cron.fired', [1, 2], 'cron'),
  ...at('upload.stored', [1], 'upload'),
  ...at('upload.completed', [1], 'upload'),
  { name: 'kill -9 while the model holds turn 1 reply 3', kind: 'main', kill: { type: 'hold', key: '1:2' } },
  { name: 'kill -9 while the model holds turn 2 reply 1', kind: 'main', kill: { type: 'hold', key: '2:0' } },
  { name: 'kill -9 right after a 202 for a queued message', kind: 'main', kill: { type: 'after-202' } },
  {
    name: 'kill -9 when the stream shows the rows of b written',
    kind: 'main',
    kill: { type: 'event', what: 'write_rows b finished', match: (e) => e.event === 'tool' && e.json?.call_id === 't1r2c1' && e.json?.state === 'finished' },
  },
  {
    name: 'kill -9 while a model reply streams (text seen)',
    kind: 'main',
    kill: { type: 'event', what: 'a text event', match: (e) => e.event === 'text', slow: '1:3' },
  },
  {
    // Nothing marks where this reply starts: the restart after the crash carries the answer before it again.
    name: 'kill -9 while the reply to the outputs check streams (text seen)',
    kind: 'main',
    kill: { type: 'event', what: 'a text event of that reply', match: (e) => e.event === 'text' && String(e.json?.text).startsWith('Nothing'), slow: '1:4' },
  },
  { name: 'kill -9 right after the upload PUT is answered', kind: 'upload', kill: { type: 'after-put' } },
  // Walks: each restarted process crashes again at the next place of the script (its counts start
  // from its own start), so one process start buys one crash point.
  { name: 'tool.started:5, then rows.appended:1, step.checkpointed:1, model.replied:1 while recovering', kind: 'main', crashAt: 'tool.started:5', recovery: ['rows.appended:1', 'step.checkpointed:1', 'model.replied:1'] },
  { name: 'rows.appended:4, then turn.claimed:1, tool.started:1, turn.finished:1 while recovering', kind: 'main', crashAt: 'rows.appended:4', recovery: ['turn.claimed:1', 'tool.started:1', 'turn.finished:1'] },
  { name: 'step.checkpointed:9, then model.replied:1, turn.finished:1, model.replied:1 while recovering', kind: 'main', crashAt: 'step.checkpointed:9', recovery: ['model.replied:1', 'turn.finished:1', 'model.replied:1'] },
];

const crashesIn = (c: CrashCase) => 1 + (c.recovery?.length ?? 0);
const CRASH_COUNT = CASES.reduce((n, c) => n + crashesIn(c), 0);

// ---- talking to a process that may die at any moment ---------------------------------------------

/** The server died under the test: stop driving, start recovering. */
class Gone extends Error {}

function exitedWithin(s: ServerProcess, ms: number): Promise<boolean> {
  if (!s.alive()) return Promise.resolve(true);
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    s.exited.then(() => true),
    new Promise<boolean>((r) => { timer = setTimeout(() => r(false), ms); }),
  ]).finally(() => clearTimeout(timer));
}

/** Waits for `p` unless the server dies first (then Gone). */
async function guard<T>(s: ServerProcess, p: Promise<T>): Promise<T> {
  const gone = s.exited.then((): never => { throw new Gone(); });
  gone.catch(() => {});
  try {
    return await Promise.race([p, gone]);
  } catch (err) {
    if (err instanceof Gone || (await exitedWithin(s, 3000))) throw new Gone();
    throw err;
  }
}

async function api(s: ServerProcess, key: string, method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<TestResponse> {
  return guard(s, fetchJson(method, s.url + p, { key, body, headers }));
}

/** Long-polls /state until no turn runs and nothing is queued. */
async function waitSettled(s: ServerProcess, key: string, taskId: string, timeoutMs = 30_000): Promise<void> {
  await waitIdle((method, p, o) => api(s, key, method, p, o?.body, o?.headers), taskId, { timeoutMs, queueEmpty: true });
}

async function allEvents(s: ServerProcess, key: string, taskId: string): Promise<Json[]> {
  const events: Json[] = [];
  for (let afterSeq = 0; ;) {
    const res = await api(s, key, 'GET', `/task/${taskId}/events?after=${afterSeq}&limit=1000`);
    assert.equal(res.status, 200, res.text);
    events.push(...res.body.events);
    if (res.body.next_after === null) return events;
    afterSeq = res.body.next_after;
  }
}

const stored = (events: SseEvent[]) => events.filter(isStored);
const sha256 = (data: Buffer | string) => crypto.createHash('sha256').update(data).digest('hex');

// ---- one case -----------------------------------------------------------------------------------

interface Account { accountId: string; key: string }

/** What the client was told, and saw, before the crash. */
interface Acked {
  create: boolean;
  /** The request in flight when the process died (unanswered): the client sends it again with its Idempotency-Key. */
  unanswered?: { what: 'create' } | { what: 'message'; index: number };
  /** Messages answered 202. */
  messages: string[];
  /** The stream opened before the crash (its events are what the client saw). */
  stream?: SseStream;
  upload?: { uploadId: string; url: string; content: Buffer; sha: string; answered: boolean };
}

class Suite {
  model!: FakeOpenAI;
  env: Record<string, string> = {};
  crashesSeen = 0;

  async start(): Promise<void> {
    this.model = await startFakeOpenAI();
    // Each turn's check of the outputs is a step of the turn like any other: scripted and counted.
    this.model.recordChecks();
    this.model.setResponder(respond);
    this.env = serverEnv(this.model.url);
  }

  async account(s: ServerProcess): Promise<Account> {
    const res = await api(s, ADMIN_KEY, 'POST', '/admin/accounts', { name: 'crash-suite', credits: START_CREDITS });
    assert.equal(res.status, 201, res.text);
    return { accountId: res.body.account_id, key: res.body.api_key };
  }

  /** Waits for the crash the case asked for and notes which model request was in flight. */
  async crashed(s: ServerProcess, run: CaseRun, what: string): Promise<void> {
    const exit = await within(s.exited, 20_000, `${what} (the process should have crashed)`).catch((err: Error) => {
      throw new Error(`${err.message}: the crash point was never reached\n${s.output()}`);
    });
    assert.equal(exit.signal, 'SIGKILL', `${what}: exited ${exit.code ?? exit.signal}, not by SIGKILL\n${s.output()}`);
    const last = run.requests.at(-1);
    if (last) run.inFlightAtCrash.push(last.key);
    // Nothing holds a model request for a dead process: answer them all (the answers go nowhere).
    for (const g of run.gates.values()) g.release.resolve();
    this.crashesSeen++;
  }

  async runCase(c: CrashCase, index: number): Promise<void> {
    const id = `c${index}`;
    const run: CaseRun = { id, kind: c.kind, taskId: `crash-${id}`, gates: new Map(), slow: new Set(), requests: [], inFlightAtCrash: [] };
    runs.set(id, run);
    const dataDir = makeDataDir();
    const servers: ServerProcess[] = [];
    try {
      // The first process, with its crash point; making the account reaches none.
      let s = await startServer({ dataDir, env: this.env, crashAt: c.crashAt });
      servers.push(s);
      assert.ok(s.url, `the first process died before listening\n${s.output()}`);
      const account = await this.account(s);
      const acked: Acked = { create: false, messages: [] };

      try {
        if (c.kind === 'main') await this.driveMain(c, run, s, account, acked);
        else if (c.kind === 'cron') await this.driveCron(c, run, s, account, acked);
        else await this.driveUpload(c, run, s, account, acked);
      } catch (err) {
        if (!(err instanceof Gone)) throw new Error(`${(err as Error).message}\n--- server output ---\n${s.output()}`, { cause: err });
      }
      if (c.kill) {
        // The driver killed it (or it must still be alive to be killed now: a kill moment that never came is a failure).
        assert.ok(!s.alive(), `the kill moment "${c.name}" never came\n${s.output()}`);
        await s.exited;
        const last = run.requests.at(-1);
        if (last) run.inFlightAtCrash.push(last.key);
        for (const g of run.gates.values()) g.release.resolve();
        this.crashesSeen++;
      } else {
        await this.crashed(s, run, `QUARRY_CRASH_AT=${c.crashAt}`);
      }
      acked.stream?.close();

      for (const crashAt of c.recovery ?? []) {
        s = await startServer({ dataDir, env: this.env, crashAt });
        servers.push(s);
        await this.crashed(s, run, `QUARRY_CRASH_AT=${crashAt} while recovering`);
      }

      s = await startServer({ dataDir, env: this.env });
      servers.push(s);
      try {
        if (c.kind === 'main') {
          await this.retryUnanswered(run, s, account, acked, c.crashAt);
          await this.checkMain(run, s, account, acked);
        } else if (c.kind === 'cron') await this.checkCron(run, s, account, acked);
        else await this.checkUpload(run, s, account, acked, dataDir);
      } catch (err) {
        (err as Error).message += `\n--- output of the last process ---\n${s.output()}`;
        throw err;
      }
      await s.kill9();
    } finally {
      for (const g of run.gates.values()) g.release.resolve();
      await Promise.all(servers.map((p) => p.kill9()));
      removeDataDir(dataDir);
    }
  }

  // ---- drivers: the client's side until the process dies ----

  async driveMain(c: CrashCase, run: CaseRun, s: ServerProcess, account: Account, acked: Acked): Promise<void> {
    const kill = c.kill;
    const first = gate(run, '1:0');
    if (kill?.type === 'hold') gate(run, kill.key);
    if (kill?.type === 'event' && kill.slow) run.slow.add(kill.slow);

    // Server-chosen task id and an Idempotency-Key: a create that is not answered is sent again with the same key.
    acked.unanswered = { what: 'create' };
    const created = await api(s, account.key, 'POST', '/task/start', { task: mainSpec(run) }, { 'idempotency-key': `create-${run.id}` });
    assert.equal(created.status, 200, created.text);
    acked.create = true;
    acked.unanswered = undefined;
    run.taskId = created.body.task_id;
    acked.stream = await guard(s, openSse(s.url, `/task/${run.taskId}/stream`, { key: account.key }));
    // The first model request is held until both messages are queued behind the running turn.
    await guard(s, within(first.arrived.promise, 20_000, 'the first model request'));
    for (const [index, message] of MESSAGES.entries()) {
      acked.unanswered = { what: 'message', index };
      const res = await api(s, account.key, 'POST', `/task/${run.taskId}/continue`, { message }, { 'idempotency-key': `message-${run.id}-${index}` });
      assert.equal(res.status, 202, res.text);
      assert.equal(res.body.status, 'accepted');
      acked.messages.push(message);
      acked.unanswered = undefined;
      if (kill?.type === 'after-202') {
        await s.kill9();
        return;
      }
    }
    if (kill?.type === 'hold' && kill.key === '1:0') {
      await s.kill9();
      return;
    }
    first.release.resolve();
    if (kill?.type === 'hold') {
      await guard(s, within(gate(run, kill.key).arrived.promise, 20_000, `model request ${kill.key}`));
      await s.kill9();
      return;
    }
    if (kill?.type === 'event') {
      await guard(s, acked.stream.waitFor(kill.match, 20_000, kill.what));
      await s.kill9();
      return;
    }
    // A crash point ends it somewhere in here.
    await guard(s, acked.stream.finished(30_000));
  }

  async driveCron(_c: CrashCase, run: CaseRun, s: ServerProcess, account: Account, acked: Acked): Promise<void> {
    const created = await api(s, account.key, 'POST', '/task/start', {
      task_id: run.taskId,
      task: { name: `cron ${run.id}`, prompt: `[case:${run.id}] Check once a second.`, schedule: { cron: EVERY_SECOND } },
    });
    assert.equal(created.status, 200, created.text);
    acked.create = true;
    acked.stream = await guard(s, openSse(s.url, `/task/${run.taskId}/stream`, { key: account.key }));
    // Ticks come every second; the crash point ends the process at the n-th.
    await guard(s, s.exited);
  }

  async driveUpload(c: CrashCase, run: CaseRun, s: ServerProcess, account: Account, acked: Acked): Promise<void> {
    const content = Buffer.from(`notes of ${run.id}\n${Array.from({ length: 2000 }, (_, i) => `line ${i}: the quick brown fox\n`).join('')}`);
    const ticket = await api(s, account.key, 'POST', '/upload-url', { filename: 'notes.txt', content_type: 'text/plain', size_bytes: content.length });
    assert.equal(ticket.status, 200, ticket.text);
    run.uploadId = ticket.body.upload_id;
    acked.upload = { uploadId: ticket.body.upload_id, url: ticket.body.upload_url, content, sha: sha256(content), answered: false };
    const put = await guard(s, put_(acked.upload.url, content));
    assert.equal(put.status, 201, put.text);
    assert.equal(put.body.sha256, acked.upload.sha);
    acked.upload.answered = true;
    if (c.kill?.type === 'after-put') await s.kill9();
  }

  // ---- checks after the restart ----

  /** The stream before the crash, resumed with Last-Event-ID after it: every stored event once, in order, as stored. */
  checkStream(acked: Acked, events: Json[], resumed: SseStream | undefined): void {
    const seen = stored(acked.stream?.events ?? []);
    for (const e of seen) assert.deepEqual(e.json, events[Number(e.id) - 1], `event ${e.id} seen before the crash is stored as it was seen`);
    if (!resumed) return;
    assert.equal(resumed.status, 200);
    assert.ok(resumed.completed, 'the resumed stream ended properly');
    const all = [...seen, ...stored(resumed.events)];
    assert.deepEqual(all.map((e) => Number(e.id)), range(1, events.length), 'the resumed stream gives every event exactly once, in order');
    assert.deepEqual(all.map((e) => e.json), events, 'what the stream carried equals GET /events');
  }

  async resume(s: ServerProcess, account: Account, taskId: string, acked: Acked): Promise<SseStream | undefined> {
    const seen = stored(acked.stream?.events ?? []);
    if (seen.length === 0) return undefined;
    return guard(s, readSse(s.url, `/task/${taskId}/stream`, { key: account.key, headers: { 'last-event-id': seen.at(-1)!.id! } }, 30_000));
  }

  /** What a client does after a crash: sends the unanswered request again, with the same Idempotency-Key. */
  async retryUnanswered(run: CaseRun, s: ServerProcess, account: Account, acked: Acked, crashAt: string | undefined): Promise<void> {
    const pending = acked.unanswered;
    if (!pending) return;
    // At these points the change was committed before the crash: the retry must be answered from the key.
    const committed = crashAt === 'create.committed:1' || crashAt?.startsWith('message.committed:');
    if (pending.what === 'create') {
      const res = await api(s, account.key, 'POST', '/task/start', { task: mainSpec(run) }, { 'idempotency-key': `create-${run.id}` });
      assert.equal(res.status, 200, res.text);
      if (committed) assert.equal(res.headers?.get('idempotent-replayed'), 'true', `the create committed before the crash is replayed from its Idempotency-Key, not run again: ${res.text}`);
      run.taskId = res.body.task_id;
      acked.create = true;
    } else {
      const message = MESSAGES[pending.index]!;
      const res = await api(s, account.key, 'POST', `/task/${run.taskId}/continue`, { message }, { 'idempotency-key': `message-${run.id}-${pending.index}` });
      assert.ok(res.status === 200 || res.status === 202, res.text);
      if (committed) {
        assert.equal(res.headers?.get('idempotent-replayed'), 'true', `the message committed before the crash is replayed from its Idempotency-Key, not queued again: ${res.status} ${res.text}`);
      }
      acked.messages.push(message);
    }
    acked.unanswered = undefined;
  }

  async checkMain(run: CaseRun, s: ServerProcess, account: Account, acked: Acked): Promise<void> {
    const list = await api(s, account.key, 'GET', '/task?limit=50');
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body.map((t: Json) => t.task_id), [run.taskId], 'one task: a retried create did not make a second one');
    // The model saw the prompt, then each message once, in order: no message was queued twice.
    for (const r of run.requests) assert.deepEqual(r.users.slice(1), MESSAGES.slice(0, r.users.length - 1), `request ${r.key}: each message once, in order`);
    const state = await api(s, account.key, 'GET', `/task/${run.taskId}/state`);
    assert.equal(state.status, 200, `the task exists after the restart (create ${acked.create ? 'acknowledged' : 'committed before the crash'}): ${state.text}`);
    // Reconnect at once, while the recovered turns (may) still run.
    const resumed = await this.resume(s, account, run.taskId, acked);
    await waitSettled(s, account.key, run.taskId);
    const events = await allEvents(s, account.key, run.taskId);
    assert.deepEqual(events.map((e) => e.seq), range(1, events.length), 'gap-free sequence numbers');
    this.checkStream(acked, events, resumed);

    // Turns: the create's, then one per queued message, in order; every acknowledged message is one.
    assert.equal(events[0].type, 'task');
    assert.equal(events[0].reason, 'created');
    const queued = events.filter((e) => e.type === 'task' && e.reason === 'message_queued').map((e) => e.turn_id as string);
    assert.ok(queued.length >= acked.messages.length, `every acknowledged message is queued (${acked.messages.length} acked, ${queued.length} stored)`);
    assert.ok(queued.length <= MESSAGES.length);
    const turns = [events[0].turn_id as string, ...queued];
    assert.deepEqual([...new Set(events.map((e) => e.turn_id).filter(Boolean))].sort(), [...turns].sort(), 'events name only these turns');
    const ran = MAIN_TURNS.slice(0, turns.length);
    // First, as it names the cause best: only the replies not stored at a crash were asked for again.
    this.checkModelCalls(run, ran.flatMap((t, i) => range(0, t.replies - 1).map((r) => `${i + 1}:${r}`)));
    this.checkTurns(events, turns, turns.map((_t, i) => turnCredits(MAIN_TURNS[i]!)));
    // Each turn got its own message: turn k's requests carry the prompt and the first k-1 messages.
    turns.forEach((_t, i) => {
      if (i === 0) return;
      assert.ok(run.requests.some((r) => r.users.length === i + 1 && r.users.at(-1) === MESSAGES[i - 1]), `the model got message ${i}`);
    });
    // Each reply's text once, as a client shows it: a reply asked for again after a crash had the
    // text it streamed before withdrawn.
    for (const [i, turnId] of turns.entries()) {
      const text = new ModelText();
      for (const e of events) if (e.turn_id === turnId) text.add(e);
      assert.equal(text.value, MAIN_TURNS[i]!.text + CHECKED.text, `turn ${i + 1}'s text, each reply once`);
    }

    // Rows: each scripted row once, numbered 1..n.
    await this.checkRows(s, account, run.taskId, 'a', ran.flatMap((t) => t.a));
    await this.checkRows(s, account, run.taskId, 'b', ran.flatMap((t) => t.b));

    await this.checkCredits(s, account, events, turns);
  }

  async checkCron(run: CaseRun, s: ServerProcess, account: Account, acked: Acked): Promise<void> {
    // Leave cron mode first so no new tick starts while we check.
    const patched = await api(s, account.key, 'PATCH', `/task/${run.taskId}`, { schedule: null });
    assert.equal(patched.status, 200, patched.text);
    await waitSettled(s, account.key, run.taskId);
    const resumed = await this.resume(s, account, run.taskId, acked);
    const events = await allEvents(s, account.key, run.taskId);
    assert.deepEqual(events.map((e) => e.seq), range(1, events.length), 'gap-free sequence numbers');
    this.checkStream(acked, events, resumed);
    const turns = [...new Set(events.map((e) => e.turn_id).filter(Boolean))] as string[];
    assert.ok(turns.length >= 1);
    this.checkTurns(events, turns, turns.map(() => MODEL_STEP_CREDITS));
    await this.checkCredits(s, account, events, turns);
    const counts = new Map<string, number>();
    for (const r of run.requests) counts.set(r.key, (counts.get(r.key) ?? 0) + 1);
    assert.deepEqual([...counts.keys()], ['1:0'], 'cron turns make one request each');
    assert.ok(run.requests.length <= turns.length + run.inFlightAtCrash.length, `${run.requests.length} model requests for ${turns.length} turns`);
  }

  async checkUpload(run: CaseRun, s: ServerProcess, account: Account, acked: Acked, dataDir: string): Promise<void> {
    const upload = acked.upload!;
    const file = path.join(dataDir, 'uploads', upload.uploadId);
    const spec = {
      name: `upload ${run.id}`,
      prompt: `[case:${run.id}] Read the notes.`,
      inputs: [{ upload_id: upload.uploadId, name: 'notes.txt' }],
      tools: ['read_input'],
    };
    // POST /task/start/stream: a refusal is an HTTP error; a create streams its turn from the first event.
    const start = async () => {
      const stream = await guard(s, openSse(s.url, '/task/start/stream', { key: account.key, method: 'POST', body: { task_id: run.taskId, task: spec } }));
      if (stream.status !== 200) await stream.finished(10_000);
      return stream;
    };
    let stream = await start();
    if (upload.answered) {
      assert.equal(stream.status, 200, `an answered upload is usable after the crash: ${JSON.stringify(stream.body)}`);
      assert.equal(sha256(fs.readFileSync(file)), upload.sha, 'the stored file has the sha256 the PUT answered');
    } else {
      // Not answered: either not there (the task is refused) or complete; either way the same URL takes it again.
      if (stream.status !== 200) {
        assert.equal(stream.status, 422, JSON.stringify(stream.body));
        assert.equal(stream.body.param, 'task.inputs[0].upload_id', JSON.stringify(stream.body));
      } else {
        assert.equal(sha256(fs.readFileSync(file)), upload.sha, 'an upload recorded complete has its whole file');
      }
      // The signed URL names the old process's port; the path and signature are what count.
      const signed = new URL(upload.url);
      const again = await put_(`${s.url}${signed.pathname}${signed.search}`, upload.content);
      assert.equal(again.status, 201, `the upload can be sent again: ${again.text}`);
      assert.equal(again.body.sha256, upload.sha);
      assert.equal(sha256(fs.readFileSync(file)), upload.sha);
      if (stream.status !== 200) {
        stream = await start();
        assert.equal(stream.status, 200, JSON.stringify(stream.body));
      }
    }
    await guard(s, stream.finished(30_000));
    await waitSettled(s, account.key, run.taskId);
    const events = await allEvents(s, account.key, run.taskId);
    assert.deepEqual(stored(stream.events).map((e) => e.json), events, 'the stream carried every event once, in order');
    const turns = [events[0].turn_id as string];
    this.checkTurns(events, turns, [2 * MODEL_STEP_CREDITS + TOOL_CALL_CREDITS]);
    await this.checkCredits(s, account, events, turns);
    const read = run.requests.find((r) => r.key === '1:1');
    assert.ok(read, 'the model was asked again after read_input');
    assert.ok(read.tools[0]?.content.includes(upload.content.subarray(0, 200).toString()), `read_input gave the uploaded text: ${read.tools[0]?.content.slice(0, 200)}`);
    this.checkModelCalls(run, ['1:0', '1:1']);
  }

  /** Every turn ended once, completed, after starting once, and its done shows what it was charged. */
  checkTurns(events: Json[], turns: string[], credits: number[]): void {
    for (const [i, turnId] of turns.entries()) {
      const dones = events.filter((e) => e.type === 'done' && e.turn_id === turnId);
      assert.deepEqual(dones.map((e) => e.outcome), ['completed'], `turn ${i + 1} ended once, completed: ${JSON.stringify(events.filter((e) => e.type === 'error'))}`);
      assert.equal(dones[0].credits_used, credits[i], `turn ${i + 1} was charged each step once`);
      const started = events.filter((e) => e.type === 'task' && e.reason === 'turn_started' && e.turn_id === turnId);
      assert.equal(started.length, 1, `turn ${i + 1} has one turn_started event`);
    }
  }

  async checkRows(s: ServerProcess, account: Account, taskId: string, output: string, names: string[]): Promise<void> {
    const res = await api(s, account.key, 'GET', `/task/${taskId}/outputs/${output}?limit=1000`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.total, names.length, `output ${output}: ${JSON.stringify(res.body.rows.map((r: Json) => r.name))}`);
    assert.deepEqual(res.body.rows.map((r: Json) => [r._row, r.name, r.n]), names.map((name, i) => [i + 1, name, Number(name.slice(1))]), `output ${output}: rows 1..n, each scripted row once`);
  }

  /** The account's credits_used equals the sum of the done events and of the admin usage; nothing else was charged. */
  async checkCredits(s: ServerProcess, account: Account, events: Json[], turns: string[]): Promise<void> {
    const fromDone = events.filter((e) => e.type === 'done').reduce((n, e) => n + e.credits_used, 0);
    const acct = await api(s, ADMIN_KEY, 'GET', `/admin/accounts/${account.accountId}`);
    assert.equal(acct.status, 200, acct.text);
    const usage = await api(s, ADMIN_KEY, 'GET', `/admin/accounts/${account.accountId}/usage`);
    assert.equal(usage.status, 200, usage.text);
    assert.deepEqual(usage.body.turns.map((t: Json) => t.turn_id).sort(), [...turns].sort(), 'admin usage lists exactly these turns');
    for (const t of usage.body.turns) assert.equal(t.status, 'completed');
    const fromUsage = usage.body.turns.reduce((n: number, t: Json) => n + t.credits, 0);
    assert.equal(acct.body.credits_used, fromDone, 'credits_used = the sum over done events');
    assert.equal(acct.body.credits_used, fromUsage, 'credits_used = the sum over admin usage');
    assert.equal(acct.body.balance, START_CREDITS - acct.body.credits_used, 'balance = credits given - credits used');
  }

  /** Every scripted reply was asked for; only a reply in flight at a crash was asked for again; nothing else. */
  checkModelCalls(run: CaseRun, expected: string[]): void {
    const counts = new Map<string, number>();
    for (const r of run.requests) counts.set(r.key, (counts.get(r.key) ?? 0) + 1);
    for (const key of expected) assert.ok(counts.get(key), `reply ${key} was asked for`);
    for (const [key, n] of counts) {
      assert.ok(expected.includes(key), `an unscripted model call ${key} (requests: ${run.requests.map((r) => r.key).join(' ')})`);
      const allowed = 1 + run.inFlightAtCrash.filter((k) => k === key).length;
      assert.ok(n <= allowed, `reply ${key} was asked for ${n} times; only ${allowed} allowed (in flight at a crash: ${run.inFlightAtCrash.join(' ') || 'none'}; requests: ${run.requests.map((r) => r.key).join(' ')})`);
    }
  }
}

/** Every process of the suite: the fake model, the admin key, round prices. */
function serverEnv(modelUrl: string): Record<string, string> {
  return {
    QUARRY_MODEL_BASE_URL: modelUrl,
    QUARRY_MODEL: 'fake-model',
    QUARRY_ADMIN_KEY: ADMIN_KEY,
    QUARRY_PRICE_INPUT: '1000', QUARRY_PRICE_CACHED_INPUT: '1000',
    QUARRY_PRICE_OUTPUT: '2000',
    QUARRY_PRICE_TOOL_CALL: '1',
  };
}

function put_(url: string, content: Buffer): Promise<TestResponse> {
  return fetchJson('PUT', url, { rawBody: content, headers: { 'content-type': 'text/plain' } });
}

// ---- the suite ----------------------------------------------------------------------------------

const only = process.env.QUARRY_CRASH_ONLY;
const concurrency = Number(process.env.QUARRY_CRASH_CONCURRENCY || 4);
const suite = new Suite();
const startedAt = Date.now();

describe('crash suite: kill -9 at every crash point, restart, nothing acknowledged is lost', { concurrency, timeout: 900_000 }, () => {
  before(() => suite.start());
  after(async () => {
    await killAll();
    await suite.model?.close();
    const secs = ((Date.now() - startedAt) / 1000).toFixed(1);
    process.stdout.write(`crash suite: ${suite.crashesSeen} of ${CRASH_COUNT} crash points crashed and recovered in ${secs} s\n`);
  });

  it(`covers every crash point name at ${CRASH_COUNT} crash points`, (t) => {
    // webhook.* points are crashed at by test/process/webhooks-delivery.test.ts, which has a receiver to
    // watch; group.* by test/process/groups-durability.test.ts.
    for (const name of CRASH_POINTS.filter((n) => !n.startsWith('webhook.') && !n.startsWith('group.'))) assert.ok(CASES.some((c) => c.crashAt?.startsWith(`${name}:`)), `${name} is in the table`);
    assert.ok(CRASH_COUNT >= 50, `${CRASH_COUNT} crash points`);
    t.diagnostic(`${CRASH_COUNT} crash points: ${CASES.length} cases, ${CASES.filter((c) => c.crashAt).length} at named crash points, ${CASES.filter((c) => c.kill).length} external kills, ${CASES.reduce((n, c) => n + (c.recovery?.length ?? 0), 0)} crashes while recovering`);
  });

  for (const [i, c] of CASES.entries()) {
    it(c.name, { skip: only !== undefined && !c.name.includes(only), timeout: 120_000 }, () => suite.runCase(c, i));
  }
});

describe('SIGTERM', { timeout: 120_000 }, () => {
  let model: FakeOpenAI | undefined;
  after(async () => {
    await killAll();
    await model?.close();
  });

  it('stops taking turns, releases the running one, ends open streams, exits promptly; the restart resumes it without asking for a stored reply again', { skip: only !== undefined && !'SIGTERM'.includes(only) }, async () => {
    model = await startFakeOpenAI();
    model.recordChecks();
    model.setResponder(respond);
    const env = serverEnv(model.url);
    const id = 'sigterm';
    const run: CaseRun = { id, kind: 'main', taskId: 'crash-sigterm', gates: new Map(), slow: new Set(), requests: [], inFlightAtCrash: [] };
    runs.set(id, run);
    const dataDir = makeDataDir();
    try {
      const s1 = await startServer({ dataDir, env });
      const account = await suite.account(s1);
      const held = gate(run, '1:1');
      const created = await api(s1, account.key, 'POST', '/task/start', { task_id: run.taskId, task: mainSpec(run) });
      assert.equal(created.status, 200, created.text);
      const stream = await openSse(s1.url, `/task/${run.taskId}/stream`, { key: account.key });
      // Reply 1 and its rows are checkpointed; reply 2 is in the model's hands.
      await within(held.arrived.promise, 20_000, 'model request 1:1');
      await stream.waitFor((e) => e.event === 'tool' && e.json?.call_id === 't1r1c0' && e.json?.state === 'finished', 10_000, 'the first write_rows');

      const exit = await s1.stop('SIGTERM', 10_000);
      assert.equal(exit.code, 0, `exit code 0 after SIGTERM\n${s1.output()}`);
      assert.ok(exit.ms < 5000, `exited ${exit.ms} ms after SIGTERM`);
      await stream.finished(5000);
      assert.ok(stream.ended, 'the open stream ended');
      held.release.resolve();

      // The running turn was handed back, not ended: pending, no lease, its steps kept.
      const db = new SQLite(path.join(dataDir, 'quarry.db'), { readonly: true });
      try {
        const turn = db.prepare('select status, lease_owner from turns where task_id = ?').get(run.taskId) as { status: string; lease_owner: string | null };
        assert.deepEqual(turn, { status: 'pending', lease_owner: null }, 'SIGTERM released the running turn');
        const steps = db.prepare('select count(*) as n from turn_steps t join turns u on u.id = t.turn_id where u.task_id = ?').get(run.taskId) as { n: number };
        assert.equal(steps.n, 2, 'the reply and the tool results of step 1 and 2 are checkpointed');
      } finally {
        db.close();
      }
      const events1 = stored(stream.events);
      assert.ok(!events1.some((e) => e.event === 'done'), 'no done: the turn was not ended by the shutdown');

      const s2 = await startServer({ dataDir, env });
      try {
        const resumed = await readSse(s2.url, `/task/${run.taskId}/stream`, { key: account.key, headers: { 'last-event-id': events1.at(-1)!.id! } }, 30_000);
        await waitSettled(s2, account.key, run.taskId);
        const events = await allEvents(s2, account.key, run.taskId);
        suite.checkStream({ create: true, messages: [], stream }, events, resumed);
        suite.checkTurns(events, [events[0].turn_id], [turnCredits(MAIN_TURNS[0]!)]);
        await suite.checkRows(s2, account, run.taskId, 'a', MAIN_TURNS[0]!.a);
        await suite.checkRows(s2, account, run.taskId, 'b', MAIN_TURNS[0]!.b);
        await suite.checkCredits(s2, account, events, [events[0].turn_id]);
        // 1:0 was stored before the SIGTERM: asked once. 1:1 was aborted unanswered: asked again.
        run.inFlightAtCrash.push('1:1');
        suite.checkModelCalls(run, ['1:0', '1:1', '1:2', '1:3', '1:4']);
        assert.equal(run.requests.filter((r) => r.key === '1:0').length, 1, 'the stored reply is not asked for again');
        const shutdown = await s2.stop('SIGTERM', 10_000);
        assert.equal(shutdown.code, 0);
      } finally {
        await s2.kill9();
      }
    } finally {
      removeDataDir(dataDir);
    }
  });
});
