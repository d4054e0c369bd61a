/**
 * The baseline: a bare node:http server (no framework, no auth, no store) that answers the
 * benchmarked routes with bodies captured from Quarry in the same run, so each benchmark's ratio
 * is "Quarry vs. the cheapest server that sends the same bytes on this machine".
 *
 * Configured over loopback by the harness:
 *   POST /_bench/config  {statePath, stateBody, createBody, outputPath, outputBodyFile, fixed}
 *                        (`fixed`: GET answers by exact URL, query included, e.g. the task list: the
 *                        JSON is kept parsed and serialized per request, the work a server
 *                        holding its data in memory does)
 *   POST /_bench/replay  {frames: [{offsetMs, id, type, data}]}  pushes those SSE frames to every
 *                        connected GET …/stream client at the same relative times, each `data`
 *                        with its `at` set to the moment it is written, then ends the streams.
 * Prints `baseline listening on <url>`.
 */
import fs from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Config {
  statePath?: string;
  stateBody?: string;
  createBody?: string;
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

let stateBody = Buffer.alloc(0);
let statePath = '';
let createBody = Buffer.alloc(0);
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

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  const pathname = url.split('?')[0]!;
  if (req.method === 'GET' && pathname === statePath) return sendJson(res, 200, stateBody);
  const fixedValue = req.method === 'GET' ? fixed.get(url) : undefined;
  if (fixedValue !== undefined) return sendJson(res, 200, JSON.stringify(fixedValue));
  if (req.method === 'POST' && pathname === '/task') {
    req.resume();
    req.on('end', () => sendJson(res, 200, createBody));
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
  if (req.method === 'POST' && pathname === '/_bench/config') {
    void readBody(req).then((text) => {
      const c = JSON.parse(text) as Config;
      if (c.statePath !== undefined) statePath = c.statePath;
      if (c.stateBody !== undefined) stateBody = Buffer.from(c.stateBody);
      if (c.createBody !== undefined) createBody = Buffer.from(c.createBody);
      if (c.outputPath !== undefined) outputPath = c.outputPath;
      if (c.outputBodyFile !== undefined) outputBody = fs.readFileSync(c.outputBodyFile);
      for (const [at, body] of Object.entries(c.fixed ?? {})) fixed.set(at, JSON.parse(body));
      sendJson(res, 200, '{"ok":true}');
    });
    return;
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
  sendJson(res, 404, '{"error":"not_found"}');
});

server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', 511, () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`baseline listening on http://127.0.0.1:${port}\n`);
});

process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
