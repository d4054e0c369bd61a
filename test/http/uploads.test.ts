/**
 * Large inputs (interface §4, decisions §8, §13): POST /upload-url hands out a signed PUT URL
 * that needs no API key; the PUT stores the file and answers its size and SHA-256; a bad or
 * expired signature is 401; a body larger than declared is 413 and stores nothing; a finished
 * upload is a spec input, anything else there is 422 naming the input.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import zlib from 'node:zlib';
import { ADMIN_KEY, startHarness, waitIdle, type Harness, type TestResponse } from '../kit/harness.js';
import { fetchJson } from '../kit/http.js';
import { until } from '../kit/bounded-waits.js';

const sha256 = (data: Buffer | string) => crypto.createHash('sha256').update(data).digest('hex');

interface Ticket {
  upload_id: string;
  upload_url: string;
  method: string;
  headers: Record<string, string>;
  expires_at: string;
  max_bytes: number;
}

/** A PUT over a socket with no API key: the signed URL is the only credential. */
function put(url: string, body: Buffer | string, headers: Record<string, string> = {}): Promise<TestResponse> {
  return fetchJson('PUT', url, { rawBody: body, headers });
}

/** A PUT on a connection of its own (closed afterwards), so that whatever becomes of it touches no other request. */
function putOnce(url: string, body: Buffer, headers: Record<string, string>): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'PUT', agent: false, headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (err) => resolve(`connection closed: ${String(err)}`));
    req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
    req.end(body);
  });
}

async function ticket(h: Harness, filename: string, contentType: string, size: number, key: string = h.key): Promise<Ticket> {
  const res = await h.request('POST', '/upload-url', { key, body: { filename, content_type: contentType, size_bytes: size } });
  assert.ok(res.status === 200 || res.status === 201, `POST /upload-url: ${res.status} ${res.text}`);
  return res.body as Ticket;
}

/** Uploads `data` and checks the 201 answer. */
async function upload(h: Harness, filename: string, contentType: string, data: Buffer | string, key: string = h.key): Promise<Ticket> {
  const t = await ticket(h, filename, contentType, Buffer.byteLength(data), key);
  const res = await put(t.upload_url, data, t.headers);
  assert.equal(res.status, 201, res.text);
  return t;
}

function withQuery(url: string, change: (q: URLSearchParams) => void): string {
  const u = new URL(url);
  change(u.searchParams);
  return u.toString();
}

const spec = (inputs: unknown[]) => ({ task: { prompt: 'Use the uploaded shortlist.', outputs: [{ id: 'notes', kind: 'report' }], inputs } });

describe('uploads', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ listen: true, env: { QUARRY_MAX_UPLOAD_BYTES: '1048576', QUARRY_RATE_LIMIT_PER_MIN: '100000' } });
  });
  after(() => h.close());

  it('POST /upload-url answers a signed PUT URL, its headers, expiry and size limit', async () => {
    const before = Date.now();
    const res = await h.request('POST', '/upload-url', { body: { filename: 'shortlist.csv', content_type: 'text/csv', size_bytes: 1234 } });
    assert.ok(res.status === 200 || res.status === 201, res.text);
    const t = res.body as Ticket;
    assert.equal(typeof t.upload_id, 'string');
    assert.ok(t.upload_id.length > 0 && t.upload_id.length <= 64, 'an upload id fits a spec input (1-64 chars)');
    assert.equal(t.method, 'PUT');
    assert.equal(typeof t.headers, 'object');
    assert.equal(Object.entries(t.headers).find(([k]) => k.toLowerCase() === 'content-type')?.[1], 'text/csv');
    assert.equal(t.max_bytes, 1234);
    const url = new URL(t.upload_url);
    assert.equal(url.origin, new URL(h.url).origin, 'the upload URL points at this server');
    assert.ok(url.pathname.includes(t.upload_id));
    const expires = Date.parse(t.expires_at);
    assert.ok(expires >= before + 14 * 60_000 && expires <= Date.now() + 16 * 60_000, `expires in 15 minutes: ${t.expires_at}`);

    const other = await ticket(h, 'shortlist.csv', 'text/csv', 1234);
    assert.notEqual(other.upload_id, t.upload_id, 'every ticket is a new upload');
  });

  it('POST /upload-url needs a key and a valid body', async () => {
    const noKey = await h.request('POST', '/upload-url', { key: null, body: { filename: 'a.txt', content_type: 'text/plain', size_bytes: 1 } });
    assert.equal(noKey.status, 401);
    assert.equal(noKey.body.error, 'unauthorized');
    const cases: [unknown, string][] = [
      [{ content_type: 'text/plain', size_bytes: 1 }, 'filename'],
      [{ filename: 'a.txt', size_bytes: 1 }, 'content_type'],
      [{ filename: 'a.txt', content_type: 'text/plain' }, 'size_bytes'],
      [{ filename: 'a.txt', content_type: 'text/plain', size_bytes: -1 }, 'size_bytes'],
      [{ filename: 'a.txt', content_type: 'text/plain', size_bytes: 'ten' }, 'size_bytes'],
      [{ filename: 'a.txt', content_type: 'text/plain', size_bytes: 1048577 }, 'size_bytes'],
    ];
    for (const [body, param] of cases) {
      const res = await h.request('POST', '/upload-url', { body });
      assert.equal(res.status, 422, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.body.error, 'invalid_request');
      assert.equal(res.body.param, param, JSON.stringify(body));
    }
  });

  it('PUT to the signed URL without an API key stores the file: 201 with its size and sha256', async () => {
    const data = 'company,country\nAcme,DE\nBeta,FR\n';
    const t = await ticket(h, 'shortlist.csv', 'text/csv', Buffer.byteLength(data));
    const res = await put(t.upload_url, data, t.headers);
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body, { upload_id: t.upload_id, size_bytes: Buffer.byteLength(data), sha256: sha256(data) });

    // Any bytes, not only text; the content type need not be JSON.
    const binary = crypto.randomBytes(64 * 1024);
    const b = await ticket(h, 'blob.bin', 'application/octet-stream', binary.length);
    const bin = await put(b.upload_url, binary, b.headers);
    assert.equal(bin.status, 201, bin.text);
    assert.equal(bin.body.size_bytes, binary.length);
    assert.equal(bin.body.sha256, sha256(binary));

    // A smaller file than declared is fine: size_bytes is a limit.
    const s = await ticket(h, 'small.txt', 'text/plain', 100);
    const small = await put(s.upload_url, 'tiny', s.headers);
    assert.equal(small.status, 201, small.text);
    assert.equal(small.body.size_bytes, 4);
  });

  it('a PUT sent with Content-Encoding: gzip stores the decoded file', async () => {
    const data = Buffer.from('company,country\nNorthvolt,SE\n'.repeat(100));
    const t = await ticket(h, 'plants.csv', 'text/csv', data.length);
    const res = await put(t.upload_url, zlib.gzipSync(data), { ...t.headers, 'content-encoding': 'gzip' });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.size_bytes, data.length);
    assert.equal(res.body.sha256, sha256(data));
  });

  it('an empty file uploads too', async () => {
    const t = await ticket(h, 'empty.txt', 'text/plain', 0);
    const res = await put(t.upload_url, '', t.headers);
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body, { upload_id: t.upload_id, size_bytes: 0, sha256: sha256('') });
  });

  it('a tampered signature or a changed, garbled or missing expiry is 401 unauthorized', async () => {
    const data = 'hello';
    const t = await ticket(h, 'hello.txt', 'text/plain', data.length);
    const sig = new URL(t.upload_url).searchParams.get('sig')!;
    const expires = new URL(t.upload_url).searchParams.get('expires')!;
    assert.ok(sig && expires, `the URL carries its signature and expiry: ${t.upload_url}`);
    const flipped = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);
    const other = await ticket(h, 'other.txt', 'text/plain', data.length);
    const otherSig = new URL(other.upload_url).searchParams.get('sig')!;

    const bad: [string, string][] = [
      ['a changed signature', withQuery(t.upload_url, (q) => q.set('sig', flipped))],
      ['another upload\'s signature', withQuery(t.upload_url, (q) => q.set('sig', otherSig))],
      ['no signature', withQuery(t.upload_url, (q) => q.delete('sig'))],
      ['an expiry in the past', withQuery(t.upload_url, (q) => q.set('expires', String(Date.now() - 60_000)))],
      ['a later expiry', withQuery(t.upload_url, (q) => q.set('expires', String(Number(expires) + 3_600_000)))],
      ['a garbled expiry', withQuery(t.upload_url, (q) => q.set('expires', 'soon'))],
      ['no expiry', withQuery(t.upload_url, (q) => q.delete('expires'))],
      ['the signature on another upload id', t.upload_url.replace(t.upload_id, other.upload_id)],
    ];
    for (const [what, url] of bad) {
      const res = await put(url, data, t.headers);
      assert.equal(res.status, 401, `${what}: ${res.text}`);
      assert.equal(res.body.error, 'unauthorized', what);
      assert.equal(res.body.retryable, false);
    }
    // None of that stored anything: the upload is not usable yet.
    const start = await h.request('POST', '/task/start', { body: spec([{ upload_id: t.upload_id }]) });
    assert.equal(start.status, 422, start.text);
    // The genuine URL still works.
    const ok = await put(t.upload_url, data, t.headers);
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.sha256, sha256(data));
  });

  it('a body larger than size_bytes is 413 and nothing is stored', async () => {
    const t = await ticket(h, 'big.txt', 'text/plain', 10);
    const res = await put(t.upload_url, 'x'.repeat(64), t.headers);
    assert.equal(res.status, 413, res.text);
    assert.equal(res.body.error, 'payload_too_large');
    const start = await h.request('POST', '/task/start', { body: spec([{ upload_id: t.upload_id }]) });
    assert.equal(start.status, 422, `the refused upload is not usable: ${start.text}`);
    assert.equal(start.body.param, 'task.inputs[0].upload_id');
    const dir = path.join(h.dataDir, 'uploads');
    const left = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.startsWith(t.upload_id)) : [];
    assert.deepEqual(left, [], 'no file, whole or partial, is left behind');

    // A body much larger than one read, still arriving when the server refuses it.
    const t2 = await ticket(h, 'bigger.bin', 'application/octet-stream', 1000);
    const status = await putOnce(t2.upload_url, crypto.randomBytes(512 * 1024), t2.headers);
    // The server may close the connection while the client is still sending.
    assert.ok(status === 413 || (typeof status === 'string' && status.startsWith('connection closed')), `a streamed oversize body: ${status}`);
    const start2 = await h.request('POST', '/task/start', { body: spec([{ upload_id: t2.upload_id }]) });
    assert.equal(start2.status, 422);
    const left2 = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.startsWith(t2.upload_id)) : [];
    assert.deepEqual(left2, []);
  });

  it('a finished upload works as a spec input', async () => {
    const data = 'name\nAcme\nBeta\n';
    const t = await upload(h, 'shortlist.csv', 'text/csv', data);
    const res = await h.request('POST', '/task/start', { body: spec([{ upload_id: t.upload_id, name: 'shortlist.csv' }]) });
    assert.equal(res.status, 200, res.text);
    const taskId = res.body.task_id as string;
    const task = await h.request('GET', `/task/${taskId}`);
    assert.deepEqual(task.body.spec.inputs, [{ upload_id: t.upload_id, name: 'shortlist.csv' }]);
    await waitIdle(h, taskId);
  });

  it('an unknown or unfinished upload_id in the spec is 422 naming task.inputs[i].upload_id, and no task is made', async () => {
    const before = await h.request('GET', '/task?limit=200');
    const finished = await upload(h, 'ok.txt', 'text/plain', 'fine');
    const unfinished = await ticket(h, 'later.txt', 'text/plain', 10);
    const cases: [unknown[], string][] = [
      [[{ upload_id: 'upl_doesnotexist' }], 'task.inputs[0].upload_id'],
      [[{ upload_id: unfinished.upload_id }], 'task.inputs[0].upload_id'],
      [[{ upload_id: finished.upload_id }, { upload_id: unfinished.upload_id }], 'task.inputs[1].upload_id'],
    ];
    for (const [inputs, param] of cases) {
      for (const route of ['/task/start', '/task/start/stream']) {
        const res = await h.request('POST', route, { body: spec(inputs) });
        assert.equal(res.status, 422, `${route} ${JSON.stringify(inputs)}: ${res.text}`);
        assert.equal(res.body.error, 'invalid_request');
        assert.equal(res.body.param, param);
        assert.ok(Array.isArray(res.body.detail) && res.body.detail.length > 0);
        assert.deepEqual(res.body.detail[0].loc, ['body', 'task', 'inputs', Number(/\[(\d+)\]/.exec(param)![1]), 'upload_id']);
      }
    }
    const clientId = await h.request('POST', '/task/start', { body: { ...spec([{ upload_id: 'upl_nope' }]), task_id: 'upload-check-1' } });
    assert.equal(clientId.status, 422);
    assert.equal((await h.request('GET', '/task/upload-check-1')).status, 404, 'the refused create stored nothing');
    const afterList = await h.request('GET', '/task?limit=200');
    assert.equal(afterList.body.length, before.body.length, 'no task was made');
  });

  it('another account\'s upload id is 422 too', async () => {
    const made = await h.request('POST', '/admin/accounts', { key: ADMIN_KEY, body: { name: 'uploader', credits: 10 } });
    assert.equal(made.status, 201, made.text);
    const theirs = await upload(h, 'theirs.txt', 'text/plain', 'their data', made.body.api_key);
    const mine = await h.request('POST', '/task/start', { body: spec([{ upload_id: theirs.upload_id }]) });
    assert.equal(mine.status, 422, mine.text);
    assert.equal(mine.body.param, 'task.inputs[0].upload_id');
    // The owner can use it.
    const own = await h.request('POST', '/task/start', { key: made.body.api_key, body: spec([{ upload_id: theirs.upload_id }]) });
    assert.equal(own.status, 200, own.text);
    const until = Date.now() + 10_000;
    while (Date.now() < until && (await h.request('GET', `/task/${own.body.task_id}/state?wait=5`, { key: made.body.api_key })).body.active);
  });
});

describe('uploads: the connection after a refused oversize body', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ listen: true, model: false });
  });
  after(() => h.close());

  it('a keep-alive connection that carried a refused oversize PUT answers its next request or is closed', async () => {
    const t = await ticket(h, 'big.bin', 'application/octet-stream', 1000);
    const url = new URL(t.upload_url);
    const socket = net.connect(Number(url.port), url.hostname);
    let received = '';
    let closed = false;
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.on('close', () => (closed = true));
    socket.on('error', () => (closed = true));
    try {
      await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      const size = 512 * 1024;
      socket.write(`PUT ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${size}\r\n\r\n`);
      socket.write(Buffer.alloc(size, 120));
      await until('an answer to the oversize PUT, or the close', () => received.includes('}') || closed, { timeoutMs: 5_000 });
      assert.match(received, /^HTTP\/1\.1 413 /, 'the oversize PUT is refused');
      const keepAlive = !/\r\nconnection: close\r\n/i.test(received) && !closed;
      if (keepAlive) {
        // The server kept the connection: then it must answer the next request on it.
        socket.write(`GET /healthz HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
        await until('the connection the 413 kept alive to answer the next request, or to be closed', () => /HTTP\/1\.1 200 /.test(received) || closed, { timeoutMs: 3_000 });
      }
    } finally {
      socket.destroy();
    }
  });

  it('a client that reuses connections (fetch) keeps getting answers after a refused oversize PUT', async () => {
    const t = await ticket(h, 'big.bin', 'application/octet-stream', 1000);
    try {
      const res = await fetch(t.upload_url, { method: 'PUT', headers: t.headers, body: new Uint8Array(crypto.randomBytes(512 * 1024)), signal: AbortSignal.timeout(5_000) });
      assert.equal(res.status, 413);
      await res.text();
    } catch {
      // A closed connection is a fair answer to an oversize body too.
    }
    for (let i = 0; i < 4; i++) {
      let status: number | string;
      try {
        status = (await fetch(`${h.url}/healthz`, { signal: AbortSignal.timeout(3_000) })).status;
      } catch (err) {
        status = String(err);
      }
      assert.equal(status, 200, `request ${i + 1} after the refused upload`);
    }
  });
});

describe('uploads with QUARRY_PUBLIC_URL', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ model: false, env: { QUARRY_PUBLIC_URL: 'https://files.example.test/base' } });
  });
  after(() => h.close());

  it('the upload URL is built on the public URL', async () => {
    const t = await ticket(h, 'a.txt', 'text/plain', 3);
    assert.ok(t.upload_url.startsWith(`https://files.example.test/base/upload/`), t.upload_url);
    // The same path and query work against this server.
    const url = new URL(t.upload_url);
    const res = await h.request('PUT', `${url.pathname.replace(/^\/base/, '')}${url.search}`, { key: null, rawBody: 'abc', headers: t.headers });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.sha256, sha256('abc'));
  });
});
