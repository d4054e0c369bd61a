/**
 * The HTTP edge below the routes: what Node's HTTP parser refuses, a missing Host, an unknown
 * Expect, CONNECT, OPTIONS/TRACE/HEAD on known paths, and requests that take too long to arrive.
 * Every refusal is the catalogue's error body with X-Request-ID. Raw requests go over real
 * sockets (node:net), since what is under test is what a client sees on the wire.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { ERROR_CATALOGUE } from '../../src/errors.js';
import { startHarness, type Harness, type TestResponse } from '../kit/harness.js';
import { exchange, type RawAnswer } from '../kit/raw-http.js';
import { openSse } from '../kit/sse-client.js';

/** The one error body from the catalogue, with X-Request-ID, as every refusal must be. */
function expectCatalogueError(answer: RawAnswer | TestResponse, status: number, code: string): void {
  const header = (name: string) => (answer.headers instanceof Map ? answer.headers.get(name) : answer.headers.get(name) ?? undefined);
  assert.equal(answer.status, status, `expected ${status} ${code}, got ${answer.status}: ${answer.text}`);
  assert.match(header('content-type') ?? '', /^application\/json/);
  const body = answer.body;
  assert.ok(body && typeof body === 'object', `error body is not JSON: ${answer.text}`);
  const entry = Object.values(ERROR_CATALOGUE).find((e) => e.status === status && e.error === code);
  assert.ok(entry, `${status} ${code} is not in the catalogue`);
  assert.equal(body.error, code);
  assert.equal(body.retryable, entry.retryable);
  assert.equal(typeof body.message, 'string');
  assert.ok(body.message.length > 0);
  assert.match(body.request_id, /^\S+$/);
  assert.equal(header('x-request-id'), body.request_id, 'X-Request-ID header and request_id differ');
}

// ---- refusals from below the routes ------------------------------------------------------------

describe('refusals from below the routes carry the catalogue body and X-Request-ID', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ listen: true, model: false });
  });
  after(() => h.close());

  const parserCases: [string, string, number][] = [
    ['a control byte in the path', 'GET /ta\x01sk HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['Content-Length together with Transfer-Encoding', 'POST /task HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400],
    ['two different Content-Lengths', 'POST /task HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}', 400],
    ['a bare LF line ending', 'GET /healthz HTTP/1.1\nHost: x\n\n', 400],
    ['a method HTTP does not know', 'FROB /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['an obs-fold header continuation', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n', 400],
    ['white space before a header colon', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A : b\r\n\r\n', 400],
    ['a chunk size that is not hex', 'POST /task HTTP/1.1\r\nHost: x\r\nX-API-Key: {KEY}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', 400],
    ['an unknown HTTP version', 'GET /healthz HTTP/4.2\r\nHost: x\r\n\r\n', 400],
    ['headers over the size limit', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ];
  for (const [what, request, status] of parserCases) {
    it(`${what}: ${status} with our body, then the connection closes`, async () => {
      const ex = await exchange(h.url, [request.replace('{KEY}', h.key)]);
      assert.equal(ex.answers.length, 1, `one answer expected, got ${ex.answers.length}`);
      const answer = ex.answers[0]!;
      expectCatalogueError(answer, status, 'invalid_request');
      assert.equal(answer.headers.get('connection'), 'close');
      assert.ok(ex.closedByServer, 'the server closes the connection');
    });
  }

  it('431 names the header limit in its message', async () => {
    const ex = await exchange(h.url, [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`]);
    assert.match(ex.answers[0]!.body.message, /headers/);
  });

  it('an HTTP/1.1 request without Host: 400 invalid_request, with the client\'s X-Request-ID', async () => {
    const ex = await exchange(h.url, ['GET /healthz HTTP/1.1\r\nX-Request-ID: edge-no-host\r\n\r\n']);
    const answer = ex.answers[0]!;
    expectCatalogueError(answer, 400, 'invalid_request');
    assert.equal(answer.body.request_id, 'edge-no-host');
    assert.match(answer.body.message, /Host/);
    assert.ok(ex.closedByServer);
  });

  it('HTTP/1.0 needs no Host', async () => {
    const ex = await exchange(h.url, ['GET /healthz HTTP/1.0\r\n\r\n']);
    assert.equal(ex.answers[0]?.status, 200, ex.answers[0]?.text);
  });

  it('an Expect other than 100-continue: 417 with our body and the client\'s X-Request-ID', async () => {
    const ex = await exchange(h.url, ['GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nX-Request-ID: edge-expect\r\n\r\n']);
    const answer = ex.answers[0]!;
    expectCatalogueError(answer, 417, 'invalid_request');
    assert.equal(answer.body.request_id, 'edge-expect');
    assert.ok(ex.closedByServer);
  });

  it('Expect: 100-continue still works', async () => {
    const ex = await exchange(h.url, ['GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n']);
    assert.equal(ex.answers.at(-1)?.status, 200);
  });

  it('CONNECT: 400 with our body, not a silently dropped connection', async () => {
    const ex = await exchange(h.url, ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n']);
    expectCatalogueError(ex.answers[0]!, 400, 'invalid_request');
    assert.ok(ex.closedByServer);
  });
});

// ---- methods on known paths --------------------------------------------------------------------

describe('OPTIONS, TRACE and HEAD on a known path are 405 with Allow', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ model: false });
  });
  after(() => h.close());

  for (const [method, path, allow] of [
    ['OPTIONS', '/task', 'GET, POST'],
    ['OPTIONS', '/task/some-task', 'DELETE, GET, PATCH'],
    ['TRACE', '/task', 'GET, POST'],
    ['TRACE', '/healthz', 'GET'],
  ] as const) {
    it(`${method} ${path}: 405, Allow: ${allow}, no key needed`, async () => {
      const res = await h.request(method, path, { key: null });
      expectCatalogueError(res, 405, 'method_not_allowed');
      assert.equal(res.headers.get('allow'), allow);
    });
  }

  it('HEAD on a path without GET: 405 with Allow', async () => {
    const res = await h.request('HEAD', '/task/some-task/continue', { key: null });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
    assert.ok(res.headers.get('x-request-id'));
  });

  it('HEAD on a GET path still answers like GET', async () => {
    const res = await h.request('HEAD', '/healthz', { key: null });
    assert.equal(res.status, 200);
  });

  for (const method of ['OPTIONS', 'TRACE']) {
    it(`${method} on an unknown path stays 404 not_found`, async () => {
      expectCatalogueError(await h.request(method, '/no/such/path', { key: null }), 404, 'not_found');
    });
  }

  it('/openapi.json lists no OPTIONS, TRACE or HEAD operations', async () => {
    const res = await h.request('GET', '/openapi.json');
    assert.equal(res.status, 200);
    const methods = new Set(Object.values(res.body.paths as Record<string, Record<string, unknown>>).flatMap((ops) => Object.keys(ops)));
    for (const m of ['options', 'trace', 'head', 'query']) assert.ok(!methods.has(m), `/openapi.json has a ${m} operation`);
  });
});

// ---- empty path parameters ---------------------------------------------------------------------

describe('an empty id in the path is 404 not_found, like any unknown path', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ model: false });
  });
  after(() => h.close());

  for (const [method, path] of [
    ['GET', '/group//rows'],
    ['GET', '/group/'],
    ['GET', '/task//state'],
    ['GET', '/task/'],
    ['POST', '/task//stop'],
    ['GET', '/task/tsk_x/output/'],
    ['GET', '/webhooks//deliveries'],
  ] as const) {
    it(`${method} ${path}`, async () => {
      const res = await h.request(method, path, method === 'POST' ? { body: {} } : {});
      expectCatalogueError(res, 404, 'not_found');
      assert.equal(res.body.message, `No route ${method} ${path}.`);
    });
  }
});

// ---- compressed request bodies -----------------------------------------------------------------

describe('Content-Encoding on a request body', () => {
  let h: Harness;
  const MAX_BODY_BYTES = 64 * 1024;
  before(async () => {
    h = await startHarness({ model: false, env: { QUARRY_MAX_BODY_BYTES: String(MAX_BODY_BYTES) } });
  });
  after(() => h.close());

  const prompt = (text: string) => Buffer.from(JSON.stringify({ prompt: text }));
  const post = (body: Uint8Array, coding: string) =>
    h.request('POST', '/task', { rawBody: body, headers: { 'content-type': 'application/json', 'content-encoding': coding } });

  for (const [coding, encode] of [['gzip', zlib.gzipSync], ['x-gzip', zlib.gzipSync], ['deflate', zlib.deflateSync]] as const) {
    it(`${coding}: the body is decoded`, async () => {
      const res = await post(encode(prompt(`EU battery makers (${coding})`)), coding);
      assert.equal(res.status, 200, res.text);
      const task = await h.request('GET', `/task/${res.body.task_id}`);
      assert.match(JSON.stringify(task.body.spec), new RegExp(`EU battery makers \\(${coding}\\)`));
    });
  }

  it('identity is the body as it is', async () => {
    assert.equal((await post(prompt('as it is'), 'identity')).status, 200);
  });

  for (const coding of ['br', 'zstd', 'compress', 'gzip, br']) {
    it(`${coding}: 415 unsupported_media_type naming the coding`, async () => {
      const res = await post(prompt('not decoded'), coding);
      expectCatalogueError(res, 415, 'unsupported_media_type');
      assert.match(res.body.message, /Content-Encoding/);
    });
  }

  it('a gzip body that decodes past the body limit is 413, however small it arrives', async () => {
    const bomb = zlib.gzipSync(Buffer.from(JSON.stringify({ prompt: 'x'.repeat(50 * MAX_BODY_BYTES) })));
    assert.ok(bomb.length < MAX_BODY_BYTES / 4);
    expectCatalogueError(await post(bomb, 'gzip'), 413, 'payload_too_large');
  });

  it('an unknown path is 404 whatever its body\'s coding: gzip decoded, others refused first (415)', async () => {
    const unknown = (coding: string, body: Uint8Array) =>
      h.request('POST', '/no-such-route', { rawBody: body, headers: { 'content-type': 'application/json', 'content-encoding': coding } });
    expectCatalogueError(await unknown('gzip', zlib.gzipSync(prompt('lost'))), 404, 'not_found');
    expectCatalogueError(await unknown('br', prompt('lost')), 415, 'unsupported_media_type');
  });

  it('a GET\'s body is not read, so its coding is not looked at', async () => {
    const created = await post(prompt('polled'), 'identity');
    const res = await h.request('GET', `/task/${created.body.task_id}/state`, { rawBody: prompt('ignored'), headers: { 'content-type': 'application/json', 'content-encoding': 'br' } });
    assert.equal(res.status, 200, res.text);
  });

  it('a body that is not gzip data is 400 invalid_request', async () => {
    const res = await post(prompt('plain, yet said to be gzip'), 'gzip');
    expectCatalogueError(res, 400, 'invalid_request');
    assert.match(res.body.message, /gzip/);
  });
});

// ---- request timeout ---------------------------------------------------------------------------

// Each case waits for the 1 s limit on a connection of its own: side by side.
describe('requests that never finish arriving are cut (QUARRY_REQUEST_TIMEOUT_S=1)', { concurrency: true }, () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ listen: true, env: { QUARRY_REQUEST_TIMEOUT_S: '1', QUARRY_SSE_PING_MS: '200' } });
  });
  after(() => h.close());

  const head = (path: string, extra: string[]) => [`POST ${path} HTTP/1.1`, 'Host: x', 'Content-Type: application/json', ...extra].join('\r\n') + '\r\n\r\n';

  it('a body that stops coming: 408 request_timeout with the request\'s id, and the connection closes', async () => {
    const ex = await exchange(h.url, [head('/task', [`X-API-Key: ${h.key}`, 'Content-Length: 100', 'X-Request-ID: edge-slow-body']), '{"prompt":'], 10_000);
    assert.ok(ex.closedByServer, `the connection is still open after ${ex.ms} ms`);
    assert.ok(ex.ms >= 900 && ex.ms < 5_000, `closed after ${ex.ms} ms`);
    const answer = ex.answers[0]!;
    expectCatalogueError(answer, 408, 'request_timeout');
    assert.equal(answer.body.request_id, 'edge-slow-body');
    assert.equal(answer.headers.get('connection'), 'close');
  });

  it('an upload body that stops coming is cut the same way', async () => {
    const ticket = await h.request('POST', '/upload-url', { body: { filename: 'slow.csv', content_type: 'text/csv', size_bytes: 1000 } });
    assert.ok(ticket.status === 200 || ticket.status === 201, ticket.text);
    const url = new URL(ticket.body.upload_url as string);
    const put = [`PUT ${url.pathname}${url.search} HTTP/1.1`, 'Host: x', 'Content-Type: text/csv', 'Content-Length: 1000'].join('\r\n') + '\r\n\r\n';
    const ex = await exchange(h.url, [put, 'a,b\n'], 10_000);
    assert.ok(ex.closedByServer, `the connection is still open after ${ex.ms} ms`);
    assert.ok(ex.ms < 5_000, `closed after ${ex.ms} ms`);
  });

  it('headers that stop coming: 408 request_timeout, and the connection closes', async () => {
    const ex = await exchange(h.url, ['GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: '], 10_000);
    assert.ok(ex.closedByServer, `the connection is still open after ${ex.ms} ms`);
    assert.ok(ex.ms < 5_000, `closed after ${ex.ms} ms`);
    expectCatalogueError(ex.answers[0]!, 408, 'request_timeout');
  });

  it('a connection that never sends a byte is closed too', async () => {
    const ex = await exchange(h.url, [], 10_000);
    assert.ok(ex.closedByServer, `the connection is still open after ${ex.ms} ms`);
    assert.ok(ex.ms < 5_000, `closed after ${ex.ms} ms`);
  });

  it('a body still owed after an early refusal (401) does not hold the connection either', async () => {
    const ex = await exchange(h.url, [head('/task', ['Content-Length: 100']), '{"prompt":'], 10_000);
    expectCatalogueError(ex.answers[0]!, 401, 'unauthorized');
    assert.ok(ex.closedByServer, `the connection is still open after ${ex.ms} ms`);
    assert.ok(ex.ms < 5_000, `closed after ${ex.ms} ms`);
  });

  it('a kept-alive connection idle past the limit takes its next request', async () => {
    const get = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
    const ex = await exchange(h.url, [get, 1_600, get], 1_000);
    assert.deepEqual(ex.answers.map((a) => a.status), [200, 200]);
  });

  it('answers are not limited: a long poll and an event stream outlive the limit', async () => {
    h.model!.script({ hang: true });
    const created = await h.request('POST', '/task/start', { body: { task: { prompt: 'Take your time.', outputs: [{ id: 'items', kind: 'table', columns: [{ name: 'name', type: 'string' }] }] } } });
    assert.equal(created.status, 200, created.text);
    const taskId = created.body.task_id as string;
    await h.model!.waitForRequests(1);
    const stream = await openSse(h.url, `/task/${taskId}/stream`, { key: h.key });
    try {
      const started = Date.now();
      const poll = await h.request('GET', `/task/${taskId}/state?wait=3`);
      assert.equal(poll.status, 200, poll.text);
      assert.ok(Date.now() - started >= 2_500, 'the long poll waited');
      assert.equal(stream.status, 200);
      assert.equal(stream.ended, false, 'the stream is still open after 3 s');
      assert.ok(stream.comments.length >= 5, `pings kept coming: ${stream.comments.length}`);
    } finally {
      await h.request('POST', `/task/${taskId}/stop`, { body: {} });
      await stream.finished(10_000);
    }
    assert.ok(stream.completed, 'the stream ended properly, with the turn');
  });
});
