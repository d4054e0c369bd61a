/**
 * A load-generator process for the SSE benchmark: opens `--count` concurrent GET …/stream
 * connections to one URL (node:http, one socket each), and for every event frame records
 * receive time − the event's `at` (both clocks are this machine's). Prints
 *   `connected <ok> <failed>` once every connection has its response headers (Quarry sends them
 *   with the first frame, so the harness asks it to replay one stored event; `--min-id` keeps
 *   such replayed frames out of the figures), then
 *   `result <json>` once every stream has ended (or at the deadline).
 */
import http from 'node:http';
import type { SseClientResult } from './lib.js';
import { SseParser, type SseEvent } from '../test/kit/sse-client.js';

function arg(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? process.argv[i + 1] : fallback;
  if (v === undefined) throw new Error(`missing --${name}`);
  return v;
}

const url = new URL(arg('url'));
const count = Number(arg('count'));
const key = arg('key', '');
const deadlineMs = Number(arg('deadline-ms', '120000'));
const connectConcurrency = Number(arg('connect-concurrency', '100'));
/** Frames with a lower id are replayed history (sent so the response headers go out); not measured. */
const minId = Number(arg('min-id', '0'));

const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity, maxTotalSockets: Infinity });
/** Counts per whole millisecond of latency. */
const hist = new Map<number, number>();
/** The same, per event type (`text`, `task`, `tool`, …). */
const histByType = new Map<string, Map<number, number>>();
/** Per event (by its id): the latest delivery to any client, and how many clients got it. */
const perEvent = new Map<number, { max: number; n: number; type: string }>();
let connected = 0;
let failed = 0;
let ended = 0;
let frames = 0;
let unparsable = 0;
let minFramesPerClient = Infinity;
const requests: http.ClientRequest[] = [];

/** Records one event frame received at `now`; false for replayed history and frames without `at`. */
function record(event: SseEvent, now: number): boolean {
  const id = event.id === undefined ? -1 : Number(event.id);
  // `at` is read from the text rather than by parsing every frame: the generator shares the CPU with the server it measures.
  const i = event.data.indexOf('"at":"');
  const at = i >= 0 ? Date.parse(event.data.slice(i + 6, event.data.indexOf('"', i + 6))) : -1;
  const type = event.event;
  if (id >= 0 && id < minId) return false;
  if (Number.isNaN(at) || at < 0) {
    unparsable++;
    return false;
  }
  const ms = Math.max(0, now - at);
  hist.set(ms, (hist.get(ms) ?? 0) + 1);
  let th = histByType.get(type);
  if (!th) histByType.set(type, (th = new Map()));
  th.set(ms, (th.get(ms) ?? 0) + 1);
  const e = perEvent.get(id);
  if (e) {
    e.n++;
    if (ms > e.max) e.max = ms;
  } else {
    perEvent.set(id, { max: ms, n: 1, type });
  }
  frames++;
  return true;
}

function openOne(): Promise<void> {
  return new Promise((resolve) => {
    const req = http.get(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, agent, headers: { 'x-api-key': key, accept: 'text/event-stream' } },
      (res) => {
        if (res.statusCode !== 200) {
          failed++;
          res.resume();
          resolve();
          return;
        }
        connected++;
        resolve();
        res.setEncoding('utf8');
        let mine = 0;
        let now = 0;
        const parser = new SseParser((event) => {
          if (record(event, now)) mine++;
        }, undefined, { parseJson: false });
        res.on('data', (chunk: string) => {
          now = Date.now();
          parser.push(chunk);
        });
        const finish = () => {
          ended++;
          minFramesPerClient = Math.min(minFramesPerClient, mine);
          maybeDone();
        };
        res.once('end', finish);
        res.once('error', () => undefined);
        res.once('aborted', () => undefined);
      },
    );
    req.on('error', () => {
      failed++;
      resolve();
    });
    requests.push(req);
  });
}

let reported = false;
function report(reason: string): void {
  if (reported) return;
  reported = true;
  const result: SseClientResult = {
    reason,
    connected,
    failed,
    frames,
    unparsable,
    minFramesPerClient: minFramesPerClient === Infinity ? 0 : minFramesPerClient,
    hist: [...hist.entries()],
    histByType: [...histByType.entries()].map(([type, h]) => [type, [...h.entries()]]),
    perEvent: [...perEvent.entries()].map(([id, e]) => [id, e.max, e.n, e.type]),
  };
  process.stdout.write(`result ${JSON.stringify(result)}\n`, () => {
    for (const req of requests) req.destroy();
    process.exit(0);
  });
}

function maybeDone(): void {
  if (connected > 0 && ended >= connected) report('all streams ended');
}

setTimeout(() => report('deadline'), deadlineMs).unref();
process.on('SIGTERM', () => report('SIGTERM'));

async function main(): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(connectConcurrency, count) }, async () => {
      while (next < count) {
        next++;
        await openOne();
      }
    }),
  );
  process.stdout.write(`connected ${connected} ${failed}\n`);
  if (connected === 0) report('no connection succeeded');
}

void main();
