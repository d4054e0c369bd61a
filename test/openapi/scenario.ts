/**
 * The conformance scenario: requests to every route of Quarry, sent through Prism's validating
 * proxies, each with the answer the API reference (docs/api.md) promises for it: successes,
 * streams, exports, uploads, admin routes, and every error a client can provoke (401, 402, 404,
 * 405, 409 ×3, 413, 415, 422).
 *
 * Two proxies carry the probes:
 * - `strict` (`prism proxy --errors`): requests the document must accept. Prism refuses a request
 *   that breaks the document itself (it never reaches Quarry) and turns a response with an error
 *   violation into a 500 problem+json; both count as violations, as does any `sl-violations` entry.
 * - `lenient` (`prism proxy` without `--errors`): requests that are wrong on purpose (no key, a bad
 *   body, a wrong content type or method, too large). Prism forwards them and reports what it
 *   found in `sl-violations`; only the `response` entries count.
 *
 * What a probe needs (task ids, upload URLs, cursors) is set up with direct requests to Quarry,
 * so a violation that makes Prism replace one answer never derails the probes after it.
 */
import assert from 'node:assert/strict';
import { ADMIN_KEY, type Harness } from '../helpers/harness.js';
import { waitIdle } from '../helpers/http.js';
import { putUpload } from '../helpers/task-api.js';
import type { FakeReply, FakeRequestBody } from '../fake-model/fake-openai-server.js';
import { OpenApiDocument } from './document.js';
import { prismViolations, type PrismViolation } from './tools.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

export type Via = 'strict' | 'lenient';

export interface Probe {
  via: Via;
  method: string;
  path: string;
  /** Sent as JSON with `Content-Type: application/json`. */
  body?: unknown;
  /** Sent as is (set the content type in `headers`). */
  rawBody?: string;
  headers?: Record<string, string>;
  /** The API key to send in X-API-Key; default the harness's key; null sends none. */
  key?: string | null;
  /** The status the API reference promises. */
  expect: number;
  /** The media type the answer must have (default: JSON for anything with a body). */
  expectType?: string;
  /** Why this probe exists, for reports. */
  note: string;
}

export interface Exchange {
  probe: Probe;
  status: number;
  contentType: string;
  headers: Headers;
  text: string;
  body: Json;
  /** The operation of the document the request lands on (`METHOD /template`), if any. */
  operation?: string;
  /** The violations that count for this probe (see the file comment). */
  violations: PrismViolation[];
  /** Set when Prism answered instead of Quarry (a refused request or a replaced response). */
  prismAnswered?: string;
  /** How long the request took through the proxy. */
  ms: number;
}

export interface Proxies {
  strict: string;
  lenient: string;
}


/** Sends probes through the proxies and records every exchange. */
export class ProbeRunner {
  readonly exchanges: Exchange[] = [];

  constructor(
    private readonly h: Harness,
    private readonly proxies: Proxies,
    private readonly doc: OpenApiDocument,
  ) {}

  async send(probe: Probe): Promise<Exchange> {
    const headers: Record<string, string> = { ...probe.headers };
    const key = probe.key === undefined ? this.h.key : probe.key;
    if (key !== null && headers['x-api-key'] === undefined && headers.authorization === undefined) headers['x-api-key'] = key;
    let body: string | undefined = probe.rawBody;
    if (probe.body !== undefined) {
      body = JSON.stringify(probe.body);
      headers['content-type'] ??= 'application/json';
    }
    const started = performance.now();
    const res = await fetch(this.proxies[probe.via] + probe.path, { method: probe.method, headers, body, redirect: 'manual' });
    const text = await res.text();
    const ms = Math.round(performance.now() - started);
    let parsed: Json;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    const { violations, prismAnswered } = prismViolations(res.headers, parsed);
    const counted = probe.via === 'strict' ? violations : violations.filter((v) => v.location[0] === 'response');
    // Every answer of Quarry carries X-Request-ID; one without it was written by Prism.
    const answeredByPrism = prismAnswered ?? (res.headers.get('x-request-id') ? undefined : `an answer without X-Request-ID (${res.status}): ${text.slice(0, 300)}`);
    const exchange: Exchange = {
      probe,
      status: res.status,
      contentType: res.headers.get('content-type') ?? '',
      headers: res.headers,
      text,
      body: parsed,
      operation: this.doc.operationFor(probe.method, probe.path)?.key,
      violations: counted,
      prismAnswered: answeredByPrism,
      ms,
    };
    this.exchanges.push(exchange);
    return exchange;
  }

  /** Sends probes one after another (their order is part of the scenario). */
  async sendAll(probes: Probe[]): Promise<void> {
    for (const probe of probes) await this.send(probe);
  }
}

// ---- the fake model ---------------------------------------------------------------------------------

function lastUserText(body: FakeRequestBody): string {
  const users = (body.messages ?? []).filter((m) => m.role === 'user');
  return String(users[users.length - 1]?.content ?? '');
}

/**
 * `[hang]` in the latest user message: the model never answers (the turn runs until stopped).
 * `[rows]` in any user message: the turn writes rows to `makers`, `facts` and `notes`, one call
 * each, then says "Done.". Anything else: "Done.".
 */
export function scenarioModel(body: FakeRequestBody): FakeReply {
  if (lastUserText(body).includes('[hang]')) return { hang: true };
  const messages = body.messages ?? [];
  const wantsRows = messages.some((m) => m.role === 'user' && String(m.content).includes('[rows]'));
  const toolResults = messages.filter((m) => m.role === 'tool').length;
  const sources = [{ url: 'https://example.com/plants', title: 'Plants', quote: 'Acme runs a plant' }];
  const writes: FakeReply[] = [
    { toolCalls: [{ name: 'write_rows', arguments: { output: 'makers', rows: [{ company: 'Acme', country: 'SE', capacity_gwh: 16 }, { company: '=Beta, Inc.', country: 'DE', capacity_gwh: null }], sources } }] },
    { toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows: [{ claim: 'first', n: 1 }], sources } }] },
    { toolCalls: [{ name: 'write_rows', arguments: { output: 'notes', rows: [{ heading: 'Overview', markdown: '# Overview\n\nText.' }], sources } }] },
  ];
  if (wantsRows && toolResults < writes.length) return writes[toolResults]!;
  return { text: 'Done.' };
}

// ---- set-up helpers (direct requests to Quarry) ---------------------------------------------------------------

async function direct(h: Harness, method: string, path: string, opts: { body?: unknown; key?: string | null; headers?: Record<string, string> } = {}, expect = 200): Promise<Json> {
  const res = await h.request(method, path, opts);
  assert.equal(res.status, expect, `set-up ${method} ${path}: ${res.text}`);
  return { body: res.body, headers: res.headers };
}

/** Set-up waits: the task's turn has ended. */
function settled(h: Harness, taskId: string, key = h.key): Promise<void> {
  return waitIdle(h.request, taskId, { key, timeoutMs: 15_000 });
}

/** The spec of the task whose outputs the output routes read. */
export const MAIN_SPEC = {
  name: 'Conformance main',
  prompt: 'Fill the outputs. [rows]',
  outputs: [
    { id: 'makers', kind: 'table', description: 'one row per plant', columns: [{ name: 'company', required: true }, { name: 'country' }, { name: 'capacity_gwh', type: 'number', description: 'GWh a year' }] },
    { id: 'facts', kind: 'records', schema: { type: 'object', properties: { claim: { type: 'string' }, n: { type: 'integer' } }, required: ['claim'] } },
    { id: 'notes', kind: 'report' },
  ],
  limits: { max_steps: 20, max_turn_seconds: 600, max_credits_per_turn: 10 },
  tools: ['web_search', 'fetch_url', 'read_input'],
};

const pathOf = (url: string) => {
  const u = new URL(url);
  return u.pathname + u.search;
};

// ---- the scenario ---------------------------------------------------------------------------------

/**
 * Runs every probe. `h` runs the scenario model. The sweep afterwards (see sweepUncovered) sends
 * a generic request to any operation of the document that no probe reached.
 */
export async function runScenario(h: Harness, run: ProbeRunner): Promise<void> {
  const S = 'strict' as const;
  const L = 'lenient' as const;
  const t = (id: string) => `/task/${encodeURIComponent(id)}`;
  const SSE = 'text/event-stream';

  // Set-up: accounts, tasks in the states the probes need, a finished upload.
  const broke = (await direct(h, 'POST', '/admin/accounts', { key: ADMIN_KEY, body: { name: 'broke', credits: 0 } }, 201)).body;
  const spent = (await direct(h, 'POST', '/admin/accounts', { key: ADMIN_KEY, body: { name: 'spent', credits: 5 } }, 201)).body;
  const spentTask = (await direct(h, 'POST', '/task', { key: spent.api_key, body: { prompt: 'a task whose account runs dry' } })).body.task_id;
  await settled(h, spentTask, spent.api_key);
  await direct(h, 'POST', `/admin/accounts/${spent.account_id}/credits`, { key: ADMIN_KEY, body: { amount: -1000 } });

  const main = 'conf-main';
  await direct(h, 'POST', '/task/start', { body: { task_id: main, task: MAIN_SPEC } });
  await settled(h, main);
  const outputs = (await direct(h, 'GET', `${t(main)}/outputs`)).body;
  assert.deepEqual(outputs.outputs.map((o: Json) => [o.id, o.row_count]), [['makers', 2], ['facts', 1], ['notes', 1]], 'set-up: the main task wrote its rows');

  const empty = (await direct(h, 'POST', '/task', { body: { prompt: 'a task that declares no outputs' } })).body.task_id;
  const doomed = (await direct(h, 'POST', '/task', { body: { prompt: 'a task to delete' } })).body.task_id;
  const cron = 'conf-cron';
  await direct(h, 'POST', '/task/start', { body: { task_id: cron, task: { prompt: 'a scheduled task', schedule: { cron: '0 0 1 1 *', timezone: 'UTC' } } } });
  const held = (await direct(h, 'POST', '/task', { body: { prompt: '[hang] a turn that runs until stopped' } })).body.task_id;
  await Promise.all([settled(h, empty), settled(h, doomed), settled(h, cron)]);

  const ticket = async (size: number) => (await direct(h, 'POST', '/upload-url', { body: { filename: 'shortlist.csv', content_type: 'text/csv', size_bytes: size } })).body;
  const inputTicket = await ticket(20);
  assert.equal((await putUpload(h, inputTicket, 'company\nAcme\nBeta\n\n\n')).status, 201);
  const putTicket = await ticket(12);
  const smallTicket = await ticket(4);
  const adminProbe = (await direct(h, 'POST', '/admin/accounts', { key: ADMIN_KEY, body: { name: 'admin-probe', credits: 3 } }, 201)).body;

  const firstPage = await direct(h, 'GET', '/task?limit=1');
  const cursor = firstPage.headers.get('x-next-cursor');
  assert.ok(cursor, 'set-up: a first page of one task has a next cursor');

  await run.sendAll([
    // Health and self-description.
    { via: S, method: 'GET', path: '/healthz', key: null, expect: 200, note: 'health probe, no key' },
    { via: S, method: 'GET', path: '/readyz', key: null, expect: 200, note: 'readiness probe, no key' },
    { via: S, method: 'GET', path: '/task/workflow', expect: 200, note: 'route map and state machine' },
    { via: S, method: 'GET', path: '/task/metaprompt', expect: 200, note: 'spec schema and metaprompt' },
    { via: S, method: 'GET', path: '/task/workflow', key: null, headers: { authorization: `Bearer ${h.key}` }, expect: 200, note: 'the key as a Bearer token' },

    // Creates.
    { via: S, method: 'POST', path: '/task', body: { prompt: 'List the EU plants making Li-ion cells.' }, expect: 200, note: 'create from a prompt' },
    { via: S, method: 'POST', path: '/task', body: { prompt: 'Plan only.', plan_only: true, wait: true }, expect: 200, note: 'create, plan_only, compatibility wait' },
    { via: S, method: 'POST', path: '/task', headers: { 'idempotency-key': 'conf-idem-1' }, body: { prompt: 'Idempotent create.' }, expect: 200, note: 'create with Idempotency-Key' },
    { via: S, method: 'POST', path: '/task', headers: { 'idempotency-key': 'conf-idem-1' }, body: { prompt: 'Idempotent create.' }, expect: 200, note: 'the same create replayed (Idempotent-Replayed)' },
    { via: S, method: 'POST', path: '/task', body: { prompt: 'Queued through POST /task.', task_id: held }, expect: 202, note: 'a prompt to a running task is queued' },
    { via: S, method: 'POST', path: '/task', key: broke.api_key, body: { prompt: 'No credits.' }, expect: 402, note: '402 out_of_credits on a create' },
    { via: S, method: 'POST', path: '/task', body: { prompt: 'To nobody.', task_id: 'conf-no-such-task' }, expect: 404, note: '404 task_not_found for a task_id' },
    { via: S, method: 'POST', path: '/task', body: { prompt: 'To a cron task.', task_id: cron }, expect: 409, note: '409 task_in_cron_mode' },
    { via: S, method: 'POST', path: '/task/start', body: { task: { ...MAIN_SPEC, prompt: 'A spec create.', inputs: [{ upload_id: inputTicket.upload_id, name: 'shortlist.csv' }] } }, expect: 200, note: 'create from a full spec with an uploaded input' },
    { via: S, method: 'POST', path: '/task/start', body: { task_id: 'conf-client-id', task: { prompt: 'A client-chosen id.' } }, expect: 200, note: 'create under a client task_id' },
    { via: S, method: 'POST', path: '/task/start', body: { prompt: 'Without task: as POST /task.' }, expect: 200, note: 'start without a spec' },
    { via: S, method: 'POST', path: '/task/start', body: { prompt: 'Queued through /task/start.', task_id: held }, expect: 202, note: 'start without a spec, to a running task' },
    { via: S, method: 'POST', path: '/task/start', body: { task_id: main, task: { prompt: 'Taken.' } }, expect: 409, note: '409 task_exists' },
    { via: S, method: 'POST', path: '/task/start', key: broke.api_key, body: { task: { prompt: 'No credits.' } }, expect: 402, note: '402 out_of_credits on a spec create' },
    { via: S, method: 'POST', path: '/task/stream', body: { prompt: 'Stream a create.' }, expect: 200, expectType: SSE, note: 'create answered as a stream' },
    { via: S, method: 'POST', path: '/task/stream', key: broke.api_key, body: { prompt: 'No credits.' }, expect: 200, expectType: SSE, note: '402 refused inside the stream' },
    { via: S, method: 'POST', path: '/task/start/stream', body: { task: { prompt: 'Stream a spec create.' } }, expect: 200, expectType: SSE, note: 'spec create answered as a stream' },
    { via: S, method: 'POST', path: '/task/start/stream', body: { task_id: main, task: { prompt: 'Taken.' } }, expect: 200, expectType: SSE, note: '409 task_exists refused inside the stream' },

    // Reads.
    { via: S, method: 'GET', path: '/task', expect: 200, note: 'list' },
    { via: S, method: 'GET', path: '/task?limit=1', expect: 200, note: 'a page with X-Next-Cursor and Link' },
    { via: S, method: 'GET', path: `/task?limit=1&cursor=${encodeURIComponent(cursor)}`, expect: 200, note: 'the next page' },
    { via: S, method: 'GET', path: t(main), expect: 200, note: 'task with spec and events' },
    { via: S, method: 'GET', path: `${t(main)}?wait=1`, expect: 200, note: 'long-poll on an idle task' },
    { via: S, method: 'GET', path: t('conf-no-such-task'), expect: 404, note: '404 task_not_found' },
    { via: S, method: 'GET', path: `${t(main)}/state`, expect: 200, note: 'the cheap poll' },
    { via: S, method: 'GET', path: `${t(held)}/state?wait=0`, expect: 200, note: 'the cheap poll while a turn runs' },
    { via: S, method: 'GET', path: `${t('conf-no-such-task')}/state`, expect: 404, note: '404 task_not_found' },
    { via: S, method: 'GET', path: `${t(main)}/events`, expect: 200, note: 'event history' },
    { via: S, method: 'GET', path: `${t(main)}/events?after=1&limit=2`, expect: 200, note: 'an event page' },
    { via: S, method: 'GET', path: `${t('conf-no-such-task')}/events`, expect: 404, note: '404 task_not_found' },
    { via: S, method: 'GET', path: `${t(main)}/stream`, expect: 200, expectType: SSE, note: 'stream of an idle task (snapshot, done)' },
    { via: S, method: 'GET', path: `${t(main)}/stream?after=1`, expect: 200, expectType: SSE, note: 'resumed stream' },
    { via: S, method: 'GET', path: `${t(main)}/stream`, headers: { 'last-event-id': '2' }, expect: 200, expectType: SSE, note: 'resumed with Last-Event-ID' },
    { via: S, method: 'GET', path: `${t('conf-no-such-task')}/stream`, expect: 404, note: '404 task_not_found' },

    // Outputs and exports.
    { via: S, method: 'GET', path: `${t(main)}/output`, expect: 200, note: 'rows of the active output' },
    { via: S, method: 'GET', path: `${t(main)}/output?output=makers&limit=1&offset=1`, expect: 200, note: 'a page of a named output' },
    { via: S, method: 'GET', path: `${t(main)}/output?output=facts`, expect: 200, note: 'records rows' },
    { via: S, method: 'GET', path: `${t(main)}/output?output=makers&format=json`, expect: 200, note: 'format=json' },
    { via: S, method: 'GET', path: `${t(main)}/output?output=makers&format=csv`, expect: 200, expectType: 'text/csv', note: 'CSV export' },
    { via: S, method: 'GET', path: `${t(main)}/output?output=facts&format=jsonl`, expect: 200, expectType: 'application/x-ndjson', note: 'JSONL export' },
    { via: S, method: 'GET', path: `${t(main)}/output?output=notes`, headers: { accept: 'text/csv' }, expect: 200, expectType: 'text/csv', note: 'CSV export by Accept' },
    { via: S, method: 'GET', path: `${t(main)}/output?output=nope`, expect: 404, note: '404 not_found (no such output)' },
    { via: S, method: 'GET', path: `${t(empty)}/output`, expect: 200, note: 'a task with no outputs' },
    { via: S, method: 'GET', path: `${t(empty)}/output?format=csv`, expect: 200, note: 'a task with no outputs, format=csv (answers JSON)' },
    { via: S, method: 'GET', path: `${t('conf-no-such-task')}/output`, expect: 404, note: '404 task_not_found' },
    { via: S, method: 'GET', path: `${t(main)}/outputs`, expect: 200, note: 'outputs with row counts' },
    { via: S, method: 'GET', path: `${t('conf-no-such-task')}/outputs`, expect: 404, note: '404 task_not_found' },
    { via: S, method: 'GET', path: `${t(main)}/outputs/makers`, expect: 200, note: 'rows of one output' },
    { via: S, method: 'GET', path: `${t(main)}/outputs/notes?limit=5&offset=0`, expect: 200, note: 'report rows' },
    { via: S, method: 'GET', path: `${t(main)}/outputs/makers?format=csv`, expect: 200, expectType: 'text/csv', note: 'CSV export' },
    { via: S, method: 'GET', path: `${t(main)}/outputs/facts?format=jsonl`, expect: 200, expectType: 'application/x-ndjson', note: 'JSONL export' },
    { via: S, method: 'GET', path: `${t(main)}/outputs/makers`, headers: { accept: 'text/csv' }, expect: 200, expectType: 'text/csv', note: 'CSV export by Accept' },
    { via: S, method: 'GET', path: `${t(main)}/outputs/nope`, expect: 404, note: '404 not_found (no such output)' },
    { via: S, method: 'GET', path: `${t('conf-no-such-task')}/outputs/makers`, expect: 404, note: '404 task_not_found' },

    // Messages and control while a turn runs, and in cron mode.
    { via: S, method: 'POST', path: `${t(held)}/continue`, body: { message: 'Queued while the turn runs.' }, expect: 202, note: 'continue queued (202 accepted)' },
    { via: S, method: 'POST', path: `${t(held)}/execute`, body: {}, expect: 409, note: '409 task_executing (execute is never queued)' },
    { via: S, method: 'POST', path: `${t(held)}/execute/stream`, body: {}, expect: 200, expectType: SSE, note: '409 task_executing refused inside the stream' },
    { via: S, method: 'POST', path: `${t(cron)}/continue`, body: { message: 'Hello cron.' }, expect: 409, note: '409 task_in_cron_mode' },
    { via: S, method: 'POST', path: `${t(cron)}/execute`, body: {}, expect: 409, note: '409 task_in_cron_mode' },
    { via: S, method: 'POST', path: `${t(cron)}/continue/stream`, body: { message: 'Hello cron.' }, expect: 200, expectType: SSE, note: '409 task_in_cron_mode refused inside the stream' },
    { via: S, method: 'POST', path: `${t(spentTask)}/continue`, key: spent.api_key, body: { message: 'No credits left.' }, expect: 402, note: '402 out_of_credits on continue' },
    { via: S, method: 'POST', path: `${t(spentTask)}/execute`, key: spent.api_key, body: {}, expect: 402, note: '402 out_of_credits on execute' },
    { via: S, method: 'POST', path: `${t('conf-no-such-task')}/continue`, body: { message: 'Anyone?' }, expect: 404, note: '404 task_not_found' },
    { via: S, method: 'POST', path: `${t('conf-no-such-task')}/continue/stream`, body: { message: 'Anyone?' }, expect: 404, note: '404 task_not_found before the stream opens' },
    { via: S, method: 'POST', path: `${t('conf-no-such-task')}/execute`, body: {}, expect: 404, note: '404 task_not_found' },
    { via: S, method: 'POST', path: `${t('conf-no-such-task')}/execute/stream`, body: {}, expect: 404, note: '404 task_not_found before the stream opens' },
    { via: S, method: 'POST', path: `${t('conf-no-such-task')}/stop`, body: {}, expect: 404, note: '404 task_not_found' },
    { via: S, method: 'POST', path: `${t(held)}/stop`, body: { clear_queue: true }, expect: 200, note: 'stop a running turn, dropping the queue' },
  ]);
  await settled(h, held);

  // Messages and control on an idle task: each starts a turn that ends at once.
  await run.send({ via: S, method: 'POST', path: `${t(main)}/continue`, body: { message: 'Add more.' }, expect: 200, note: 'continue an idle task' });
  await settled(h, main);
  await run.send({ via: S, method: 'POST', path: `${t(main)}/continue`, headers: { 'idempotency-key': 'conf-idem-2' }, body: { message: 'Blocking.', wait: true }, expect: 200, note: 'continue with legacy wait: true' });
  await settled(h, main);
  await run.send({ via: S, method: 'POST', path: `${t(main)}/continue/stream`, body: { message: 'Stream a message.' }, expect: 200, expectType: SSE, note: 'continue answered as a stream' });
  await settled(h, main);
  await run.send({ via: S, method: 'POST', path: `${t(main)}/execute`, body: { instruction: 'Run again.' }, expect: 200, note: 'execute with an instruction' });
  await settled(h, main);
  await run.send({ via: S, method: 'POST', path: `${t(main)}/execute`, expect: 200, note: 'execute without a body (counts as {})' });
  await settled(h, main);
  await run.send({ via: S, method: 'POST', path: `${t(main)}/execute/stream`, body: {}, expect: 200, expectType: SSE, note: 'execute answered as a stream' });
  await settled(h, main);
  // A stream opened while a turn runs follows it to its end.
  await direct(h, 'POST', `${t(main)}/continue`, { body: { message: 'Follow me.' } });
  await run.send({ via: S, method: 'GET', path: `${t(main)}/stream`, expect: 200, expectType: SSE, note: 'stream of a running turn' });
  await settled(h, main);

  await run.sendAll([
    { via: S, method: 'POST', path: `${t(main)}/stop`, expect: 200, note: 'stop without a body (counts as {}) on an idle task' },
    { via: S, method: 'POST', path: `${t(main)}/stop`, body: { clear_queue: false }, expect: 200, note: 'stop on an idle task' },
    { via: S, method: 'PATCH', path: t(main), body: { name: 'Renamed', pinned: true }, expect: 200, note: 'rename and pin' },
    { via: S, method: 'PATCH', path: t(main), body: { name: null, pinned: false }, expect: 200, note: 'clear the name, unpin' },
    { via: S, method: 'PATCH', path: t(cron), body: { schedule: null }, expect: 200, note: 'leave cron mode' },
    { via: S, method: 'PATCH', path: t(empty), body: { schedule: { cron: '0 7 * * 1', timezone: 'Europe/Berlin' } }, expect: 200, note: 'enter cron mode' },
    { via: S, method: 'PATCH', path: t('conf-no-such-task'), body: { pinned: true }, expect: 404, note: '404 task_not_found' },
    { via: S, method: 'DELETE', path: t(doomed), expect: 200, note: 'delete' },
    { via: S, method: 'GET', path: t(doomed), expect: 200, note: 'a deleted task is still shown' },
    { via: S, method: 'DELETE', path: t(doomed), expect: 404, note: '404 task_not_found once deleted' },
    { via: S, method: 'GET', path: `${t(doomed)}/state`, expect: 404, note: '404 task_not_found once deleted' },

    // Uploads.
    { via: S, method: 'POST', path: '/upload-url', body: { filename: 'report.pdf', content_type: 'application/pdf', size_bytes: 48213 }, expect: 200, note: 'a signed upload URL' },
    { via: S, method: 'PUT', path: pathOf(putTicket.upload_url), key: null, headers: { 'content-type': 'text/csv' }, rawBody: 'a,b\n1,2\n3,4\n', expect: 201, note: 'the upload PUT (no key)' },
    { via: L, method: 'PUT', path: pathOf(smallTicket.upload_url).replace(/sig=[^&]+/, 'sig=forged'), key: null, headers: { 'content-type': 'text/plain' }, rawBody: 'abcd', expect: 401, note: '401 bad upload signature' },
    { via: L, method: 'PUT', path: pathOf(smallTicket.upload_url), key: null, headers: { 'content-type': 'text/plain' }, rawBody: 'more than four bytes', expect: 413, note: '413 more bytes than declared' },

    // Admin routes.
    { via: S, method: 'POST', path: '/admin/accounts', key: ADMIN_KEY, body: { name: 'research-team', credits: 500 }, expect: 201, note: 'create an account' },
    { via: S, method: 'GET', path: `/admin/accounts/${adminProbe.account_id}`, key: ADMIN_KEY, expect: 200, note: 'an account' },
    { via: S, method: 'GET', path: '/admin/accounts/acct_nope', key: ADMIN_KEY, expect: 404, note: '404 not_found (no such account)' },
    { via: S, method: 'POST', path: `/admin/accounts/${adminProbe.account_id}/credits`, key: ADMIN_KEY, body: { amount: 250.5 }, expect: 200, note: 'add credits' },
    { via: S, method: 'POST', path: `/admin/accounts/${adminProbe.account_id}/credits`, key: ADMIN_KEY, body: { amount: -1 }, expect: 200, note: 'take credits' },
    { via: S, method: 'POST', path: '/admin/accounts/acct_nope/credits', key: ADMIN_KEY, body: { amount: 1 }, expect: 404, note: '404 not_found' },
    { via: S, method: 'POST', path: `/admin/accounts/${adminProbe.account_id}/keys`, key: ADMIN_KEY, body: {}, expect: 201, note: 'a new key' },
    { via: S, method: 'POST', path: `/admin/accounts/${adminProbe.account_id}/keys`, key: ADMIN_KEY, expect: 201, note: 'a new key, no body' },
    { via: S, method: 'GET', path: `/admin/accounts/${adminProbe.account_id}/keys`, key: ADMIN_KEY, expect: 200, note: 'the keys' },
    { via: S, method: 'GET', path: '/admin/accounts/acct_nope/keys', key: ADMIN_KEY, expect: 404, note: '404 not_found' },
    { via: S, method: 'DELETE', path: `/admin/accounts/${adminProbe.account_id}/keys/${adminProbe.key_id}`, key: ADMIN_KEY, expect: 200, note: 'revoke a key' },
    { via: S, method: 'DELETE', path: `/admin/accounts/${adminProbe.account_id}/keys/key_nope`, key: ADMIN_KEY, expect: 404, note: '404 not_found (no such key)' },
    { via: S, method: 'GET', path: `/admin/accounts/${spent.account_id}/usage`, key: ADMIN_KEY, expect: 200, note: 'usage' },
    { via: S, method: 'GET', path: '/admin/accounts/acct_nope/usage', key: ADMIN_KEY, expect: 404, note: '404 not_found' },

    // 401: no key, an unknown key, an API key on an admin route.
    { via: L, method: 'POST', path: '/task', key: null, body: { prompt: 'No key.' }, expect: 401, note: '401 without a key' },
    { via: L, method: 'GET', path: '/task', key: null, expect: 401, note: '401 without a key' },
    { via: L, method: 'GET', path: t(main), key: 'qry_not_a_key', expect: 401, note: '401 unknown key' },
    { via: L, method: 'GET', path: `${t(main)}/output`, key: null, headers: { authorization: 'Bearer qry_not_a_key' }, expect: 401, note: '401 unknown Bearer key' },
    { via: L, method: 'GET', path: `${t(main)}/stream`, key: null, expect: 401, note: '401 before a stream opens' },
    { via: L, method: 'POST', path: '/upload-url', key: null, body: { filename: 'a', content_type: 'b', size_bytes: 1 }, expect: 401, note: '401 without a key' },
    { via: L, method: 'GET', path: `/admin/accounts/${adminProbe.account_id}`, expect: 401, note: '401 an API key on an admin route' },
    { via: L, method: 'POST', path: '/admin/accounts', key: 'wrong-admin-key', body: { name: 'x', credits: 1 }, expect: 401, note: '401 a wrong admin key' },

    // 422: bodies, queries, paths and Idempotency-Key that fail validation.
    { via: L, method: 'POST', path: '/task', body: {}, expect: 422, note: '422 missing prompt' },
    { via: L, method: 'POST', path: '/task', body: { prompt: 5 }, expect: 422, note: '422 prompt of the wrong type' },
    { via: L, method: 'POST', path: '/task', body: { prompt: '   ' }, expect: 422, note: '422 blank prompt' },
    { via: L, method: 'POST', path: '/task', body: { prompt: 'x', task_id: 'workflow' }, expect: 422, note: '422 reserved task_id' },
    { via: L, method: 'POST', path: '/task', body: { prompt: 'x', task_id: 'bad id!' }, expect: 422, note: '422 malformed task_id' },
    { via: L, method: 'POST', path: '/task', headers: { 'idempotency-key': 'k'.repeat(129) }, body: { prompt: 'x' }, expect: 422, note: '422 Idempotency-Key too long' },
    { via: L, method: 'POST', path: '/task', headers: { 'idempotency-key': 'conf-idem-1' }, body: { prompt: 'Another body.' }, expect: 422, note: '422 Idempotency-Key reused with another body' },
    { via: L, method: 'POST', path: '/task/stream', body: { prompt: '' }, expect: 422, note: '422 before a stream opens' },
    { via: L, method: 'POST', path: '/task/start', body: {}, expect: 422, note: '422 neither task nor prompt' },
    { via: L, method: 'POST', path: '/task/start', body: { task: {} }, expect: 422, note: '422 empty spec' },
    { via: L, method: 'POST', path: '/task/start', body: { task: { outputs: [{ id: 'Bad Id', kind: 'table', columns: [{ name: 'a' }] }] } }, expect: 422, note: '422 bad output id' },
    { via: L, method: 'POST', path: '/task/start', body: { task: { prompt: 'x', outputs: [{ id: 'rows', kind: 'table' }] } }, expect: 422, note: '422 table without columns' },
    { via: L, method: 'POST', path: '/task/start', body: { task: { prompt: 'x', inputs: [{ upload_id: 'upl_nope' }] } }, expect: 422, note: '422 unknown upload in inputs' },
    { via: L, method: 'POST', path: '/task/start', body: { task: { prompt: 'x', schedule: { cron: 'every day' } } }, expect: 422, note: '422 bad cron expression' },
    { via: L, method: 'POST', path: '/task/start/stream', body: { task: { type: 'other', prompt: 'x' } }, expect: 422, note: '422 before a stream opens' },
    { via: L, method: 'GET', path: '/task?limit=0', expect: 422, note: '422 limit out of bounds' },
    { via: L, method: 'GET', path: '/task?limit=abc', expect: 422, note: '422 limit not a number' },
    { via: L, method: 'GET', path: '/task?cursor=garbage', expect: 422, note: '422 cursor not issued' },
    { via: L, method: 'GET', path: `${t(main)}?wait=61`, expect: 422, note: '422 wait out of bounds' },
    { via: L, method: 'GET', path: `/task/${'x'.repeat(201)}`, expect: 422, note: '422 task_id path too long' },
    { via: L, method: 'GET', path: `${t(main)}/state?wait=-1`, expect: 422, note: '422 wait out of bounds' },
    { via: L, method: 'GET', path: `${t(main)}/events?limit=0`, expect: 422, note: '422 limit out of bounds' },
    { via: L, method: 'GET', path: `${t(main)}/stream?after=-1`, expect: 422, note: '422 after out of bounds' },
    { via: L, method: 'GET', path: `${t(main)}/output?limit=0`, expect: 422, note: '422 limit out of bounds' },
    { via: L, method: 'GET', path: `${t(main)}/output?format=xml`, expect: 422, note: '422 unknown format' },
    { via: L, method: 'GET', path: `${t(main)}/output?output=Not!AnId`, expect: 422, note: '422 malformed output id' },
    { via: L, method: 'GET', path: `${t(main)}/outputs/makers?offset=-1`, expect: 422, note: '422 offset out of bounds' },
    { via: L, method: 'POST', path: `${t(main)}/continue`, body: {}, expect: 422, note: '422 missing message' },
    { via: L, method: 'POST', path: `${t(main)}/continue/stream`, body: { message: '' }, expect: 422, note: '422 before a stream opens' },
    { via: L, method: 'POST', path: `${t(main)}/execute`, body: { instruction: 5 }, expect: 422, note: '422 instruction of the wrong type' },
    { via: L, method: 'POST', path: `${t(main)}/execute/stream`, body: { instruction: '' }, expect: 422, note: '422 before a stream opens' },
    { via: L, method: 'POST', path: `${t(main)}/stop`, body: { clear_queue: 'yes' }, expect: 422, note: '422 clear_queue not a boolean' },
    { via: L, method: 'PATCH', path: t(main), body: { pinned: 'yes' }, expect: 422, note: '422 pinned not a boolean' },
    { via: L, method: 'PATCH', path: t(main), body: { schedule: { cron: 'every day' } }, expect: 422, note: '422 bad cron expression' },
    { via: L, method: 'POST', path: '/upload-url', body: {}, expect: 422, note: '422 missing fields' },
    { via: L, method: 'POST', path: '/upload-url', body: { filename: 'big.bin', content_type: 'application/octet-stream', size_bytes: 200 * 1024 * 1024 }, expect: 422, note: '422 size_bytes above the limit' },
    { via: L, method: 'POST', path: '/admin/accounts', key: ADMIN_KEY, body: { name: '', credits: 1 }, expect: 422, note: '422 empty name' },
    { via: L, method: 'POST', path: '/admin/accounts', key: ADMIN_KEY, body: { name: 'x', credits: -1 }, expect: 422, note: '422 negative credits' },
    { via: L, method: 'POST', path: `/admin/accounts/${adminProbe.account_id}/credits`, key: ADMIN_KEY, body: { amount: 'ten' }, expect: 422, note: '422 amount not a number' },

    // 415 and 413.
    { via: L, method: 'POST', path: '/task', headers: { 'content-type': 'text/plain' }, rawBody: 'prompt=hello', expect: 415, note: '415 not JSON' },
    { via: L, method: 'POST', path: '/task/start', headers: { 'content-type': 'application/x-www-form-urlencoded' }, rawBody: 'prompt=hello', expect: 415, note: '415 a form' },
    { via: L, method: 'POST', path: `${t(main)}/continue`, headers: { 'content-type': 'text/plain' }, rawBody: 'hello', expect: 415, note: '415 not JSON' },
    { via: L, method: 'POST', path: '/upload-url', headers: { 'content-type': 'text/plain' }, rawBody: 'hello', expect: 415, note: '415 not JSON' },
    { via: L, method: 'POST', path: '/admin/accounts', key: ADMIN_KEY, headers: { 'content-type': 'text/plain' }, rawBody: 'hello', expect: 415, note: '415 not JSON' },
    { via: L, method: 'POST', path: '/task', body: { prompt: 'x'.repeat(1024 * 1024 + 16) }, expect: 413, note: '413 a body over 1 MiB' },
    { via: L, method: 'POST', path: `${t(main)}/continue`, body: { message: 'x'.repeat(1024 * 1024 + 16) }, expect: 413, note: '413 a body over 1 MiB' },

    // 405: a known path, the wrong method (the Allow header lists the right ones).
    { via: L, method: 'PUT', path: '/task', body: {}, expect: 405, note: '405 wrong method' },
    { via: L, method: 'DELETE', path: '/task/workflow', expect: 405, note: '405 wrong method' },
    { via: L, method: 'POST', path: '/healthz', key: null, body: {}, expect: 405, note: '405 wrong method, no key needed' },
    { via: L, method: 'GET', path: '/upload-url', expect: 405, note: '405 wrong method' },
    { via: L, method: 'PUT', path: `${t(main)}/stop`, body: {}, expect: 405, note: '405 wrong method' },
    { via: L, method: 'GET', path: '/admin/accounts', key: ADMIN_KEY, expect: 405, note: '405 wrong method' },
  ]);
}

/**
 * Operations of the document that no probe reached get one generic request each (lenient proxy,
 * path parameters filled from the scenario's objects, `{}` as the body), so that every operation
 * the document claims is tried against the server.
 */
export async function sweepUncovered(h: Harness, run: ProbeRunner, doc: OpenApiDocument): Promise<string[]> {
  const reached = new Set(run.exchanges.map((e) => e.operation).filter(Boolean));
  const uncovered = doc.operations.filter((o) => !reached.has(o.key));
  if (uncovered.length === 0) return [];
  const victim = (await direct(h, 'POST', '/task', { body: { prompt: 'a task for generic probes' } })).body.task_id;
  await settled(h, victim);
  const account = (await direct(h, 'POST', '/admin/accounts', { key: ADMIN_KEY, body: { name: 'sweep', credits: 1 } }, 201)).body;
  const values: Record<string, string> = { task_id: victim, output_id: 'makers', account_id: account.account_id, key_id: account.key_id, upload_id: 'upl_sweep' };
  for (const op of uncovered) {
    const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? 'x'));
    const hasBody = ['post', 'put', 'patch'].includes(op.method);
    await run.send({
      via: 'lenient',
      method: op.method.toUpperCase(),
      path,
      key: path.startsWith('/admin/') ? ADMIN_KEY : undefined,
      ...(hasBody ? { body: {} } : {}),
      expect: 0,
      note: 'generic request to an operation the scenario does not cover',
    });
  }
  return uncovered.map((o) => o.key);
}

