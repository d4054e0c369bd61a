/**
 * The HTTP contract of interface.md §7 and decisions.md §1, §2, §11: every status and error code,
 * the error body's fields, the headers that go with them, and the order in which refusals are
 * decided. Everything goes over real HTTP against a real Quarry (see test/kit/harness.ts).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_KEY, startHarness, waitIdle, type Harness, type TestResponse } from '../kit/harness.js';
import { createAccount, taskIds, uid, userText, waitIdleAs } from '../kit/task-api.js';
import type { FakeReply, FakeRequestBody } from '../kit/fake-openai-server.js';

// ---- helpers ---------------------------------------------------------------------------------

/** The model hangs for tasks whose prompt says `[hang]`, fails for `[fail]`, else answers "Done.". */
function markerResponder(body: FakeRequestBody): FakeReply {
  const text = userText(body);
  if (text.includes('[hang]')) return { hang: true };
  if (text.includes('[fail]')) return { status: 500, errorMessage: 'upstream exploded' };
  return { text: 'Done.' };
}

/** Checks the one error body of interface §7 and the headers that belong to its status. */
function expectError(res: TestResponse, status: number, code: string, retryable: boolean): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = res.body;
  assert.ok(body && typeof body === 'object', `error body is not JSON: ${res.text}`);
  assert.equal(body.error, code);
  assert.equal(typeof body.message, 'string');
  assert.ok(body.message.length > 0, 'message is empty');
  assert.equal(body.retryable, retryable);
  assert.equal(typeof body.request_id, 'string');
  assert.ok(body.request_id.length > 0);
  assert.equal(res.headers.get('x-request-id'), body.request_id, 'X-Request-ID header and request_id differ');
  if (status === 429 || status === 503) {
    assert.ok(Number.isInteger(body.retry_after) && body.retry_after > 0, `retry_after: ${body.retry_after}`);
    assert.equal(res.headers.get('retry-after'), String(body.retry_after));
  }
  if (status === 401) assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="quarry"');
  if (status === 402) {
    assert.equal(typeof body.resolve, 'string');
    assert.ok(body.resolve.length > 0);
  }
  if (status === 422) {
    assert.equal(typeof body.param, 'string');
    assert.ok(Array.isArray(body.detail) && body.detail.length > 0, `detail: ${JSON.stringify(body.detail)}`);
    for (const d of body.detail) {
      assert.equal(typeof d.type, 'string');
      assert.ok(Array.isArray(d.loc) && d.loc.length > 0);
      assert.equal(typeof d.msg, 'string');
    }
  }
}

/** A 422 naming `param` in `param`, in `message`, and in a `detail` entry at `loc`. */
function expect422(res: TestResponse, param: string, loc: (string | number)[]): void {
  expectError(res, 422, 'invalid_request', false);
  assert.equal(res.body.param, param, `param: ${res.text}`);
  assert.ok(res.body.message.includes(param), `message does not name ${param}: ${res.body.message}`);
  assert.ok(
    res.body.detail.some((d: { loc: unknown[] }) => JSON.stringify(d.loc) === JSON.stringify(loc)),
    `no detail at loc ${JSON.stringify(loc)}: ${JSON.stringify(res.body.detail)}`,
  );
}

function allowOf(res: TestResponse): string[] {
  return (res.headers.get('allow') ?? '').split(',').map((m) => m.trim()).filter(Boolean);
}

async function createTask(h: Harness, prompt: string, extra: Record<string, unknown> = {}, key?: string): Promise<string> {
  const res = await h.request('POST', '/task', { body: { prompt, ...extra }, ...(key ? { key } : {}) });
  assert.equal(res.status, 200, res.text);
  assert.equal(typeof res.body.task_id, 'string');
  return res.body.task_id;
}

// ---- the main server -----------------------------------------------------------------------

describe('health probes of a listening server', () => {
  let h: Harness;
  // Over a socket: /readyz says whether the process listens and runs its workers.
  before(async () => {
    h = await startHarness({ listen: true, model: false });
  });
  after(() => h.close());

  it('GET /healthz and GET /readyz need no key', async () => {
    const health = await h.request('GET', '/healthz', { key: null });
    assert.equal(health.status, 200, health.text);
    const ready = await h.request('GET', '/readyz', { key: null });
    assert.equal(ready.status, 200, ready.text);
  });
});

// Request and answer only from here on: through app.inject(), no socket.
describe('HTTP contract', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
    h.model!.setResponder(markerResponder);
  });
  after(() => h.close());

  describe('health, self-description and OpenAPI', () => {
    it('GET /task/workflow returns the route map', async () => {
      const res = await h.request('GET', '/task/workflow');
      assert.equal(res.status, 200, res.text);
      assert.ok(res.body && typeof res.body === 'object' && !Array.isArray(res.body));
      const text = JSON.stringify(res.body);
      for (const path of ['/task', '/task/{task_id}/continue', '/task/{task_id}/stop', '/task/{task_id}/output']) {
        assert.ok(text.includes(`"${path}"`), `workflow does not mention ${path}`);
      }
    });

    it('GET /task/metaprompt returns the spec schema and a metaprompt', async () => {
      const res = await h.request('GET', '/task/metaprompt');
      assert.equal(res.status, 200, res.text);
      const schema = res.body.spec_schema;
      assert.ok(schema && typeof schema === 'object', 'spec_schema missing');
      assert.ok(schema.properties?.outputs && schema.properties?.prompt && schema.properties?.schedule, 'spec_schema does not describe the spec');
      assert.equal(typeof res.body.metaprompt, 'string');
      assert.ok(res.body.metaprompt.length > 200, 'metaprompt is too short to be useful');
      const kinds = JSON.stringify(res.body);
      for (const kind of ['table', 'report', 'records']) assert.ok(kinds.includes(kind), `output kind ${kind} not described`);
    });

    it('GET /openapi.json is an OpenAPI 3.1 document naming the task routes', async () => {
      const res = await h.request('GET', '/openapi.json');
      assert.equal(res.status, 200, res.text);
      assert.match(String(res.body.openapi), /^3\.1\./);
      assert.equal(typeof res.body.info?.title, 'string');
      assert.equal(typeof res.body.info?.version, 'string');
      const paths = res.body.paths ?? {};
      const expected: [string, string][] = [
        ['/task', 'post'], ['/task', 'get'], ['/task/start', 'post'], ['/task/{task_id}', 'get'], ['/task/{task_id}/state', 'get'],
        ['/task/{task_id}/output', 'get'], ['/task/{task_id}/continue', 'post'], ['/task/{task_id}/execute', 'post'],
        ['/task/{task_id}/stop', 'post'], ['/task/{task_id}/stream', 'get'],
      ];
      for (const [path, method] of expected) assert.ok(paths[path]?.[method], `OpenAPI lacks ${method.toUpperCase()} ${path}`);
    });
  });

  describe('X-Request-ID', () => {
    it('echoes a valid client id on success and on error', async () => {
      const id = 'Client_req.1:a-Z';
      const ok = await h.request('GET', '/task', { headers: { 'x-request-id': id } });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('x-request-id'), id);
      const bad = await h.request('GET', '/task/no-such-task', { headers: { 'x-request-id': id } });
      expectError(bad, 404, 'task_not_found', false);
      assert.equal(bad.body.request_id, id);
    });

    it('echoes a 64-character id', async () => {
      const id = 'a'.repeat(64);
      const res = await h.request('GET', '/nope', { headers: { 'x-request-id': id } });
      expectError(res, 404, 'not_found', false);
      assert.equal(res.body.request_id, id);
    });

    for (const [label, id] of [['65 characters', 'b'.repeat(65)], ['a space', 'has space'], ['a slash', 'a/b'], ['a comma', 'a,b']] as const) {
      it(`replaces an id with ${label} by a new req_ id`, async () => {
        const res = await h.request('GET', '/nope', { headers: { 'x-request-id': id } });
        expectError(res, 404, 'not_found', false);
        assert.notEqual(res.body.request_id, id);
        assert.match(res.body.request_id, /^req_/);
      });
    }

    it('gives every request without one its own new id', async () => {
      const a = await h.request('GET', '/task');
      const b = await h.request('GET', '/task');
      assert.match(a.headers.get('x-request-id') ?? '', /^req_/);
      assert.match(b.headers.get('x-request-id') ?? '', /^req_/);
      assert.notEqual(a.headers.get('x-request-id'), b.headers.get('x-request-id'));
    });
  });

  describe('401 unauthorized', () => {
    it('refuses a request without a key', async () => {
      expectError(await h.request('GET', '/task', { key: null }), 401, 'unauthorized', false);
      expectError(await h.request('POST', '/task', { key: null, body: { prompt: 'x' } }), 401, 'unauthorized', false);
    });

    it('refuses a wrong key in either header form', async () => {
      expectError(await h.request('GET', '/task', { key: 'qry_not-a-real-key' }), 401, 'unauthorized', false);
      expectError(await h.request('GET', '/task', { key: null, headers: { authorization: 'Bearer qry_not-a-real-key' } }), 401, 'unauthorized', false);
      expectError(await h.request('GET', '/task', { key: null, headers: { authorization: `Basic ${h.key}` } }), 401, 'unauthorized', false);
    });

    it('accepts the key as X-API-Key and as Authorization: Bearer', async () => {
      const viaHeader = await h.request('GET', '/task', { key: null, headers: { 'x-api-key': h.key } });
      assert.equal(viaHeader.status, 200, viaHeader.text);
      const viaBearer = await h.request('GET', '/task', { key: null, headers: { authorization: `Bearer ${h.key}` } });
      assert.equal(viaBearer.status, 200, viaBearer.text);
      const created = await h.request('POST', '/task', { key: null, headers: { authorization: `Bearer ${h.key}` }, body: { prompt: 'bearer create' } });
      assert.equal(created.status, 200, created.text);
      await waitIdle(h, created.body.task_id);
    });
  });

  describe('400 invalid_request', () => {
    for (const raw of ['{"prompt": ', 'not json', '{"prompt": "a",}']) {
      it(`refuses a body that is not JSON: ${JSON.stringify(raw)}`, async () => {
        const before = await taskIds(h);
        const res = await h.request('POST', '/task', { rawBody: raw, headers: { 'content-type': 'application/json' } });
        expectError(res, 400, 'invalid_request', false);
        assert.deepEqual(await taskIds(h), before, 'a task was stored');
      });
    }
  });

  describe('415 unsupported_media_type', () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      it(`refuses a body sent as ${type}`, async () => {
        const res = await h.request('POST', '/task', { rawBody: JSON.stringify({ prompt: 'x' }), headers: { 'content-type': type } });
        expectError(res, 415, 'unsupported_media_type', false);
      });
    }

    it('accepts application/json with a charset', async () => {
      const res = await h.request('POST', '/task', { rawBody: JSON.stringify({ prompt: 'charset ok' }), headers: { 'content-type': 'application/json; charset=utf-8' } });
      assert.equal(res.status, 200, res.text);
      await waitIdle(h, res.body.task_id);
    });
  });

  describe('404', () => {
    it('task_not_found for an unknown task on every task route', async () => {
      const id = `missing-${uid()}`;
      const cases: [string, string, unknown?][] = [
        ['GET', `/task/${id}`], ['GET', `/task/${id}/state`], ['GET', `/task/${id}/output`], ['GET', `/task/${id}/outputs`],
        ['GET', `/task/${id}/stream`], ['POST', `/task/${id}/continue`, { message: 'hi' }], ['POST', `/task/${id}/execute`, {}],
        ['POST', `/task/${id}/stop`, {}], ['PATCH', `/task/${id}`, { name: 'x' }], ['DELETE', `/task/${id}`],
      ];
      for (const [method, path, body] of cases) {
        const res = await h.request(method, path, body === undefined ? {} : { body });
        expectError(res, 404, 'task_not_found', false);
      }
    });

    it('task_not_found with task_created: false for a prompt to an unknown task_id', async () => {
      const id = `missing-${uid()}`;
      const res = await h.request('POST', '/task', { body: { prompt: 'hello', task_id: id } });
      expectError(res, 404, 'task_not_found', false);
      assert.equal(res.body.task_created, false);
      assert.equal(res.body.task_id, id);
      expectError(await h.request('GET', `/task/${id}`), 404, 'task_not_found', false);
    });

    it('task_not_found for a long unknown task id (every error uses the one error body)', async () => {
      const id = 'x'.repeat(150);
      expectError(await h.request('GET', `/task/${id}`), 404, 'task_not_found', false);
      expectError(await h.request('POST', `/task/${id}/stop`, { body: {} }), 404, 'task_not_found', false);
    });

    it('a path with broken percent-encoding is refused with the one error body and X-Request-ID', async () => {
      for (const path of ['/task/%zz', '/task/%E0%A4%A/state']) {
        expectError(await h.request('GET', path), 400, 'invalid_request', false);
      }
    });

    it('not_found for a path that does not exist', async () => {
      expectError(await h.request('GET', '/nope'), 404, 'not_found', false);
      expectError(await h.request('POST', '/tasks', { body: { prompt: 'x' } }), 404, 'not_found', false);
      expectError(await h.request('GET', '/task/a/b/c/d'), 404, 'not_found', false);
    });

    it('not_found for an output id the task does not have', async () => {
      const res = await h.request('POST', '/task/start', { body: { task: { prompt: 'with outputs', outputs: [{ id: 'notes', kind: 'report' }] } } });
      assert.equal(res.status, 200, res.text);
      const id = res.body.task_id;
      await waitIdle(h, id);
      expectError(await h.request('GET', `/task/${id}/outputs/zzz`), 404, 'not_found', false);
      expectError(await h.request('GET', `/task/${id}/output?output=zzz`), 404, 'not_found', false);
    });
  });

  describe('405 method_not_allowed', () => {
    it('names the allowed methods in Allow', async () => {
      const put = await h.request('PUT', '/task', { body: {} });
      expectError(put, 405, 'method_not_allowed', false);
      assert.ok(allowOf(put).includes('GET') && allowOf(put).includes('POST'), `Allow: ${put.headers.get('allow')}`);
      assert.ok(!allowOf(put).includes('PUT'));

      const getStop = await h.request('GET', '/task/some-task/stop');
      expectError(getStop, 405, 'method_not_allowed', false);
      assert.deepEqual(allowOf(getStop), ['POST']);

      const postTask = await h.request('POST', '/task/some-task', { body: {} });
      expectError(postTask, 405, 'method_not_allowed', false);
      assert.deepEqual(new Set(allowOf(postTask)), new Set(['DELETE', 'GET', 'PATCH']));

      const deleteHealth = await h.request('DELETE', '/healthz');
      expectError(deleteHealth, 405, 'method_not_allowed', false);
      assert.ok(allowOf(deleteHealth).includes('GET'));
    });
  });

  describe('422 invalid_request (validation)', () => {
    const promptCases: [string, unknown][] = [
      ['missing', {}],
      ['empty', { prompt: '' }],
      ['white space only', { prompt: ' \n\t ' }],
      ['a number', { prompt: 42 }],
      ['null', { prompt: null }],
      ['an array', { prompt: ['a'] }],
      ['100,001 characters', { prompt: 'p'.repeat(100_001) }],
    ];
    for (const [label, body] of promptCases) {
      it(`prompt ${label} on POST /task names prompt`, async () => {
        const before = await taskIds(h);
        expect422(await h.request('POST', '/task', { body }), 'prompt', ['body', 'prompt']);
        assert.deepEqual(await taskIds(h), before, 'a task was stored');
      });
    }

    it('a body that is JSON but not an object is a 422', async () => {
      const res = await h.request('POST', '/task', { rawBody: '"just a string"', headers: { 'content-type': 'application/json' } });
      expectError(res, 422, 'invalid_request', false);
    });

    it('accepts a prompt of exactly 100,000 characters', async () => {
      const exact = await h.request('POST', '/task', { body: { prompt: 'q'.repeat(100_000) } });
      assert.equal(exact.status, 200, exact.text.slice(0, 500));
      await waitIdle(h, exact.body.task_id);
    });

    it('counts the prompt length after trimming (decisions §1)', async () => {
      const padded = await h.request('POST', '/task', { body: { prompt: `  ${'r'.repeat(100_000)}\n` } });
      assert.equal(padded.status, 200, padded.text.slice(0, 500));
      await waitIdle(h, padded.body.task_id);
    });

    for (const [label, taskId] of [['a bad character', 'bad id!'], ['a slash', 'a/b'], ['65 characters', 'x'.repeat(65)], ['empty', '']] as const) {
      it(`task_id with ${label} names task_id`, async () => {
        expect422(await h.request('POST', '/task', { body: { prompt: 'x', task_id: taskId } }), 'task_id', ['body', 'task_id']);
        expect422(await h.request('POST', '/task/start', { body: { task: { prompt: 'x' }, task_id: taskId } }), 'task_id', ['body', 'task_id']);
      });
    }

    it('accepts a client task_id of 64 allowed characters', async () => {
      const id = `Ab0_.:-${uid()}`.padEnd(64, 'z');
      const res = await h.request('POST', '/task/start', { body: { task: { prompt: 'client id' }, task_id: id } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.task_id, id);
      await waitIdle(h, id);
    });

    for (const limit of ['0', '201', 'abc', '-1', '1.5']) {
      it(`GET /task?limit=${limit} names limit`, async () => {
        expect422(await h.request('GET', `/task?limit=${limit}`), 'limit', ['query', 'limit']);
      });
    }

    for (const cursor of ['garbage', Buffer.from('{"a":1}').toString('base64url'), Buffer.from('[2,"x","y"]').toString('base64url')]) {
      it(`GET /task with a malformed cursor ${cursor} names cursor`, async () => {
        expect422(await h.request('GET', `/task?cursor=${cursor}`), 'cursor', ['query', 'cursor']);
      });
    }

    it('wait above 60 or not an integer on GET /task/{task_id} names wait', async () => {
      const id = await createTask(h, 'wait checks');
      await waitIdle(h, id);
      for (const wait of ['61', '1.5', 'soon', '-1']) {
        expect422(await h.request('GET', `/task/${id}?wait=${wait}`), 'wait', ['query', 'wait']);
        expect422(await h.request('GET', `/task/${id}/state?wait=${wait}`), 'wait', ['query', 'wait']);
      }
      const ok = await h.request('GET', `/task/${id}?wait=60`);
      assert.equal(ok.status, 200, ok.text);
    });

    it('output limit 50001 or 0 names limit', async () => {
      const id = await createTask(h, 'limit checks');
      await waitIdle(h, id);
      for (const limit of ['50001', '0']) {
        expect422(await h.request('GET', `/task/${id}/output?limit=${limit}`), 'limit', ['query', 'limit']);
      }
      const ok = await h.request('GET', `/task/${id}/output?limit=50000`);
      assert.equal(ok.status, 200, ok.text);
    });

    it('stop needs no body (interface §4: its request is none)', async () => {
      const id = await createTask(h, 'bodiless stop');
      await waitIdle(h, id);
      const stop = await h.request('POST', `/task/${id}/stop`);
      assert.equal(stop.status, 200, stop.text);
      const stopEmptyJson = await h.request('POST', `/task/${id}/stop`, { rawBody: '', headers: { 'content-type': 'application/json' } });
      assert.equal(stopEmptyJson.status, 200, stopEmptyJson.text);
    });

    it('execute needs no body (its instruction is optional)', async () => {
      const id = await createTask(h, 'bodiless execute');
      await waitIdle(h, id);
      const exec = await h.request('POST', `/task/${id}/execute`);
      assert.equal(exec.status, 200, exec.text);
      await waitIdle(h, id);
      const execEmptyJson = await h.request('POST', `/task/${id}/execute`, { rawBody: '', headers: { 'content-type': 'application/json' } });
      assert.equal(execEmptyJson.status, 200, execEmptyJson.text);
      await waitIdle(h, id);
    });

    it('message and instruction must contain text', async () => {
      const id = await createTask(h, 'message checks');
      await waitIdle(h, id);
      expect422(await h.request('POST', `/task/${id}/continue`, { body: {} }), 'message', ['body', 'message']);
      expect422(await h.request('POST', `/task/${id}/continue`, { body: { message: '   ' } }), 'message', ['body', 'message']);
      expect422(await h.request('POST', `/task/${id}/continue`, { body: { message: 7 } }), 'message', ['body', 'message']);
      expect422(await h.request('POST', `/task/${id}/execute`, { body: { instruction: '' } }), 'instruction', ['body', 'instruction']);
      const state = await h.request('GET', `/task/${id}/state`);
      assert.equal(state.body.active, false, 'a refused message started a turn');
    });

    const table = (columns: unknown[]) => ({ id: 'makers', kind: 'table', columns });
    const specCases: [string, Record<string, unknown>, string, (string | number)[]][] = [
      ['duplicate output ids', { prompt: 'x', outputs: [{ id: 'a', kind: 'report' }, { id: 'a', kind: 'report' }] }, 'task.outputs[1].id', ['body', 'task', 'outputs', 1, 'id']],
      ['a table without columns', { prompt: 'x', outputs: [{ id: 't', kind: 'table' }] }, 'task.outputs[0].columns', ['body', 'task', 'outputs', 0, 'columns']],
      ['a column starting with _', { prompt: 'x', outputs: [table([{ name: 'ok' }, { name: '_row' }])] }, 'task.outputs[0].columns[1].name', ['body', 'task', 'outputs', 0, 'columns', 1, 'name']],
      ['an unknown column type', { prompt: 'x', outputs: [table([{ name: 'n', type: 'float' }])] }, 'task.outputs[0].columns[0].type', ['body', 'task', 'outputs', 0, 'columns', 0, 'type']],
      ['an output id with capitals', { prompt: 'x', outputs: [{ id: 'Bad', kind: 'report' }] }, 'task.outputs[0].id', ['body', 'task', 'outputs', 0, 'id']],
      ['an unknown output kind', { prompt: 'x', outputs: [{ id: 'a', kind: 'chart' }] }, 'task.outputs[0].kind', ['body', 'task', 'outputs', 0, 'kind']],
      ['a cron of two fields', { prompt: 'x', schedule: { cron: 'every monday' } }, 'task.schedule.cron', ['body', 'task', 'schedule', 'cron']],
      ['a cron with an out-of-range minute', { prompt: 'x', schedule: { cron: '99 * * * *' } }, 'task.schedule.cron', ['body', 'task', 'schedule', 'cron']],
      ['an unknown time zone', { prompt: 'x', schedule: { cron: '0 7 * * 1', timezone: 'Mars/Olympus_Mons' } }, 'task.schedule.timezone', ['body', 'task', 'schedule', 'timezone']],
      ['an unknown task type', { prompt: 'x', type: 'shopping' }, 'task.type', ['body', 'task', 'type']],
    ];
    for (const [label, spec, param, loc] of specCases) {
      it(`a spec with ${label} names ${param} and stores nothing`, async () => {
        const id = `bad-spec-${uid()}`;
        expect422(await h.request('POST', '/task/start', { body: { task: spec, task_id: id } }), param, loc);
        expectError(await h.request('GET', `/task/${id}`), 404, 'task_not_found', false);
      });
    }

    it('Idempotency-Key reused with a different body names Idempotency-Key', async () => {
      const key = `idem-${uid()}`;
      const first = await h.request('POST', '/task', { headers: { 'idempotency-key': key }, body: { prompt: 'first body' } });
      assert.equal(first.status, 200, first.text);
      await waitIdle(h, first.body.task_id);
      const before = await taskIds(h);
      const res = await h.request('POST', '/task', { headers: { 'idempotency-key': key }, body: { prompt: 'another body' } });
      expect422(res, 'Idempotency-Key', ['header', 'Idempotency-Key']);
      assert.deepEqual(await taskIds(h), before, 'a task was stored');
    });

    it('an Idempotency-Key longer than 128 characters names Idempotency-Key', async () => {
      const res = await h.request('POST', '/task', { headers: { 'idempotency-key': 'k'.repeat(129) }, body: { prompt: 'x' } });
      expect422(res, 'Idempotency-Key', ['header', 'Idempotency-Key']);
    });
  });

  describe('Idempotency-Key', () => {
    it('the same key and body answers with the first response and creates no second task', async () => {
      const key = `idem-${uid()}`;
      const before = await taskIds(h);
      const first = await h.request('POST', '/task', { headers: { 'idempotency-key': key }, body: { prompt: 'only once' } });
      assert.equal(first.status, 200, first.text);
      await waitIdle(h, first.body.task_id);
      const again = await h.request('POST', '/task', { headers: { 'idempotency-key': key }, body: { prompt: 'only once' } });
      assert.equal(again.status, first.status);
      assert.equal(again.body.task_id, first.body.task_id);
      assert.deepEqual(again.body, first.body, 'the replay is not the first response');
      const afterIds = await taskIds(h);
      assert.equal(afterIds.length, before.length + 1, 'the replay created a task');
    });

    it('works on /task/start and continue too', async () => {
      const key = `idem-${uid()}`;
      const spec = { task: { prompt: 'idempotent start' } };
      const first = await h.request('POST', '/task/start', { headers: { 'idempotency-key': key }, body: spec });
      assert.equal(first.status, 200, first.text);
      const id = first.body.task_id;
      await waitIdle(h, id);
      const again = await h.request('POST', '/task/start', { headers: { 'idempotency-key': key }, body: spec });
      assert.equal(again.body.task_id, id);

      const msgKey = `idem-${uid()}`;
      const msg = await h.request('POST', `/task/${id}/continue`, { headers: { 'idempotency-key': msgKey }, body: { message: 'more please' } });
      assert.equal(msg.status, 200, msg.text);
      await waitIdle(h, id);
      const turnsBefore = (await h.request('GET', `/task/${id}`)).body.events.filter((e: { type: string }) => e.type === 'done').length;
      const msgAgain = await h.request('POST', `/task/${id}/continue`, { headers: { 'idempotency-key': msgKey }, body: { message: 'more please' } });
      assert.equal(msgAgain.status, 200, msgAgain.text);
      const detail = await h.request('GET', `/task/${id}`);
      assert.equal(detail.body.status, 'plan', 'the replayed continue started a turn');
      assert.equal(detail.body.events.filter((e: { type: string }) => e.type === 'done').length, turnsBefore, 'the replayed continue ran a turn');
    });

    it('the same key from another account is that account\'s own request', async () => {
      const other = await createAccount(h, `idem-other-${uid()}`, 10);
      const key = `idem-${uid()}`;
      const mine = await h.request('POST', '/task', { headers: { 'idempotency-key': key }, body: { prompt: 'shared key' } });
      assert.equal(mine.status, 200, mine.text);
      const theirs = await h.request('POST', '/task', { key: other.api_key, headers: { 'idempotency-key': key }, body: { prompt: 'shared key' } });
      assert.equal(theirs.status, 200, theirs.text);
      assert.notEqual(theirs.body.task_id, mine.body.task_id, 'another account got this account\'s task');
      await waitIdle(h, mine.body.task_id);
      await waitIdleAs(h, theirs.body.task_id, other.api_key);
    });
  });

  describe('402 out_of_credits', () => {
    it('a create with no credits stores nothing and says task_created: false', async () => {
      const broke = await createAccount(h, `broke-${uid()}`, 0);
      const res = await h.request('POST', '/task', { key: broke.api_key, body: { prompt: 'anything' } });
      expectError(res, 402, 'out_of_credits', false);
      assert.equal(res.body.task_created, false);
      assert.equal(res.body.resolve, 'https://platform.quarry.invalid/credits');
      assert.deepEqual(await taskIds(h, broke.api_key), [], 'a refused create stored a task');

      const id = `broke-${uid()}`;
      const start = await h.request('POST', '/task/start', { key: broke.api_key, body: { task: { prompt: 'spec' }, task_id: id } });
      expectError(start, 402, 'out_of_credits', false);
      assert.equal(start.body.task_created, false);
      expectError(await h.request('GET', `/task/${id}`, { key: broke.api_key }), 404, 'task_not_found', false);
      assert.deepEqual(await taskIds(h, broke.api_key), []);

      // The id was never taken: with credits the same create succeeds.
      const topUp = await h.request('POST', `/admin/accounts/${broke.account_id}/credits`, { key: ADMIN_KEY, body: { amount: 5 } });
      assert.equal(topUp.status, 200, topUp.text);
      const retry = await h.request('POST', '/task/start', { key: broke.api_key, body: { task: { prompt: 'spec' }, task_id: id } });
      assert.equal(retry.status, 200, retry.text);
      await waitIdleAs(h, id, broke.api_key);
    });

    it('a message or execute with no credits starts no turn and the task stays in plan', async () => {
      const acct = await createAccount(h, `drained-${uid()}`, 5);
      const id = await createTask(h, 'will run dry', {}, acct.api_key);
      await waitIdleAs(h, id, acct.api_key);
      const drain = await h.request('POST', `/admin/accounts/${acct.account_id}/credits`, { key: ADMIN_KEY, body: { amount: -1000 } });
      assert.equal(drain.status, 200, drain.text);

      const cont = await h.request('POST', `/task/${id}/continue`, { key: acct.api_key, body: { message: 'go on' } });
      expectError(cont, 402, 'out_of_credits', false);
      const exec = await h.request('POST', `/task/${id}/execute`, { key: acct.api_key, body: {} });
      expectError(exec, 402, 'out_of_credits', false);
      const viaPrompt = await h.request('POST', '/task', { key: acct.api_key, body: { prompt: 'go on', task_id: id } });
      expectError(viaPrompt, 402, 'out_of_credits', false);

      const state = await h.request('GET', `/task/${id}/state`, { key: acct.api_key });
      assert.equal(state.body.active, false);
      assert.equal(state.body.status, 'plan');
      assert.equal(state.body.queued_messages, 0);
    });
  });

  describe('409', () => {
    it('task_executing: execute while a turn runs, and a message when the queue is full', async () => {
      const id = await createTask(h, '[hang] keep running');
      try {
        const exec = await h.request('POST', `/task/${id}/execute`, { body: {} });
        expectError(exec, 409, 'task_executing', true);

        for (let i = 0; i < 16; i++) {
          const queued = await h.request('POST', `/task/${id}/continue`, { body: { message: `queued ${i}` } });
          assert.equal(queued.status, 202, queued.text);
          assert.equal(queued.body.status, 'accepted');
        }
        const full = await h.request('POST', `/task/${id}/continue`, { body: { message: 'one too many' } });
        expectError(full, 409, 'task_executing', true);
        const viaPrompt = await h.request('POST', '/task', { body: { prompt: 'one too many', task_id: id } });
        expectError(viaPrompt, 409, 'task_executing', true);
        const state = await h.request('GET', `/task/${id}/state`);
        assert.equal(state.body.queued_messages, 16);
      } finally {
        const stop = await h.request('POST', `/task/${id}/stop`, { body: { clear_queue: true } });
        assert.equal(stop.status, 200, stop.text);
      }
      await waitIdle(h, id);
    });

    it('task_in_cron_mode wins over task_executing and holds when idle', async () => {
      const res = await h.request('POST', '/task/start', { body: { task: { prompt: '[hang] weekly', schedule: { cron: '0 7 * * 1', timezone: 'Europe/Berlin' } } } });
      assert.equal(res.status, 200, res.text);
      const id = res.body.task_id;
      try {
        assert.equal(res.body.status, 'execute', 'the create did not run the first turn');
        expectError(await h.request('POST', `/task/${id}/continue`, { body: { message: 'more' } }), 409, 'task_in_cron_mode', false);
        expectError(await h.request('POST', `/task/${id}/execute`, { body: {} }), 409, 'task_in_cron_mode', false);
        expectError(await h.request('POST', '/task', { body: { prompt: 'more', task_id: id } }), 409, 'task_in_cron_mode', false);
        const stop = await h.request('POST', `/task/${id}/stop`, { body: {} });
        assert.equal(stop.status, 200, stop.text);
        await waitIdle(h, id);
        expectError(await h.request('POST', `/task/${id}/continue`, { body: { message: 'more' } }), 409, 'task_in_cron_mode', false);
        expectError(await h.request('POST', `/task/${id}/execute`, { body: {} }), 409, 'task_in_cron_mode', false);
      } finally {
        await h.request('DELETE', `/task/${id}`);
      }
    });

    it('task_exists: a create under an existing task_id', async () => {
      const id = `exists-${uid()}`;
      const first = await h.request('POST', '/task/start', { body: { task: { prompt: 'original' }, task_id: id } });
      assert.equal(first.status, 200, first.text);
      await waitIdle(h, id);
      const again = await h.request('POST', '/task/start', { body: { task: { prompt: 'copy' }, task_id: id } });
      expectError(again, 409, 'task_exists', false);
      assert.equal(again.body.task_id, id);
      const detail = await h.request('GET', `/task/${id}`);
      assert.equal(detail.body.spec.prompt, 'original', 'the refused create changed the task');
    });
  });

  describe('502 bad_gateway', () => {
    it('a failing model provider ends the turn with a retryable bad_gateway error', async () => {
      const id = await createTask(h, '[fail] the model is down');
      await waitIdle(h, id);
      const detail = await h.request('GET', `/task/${id}`);
      assert.equal(detail.status, 200, detail.text);
      const error = detail.body.events.find((e: { type: string }) => e.type === 'error');
      assert.ok(error, `no error event: ${JSON.stringify(detail.body.events)}`);
      assert.equal(error.error, 'bad_gateway');
      assert.equal(error.retryable, true);
      assert.equal(typeof error.message, 'string');
      const done = detail.body.events.find((e: { type: string }) => e.type === 'done');
      assert.equal(done?.outcome, 'failed');
      assert.equal(detail.body.status, 'plan');
      assert.equal(detail.body.activity, 'idle');
    });
  });

  describe('refusal order (decisions §11)', () => {
    it('404 and 405 come before 401', async () => {
      expectError(await h.request('GET', '/nope', { key: null }), 404, 'not_found', false);
      expectError(await h.request('PUT', '/task', { key: null, body: {} }), 405, 'method_not_allowed', false);
      expectError(await h.request('GET', '/task/x/continue', { key: 'qry_bad' }), 405, 'method_not_allowed', false);
    });

    it('401 comes before 415 and 400', async () => {
      expectError(await h.request('POST', '/task', { key: null, rawBody: 'prompt=x', headers: { 'content-type': 'text/plain' } }), 401, 'unauthorized', false);
      expectError(await h.request('POST', '/task', { key: 'qry_bad', rawBody: '{oops', headers: { 'content-type': 'application/json' } }), 401, 'unauthorized', false);
      expectError(await h.request('POST', '/task', { key: null, body: {} }), 401, 'unauthorized', false);
    });

    it('415 comes before 400 and 422', async () => {
      expectError(await h.request('POST', '/task', { rawBody: '{oops', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type', false);
      expectError(await h.request('POST', '/task', { rawBody: '{}', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type', false);
    });

    it('400 comes before 422', async () => {
      // An over-long Idempotency-Key is a 422, but a body that is not JSON is found first.
      const headers = { 'content-type': 'application/json', 'idempotency-key': 'k'.repeat(129) };
      expectError(await h.request('POST', '/task', { rawBody: '{"prompt": "x"', headers }), 400, 'invalid_request', false);
      expectError(await h.request('POST', '/task', { rawBody: '{"prompt": 42,', headers: { 'content-type': 'application/json' } }), 400, 'invalid_request', false);
    });

    it('422 comes before the route (no task is looked up)', async () => {
      expect422(await h.request('POST', `/task/missing-${uid()}/continue`, { body: { message: '' } }), 'message', ['body', 'message']);
    });
  });
});

// ---- a small body limit ------------------------------------------------------------------------

describe('413 payload_too_large (QUARRY_MAX_BODY_BYTES=2048)', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ model: false, env: { QUARRY_MAX_BODY_BYTES: '2048' } });
  });
  after(() => h.close());

  it('refuses a body over the limit on create, start and continue', async () => {
    const big = 'x'.repeat(4000);
    expectError(await h.request('POST', '/task', { body: { prompt: big } }), 413, 'payload_too_large', false);
    expectError(await h.request('POST', '/task/start', { body: { task: { prompt: big } } }), 413, 'payload_too_large', false);
    expectError(await h.request('POST', '/task/anything/continue', { body: { message: big } }), 413, 'payload_too_large', false);
    assert.deepEqual(await taskIds(h), []);
  });

  it('accepts a body under the limit', async () => {
    const res = await h.request('POST', '/task', { body: { prompt: 'y'.repeat(1500) } });
    assert.equal(res.status, 200, res.text);
    await waitIdle(h, res.body.task_id);
  });

  it('405 and 401 come before 413', async () => {
    const big = JSON.stringify({ prompt: 'x'.repeat(4000) });
    expectError(await h.request('PUT', '/task', { rawBody: big, headers: { 'content-type': 'application/json' } }), 405, 'method_not_allowed', false);
    expectError(await h.request('POST', '/task', { key: null, rawBody: big, headers: { 'content-type': 'application/json' } }), 401, 'unauthorized', false);
  });

  it('415 comes before 413', async () => {
    const big = JSON.stringify({ prompt: 'x'.repeat(4000) });
    expectError(await h.request('POST', '/task', { rawBody: big, headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type', false);
  });

  it('413 comes before 400 and 422', async () => {
    const notJson = `{"prompt": "${'x'.repeat(4000)}`;
    expectError(await h.request('POST', '/task', { rawBody: notJson, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large', false);
    const invalid = JSON.stringify({ prompt: 42, padding: 'x'.repeat(4000) });
    expectError(await h.request('POST', '/task', { rawBody: invalid, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large', false);
  });
});

// ---- a small rate limit ------------------------------------------------------------------------

describe('429 rate_limited (QUARRY_RATE_LIMIT_PER_MIN=3)', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ model: false, env: { QUARRY_RATE_LIMIT_PER_MIN: '3' } });
  });
  after(() => h.close());

  it('refuses the fourth request within a minute, per key, with retry_after and Retry-After', async () => {
    for (let i = 0; i < 3; i++) {
      const ok = await h.request('GET', '/task');
      assert.equal(ok.status, 200, `request ${i + 1}: ${ok.text}`);
    }
    const limited = await h.request('GET', '/task');
    expectError(limited, 429, 'rate_limited', true);
    assert.ok(limited.body.retry_after <= 60, `retry_after ${limited.body.retry_after} is more than a minute`);

    // 429 comes before 415, 400 and 422 (decisions §11).
    expectError(await h.request('POST', '/task', { rawBody: 'x', headers: { 'content-type': 'text/plain' } }), 429, 'rate_limited', true);
    expectError(await h.request('POST', '/task', { rawBody: '{oops', headers: { 'content-type': 'application/json' } }), 429, 'rate_limited', true);
    expectError(await h.request('POST', '/task', { body: {} }), 429, 'rate_limited', true);
    // ... and after 404/405 and 401.
    expectError(await h.request('PUT', '/task', { body: {} }), 405, 'method_not_allowed', false);
    expectError(await h.request('GET', '/task', { key: null }), 401, 'unauthorized', false);
    expectError(await h.request('GET', '/task', { key: 'qry_wrong' }), 401, 'unauthorized', false);

    // The limit is per key: another account's key is not limited.
    const other = await createAccount(h, 'other', 10);
    const fresh = await h.request('GET', '/task', { key: other.api_key });
    assert.equal(fresh.status, 200, fresh.text);
  });

  it('health probes are not limited', async () => {
    for (let i = 0; i < 5; i++) assert.equal((await h.request('GET', '/healthz', { key: null })).status, 200);
  });
});

// ---- capacity ------------------------------------------------------------------------------------

describe('503 at_capacity (QUARRY_MAX_CONCURRENT_TURNS=1, QUARRY_MAX_PENDING_TURNS=1)', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { QUARRY_MAX_CONCURRENT_TURNS: '1', QUARRY_MAX_PENDING_TURNS: '1' } });
    h.model!.setResponder(() => ({ hang: true }));
  });
  after(() => h.close());

  it('refuses a new turn when too many wait, with retry_after and Retry-After', async () => {
    const running = await createTask(h, 'runs and hangs');
    await h.model!.waitForRequests(1, 10_000); // the first turn holds the one slot
    const waiting = await createTask(h, 'waits for the slot');
    const before = await taskIds(h);

    const refused = await h.request('POST', '/task', { body: { prompt: 'one more' } });
    expectError(refused, 503, 'at_capacity', true);
    const refusedStart = await h.request('POST', '/task/start', { body: { task: { prompt: 'one more' }, task_id: 'cap-refused' } });
    expectError(refusedStart, 503, 'at_capacity', true);
    assert.deepEqual(await taskIds(h), before, 'a refused create stored a task');
    expectError(await h.request('GET', '/task/cap-refused'), 404, 'task_not_found', false);

    // A message to a running task is queued, not a new turn: no capacity needed.
    const queued = await h.request('POST', `/task/${running}/continue`, { body: { message: 'later' } });
    assert.equal(queued.status, 202, queued.text);

    const state = await h.request('GET', `/task/${waiting}/state`);
    assert.equal(state.body.active, true);
    assert.equal(h.model!.requests.length, 1, 'the waiting turn ran although the one slot was taken');
  });
});

// ---- store failures (injected) ------------------------------------------------------------------

describe('store failures: 500 internal_error and 503 service_unavailable / auth_unavailable', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  /** A database that cannot answer right now, as the SQLite driver reports it. */
  const busy = (method: string) => Object.assign(new Error(`injected ${method} failure SECRET-INTERNALS: database is locked`), { code: 'SQLITE_BUSY' });
  /** A failure that is a bug, not a busy database. */
  const bug = (method: string) => new TypeError(`injected ${method} failure SECRET-INTERNALS`);

  /**
   * Makes one store method (`transaction`, or `<repository>.<method>` as in `tasks.get`) throw
   * for the duration of `fn` (fault injection through the harness: these failures cannot be
   * caused over HTTP; what is checked is the HTTP answer).
   */
  async function failing<T>(method: string, make: (method: string) => Error, fn: () => Promise<T>): Promise<T> {
    const path = method.split('.');
    let owner = h.quarry.store as unknown as Record<string, unknown>;
    for (const part of path.slice(0, -1)) owner = owner[part] as Record<string, unknown>;
    const name = path.at(-1)!;
    const original = owner[name];
    assert.equal(typeof original, 'function', `the store has no ${method}`);
    owner[name] = async () => {
      throw make(method);
    };
    try {
      return await fn();
    } finally {
      owner[name] = original;
    }
  }

  it('key verification down is 503 auth_unavailable', async () => {
    const res = await failing('accounts.findKeyByHash', busy, () => h.request('GET', '/task', { key: `qry_never-seen-${uid()}` }));
    expectError(res, 503, 'auth_unavailable', true);
    assert.ok(!res.text.includes('SECRET-INTERNALS'));
  });

  it('task state that cannot be read is 503 service_unavailable, not task_not_found', async () => {
    const id = await createTask(h, 'readable later');
    await waitIdle(h, id);
    const detail = await failing('tasks.get', busy, () => h.request('GET', `/task/${id}`));
    expectError(detail, 503, 'service_unavailable', true);
    const state = await failing('tasks.getState', busy, () => h.request('GET', `/task/${id}/state`));
    expectError(state, 503, 'service_unavailable', true);
    const stream = await failing('tasks.get', busy, () => h.request('GET', `/task/${id}/stream`));
    expectError(stream, 503, 'service_unavailable', true);
    assert.ok(!detail.text.includes('SECRET-INTERNALS'));
    assert.equal((await h.request('GET', `/task/${id}`)).status, 200);
  });

  it('a task list that cannot be read is 503 service_unavailable (interface §7: list returns 401, 422, 503)', async () => {
    const res = await failing('tasks.listPage', busy, () => h.request('GET', '/task'));
    expectError(res, 503, 'service_unavailable', true);
    assert.ok(!res.text.includes('SECRET-INTERNALS'));
  });

  it('a busy store on a create is 503 service_unavailable and stores nothing', async () => {
    const before = await taskIds(h);
    const res = await failing('transaction', busy, () => h.request('POST', '/task', { body: { prompt: 'store busy' } }));
    expectError(res, 503, 'service_unavailable', true);
    assert.ok(!res.text.includes('SECRET-INTERNALS'), `the 503 leaks internals: ${res.text}`);
    assert.deepEqual(await taskIds(h), before);
  });

  it('an unexpected failure (a bug) before a create is 500 internal_error without task_id or internals', async () => {
    const before = await taskIds(h);
    const res = await failing('transaction', bug, () => h.request('POST', '/task', { body: { prompt: 'doomed' } }));
    expectError(res, 500, 'internal_error', true);
    assert.equal(res.body.task_id, undefined);
    assert.ok(!res.text.includes('SECRET-INTERNALS'), `the 500 leaks internals: ${res.text}`);
    assert.ok(!/\bat .+:\d+:\d+/.test(res.text), `the 500 carries a stack: ${res.text}`);
    assert.deepEqual(await taskIds(h), before);
  });

  it('an unexpected failure (a bug) after a create is 500 internal_error carrying the created task_id', async () => {
    const before = new Set(await taskIds(h));
    const res = await failing('idempotency.put', bug, () => h.request('POST', '/task', { headers: { 'idempotency-key': `k-${uid()}` }, body: { prompt: 'created then failed' } }));
    const created = (await taskIds(h)).filter((id) => !before.has(id));
    assert.equal(created.length, 1, 'the create did not happen');
    expectError(res, 500, 'internal_error', true);
    assert.ok(!res.text.includes('SECRET-INTERNALS'), `the 500 leaks internals: ${res.text}`);
    assert.equal(res.body.task_id, created[0], 'decisions §11: when a task was already created the 500 carries its task_id');
    await waitIdle(h, created[0]!);
  });
});
