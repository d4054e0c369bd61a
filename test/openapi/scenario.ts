/**
 * The conformance scenario: requests to every route of Quarry, sent through Prism's validating
 * proxies, each with the answer the API reference (docs/api.md) promises for it: successes,
 * streams, exports, uploads, webhooks, admin routes, and every error a client can provoke (401,
 * 402, 404, 405, 409 ×4, 413, 415, 422).
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
import { ADMIN_KEY, type Harness } from '../kit/harness.js';
import { waitIdle } from '../kit/http.js';
import { putUpload } from '../kit/task-api.js';
import { until } from '../kit/bounded-waits.js';
import { readSse } from '../kit/sse-client.js';
import type { FakeReply, FakeRequestBody } from '../kit/fake-openai-server.js';
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
 * `[read <upload_id>]` in any user message: the turn reads that input with read_input (so the
 * task keeps a snapshot of it) and writes one row to `shortlist` citing a quote from it, then
 * says "Done.".
 * `[rows]` in any user message: the turn writes rows to `makers`, `facts` and `notes`, one call
 * each, then says "Done.". Anything else: "Done.".
 */
export function scenarioModel(body: FakeRequestBody): FakeReply {
  if (lastUserText(body).includes('[hang]')) return { hang: true };
  const messages = body.messages ?? [];
  const reads = messages.map((m) => (m.role === 'user' ? /\[read (upl_\w+)\]/.exec(String(m.content))?.[1] : undefined)).find(Boolean);
  if (reads) {
    const done = messages.filter((m) => m.role === 'tool').length;
    if (done === 0) return { toolCalls: [{ name: 'read_input', arguments: { upload_id: reads } }] };
    if (done === 1) return { toolCalls: [{ name: 'write_rows', arguments: { output: 'shortlist', rows: [{ company: 'Acme' }], sources: [{ upload_id: reads, quote: 'Acme' }] } }] };
    return { text: 'Done.' };
  }
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
  // A task that read an input: its snapshot is what the source routes show (decisions §15.1).
  const reader = 'conf-sources';
  await direct(h, 'POST', '/task/start', {
    body: {
      task_id: reader,
      task: {
        prompt: `Read the shortlist. [read ${inputTicket.upload_id}]`,
        inputs: [{ upload_id: inputTicket.upload_id, name: 'shortlist.csv' }],
        outputs: [{ id: 'shortlist', kind: 'table', columns: [{ name: 'company', required: true }] }],
        tools: ['read_input'],
      },
    },
  });
  await settled(h, reader);
  const snapshots = (await direct(h, 'GET', `${t(reader)}/sources`)).body.sources as Json[];
  assert.equal(snapshots.length, 1, 'set-up: the reading task kept a snapshot of its input');
  const sourceId: string = snapshots[0].source_id;
  const readerRows = (await direct(h, 'GET', `${t(reader)}/outputs/shortlist`)).body.rows as Json[];
  assert.deepEqual(readerRows.map((r) => r._sources.map((s: Json) => [s.check, s.verified, s.source_id])), [[['quote_found', true, sourceId]]], 'set-up: the row cites the input it read');
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
    { via: S, method: 'GET', path: `${t(reader)}/outputs`, expect: 200, note: 'outputs with verified_rows and unverified_rows' },
    { via: S, method: 'GET', path: `${t(reader)}/outputs/shortlist`, expect: 200, note: 'rows whose source is verified (check, source_id)' },
    { via: S, method: 'GET', path: `${t(reader)}/outputs/shortlist?format=csv`, expect: 200, expectType: 'text/csv', note: 'CSV export with the marks' },

    // Sources: the snapshots of what a task read.
    { via: S, method: 'GET', path: `${t(reader)}/sources`, expect: 200, note: 'snapshots of what the task read' },
    { via: S, method: 'GET', path: `${t(reader)}/sources?limit=1&offset=0`, expect: 200, note: 'a page of snapshots' },
    { via: S, method: 'GET', path: `${t(reader)}/sources?offset=5`, expect: 200, note: 'a page past the end' },
    { via: S, method: 'GET', path: `${t(main)}/sources`, expect: 200, note: 'a task that read nothing' },
    { via: S, method: 'GET', path: `${t('conf-no-such-task')}/sources`, expect: 404, note: '404 task_not_found' },
    { via: S, method: 'GET', path: `${t(reader)}/sources/${encodeURIComponent(sourceId)}`, expect: 200, note: 'one snapshot with its text' },
    { via: S, method: 'GET', path: `${t(reader)}/sources/src_nope`, expect: 404, note: '404 source_not_found' },
    { via: S, method: 'GET', path: `${t(main)}/sources/${encodeURIComponent(sourceId)}`, expect: 404, note: '404 source_not_found (another task\'s snapshot)' },
    { via: S, method: 'GET', path: `${t('conf-no-such-task')}/sources/${encodeURIComponent(sourceId)}`, expect: 404, note: '404 task_not_found' },
    { via: S, method: 'GET', path: `${t(main)}/changes`, expect: 200, note: 'a task without a keyed output: no changes' },
    { via: S, method: 'GET', path: `${t(main)}/changes?after=2020-01-01T00:00:00Z&limit=5`, expect: 200, note: 'changes after a time' },
    { via: S, method: 'GET', path: `${t('conf-no-such-task')}/changes`, expect: 404, note: '404 task_not_found' },
    { via: L, method: 'GET', path: `${t(main)}/changes?cursor=nope`, expect: 422, note: '422 a cursor that is no change id' },

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

  // Webhooks (decisions §15.3): an endpoint registered before the turns below end gets a
  // delivery for each of them. Its URL resolves nowhere offline, so they stay pending, retried.
  // The public-looking name passes the SSRF check at registration (the harness does not set
  // QUARRY_FETCH_ALLOW_PRIVATE); only address literals and localhost names are refused there.
  const hook = (await direct(h, 'POST', '/webhooks', { body: { url: WEBHOOK_URL, events: ['task.turn_completed', 'task.turn_failed', 'task.turn_stopped'] } }, 201)).body;

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

  await webhookProbes(h, run, hook.webhook_id, broke.api_key);
  await groupProbes(h, run, broke.api_key);

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
    { via: L, method: 'GET', path: `${t(main)}/sources`, key: null, expect: 401, note: '401 without a key' },
    { via: L, method: 'GET', path: `${t(main)}/sources/src_nope`, key: 'qry_not_a_key', expect: 401, note: '401 unknown key' },
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
    { via: L, method: 'GET', path: `${t(main)}/sources?limit=0`, expect: 422, note: '422 limit out of bounds' },
    { via: L, method: 'GET', path: `${t(main)}/sources?limit=201`, expect: 422, note: '422 limit out of bounds' },
    { via: L, method: 'GET', path: `${t(main)}/sources?offset=-1`, expect: 422, note: '422 offset out of bounds' },
    { via: L, method: 'GET', path: `${t(main)}/sources/${'x'.repeat(201)}`, expect: 422, note: '422 source_id path too long' },
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
    { via: L, method: 'POST', path: `${t(main)}/sources`, body: {}, expect: 405, note: '405 wrong method' },
  ]);

  // The 404s of the source routes name their cause (the proxies check only statuses and shapes).
  const codes: string[] = [];
  for (const e of run.exchanges) {
    const want = /^404 ([a-z_]+)/.exec(e.probe.note)?.[1];
    if (want && /\/sources(?:[/?]|$)/.test(e.probe.path) && !e.prismAnswered && e.body?.error !== want) codes.push(`${e.probe.method} ${e.probe.path} [${e.probe.note}]: error ${e.body?.error}`);
  }
  assert.deepEqual(codes, [], 'source errors with the wrong code');
}

/** A group's spec: its runs write to `makers` (the scenario model's first write; its later writes name outputs the group lacks). */
const GROUP_SPEC = {
  name: 'Conformance group',
  prompt: 'Per region, the makers. [rows]',
  input_columns: [{ name: 'region', required: true }, { name: 'year', type: 'integer' }],
  outputs: [{ id: 'makers', kind: 'table', columns: [{ name: 'company', required: true }, { name: 'country' }, { name: 'capacity_gwh', type: 'number' }] }],
};

/**
 * The group routes (decisions §15.2): create (inline inputs), list with a cursor, get, merged
 * rows as pages and exports, the stream (replayed to its done, then 204 on a reconnect), inputs
 * added, stop, retry, the runs listed with ?group_id=, and the errors a client can provoke. The
 * error codes of the 404s are checked too.
 */
async function groupProbes(h: Harness, run: ProbeRunner, brokeKey: string): Promise<void> {
  const S = 'strict' as const;
  const L = 'lenient' as const;
  const SSE = 'text/event-stream';
  const g = (id: string) => `/group/${encodeURIComponent(id)}`;
  const inputs = [{ region: 'Nordics', year: 2024, _key: 'nordics' }, { region: 'Iberia' }];

  const before = run.exchanges.length;
  await run.send({ via: S, method: 'POST', path: '/group', body: { name: 'Makers by region', task: GROUP_SPEC, inputs, max_parallel: 2, max_credits: 100 }, expect: 200, note: 'create a group' });
  await run.send({ via: S, method: 'POST', path: '/group', body: { task: GROUP_SPEC, inputs: [{ region: 'Alps' }] }, expect: 200, note: 'create a group, defaults' });
  const groups = (await direct(h, 'GET', '/group?limit=2')).body as Json[];
  const groupId: string = groups[1].group_id;
  const cursor = (await direct(h, 'GET', '/group?limit=1')).headers.get('x-next-cursor');
  assert.ok(cursor, 'set-up: a first page of one group has a next cursor');
  await until('the group\'s runs to end', async () => {
    const group = (await direct(h, 'GET', g(groupId))).body;
    return group.counts.pending + group.counts.running === 0;
  }, { timeoutMs: 15_000, pollMs: 20 });
  const lastSeq = (await readSse(h.url, `${g(groupId)}/stream`, { key: h.key })).events.at(-1)!.id!;

  await run.sendAll([
    { via: S, method: 'GET', path: '/group', expect: 200, note: 'the account\'s groups' },
    { via: S, method: 'GET', path: '/group?limit=1', expect: 200, note: 'a page with X-Next-Cursor and Link' },
    { via: S, method: 'GET', path: `/group?limit=1&cursor=${encodeURIComponent(cursor)}`, expect: 200, note: 'the next page' },
    { via: S, method: 'GET', path: '/group', key: brokeKey, expect: 200, note: 'an account without groups' },
    { via: S, method: 'GET', path: g(groupId), expect: 200, note: 'a finished group' },
    { via: S, method: 'GET', path: `${g(groupId)}/rows`, expect: 200, note: 'merged rows' },
    { via: S, method: 'GET', path: `${g(groupId)}/changes`, expect: 200, note: 'the runs\' merged changes' },
    { via: S, method: 'GET', path: `${g(groupId)}/rows?limit=1&offset=1`, expect: 200, note: 'a page of merged rows' },
    { via: S, method: 'GET', path: `${g(groupId)}/rows?format=csv`, expect: 200, expectType: 'text/csv', note: 'merged rows as CSV' },
    { via: S, method: 'GET', path: `${g(groupId)}/rows?format=jsonl`, expect: 200, expectType: 'application/x-ndjson', note: 'merged rows as JSONL' },
    { via: S, method: 'GET', path: `${g(groupId)}/stream`, expect: 200, expectType: SSE, note: 'the group\'s stream, replayed to its done' },
    { via: S, method: 'GET', path: `${g(groupId)}/stream?after=2`, expect: 200, expectType: SSE, note: 'the group\'s stream resumed' },
    { via: S, method: 'GET', path: `${g(groupId)}/stream`, headers: { 'last-event-id': lastSeq }, expect: 204, note: 'a reconnect with nothing new' },
    { via: S, method: 'GET', path: `/task?group_id=${encodeURIComponent(groupId)}`, expect: 200, note: 'the group\'s runs' },
    { via: S, method: 'POST', path: `${g(groupId)}/retry`, expect: 200, note: 'retry with nothing failed, no body' },
    { via: S, method: 'POST', path: `${g(groupId)}/inputs`, body: { inputs: [{ region: 'Baltics' }, { region: 'Nordics', _key: 'nordics' }] }, expect: 200, note: 'add inputs (one a duplicate)' },
    { via: S, method: 'POST', path: `${g(groupId)}/stop`, expect: 200, note: 'stop, no body' },
    { via: S, method: 'POST', path: `${g(groupId)}/stop`, body: {}, expect: 200, note: 'stop again, body {}' },
    { via: S, method: 'POST', path: `${g(groupId)}/retry`, body: {}, expect: 200, note: 'retry, body {}' },
    { via: S, method: 'POST', path: `${g(groupId)}/retry`, body: { include: ['failed', 'stopped'] }, expect: 200, note: 'retry stopped runs too' },
    { via: S, method: 'GET', path: `${g(groupId)}/runs`, expect: 200, note: 'every run of the group' },
    { via: S, method: 'GET', path: `${g(groupId)}/runs?status=completed&limit=1`, expect: 200, note: 'a page of completed runs' },
    { via: S, method: 'GET', path: `${g('grp_nope')}/runs`, expect: 404, note: '404 group_not_found' },
    { via: L, method: 'GET', path: `${g(groupId)}/runs?status=done`, expect: 422, note: '422 unknown run status' },
    { via: S, method: 'GET', path: '/group?q=makers&status=finished', expect: 200, note: 'groups filtered' },
    { via: S, method: 'GET', path: '/task?state=idle&outcome=completed&q=a&created_after=2020-01-01T00:00:00Z', expect: 200, note: 'tasks filtered' },
    { via: L, method: 'GET', path: '/task?created_after=soon', expect: 422, note: '422 created_after not a date-time' },
    { via: S, method: 'GET', path: '/account', expect: 200, note: 'the key\'s own account' },
    { via: S, method: 'GET', path: g('grp_nope'), expect: 404, note: '404 group_not_found' },
    { via: S, method: 'GET', path: `${g('grp_nope')}/rows`, expect: 404, note: '404 group_not_found' },
    { via: S, method: 'GET', path: `${g('grp_nope')}/stream`, expect: 404, note: '404 group_not_found' },
    { via: S, method: 'POST', path: `${g('grp_nope')}/inputs`, body: { inputs: [{ region: 'X' }] }, expect: 404, note: '404 group_not_found' },
    { via: S, method: 'POST', path: `${g('grp_nope')}/stop`, expect: 404, note: '404 group_not_found' },
    { via: S, method: 'POST', path: `${g('grp_nope')}/retry`, expect: 404, note: '404 group_not_found' },
    { via: S, method: 'GET', path: g(groupId), key: brokeKey, expect: 404, note: '404 group_not_found (another account\'s group)' },
    { via: S, method: 'POST', path: '/group', key: brokeKey, body: { task: GROUP_SPEC, inputs }, expect: 402, note: '402 no credits' },
    { via: L, method: 'GET', path: '/group', key: null, expect: 401, note: '401 without a key' },
    { via: L, method: 'POST', path: '/group', key: null, body: { task: GROUP_SPEC, inputs }, expect: 401, note: '401 without a key' },
    { via: L, method: 'GET', path: `${g(groupId)}/rows`, key: 'qry_not_a_key', expect: 401, note: '401 unknown key' },
    { via: L, method: 'POST', path: '/group', body: { task: GROUP_SPEC }, expect: 422, note: '422 no inputs' },
    { via: L, method: 'POST', path: '/group', body: { task: GROUP_SPEC, inputs: [{ year: 2020 }] }, expect: 422, note: '422 an input without its required column' },
    { via: L, method: 'POST', path: '/group', body: { task: GROUP_SPEC, inputs: [{ region: 'A', year: 'soon' }] }, expect: 422, note: '422 an input value of the wrong type' },
    { via: L, method: 'POST', path: '/group', body: { task: { ...GROUP_SPEC, input_columns: undefined }, inputs }, expect: 422, note: '422 no input_columns' },
    { via: L, method: 'POST', path: '/group', body: { task: GROUP_SPEC, inputs, max_parallel: 0 }, expect: 422, note: '422 max_parallel out of bounds' },
    { via: L, method: 'POST', path: '/group', body: { task: GROUP_SPEC, input_upload_id: 'upl_nope' }, expect: 422, note: '422 not a finished upload' },
    { via: L, method: 'GET', path: '/group?limit=0', expect: 422, note: '422 limit out of bounds' },
    { via: L, method: 'GET', path: g('x'.repeat(201)), expect: 422, note: '422 group_id path too long' },
    { via: L, method: 'GET', path: `${g(groupId)}/rows?limit=0`, expect: 422, note: '422 limit out of bounds' },
    { via: L, method: 'POST', path: `${g(groupId)}/inputs`, body: {}, expect: 422, note: '422 no inputs' },
    { via: L, method: 'POST', path: '/group', headers: { 'content-type': 'text/plain' }, rawBody: 'inputs', expect: 415, note: '415 not JSON' },
    { via: L, method: 'PUT', path: '/group', body: {}, expect: 405, note: '405 wrong method' },
    { via: L, method: 'DELETE', path: g(groupId), expect: 405, note: '405 wrong method' },
  ]);

  const codes: string[] = [];
  for (const e of run.exchanges.slice(before)) {
    const want = /^404 ([a-z_]+)/.exec(e.probe.note)?.[1];
    if (want && !e.prismAnswered && e.body?.error !== want) codes.push(`${e.probe.method} ${e.probe.path} [${e.probe.note}]: error ${e.body?.error}`);
  }
  assert.deepEqual(codes, [], 'group errors with the wrong code');
}

/** Where the scenario's webhook endpoints point: a public-looking name that does not resolve offline. */
const WEBHOOK_URL = 'https://hooks.example.com/quarry';

/**
 * The webhook routes: endpoints (create, list, get, rotate-secret, delete), the deliveries of
 * `hookId` (an endpoint of the harness's account registered before several turns ended), a
 * redelivery, and every error a client can provoke on them, including the per-account limit
 * (409) on an account of its own. `keyWithoutHooks` is the key of an account with no endpoint.
 * The error codes of the 404s and the 409 are checked too.
 */
async function webhookProbes(h: Harness, run: ProbeRunner, hookId: string, keyWithoutHooks: string): Promise<void> {
  const S = 'strict' as const;
  const L = 'lenient' as const;
  const w = (id: string) => `/webhooks/${encodeURIComponent(id)}`;
  const events = ['task.turn_completed', 'task.turn_failed', 'task.turn_stopped', 'task.changed', 'group.finished'];

  // The turns that ended since the endpoint was registered each queued a delivery.
  const queued = (await direct(h, 'GET', `${w(hookId)}/deliveries?limit=200`)).body.deliveries as Json[];
  assert.ok(queued.length >= 2, `set-up: the turns that ended queued deliveries to the endpoint (got ${queued.length})`);
  const deliveryId: string = queued[queued.length - 1].delivery_id;
  const firstPage = await direct(h, 'GET', `${w(hookId)}/deliveries?limit=1`);
  const deliveryCursor = firstPage.headers.get('x-next-cursor');
  assert.ok(deliveryCursor, 'set-up: a first page of one delivery has a next cursor');

  // An endpoint for the delete probes, and another account's one, which this account cannot see.
  const doomed = (await direct(h, 'POST', '/webhooks', { body: { url: `${WEBHOOK_URL}/doomed`, events: ['task.turn_failed'] } }, 201)).body.webhook_id;
  const other = (await direct(h, 'POST', '/admin/accounts', { key: ADMIN_KEY, body: { name: 'webhooks-other', credits: 1 } }, 201)).body;
  const othersHook = (await direct(h, 'POST', '/webhooks', { key: other.api_key, body: { url: WEBHOOK_URL, events: ['group.finished'] } }, 201)).body.webhook_id;
  // An account with as many endpoints as it may have (20): the next create is refused.
  const full = (await direct(h, 'POST', '/admin/accounts', { key: ADMIN_KEY, body: { name: 'webhooks-full', credits: 1 } }, 201)).body;
  for (let i = 0; i < 19; i++) await direct(h, 'POST', '/webhooks', { key: full.api_key, body: { url: `${WEBHOOK_URL}/${i}`, events: ['task.turn_completed'] } }, 201);

  const before = run.exchanges.length;
  await run.sendAll([
    // Endpoints.
    { via: S, method: 'POST', path: '/webhooks', body: { url: WEBHOOK_URL, events: ['task.turn_completed'], description: 'Conformance' }, expect: 201, note: 'register an endpoint (its secret shown once)' },
    { via: S, method: 'POST', path: '/webhooks', body: { url: 'https://hooks.example.com/all?source=quarry', events }, expect: 201, note: 'register an endpoint for every event, no description' },
    { via: S, method: 'POST', path: '/webhooks', key: full.api_key, body: { url: `${WEBHOOK_URL}/last`, events: ['task.turn_completed'] }, expect: 201, note: 'the 20th endpoint of an account' },
    { via: S, method: 'POST', path: '/webhooks', key: full.api_key, body: { url: `${WEBHOOK_URL}/more`, events: ['task.turn_completed'] }, expect: 409, note: '409 webhook_limit_reached' },
    { via: S, method: 'GET', path: '/webhooks', expect: 200, note: 'the account\'s endpoints' },
    { via: S, method: 'GET', path: '/webhooks', key: keyWithoutHooks, expect: 200, note: 'an account without endpoints' },
    { via: S, method: 'GET', path: w(hookId), expect: 200, note: 'one endpoint' },
    { via: S, method: 'POST', path: `${w(hookId)}/rotate-secret`, expect: 200, note: 'rotate the secret, no body' },
    { via: S, method: 'POST', path: `${w(hookId)}/rotate-secret`, body: {}, expect: 200, note: 'rotate the secret again, body {}' },
    { via: S, method: 'GET', path: w(hookId), expect: 200, note: 'one endpoint after a rotation (previous_secret_expires_at)' },
    { via: S, method: 'GET', path: w('wh_nope'), expect: 404, note: '404 webhook_not_found' },
    { via: S, method: 'GET', path: w(othersHook), expect: 404, note: '404 webhook_not_found (another account\'s endpoint)' },
    { via: S, method: 'DELETE', path: w('wh_nope'), expect: 404, note: '404 webhook_not_found' },
    { via: S, method: 'POST', path: `${w('wh_nope')}/rotate-secret`, expect: 404, note: '404 webhook_not_found' },

    // Deliveries.
    { via: S, method: 'GET', path: `${w(hookId)}/deliveries`, expect: 200, note: 'the endpoint\'s deliveries' },
    { via: S, method: 'GET', path: `${w(hookId)}/deliveries?limit=1`, expect: 200, note: 'a page with X-Next-Cursor and Link' },
    { via: S, method: 'GET', path: `${w(hookId)}/deliveries?limit=1&cursor=${encodeURIComponent(deliveryCursor)}`, expect: 200, note: 'the next page' },
    { via: S, method: 'GET', path: `${w(doomed)}/deliveries`, expect: 200, note: 'an endpoint without deliveries' },
    { via: S, method: 'GET', path: `${w(hookId)}/deliveries/${encodeURIComponent(deliveryId)}`, expect: 200, note: 'a delivery with its attempts' },
    { via: S, method: 'GET', path: `${w(hookId)}/deliveries/msg_nope`, expect: 404, note: '404 delivery_not_found' },
    { via: S, method: 'POST', path: `${w(hookId)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`, expect: 202, note: 'redeliver, no body' },
    { via: S, method: 'POST', path: `${w(hookId)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`, body: {}, expect: 202, note: 'redeliver, body {}' },
    { via: S, method: 'GET', path: `${w('wh_nope')}/deliveries`, expect: 404, note: '404 webhook_not_found' },
    { via: S, method: 'POST', path: `${w(hookId)}/deliveries/msg_nope/redeliver`, expect: 404, note: '404 delivery_not_found' },
    { via: S, method: 'POST', path: `${w(doomed)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`, expect: 404, note: '404 delivery_not_found (another endpoint\'s delivery)' },
    { via: S, method: 'POST', path: `${w('wh_nope')}/deliveries/msg_nope/redeliver`, expect: 404, note: '404 webhook_not_found' },

    // Delete, then the endpoint is gone.
    { via: S, method: 'DELETE', path: w(doomed), expect: 200, note: 'delete an endpoint' },
    { via: S, method: 'DELETE', path: w(doomed), expect: 404, note: '404 webhook_not_found once deleted' },
    { via: S, method: 'GET', path: `${w(doomed)}/deliveries`, expect: 404, note: '404 webhook_not_found once deleted' },

    // 401, 422, 415, 413, 405. (Malformed JSON, 400, cannot be sent through Prism: it answers that itself.)
    { via: L, method: 'GET', path: '/webhooks', key: null, expect: 401, note: '401 without a key' },
    { via: L, method: 'POST', path: '/webhooks', key: null, body: { url: WEBHOOK_URL, events }, expect: 401, note: '401 without a key' },
    { via: L, method: 'GET', path: w(hookId), key: 'qry_not_a_key', expect: 401, note: '401 unknown key' },
    { via: L, method: 'DELETE', path: w(hookId), key: null, expect: 401, note: '401 without a key' },
    { via: L, method: 'POST', path: `${w(hookId)}/rotate-secret`, key: null, expect: 401, note: '401 without a key' },
    { via: L, method: 'GET', path: `${w(hookId)}/deliveries`, key: null, headers: { authorization: 'Bearer qry_not_a_key' }, expect: 401, note: '401 unknown Bearer key' },
    { via: L, method: 'POST', path: `${w(hookId)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`, key: null, expect: 401, note: '401 without a key' },
    { via: L, method: 'POST', path: '/webhooks', body: {}, expect: 422, note: '422 missing url and events' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: WEBHOOK_URL, events: [] }, expect: 422, note: '422 no events' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: WEBHOOK_URL, events: ['task.created'] }, expect: 422, note: '422 unknown event' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: WEBHOOK_URL, events: ['task.turn_failed', 'task.turn_failed'] }, expect: 422, note: '422 an event twice' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: WEBHOOK_URL, events: 'task.turn_failed' }, expect: 422, note: '422 events not an array' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: '', events }, expect: 422, note: '422 empty url' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: 'ftp://hooks.example.com/x', events }, expect: 422, note: '422 not an http(s) URL' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: 'not a url', events }, expect: 422, note: '422 not a URL' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: 'https://user:pass@hooks.example.com/x', events }, expect: 422, note: '422 credentials in the url' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: 'http://127.0.0.1:8080/hook', events }, expect: 422, note: '422 a loopback address' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: 'http://localhost/hook', events }, expect: 422, note: '422 a localhost name' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: 'http://[::1]/hook', events }, expect: 422, note: '422 a loopback IPv6 address' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: 'http://10.0.0.7/hook', events }, expect: 422, note: '422 a private address' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: `https://hooks.example.com/${'x'.repeat(2048)}`, events }, expect: 422, note: '422 url too long' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: WEBHOOK_URL, events, description: 'd'.repeat(501) }, expect: 422, note: '422 description too long' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: WEBHOOK_URL, events, description: 5 }, expect: 422, note: '422 description not a string' },
    { via: L, method: 'GET', path: w('x'.repeat(201)), expect: 422, note: '422 webhook_id path too long' },
    { via: L, method: 'DELETE', path: w('x'.repeat(201)), expect: 422, note: '422 webhook_id path too long' },
    { via: L, method: 'POST', path: `${w('x'.repeat(201))}/rotate-secret`, expect: 422, note: '422 webhook_id path too long' },
    { via: L, method: 'GET', path: `${w(hookId)}/deliveries?limit=0`, expect: 422, note: '422 limit out of bounds' },
    { via: L, method: 'GET', path: `${w(hookId)}/deliveries?limit=201`, expect: 422, note: '422 limit out of bounds' },
    { via: L, method: 'GET', path: `${w(hookId)}/deliveries?limit=abc`, expect: 422, note: '422 limit not a number' },
    { via: L, method: 'GET', path: `${w('x'.repeat(201))}/deliveries`, expect: 422, note: '422 webhook_id path too long' },
    { via: L, method: 'POST', path: `${w(hookId)}/deliveries/${'x'.repeat(201)}/redeliver`, expect: 422, note: '422 delivery_id path too long' },
    { via: L, method: 'POST', path: '/webhooks', headers: { 'content-type': 'text/plain' }, rawBody: 'url=https://hooks.example.com/', expect: 415, note: '415 not JSON' },
    { via: L, method: 'POST', path: `${w(hookId)}/rotate-secret`, headers: { 'content-type': 'text/plain' }, rawBody: 'now', expect: 415, note: '415 not JSON' },
    { via: L, method: 'POST', path: `${w(hookId)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, rawBody: 'again=1', expect: 415, note: '415 a form' },
    { via: L, method: 'POST', path: '/webhooks', body: { url: WEBHOOK_URL, events, description: 'x'.repeat(1024 * 1024 + 16) }, expect: 413, note: '413 a body over 1 MiB' },
    { via: L, method: 'POST', path: `${w(hookId)}/rotate-secret`, body: { pad: 'x'.repeat(1024 * 1024 + 16) }, expect: 413, note: '413 a body over 1 MiB' },
    { via: L, method: 'PUT', path: '/webhooks', body: {}, expect: 405, note: '405 wrong method' },
    { via: L, method: 'PATCH', path: w(hookId), body: {}, expect: 405, note: '405 wrong method' },
    { via: L, method: 'GET', path: `${w(hookId)}/rotate-secret`, expect: 405, note: '405 wrong method' },
    { via: L, method: 'DELETE', path: `${w(hookId)}/deliveries`, expect: 405, note: '405 wrong method' },
  ]);

  // The 404s and the 409 name their cause (the proxies check only statuses and shapes).
  const codes: string[] = [];
  for (const e of run.exchanges.slice(before)) {
    const want = /^(?:404|409) ([a-z_]+)/.exec(e.probe.note)?.[1];
    if (want && !e.prismAnswered && e.body?.error !== want) codes.push(`${e.probe.method} ${e.probe.path} [${e.probe.note}]: error ${e.body?.error}`);
  }
  assert.deepEqual(codes, [], 'webhook errors with the wrong code');
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

