/**
 * Bad input is refused with a 422 naming the field, never answered with a 5xx, and the same on
 * SQLite and PostgreSQL (QUARRY_TEST_STORE=postgres): NUL in text (PostgreSQL's text cannot hold
 * it), resume points past the 32-bit `seq`, free-form JSON nested too deep for any walk of it,
 * numbers JSON writes as 1e400 (Infinity), and text limits counted in characters (code points),
 * not UTF-16 units. test/http/bad-input-corpus.test.ts sends a broad corpus; these are the cases one by one.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_KEY, startHarness, type Harness, type TestResponse } from '../kit/harness.js';
import { uid } from '../kit/task-api.js';
import { openSse } from '../kit/sse-client.js';
import { validateRows } from '../../src/domain/row-validation.js';
import type { OutputDecl } from '../../src/contract/index.js';

const NUL = '\u0000';
const EMOJI = '\u{1F600}'; // one character, two UTF-16 units

/** A 422 invalid_request whose `param` is `param`, with the catalogue body around it. */
function expect422(res: TestResponse, param: string): void {
  assert.equal(res.status, 422, `expected 422 naming ${param}, got ${res.status}: ${res.text.slice(0, 300)}`);
  assert.equal(res.body.error, 'invalid_request');
  assert.equal(res.body.param, param, res.text.slice(0, 300));
  assert.equal(res.body.retryable, false);
  assert.equal(res.headers.get('x-request-id'), res.body.request_id);
}

const admin = { key: null, headers: { 'x-api-key': ADMIN_KEY } };
const json = (text: string) => ({ rawBody: text, headers: { 'content-type': 'application/json' } });
const adminJson = (text: string) => ({ key: null, rawBody: text, headers: { 'content-type': 'application/json', 'x-api-key': ADMIN_KEY } });

describe('bad input is a 422 naming the field', () => {
  let h: Harness;
  let taskId: string;
  before(async () => {
    h = await startHarness();
    h.model!.script({ text: 'Planned.' });
    const res = await h.request('POST', '/task/start', { body: { task: { prompt: 'Base task.', outputs: [{ id: 'items', kind: 'table', columns: [{ name: 'a' }] }] } } });
    assert.equal(res.status, 200, res.text);
    taskId = res.body.task_id;
  });
  after(() => h.close());

  it('NUL in any text field of a body', async () => {
    const spec = (task: Record<string, unknown>) => ({ body: { task: { prompt: 'p', ...task } } });
    const table = (column: Record<string, unknown>) => spec({ outputs: [{ id: 'o', kind: 'table', columns: [{ name: 'c', ...column }] }] });
    const cases: [string, string, string, object][] = [
      ['POST', '/task', 'prompt', { body: { prompt: `a${NUL}b` } }],
      ['POST', '/task/start', 'task.name', spec({ name: `a${NUL}` })],
      ['POST', '/task/start', 'task.prompt', spec({ prompt: `a${NUL}` })],
      ['POST', '/task/start', 'task.outputs[0].columns[0].name', table({ name: `c${NUL}` })],
      ['POST', '/task/start', 'task.outputs[0].columns[0].description', table({ description: NUL })],
      ['POST', '/task/start', 'task.outputs[0].path', spec({ outputs: [{ id: 'o', kind: 'report', path: `x${NUL}.md` }] })],
      ['POST', '/task/start', 'task.outputs[0].schema', spec({ outputs: [{ id: 'o', kind: 'records', schema: { properties: { [`k${NUL}`]: { type: 'string' } } } }] })],
      ['POST', '/task/start', 'task.outputs[0].schema', spec({ outputs: [{ id: 'o', kind: 'records', schema: { description: `d${NUL}` } }] })],
      ['POST', '/task/start', 'task.inputs[0].upload_id', spec({ inputs: [{ upload_id: `u${NUL}` }] })],
      ['POST', '/task/start', 'task.schedule.timezone', spec({ schedule: { cron: '0 * * * *', timezone: `UTC${NUL}` } })],
      ['POST', `/task/${taskId}/continue`, 'message', { body: { message: `m${NUL}` } }],
      ['POST', `/task/${taskId}/execute`, 'instruction', { body: { instruction: `i${NUL}` } }],
      ['PATCH', `/task/${taskId}`, 'name', { body: { name: `n${NUL}` } }],
      ['POST', '/upload-url', 'filename', { body: { filename: `f${NUL}.txt`, content_type: 'text/plain', size_bytes: 1 } }],
      ['POST', '/upload-url', 'content_type', { body: { filename: 'f.txt', content_type: `text/plain${NUL}`, size_bytes: 1 } }],
      ['POST', '/admin/accounts', 'name', { ...admin, body: { name: `acct${NUL}`, credits: 1 } }],
    ];
    for (const [method, path, param, opts] of cases) expect422(await h.request(method, path, opts), param);
  });

  it('NUL in path ids and in cursors', async () => {
    for (const path of ['/task/%00', '/task/a%00b/state', '/task/%00/events', '/task/%00/stream', '/task/%00/output', '/task/%00/outputs']) {
      expect422(await h.request('GET', path), 'task_id');
    }
    expect422(await h.request('GET', `/task/${taskId}/outputs/a%00`), 'output_id');
    expect422(await h.request('GET', '/admin/accounts/acct%00', admin), 'account_id');
    expect422(await h.request('DELETE', '/admin/accounts/acct_x/keys/k%00', admin), 'key_id');
    expect422(await h.request('PUT', '/upload/u%00?expires=1&sig=x', { key: null, rawBody: 'x', headers: { 'content-type': 'text/plain' } }), 'upload_id');
    expect422(await h.request('GET', '/task?cursor=%00'), 'cursor');
    // A cursor in the shape the server issues, with NUL inside: refused before it reaches a query.
    const forged = Buffer.from(JSON.stringify([0, '2024-01-01T00:00:00.000Z', `tsk${NUL}`])).toString('base64url');
    expect422(await h.request('GET', `/task?cursor=${forged}`), 'cursor');
  });

  it('resume points beyond the 32-bit sequence number: `after` and Last-Event-ID', async () => {
    for (const after of ['2147483648', '99999999999', '1e400']) {
      expect422(await h.request('GET', `/task/${taskId}/events?after=${after}`), 'after');
      expect422(await h.request('GET', `/task/${taskId}/stream?after=${after}`), 'after');
    }
    const top = await h.request('GET', `/task/${taskId}/events?after=2147483647`);
    assert.equal(top.status, 200, top.text);
    assert.deepEqual(top.body.events, []);
    for (const id of ['2147483648', '99999999999', '9'.repeat(400)]) {
      expect422(await h.request('GET', `/task/${taskId}/stream`, { headers: { 'last-event-id': id } }), 'Last-Event-ID');
    }
  });

  it('a records schema nested deeper than 64 levels is refused before anything walks it', async () => {
    const nested = (depth: number) => `${'{"not":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
    const withSchema = (schema: string) => json(`{"task":{"prompt":"p","outputs":[{"id":"o","kind":"records","schema":${schema}}]}}`);
    // A body that deep is refused as a whole before it is parsed; one within the body's limit by the schema's own.
    expect422(await h.request('POST', '/task/start', withSchema(nested(20_000))), 'body');
    expect422(await h.request('POST', '/task/start', withSchema(nested(65))), 'task.outputs[0].schema');
    h.model!.script({ text: 'Planned.' });
    const ok = await h.request('POST', '/task/start', withSchema(nested(64)));
    assert.equal(ok.status, 200, ok.text.slice(0, 300));
  });

  it('numbers must be finite and within their bounds (1e400 is Infinity)', async () => {
    expect422(await h.request('POST', '/admin/accounts', adminJson('{"name":"big","credits":1e400}')), 'credits');
    const created = await h.request('POST', '/admin/accounts', { ...admin, body: { name: `n-${uid()}`, credits: 5 } });
    assert.equal(created.status, 201, created.text);
    const accountId = created.body.account_id as string;
    for (const amount of ['1e400', '-1e400', '1e300']) {
      expect422(await h.request('POST', `/admin/accounts/${accountId}/credits`, adminJson(`{"amount":${amount}}`)), 'amount');
    }
    const account = await h.request('GET', `/admin/accounts/${accountId}`, admin);
    assert.equal(account.body.balance, 5, 'refused amounts change nothing');

    expect422(await h.request('POST', `/task/${taskId}/continue`, json('{"message":"m","wait":1e400}')), 'wait');
    expect422(await h.request('POST', `/task/${taskId}/execute`, json('{"wait":1e400}')), 'wait');
    expect422(await h.request('POST', '/task/start', json('{"task":{"prompt":"p","limits":{"max_credits_per_turn":1e400}}}')), 'task.limits.max_credits_per_turn');
    expect422(await h.request('POST', '/task/start', json('{"task":{"prompt":"p","outputs":[{"id":"o","kind":"records","schema":{"maximum":1e400}}]}}')), 'task.outputs[0].schema');
    expect422(await h.request('POST', '/upload-url', json('{"filename":"f","content_type":"text/plain","size_bytes":1e400}')), 'size_bytes');
    expect422(await h.request('GET', `/task/${taskId}/output?offset=1e400`), 'offset');
  });
});

describe('text limits count characters (code points), not UTF-16 units', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  it('a prompt of 60,000 emoji is 60,000 characters; 100,001 is one too many', async () => {
    h.model!.script({ text: 'Planned.' });
    const ok = await h.request('POST', '/task', { body: { prompt: EMOJI.repeat(60_000) } });
    assert.equal(ok.status, 200, ok.text.slice(0, 300));
    const tooLong = await h.request('POST', '/task', { body: { prompt: EMOJI.repeat(100_001) } });
    expect422(tooLong, 'prompt');
    assert.match(tooLong.body.message, /got 100001\b/);
    const taskId = ok.body.task_id as string;
    const message = await h.request('POST', `/task/${taskId}/continue`, { body: { message: `${EMOJI.repeat(100_000)}  ` } });
    assert.ok(message.status === 200 || message.status === 202, message.text.slice(0, 300));
  });

  it('row strings: 100,000 emoji fit a string column, and NUL is refused', () => {
    const output: OutputDecl = { id: 'items', kind: 'table', path: 'outputs/items.csv', columns: [{ name: 'text', type: 'string', required: true }] };
    const source = { url: 'https://example.com/' };
    assert.equal(validateRows(output, [{ text: EMOJI.repeat(100_000), _sources: [source] }]).ok, true);
    const long = validateRows(output, [{ text: EMOJI.repeat(100_001), _sources: [source] }]);
    assert.ok(!long.ok && /got 100001\b/.test(long.errors[0]!.message), JSON.stringify(long));
    const nul = validateRows(output, [{ text: `a${NUL}`, _sources: [source] }]);
    assert.ok(!nul.ok && nul.errors[0]!.field === 'text' && /NUL/.test(nul.errors[0]!.message), JSON.stringify(nul));
    const records: OutputDecl = { id: 'recs', kind: 'records', path: 'outputs/recs.jsonl' };
    const deep = JSON.parse(`${'['.repeat(10_000)}${']'.repeat(10_000)}`) as unknown;
    const tooDeep = validateRows(records, [{ value: deep, _sources: [source] }]);
    assert.ok(!tooDeep.ok && /deeper than 64/.test(tooDeep.errors[0]!.message), JSON.stringify(tooDeep).slice(0, 300));
  });
});

describe('a Last-Event-ID past the task\'s last event', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ listen: true });
  });
  after(() => h.close());

  it('is nothing new: the stream of a running task follows it on and ends at its done', async () => {
    h.model!.script({ hang: true });
    const res = await h.request('POST', '/task', { body: { prompt: 'Hang, then be stopped.' } });
    assert.equal(res.status, 200, res.text);
    const taskId = res.body.task_id as string;
    await h.model!.waitForRequests(1);
    const s = await openSse(h.url, `/task/${taskId}/stream`, { key: h.key, headers: { 'last-event-id': '1000000' } });
    try {
      assert.equal(s.status, 200);
      const stopped = await h.request('POST', `/task/${taskId}/stop`, { body: {} });
      assert.equal(stopped.status, 200, stopped.text);
      await s.finished(10_000);
    } finally {
      s.close();
    }
    assert.ok(s.completed, 'the server ended the stream');
    assert.equal(s.events.at(-1)?.event, 'done', JSON.stringify(s.events.map((e) => e.event)));
  });
});
