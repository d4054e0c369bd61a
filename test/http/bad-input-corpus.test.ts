/**
 * A corpus of bad requests sent to every route of the contract table (src/contract/routes.ts, so
 * a new route is covered without touching this file): malformed and oddly encoded JSON, deep
 * nesting, huge numbers, NUL and over-long text in every field the body schema declares, wrong
 * types, odd path ids, query garbage, long headers and wrong methods. Whatever the answer, it is
 * never a 5xx, and every error is a catalogue body (error, message, retryable, request_id equal
 * to X-Request-ID). Runs on SQLite, and on PostgreSQL with QUARRY_TEST_STORE=postgres.
 *
 * Requests go through app.inject() (fast), but for the stream routes, which answer a request
 * that gets through with an event stream: those, and a few cases of HTTP framing, use a socket.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_KEY, startHarness, type Harness, type TestResponse } from '../kit/harness.js';
import { exchange } from '../kit/raw-http.js';
import { ROUTES, type RouteDef } from '../../src/contract/index.js';
import { ERROR_CATALOGUE } from '../../src/errors.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any
type Schema = Record<string, Json>;

interface Case {
  what: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  /** Sent as is (a JSON text, or bytes). */
  body?: string | Uint8Array;
  /** The request must be refused (4xx): NUL, values out of bounds, wrong types. */
  refused?: boolean;
}

const NUL = '\u0000';
const CATALOGUE = Object.values(ERROR_CATALOGUE).filter((e) => e.status !== null);
/** Stands for a raw JSON text (1e400, invalid escapes) that JSON.stringify cannot write. */
const RAW = (text: string) => `<raw>${text}</raw>`;
const json = (value: unknown) => JSON.stringify(value).replace(/"<raw>(.*?)<\/raw>"/g, (_m, text: string) => JSON.parse(`"${text}"`) as string);

// ---- answers ---------------------------------------------------------------------------------

function checkAnswer(c: Case, res: TestResponse): void {
  const label = `${c.what}: ${c.method} ${c.path.slice(0, 120)} -> ${res.status} ${res.text.slice(0, 200)}`;
  assert.ok(res.status < 500, label);
  if (c.refused) assert.ok(res.status >= 400, `must be refused: ${label}`);
  if (res.status < 400 || c.method === 'HEAD') return;
  const body = res.body as Json;
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/, label);
  assert.ok(body && typeof body === 'object', label);
  assert.ok(CATALOGUE.some((e) => e.error === body.error && e.status === res.status), `not a catalogue error for its status: ${label}`);
  assert.equal(typeof body.message, 'string', label);
  assert.ok(body.message.length > 0, label);
  assert.equal(typeof body.retryable, 'boolean', label);
  assert.equal(typeof body.request_id, 'string', label);
  assert.equal(res.headers.get('x-request-id'), body.request_id, `X-Request-ID differs from request_id: ${label}`);
  if (res.status === 422) assert.equal(typeof body.param, 'string', label);
}

// ---- valid-looking values from a schema, and every field in it ------------------------------------

/** A value of the schema with every property filled in (arrays get one item). */
function sample(schema: Schema): Json {
  if ('const' in schema) return schema.const;
  if (schema.enum) return schema.enum[0];
  if (schema.anyOf) return sample(schema.anyOf.find((s: Schema) => s.type !== 'null') ?? schema.anyOf[0]);
  switch (schema.type) {
    case 'object': return Object.fromEntries(Object.entries((schema.properties ?? {}) as Record<string, Schema>).filter(([, s]) => Object.keys(s).some((k) => k !== 'description')).map(([k, s]) => [k, sample(s)]));
    case 'array': return schema.items ? [sample(schema.items)] : [];
    case 'string': return /a-z/.test(schema.pattern ?? '') ? 'abc' : 'x'.repeat(Math.max(schema.minLength ?? 1, 1));
    case 'integer': case 'number': return schema.minimum ?? (schema.exclusiveMinimum ?? 0) + 1;
    case 'boolean': return false;
    default: return undefined;
  }
}

interface Field { path: (string | number)[]; schema: Schema; nullable: boolean; union: boolean }

/** Every property path of the schema with its schema (array items as index 0). */
function fields(schema: Schema, path: (string | number)[] = []): Field[] {
  const out: Field[] = [];
  const members: Schema[] = (schema.anyOf ?? [schema]).filter((s: Schema) => s.type !== 'null');
  const inner = members[0] ?? schema;
  if (path.length > 0) out.push({ path, schema: inner, nullable: !!schema.anyOf && members.length < schema.anyOf.length, union: members.length > 1 });
  if (inner.type === 'object') for (const [k, s] of Object.entries((inner.properties ?? {}) as Record<string, Schema>)) out.push(...fields(s, [...path, k]));
  if (inner.type === 'array' && inner.items) out.push(...fields(inner.items, [...path, 0]));
  return out;
}

function withValue(base: Json, path: (string | number)[], value: unknown): Json {
  const copy = structuredClone(base);
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key];
  node[path.at(-1)!] = value;
  return copy;
}

/** The JSON type of a value as a schema names it. */
function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Bad values for one field, by its schema: each must be refused. */
function badValues({ schema, nullable, union }: Field): { what: string; value: unknown }[] {
  const values: { what: string; value: unknown }[] = [];
  if (union) return [{ what: '1e400', value: RAW('1e400') }, { what: '-1', value: -1 }, { what: 'fraction', value: 1.5 }];
  const accepts = (v: unknown) => typeOf(v) === schema.type || (schema.type === 'integer' && typeof v === 'number') || (v === null && nullable);
  if (schema.type) for (const v of [{}, [], true, 'text', 12, null]) if (!accepts(v)) values.push({ what: `type ${JSON.stringify(v)}`, value: v });
  if (schema.type === 'string') {
    values.push({ what: 'NUL', value: `a${NUL}b` }, { what: 'only NUL', value: NUL });
    if (schema.maxLength) values.push({ what: 'one character too long', value: '\u{1F600}'.repeat(schema.maxLength + 1) });
  }
  if (schema.type === 'integer' || schema.type === 'number') {
    values.push({ what: '1e400', value: RAW('1e400') }, { what: '-1e400', value: RAW('-1e400') }, { what: '1e308', value: 1e308 }, { what: '-1e308', value: -1e308 });
  }
  if (schema.type === 'integer') values.push({ what: 'fraction', value: 1.5 });
  return values;
}

const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const deepObject = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));

const MALFORMED: [string, string | Uint8Array][] = [
  ['empty object', '{}'], ['truncated', '{"a":'], ['open brace', '{'], ['bare word', 'nul'], ['trailing garbage', '{}x'],
  ['two documents', '{}{}'], ['single quotes', "{'a':1}"], ['trailing comma', '{"a":1,}'], ['comment', '{/*x*/}'],
  ['BOM', '\ufeff{}'], ['null', 'null'], ['array', '[]'], ['string', '"text"'], ['number', '1e400'], ['true', 'true'],
  ['raw NUL in a string', '{"a":"\u0000"}'], ['bad escape', '{"a":"\\x41"}'], ['lone surrogate escape', '{"a":"\\ud800"}'],
  ['__proto__', '{"__proto__":{"x":1}}'], ['constructor.prototype', '{"constructor":{"prototype":{"x":1}}}'],
  ['deep arrays (100,000)', deep(100_000)], ['deep objects (20,000)', deepObject(20_000)],
  ['invalid UTF-8', bytes('{"a":"', [0xff, 0xfe, 0xc0, 0xaf], '"}')], ['UTF-8 surrogate bytes', bytes('{"a":"', [0xed, 0xa0, 0x80], '"}')],
  ['invalid UTF-8 outside strings', bytes('{', [0xff], '}')], ['1e400 everywhere', '{"a":1e400,"b":[-1e400]}'],
  ['huge string', `{"a":"${'x'.repeat(2 * 1024 * 1024)}"}`],
];

const ODD_IDS = ['%00', 'a%00b', '%ff', '%C0%AF', '%ED%A0%80', '%F0%9F%98%80', 'x'.repeat(201), 'x'.repeat(9000), '..', '%2e%2e', '%2F', '%20', '%25', '%E2%80%AE', '-1', '0', 'null', '%22%3E%3C'];
const QUERIES = [
  'limit=-1', 'limit=0', 'limit=1e400', 'limit=abc', 'limit=1&limit=2', 'limit=', 'after=99999999999', 'after=2147483648', 'after=-1', 'after=1.5',
  'after=1e400', 'cursor=%00', `cursor=${'A'.repeat(2000)}`, 'cursor=%ff', 'cursor=eyJ4Ijox', 'offset=1e400', 'offset=-1', 'wait=1e400', 'wait=-1', 'wait=true',
  'format=xml', 'output=%00', 'output=X', 'expires=%00&sig=%00', 'expires=99999999999999999999&sig=x', '%zz=1', 'a[b]=c', '&&&', '=', 'limit[]=1',
];
const HEADERS: [string, Record<string, string>][] = [
  ['long X-Request-ID', { 'x-request-id': 'r'.repeat(8000) }], ['odd X-Request-ID', { 'x-request-id': '<script>' }],
  ['long Idempotency-Key', { 'idempotency-key': 'k'.repeat(2000) }], ['empty Idempotency-Key', { 'idempotency-key': '' }],
  ['long Last-Event-ID', { 'last-event-id': '9'.repeat(5000) }], ['Last-Event-ID -1', { 'last-event-id': '-1' }], ['Last-Event-ID junk', { 'last-event-id': 'abc' }],
  ['long API key', { 'x-api-key': 'k'.repeat(8000) }], ['long bearer', { authorization: `Bearer ${'k'.repeat(8000)}` }],
  ['odd Accept', { accept: 'text/csv;q=2, */*;q=x' }], ['odd content-type', { 'content-type': 'application/json; charset=latin1' }],
];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];

interface Fixtures { taskId: string; doomedTaskId: string; accountId: string; keyId: string; uploadId: string }

function pathOf(route: RouteDef, f: Fixtures, override?: [string, string]): string {
  // DELETE gets a task of its own: the other routes keep finding theirs.
  const ids: Record<string, string> = { task_id: route === ROUTES.deleteTask ? f.doomedTaskId : f.taskId, output_id: 'items', account_id: f.accountId, key_id: f.keyId, upload_id: f.uploadId };
  return route.url.replace(/:(\w+)/g, (_m, name: string) => (override && override[0] === name ? override[1] : encodeURIComponent(ids[name] ?? 'x')));
}

/** The cases for one route. */
function casesOf(route: RouteDef, f: Fixtures): Case[] {
  const cases: Case[] = [];
  const path = pathOf(route, f);
  const { method } = route;
  const schema = route.schema as Schema;
  for (const name of route.url.match(/:(\w+)/g) ?? []) {
    for (const id of ODD_IDS) cases.push({ what: `path ${name} ${id.slice(0, 20)}`, method, path: pathOf(route, f, [name.slice(1), id]), body: method === 'GET' || method === 'DELETE' ? undefined : '{}' });
  }
  for (const q of QUERIES) cases.push({ what: `query ${q.slice(0, 30)}`, method, path: `${path}?${q}`, body: method === 'GET' || method === 'DELETE' ? undefined : '{}' });
  for (const [what, headers] of HEADERS) cases.push({ what, method, path, headers, body: method === 'GET' || method === 'DELETE' ? undefined : '{}' });
  for (const other of METHODS.filter((m) => m !== method)) cases.push({ what: `method ${other}`, method: other, path });
  const querystring = schema.querystring as Schema | undefined;
  if (querystring) {
    for (const field of fields(querystring)) {
      // Query values arrive as text and are coerced: a wrong "type" may be a fine value there.
      for (const bad of badValues(field)) {
        if (typeof bad.value === 'object' || bad.what.startsWith('type')) continue;
        const raw = typeof bad.value === 'string' ? bad.value.replace(/^<raw>|<\/raw>$/g, '') : String(bad.value);
        cases.push({ what: `query ${String(field.path[0])} ${bad.what}`, method, path: `${path}?${String(field.path[0])}=${encodeURIComponent(raw)}`, refused: true });
      }
    }
  }
  const bodySchema = schema.body as Schema | undefined;
  if (bodySchema && bodySchema.type === 'object') {
    const base = sample(bodySchema);
    cases.push({ what: 'sample body', method, path, body: json(base) });
    for (const [what, body] of MALFORMED) cases.push({ what: `body ${what}`, method, path, body });
    cases.push({ what: 'deep extra member', method, path, body: `${json(base).slice(0, -1)}${Object.keys(base).length ? ',' : ''}"extra":${deep(50_000)}}` });
    for (const field of fields(bodySchema)) {
      for (const bad of badValues(field)) {
        cases.push({ what: `body ${field.path.join('.')} ${bad.what}`, method, path, body: json(withValue(base, field.path, bad.value)), refused: true });
      }
    }
  }
  return cases;
}

function credentials(route: RouteDef, key: string): Record<string, string> {
  return route.auth === 'admin' ? { 'x-api-key': ADMIN_KEY } : route.auth === 'key' ? { 'x-api-key': key } : {};
}

/**
 * Routes sent over a socket: streams (a request that gets through is answered with an event
 * stream, which inject() does not end), and /readyz, which is 503 until the server listens.
 */
const overSocket = (route: RouteDef) => route.url.endsWith('/stream') || route === ROUTES.ready;

async function fixtures(h: Harness): Promise<Fixtures> {
  const task = await h.request('POST', '/task/start', { body: { task: { prompt: 'Corpus task.', outputs: [{ id: 'items', kind: 'table', columns: [{ name: 'a' }] }] } } });
  assert.equal(task.status, 200, task.text);
  const doomed = await h.request('POST', '/task', { body: { prompt: 'To be deleted.' } });
  assert.equal(doomed.status, 200, doomed.text);
  const account = await h.request('POST', '/admin/accounts', { key: null, headers: { 'x-api-key': ADMIN_KEY }, body: { name: 'corpus', credits: 1 } });
  assert.equal(account.status, 201, account.text);
  const ticket = await h.request('POST', '/upload-url', { body: { filename: 'f.txt', content_type: 'text/plain', size_bytes: 3 } });
  assert.equal(ticket.status, 200, ticket.text);
  return { taskId: task.body.task_id, doomedTaskId: doomed.body.task_id, accountId: account.body.account_id, keyId: account.body.key_id, uploadId: ticket.body.upload_id };
}

async function send(h: Harness, route: RouteDef, c: Case): Promise<TestResponse> {
  const headers: Record<string, string> = { ...credentials(route, h.key), ...(c.body !== undefined ? { 'content-type': 'application/json' } : {}), ...c.headers };
  return h.request(c.method, c.path, { key: null, headers, rawBody: c.body });
}

/** Runs cases a few at a time (the whole corpus stays well under the file's time budget). */
async function runAll(h: Harness, route: RouteDef, cases: Case[]): Promise<void> {
  const failures: string[] = [];
  for (let i = 0; i < cases.length; i += 8) {
    await Promise.all(cases.slice(i, i + 8).map(async (c) => {
      try {
        checkAnswer(c, await send(h, route, c));
      } catch (err) {
        failures.push((err as Error).message.split('\n')[0]!);
      }
    }));
  }
  assert.deepEqual(failures, [], `${failures.length} of ${cases.length} cases failed`);
}

// Every route is exercised with a generous rate limit: the corpus is one key's burst.
const env = { QUARRY_RATE_LIMIT_PER_MIN: '1000000' };

describe('bad-input corpus: every route of the contract, through app.inject()', () => {
  let h: Harness;
  let f: Fixtures;
  before(async () => {
    // No model: a turn a case starts fails at once, and the tasks stay idle.
    h = await startHarness({ model: false, env });
    f = await fixtures(h);
  });
  after(() => h.close());

  for (const [name, route] of Object.entries(ROUTES) as [string, RouteDef][]) {
    if (overSocket(route)) continue;
    it(`${name}: ${route.method} ${route.url}`, async () => {
      const cases = casesOf(route, f);
      assert.ok(cases.length > 40, `${cases.length} cases`);
      await runAll(h, route, cases);
    });
  }

  it('deep bodies with an Idempotency-Key', async () => {
    const idempotent = (Object.values(ROUTES) as RouteDef[]).filter((r) => 'Idempotency-Key' in ((r.schema.headers as Schema | undefined)?.properties ?? {}));
    assert.ok(idempotent.length > 0);
    for (const route of idempotent) {
      const base = json(sample((route.schema as Schema).body as Schema));
      const body = `${base.slice(0, -1)}${base === '{}' ? '' : ','}"extra":${deep(50_000)}}`;
      await runAll(h, route, [{ what: 'deep extra member', method: route.method, path: pathOf(route, f), headers: { 'idempotency-key': `deep-${route.schema.operationId}` }, body }]);
    }
  });
});

describe('bad-input corpus: stream routes and HTTP framing, over a socket', () => {
  let h: Harness;
  let f: Fixtures;
  before(async () => {
    h = await startHarness({ listen: true, model: false, env });
    f = await fixtures(h);
  });
  after(() => h.close());

  for (const [name, route] of Object.entries(ROUTES) as [string, RouteDef][]) {
    if (!overSocket(route)) continue;
    it(`${name}: ${route.method} ${route.url}`, async () => {
      await runAll(h, route, casesOf(route, f));
    });
  }

  /** One request written as raw bytes; the answer read until the server closes the connection (at most 5 s). */
  async function raw(request: string | Buffer): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    const [answer] = (await exchange(h.url, [request])).answers;
    assert.ok(answer, 'no answer within 5 s');
    return { status: answer.status, headers: Object.fromEntries(answer.headers), body: answer.text };
  }

  function checkRaw(what: string, res: { status: number; headers: Record<string, string>; body: string }): void {
    assert.ok(res.status >= 400 && res.status < 500, `${what}: ${res.status}`);
    const start = res.body.indexOf('{');
    const body = JSON.parse(res.body.slice(start, res.body.lastIndexOf('}') + 1)) as Json;
    assert.ok(CATALOGUE.some((e) => e.error === body.error && e.status === res.status), `${what}: ${res.body}`);
    assert.equal(res.headers['x-request-id'], body.request_id, what);
  }

  const FRAMING: [string, () => string | Buffer][] = [
    ['Content-Length and Transfer-Encoding together', () => 'POST /task HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['bare LF line endings', () => 'GET /task HTTP/1.1\nHost: x\n\n'],
    ['a byte 0xff in the path', () => Buffer.concat([Buffer.from('GET /task/'), Buffer.from([0xff]), Buffer.from(' HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')])],
    ['NUL in a header value', () => 'GET /task HTTP/1.1\r\nHost: x\r\nX-Api-Key: a\u0000b\r\nConnection: close\r\n\r\n'],
    ['headers larger than the server takes', () => `GET /task HTTP/1.1\r\nHost: x\r\nX-Long: ${'a'.repeat(20_000)}\r\nConnection: close\r\n\r\n`],
  ];
  for (const [what, request] of FRAMING) {
    it(`framing: ${what}`, async () => {
      checkRaw(what, await raw(request()));
    });
  }

  it('framing: a well-formed request on the same path answers normally', async () => {
    const res = await raw(`GET /task/%00 HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${h.key}\r\nConnection: close\r\n\r\n`);
    assert.equal(res.status, 422, res.body);
    checkRaw('NUL path id', res);
  });
});
