/**
 * CORS (QUARRY_CORS_ORIGINS): off by default; when on, a browser app on an allowed origin gets
 * its preflight answered without a key, and every answer, refusals and event streams included,
 * carries the headers its script needs to read it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config.js';
import { startHarness, type Harness, type TestResponse } from '../kit/harness.js';
import { openSse } from '../kit/sse-client.js';

const APP = 'https://app.example.com';
const DEV = 'http://localhost:5173';
const OTHER = 'https://evil.example.net';

function listOf(res: TestResponse, header: string): string[] {
  return (res.headers.get(header) ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean);
}

function preflight(h: Harness, path: string, origin: string, method = 'POST', headers = 'x-api-key, content-type, idempotency-key'): Promise<TestResponse> {
  return h.request('OPTIONS', path, {
    key: null,
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });
}

/** An error body a browser's script can read: the catalogue body, the origin allowed, X-Request-ID exposed. */
function expectReadableError(res: TestResponse, status: number, code: string, origin: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body?.error, code, res.text);
  assert.equal(res.headers.get('access-control-allow-origin'), origin);
  assert.ok(listOf(res, 'access-control-expose-headers').includes('x-request-id'));
  assert.equal(res.headers.get('x-request-id'), res.body.request_id);
}

describe('CORS is off by default', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ model: false });
  });
  after(() => h.close());

  it('answers carry no CORS headers', async () => {
    const res = await h.request('GET', '/task', { headers: { origin: APP } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });

  it('a preflight is an OPTIONS like any other: 405 on a known path', async () => {
    const res = await preflight(h, '/task', APP);
    assert.equal(res.status, 405, res.text);
    assert.equal(res.body.error, 'method_not_allowed');
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });
});

describe(`CORS on for listed origins (QUARRY_CORS_ORIGINS="${APP}, ${DEV}/")`, () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ listen: true, model: false, env: { QUARRY_CORS_ORIGINS: `${APP}, ${DEV}/` } });
  });
  after(() => h.close());

  it('a preflight from an allowed origin is answered 204 without a key', async () => {
    const res = await preflight(h, '/task', APP);
    assert.equal(res.status, 204, res.text);
    assert.equal(res.headers.get('access-control-allow-origin'), APP);
    const methods = listOf(res, 'access-control-allow-methods');
    for (const m of ['get', 'post', 'put', 'patch', 'delete']) assert.ok(methods.includes(m), `Allow-Methods lacks ${m}: ${methods}`);
    const allowed = listOf(res, 'access-control-allow-headers');
    for (const name of ['x-api-key', 'authorization', 'content-type', 'idempotency-key', 'last-event-id', 'x-request-id']) {
      assert.ok(allowed.includes(name), `Allow-Headers lacks ${name}: ${allowed}`);
    }
    assert.ok(Number(res.headers.get('access-control-max-age')) > 0);
    assert.ok(listOf(res, 'vary').includes('origin'), 'answers vary by Origin');
  });

  it('a preflight for a path with parameters, and from the second origin (listed with a trailing slash)', async () => {
    const res = await preflight(h, '/task/some-task', DEV, 'PATCH');
    assert.equal(res.status, 204, res.text);
    assert.equal(res.headers.get('access-control-allow-origin'), DEV);
  });

  it('a preflight from another origin gets no CORS headers (405 on a known path)', async () => {
    const res = await preflight(h, '/task', OTHER);
    assert.equal(res.status, 405, res.text);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });

  it('an OPTIONS that is no preflight (no Access-Control-Request-Method) stays 405, readable by the app', async () => {
    const res = await h.request('OPTIONS', '/task', { key: null, headers: { origin: APP } });
    expectReadableError(res, 405, 'method_not_allowed', APP);
    assert.equal(res.headers.get('allow'), 'GET, POST');
  });

  it('a plain OPTIONS on an unknown path stays 404', async () => {
    const res = await h.request('OPTIONS', '/no/such/path', { key: null });
    assert.equal(res.status, 404, res.text);
    assert.equal(res.body.error, 'not_found');
  });

  it('a request from an allowed origin gets Allow-Origin and the exposed headers', async () => {
    const res = await h.request('GET', '/task?limit=1', { headers: { origin: APP } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get('access-control-allow-origin'), APP);
    const exposed = listOf(res, 'access-control-expose-headers');
    for (const name of ['x-request-id', 'x-next-cursor', 'link', 'retry-after', 'idempotent-replayed']) {
      assert.ok(exposed.includes(name), `Expose-Headers lacks ${name}: ${exposed}`);
    }
  });

  it('a request from another origin gets no Allow-Origin, and is served as usual', async () => {
    const res = await h.request('GET', '/task?limit=1', { headers: { origin: OTHER } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });

  it('refusals are readable by the app: 401, 404, 405, 422 and 400', async () => {
    const origin = { origin: APP };
    expectReadableError(await h.request('GET', '/task', { key: null, headers: origin }), 401, 'unauthorized', APP);
    expectReadableError(await h.request('GET', '/no/such/path', { headers: origin }), 404, 'not_found', APP);
    expectReadableError(await h.request('GET', '/task/no-such-task', { headers: origin }), 404, 'task_not_found', APP);
    expectReadableError(await h.request('PUT', '/task', { headers: origin, body: {} }), 405, 'method_not_allowed', APP);
    expectReadableError(await h.request('GET', '/task?limit=0', { headers: origin }), 422, 'invalid_request', APP);
    expectReadableError(await h.request('POST', '/task', { headers: { ...origin, 'content-type': 'application/json' }, rawBody: '{"prompt":' }), 400, 'invalid_request', APP);
    const unauthorized = await h.request('GET', '/task', { key: null, headers: origin });
    assert.ok(listOf(unauthorized, 'access-control-expose-headers').includes('www-authenticate'));
  });

  it('an event stream carries Allow-Origin', async () => {
    const created = await h.request('POST', '/task', { body: { prompt: 'Say hi.' } });
    assert.equal(created.status, 200, created.text);
    // `after` is never answered with the idle 204: this is the stream itself, whose head sse.ts writes.
    const stream = await openSse(h.url, `/task/${created.body.task_id}/stream?after=0`, { key: h.key, headers: { origin: APP } });
    try {
      assert.equal(stream.status, 200);
      assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
      assert.equal(stream.headers['access-control-allow-origin'], APP);
    } finally {
      stream.close();
    }
  });
});

describe('CORS for any origin (QUARRY_CORS_ORIGINS=*)', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ model: false, env: { QUARRY_CORS_ORIGINS: '*' } });
  });
  after(() => h.close());

  it('answers Allow-Origin: * to any origin, preflight and request alike', async () => {
    const pre = await preflight(h, '/task', OTHER);
    assert.equal(pre.status, 204, pre.text);
    assert.equal(pre.headers.get('access-control-allow-origin'), '*');
    const res = await h.request('GET', '/task', { key: null, headers: { origin: OTHER } });
    expectReadableError(res, 401, 'unauthorized', '*');
  });
});

describe('QUARRY_CORS_ORIGINS is checked at start', () => {
  it('takes origins, normalized as browsers send them', () => {
    assert.deepEqual(loadConfig({ QUARRY_CORS_ORIGINS: 'https://App.Example.com/, http://localhost:5173' }).corsOrigins, ['https://app.example.com', 'http://localhost:5173']);
    assert.deepEqual(loadConfig({ QUARRY_CORS_ORIGINS: '' }).corsOrigins, []);
    assert.deepEqual(loadConfig({}).corsOrigins, []);
  });

  for (const bad of ['app.example.com', 'https://app.example.com/path', 'ftp://files.example.com', 'https://user:pw@app.example.com']) {
    it(`refuses "${bad}", saying what an origin looks like`, () => {
      assert.throws(() => loadConfig({ QUARRY_CORS_ORIGINS: bad }), /QUARRY_CORS_ORIGINS must list origins/);
    });
  }
});
