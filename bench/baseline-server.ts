/**
 * The baseline: a bare node:http server (no framework, no store on disk) that does the work of
 * the benchmarked routes in memory and answers with bodies captured from Quarry in the same run,
 * so each benchmark's ratio is "Quarry vs. the cheapest server that does the same work and sends
 * the same bytes on this machine".
 *
 * What it keeps in memory, as a server holding its data there would:
 *   - API keys (the one given as the first argument): every task route checks `x-api-key` against
 *     them (401 otherwise).
 *   - Tasks by id, each with its account, its state (the captured `/state` JSON, kept parsed and
 *     serialized per request) and its events.
 *   - `POST /task` parses the body, checks `prompt`, stores a new task under a fresh id and
 *     answers the captured create answer with that id. Its turn then runs as Quarry's does:
 *     with `modelUrl` set, one chat-completions call to that model (the captured request body
 *     Quarry sent, read as a stream of server-sent events) whose text becomes the turn's events;
 *     without it, the turn fails at once with an `error` event (Quarry with no model configured).
 *     At most `maxConcurrentTurns` turns run at a time; the rest wait in order.
 *
 * Configured over loopback by the harness:
 *   POST /_bench/config  {statePath, stateBody, createBody, modelUrl, modelRequestBody,
 *                        maxConcurrentTurns, outputPath, outputBodyFile, fixed}
 *                        (`fixed`: GET answers by exact URL, query included, e.g. the task list: the
 *                        JSON is kept parsed and serialized per request)
 *   GET /_bench/turns    {backlog, completed}: turns not ended yet, turns completed so far
 *   POST /_bench/replay  {frames: [{offsetMs, id, type, data}]}  pushes those SSE frames to every
 *                        connected GET …/stream client at the same relative times, each `data`
 *                        with its `at` set to the moment it is written, then ends the streams.
 * Prints `baseline listening on <url>`.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Config {
  statePath?: string;
  stateBody?: string;
  createBody?: string;
  modelUrl?: string;
  modelRequestBody?: string;
  maxConcurrentTurns?: number;
  outputPath?: string;
  outputBodyFile?: string;
  fixed?: Record<string, string>;
}

interface ReplayFrame {
  offsetMs: number;
  id: number;
  type: string;
  /** The stored event's data JSON; its `"at":"…"` is replaced when the frame is sent. */
  data: string;
}

interface MemoryTask {
  account: string;
  state: unknown;
  events: { type: string; at: number; data: unknown }[];
}

const ACCOUNT = 'account';
/** API key → account; the one key is the harness's (Quarry's starter key), given as the first argument. */
const keys = new Map<string, string>([[process.argv[2] ?? '', ACCOUNT]]);
const tasks = new Map<string, MemoryTask>();
/** The captured create answer, parsed: each create answers it with its own task id. */
let createAnswer: Record<string, unknown> = {};
let outputPath = '';
let outputBody = Buffer.alloc(0);
const fixed = new Map<string, unknown>();
const streams = new Set<ServerResponse>();

const JSON_TYPE = 'application/json; charset=utf-8';

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: Buffer | string): void {
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const AT = /"at":"[^"]*"/;

function replay(frames: ReplayFrame[]): void {
  const groups = new Map<number, ReplayFrame[]>();
  for (const f of frames) {
    const list = groups.get(f.offsetMs) ?? [];
    list.push(f);
    groups.set(f.offsetMs, list);
  }
  const started = Date.now();
  const last = Math.max(...groups.keys());
  for (const [offset, group] of groups) {
    setTimeout(() => {
      for (const f of group) {
        const data = f.data.replace(AT, `"at":"${new Date().toISOString()}"`);
        const text = `id: ${f.id}\nevent: ${f.type}\ndata: ${data}\n\n`;
        for (const res of streams) res.write(text);
      }
      if (offset === last) {
        for (const res of streams) res.end();
        streams.clear();
      }
    }, Math.max(0, started + offset - Date.now()));
  }
}

// ---- turns ---------------------------------------------------------------------------------

let modelUrl: URL | undefined;
let modelRequestBody = Buffer.alloc(0);
let maxConcurrentTurns = 32;
const modelAgent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
const waitingTurns: MemoryTask[] = [];
let runningTurns = 0;
let completedTurns = 0;

function startTurns(): void {
  while (runningTurns < maxConcurrentTurns && waitingTurns.length > 0) {
    const task = waitingTurns.shift()!;
    runningTurns++;
    runTurn(task).then(
      () => completedTurns++,
      (err: unknown) => task.events.push({ type: 'error', at: Date.now(), data: { message: String(err) } }),
    ).finally(() => {
      runningTurns--;
      startTurns();
    });
  }
}

/** One model call: the captured request body, its streamed answer read to the end and kept as the turn's text. */
function runTurn(task: MemoryTask): Promise<void> {
  task.events.push({ type: 'task', at: Date.now(), data: { activity: 'turn_started' } });
  if (!modelUrl) {
    return Promise.reject(new Error('model_not_configured'));
  }
  const url = modelUrl;
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      agent: modelAgent,
      headers: { 'content-type': 'application/json', 'content-length': modelRequestBody.length, accept: 'text/event-stream' },
    }, (res) => {
      let buffered = '';
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffered += chunk;
        let end: number;
        while ((end = buffered.indexOf('\n\n')) >= 0) {
          const frame = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          if (!frame.startsWith('data: ') || frame === 'data: [DONE]') continue;
          const chunkJson = JSON.parse(frame.slice(6)) as { choices?: { delta?: { content?: string } }[] };
          text += chunkJson.choices?.[0]?.delta?.content ?? '';
        }
      });
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`model answered ${res.statusCode}`));
        task.events.push({ type: 'text', at: Date.now(), data: { text } });
        task.events.push({ type: 'done', at: Date.now(), data: { status: 'completed' } });
        resolve();
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(modelRequestBody);
  });
}

// ---- routes --------------------------------------------------------------------------------

const NOT_FOUND = '{"error":"not_found"}';
const UNAUTHORIZED = '{"error":"unauthorized"}';
const STATE_PATH = /^\/task\/([^/]+)\/state$/;

function newTaskId(): string {
  return `task_${randomBytes(12).toString('hex')}`;
}

function createTask(account: string, text: string): { status: number; body: string } {
  let body: { prompt?: unknown };
  try {
    body = JSON.parse(text) as { prompt?: unknown };
  } catch {
    return { status: 400, body: '{"error":"invalid_json"}' };
  }
  if (typeof body.prompt !== 'string' || body.prompt.length === 0) return { status: 422, body: '{"error":"validation_error","param":"prompt"}' };
  const id = newTaskId();
  const task: MemoryTask = { account, state: null, events: [] };
  tasks.set(id, task);
  waitingTurns.push(task);
  startTurns();
  return { status: 200, body: JSON.stringify({ ...createAnswer, task_id: id }) };
}

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  const pathname = url.split('?')[0]!;
  if (pathname.startsWith('/_bench/')) return benchControl(req, res, pathname);
  const account = keys.get(req.headers['x-api-key'] as string);
  if (account === undefined) return sendJson(res, 401, UNAUTHORIZED);
  const state = req.method === 'GET' ? STATE_PATH.exec(pathname) : null;
  if (state) {
    const task = tasks.get(decodeURIComponent(state[1]!));
    if (task?.account !== account) return sendJson(res, 404, NOT_FOUND);
    return sendJson(res, 200, JSON.stringify(task.state));
  }
  const fixedValue = req.method === 'GET' ? fixed.get(url) : undefined;
  if (fixedValue !== undefined) return sendJson(res, 200, JSON.stringify(fixedValue));
  if (req.method === 'POST' && pathname === '/task') {
    void readBody(req).then((text) => {
      const answer = createTask(account, text);
      sendJson(res, answer.status, answer.body);
    });
    return;
  }
  if (req.method === 'GET' && pathname === outputPath) return sendJson(res, 200, outputBody);
  if (req.method === 'GET' && pathname.endsWith('/stream')) {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.socket?.setNoDelay(true);
    res.flushHeaders();
    streams.add(res);
    res.on('close', () => streams.delete(res));
    return;
  }
  sendJson(res, 404, NOT_FOUND);
});

function benchControl(req: IncomingMessage, res: ServerResponse, pathname: string): void {
  if (req.method === 'POST' && pathname === '/_bench/config') {
    void readBody(req).then((text) => {
      const c = JSON.parse(text) as Config;
      if (c.statePath !== undefined && c.stateBody !== undefined) {
        const id = decodeURIComponent(STATE_PATH.exec(c.statePath)![1]!);
        tasks.set(id, { account: ACCOUNT, state: JSON.parse(c.stateBody), events: [] });
      }
      if (c.createBody !== undefined) createAnswer = JSON.parse(c.createBody) as Record<string, unknown>;
      if (c.modelUrl !== undefined) modelUrl = new URL(`${c.modelUrl.replace(/\/$/, '')}/chat/completions`);
      if (c.modelRequestBody !== undefined) modelRequestBody = Buffer.from(c.modelRequestBody);
      if (c.maxConcurrentTurns !== undefined) maxConcurrentTurns = c.maxConcurrentTurns;
      if (c.outputPath !== undefined) outputPath = c.outputPath;
      if (c.outputBodyFile !== undefined) outputBody = fs.readFileSync(c.outputBodyFile);
      for (const [at, body] of Object.entries(c.fixed ?? {})) fixed.set(at, JSON.parse(body));
      sendJson(res, 200, '{"ok":true}');
    });
    return;
  }
  if (req.method === 'GET' && pathname === '/_bench/turns') {
    return sendJson(res, 200, JSON.stringify({ backlog: waitingTurns.length + runningTurns, completed: completedTurns }));
  }
  if (req.method === 'POST' && pathname === '/_bench/replay') {
    void readBody(req).then((text) => {
      const { frames } = JSON.parse(text) as { frames: ReplayFrame[] };
      sendJson(res, 200, JSON.stringify({ ok: true, clients: streams.size }));
      replay(frames);
    });
    return;
  }
  if (req.method === 'GET' && pathname === '/_bench/clients') return sendJson(res, 200, JSON.stringify({ clients: streams.size }));
  sendJson(res, 404, NOT_FOUND);
}

server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', 511, () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`baseline listening on http://127.0.0.1:${port}\n`);
});

process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
