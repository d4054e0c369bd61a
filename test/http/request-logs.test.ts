/**
 * What a request logs names the request: every line carries its request_id (the X-Request-ID it
 * was answered with), whether the id was the client's or a fresh one, and requests that log
 * nothing write nothing.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { startHarness, type Harness } from '../kit/harness.js';

describe('request logs', () => {
  let h: Harness;
  const lines: Record<string, unknown>[] = [];
  before(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
        callback();
      },
    });
    h = await startHarness({ model: false, logger: pino({ level: 'info' }, sink) });
  });
  after(() => h.close());

  const linesOf = (requestId: string) => lines.filter((l) => l.request_id === requestId);

  it('a refused request logs one line with the request id it was answered with', async () => {
    const res = await h.request('GET', '/task/tsk_unknown/state');
    assert.equal(res.status, 404);
    const id = res.headers.get('x-request-id');
    assert.match(id ?? '', /^req_[0-9a-f]{32}$/);
    assert.equal(res.body.request_id, id);
    const logged = linesOf(id!);
    assert.equal(logged.length, 1, JSON.stringify(lines));
    assert.equal(logged[0]!.msg, 'request refused');
    const err = logged[0]!.err as { code: string; message: string };
    assert.equal(err.code, res.body.error);
    assert.equal(err.message, res.body.message);
  });

  it('the client\'s X-Request-ID names its log lines', async () => {
    const res = await h.request('GET', '/task/tsk_unknown/state', { headers: { 'X-Request-ID': 'client-chosen-1' } });
    assert.equal(res.headers.get('x-request-id'), 'client-chosen-1');
    assert.equal(linesOf('client-chosen-1').length, 1);
  });

  it('an answered poll logs nothing, and each request gets an id of its own', async () => {
    const created = await h.request('POST', '/task', { body: { prompt: 'Logs of a poll.' } });
    const before = lines.length;
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const res = await h.request('GET', `/task/${created.body.task_id as string}/state`);
      assert.equal(res.status, 200);
      ids.add(res.headers.get('x-request-id')!);
    }
    assert.equal(ids.size, 3);
    assert.deepEqual(lines.slice(before).filter((l) => ids.has(l.request_id as string)), []);
  });
});
