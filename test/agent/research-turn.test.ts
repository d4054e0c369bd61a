/**
 * Whole research turns through a running server: a scripted model plans, searches, fetches a page,
 * reads an uploaded file and writes rows that cite where each fact came from. The web, the search
 * engine and the model are fakes on loopback; everything between them is the real service.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cacheUsage, startFakeAnthropic, type FakeAnthropic } from '../kit/fake-anthropic-server.js';
import { startFakeSearch, type FakeSearch } from '../kit/fake-search-server.js';
import { ARTICLE_FACT, startFixtureWeb, type FixtureWeb } from '../kit/fixture-web.js';
import { until } from '../kit/bounded-waits.js';
import { startHarness, waitIdle, type Harness } from '../kit/harness.js';
import { putUpload } from '../kit/task-api.js';
import { skipTestWithout } from '../kit/require-tool.js';

describe('a research turn end to end', () => {
  let web: FixtureWeb;
  let search: FakeSearch;
  let h: Harness;

  before(async () => {
    web = await startFixtureWeb();
    search = await startFakeSearch();
    h = await startHarness({
      env: { QUARRY_SEARCH_PROVIDER: 'searxng', QUARRY_SEARCH_URL: search.url, QUARRY_FETCH_ALLOW_PRIVATE: '1' },
    });
  });
  after(async () => {
    await h.close();
    await web.close();
    await search.close();
  });

  /** The text of the tool result the model was sent for its call `callId`. */
  function toolResult(requestIndex: number, name: string): string {
    const messages = h.model!.requests[requestIndex]!.body.messages ?? [];
    const message = [...messages].reverse().find((m) => m.role === 'tool');
    assert.ok(message, `request ${requestIndex} carries the ${name} result`);
    return String(message.content);
  }

  it('plans, searches, fetches and writes cited rows in one turn', async () => {
    const page = `${web.url}/articles/granite.html`;
    h.model!.script(
      { toolCalls: [{ name: 'update_spec', arguments: { outputs: [{ id: 'quarries', kind: 'table', columns: [{ name: 'name', type: 'string', required: true }, { name: 'opened', type: 'integer' }, { name: 'source_url', type: 'url' }] }] } }] },
      { toolCalls: [{ name: 'web_search', arguments: { query: 'oldest granite quarry', max_results: 3 } }] },
      { toolCalls: [{ name: 'fetch_url', arguments: { url: page } }] },
      {
        toolCalls: [{
          name: 'write_rows',
          arguments: { output: 'quarries', rows: [{ name: 'Rock of Ages', opened: 1885, source_url: page }], sources: [{ url: page, title: 'Granite', quote: ARTICLE_FACT, fields: ['name', 'opened'] }] },
        }],
      },
      { text: 'One quarry found, with its source.' },
    );
    const created = await h.request('POST', '/task', { body: { prompt: 'Which granite quarries are oldest?' } });
    assert.equal(created.status, 200);
    const id = created.body.task_id;
    await waitIdle(h, id);

    assert.match(toolResult(2, 'web_search'), /Result 1 for oldest granite quarry/);
    assert.equal(search.requests.length, 1);
    const fetched = toolResult(3, 'fetch_url');
    assert.ok(fetched.includes(ARTICLE_FACT), 'the fetched page reached the model as readable text');
    assert.ok(!fetched.includes('Cookie settings'), 'without the site chrome');

    // The page read is kept as the task's one snapshot, named in the answer to the model.
    const snapshots = (await h.request('GET', `/task/${id}/sources`)).body.sources as { source_id: string; url: string; final_url: string; upload_id: string | null }[];
    assert.deepEqual(snapshots.map((s) => [s.url, s.final_url, s.upload_id]), [[page, page, null]]);
    const sourceId = snapshots[0]!.source_id;
    assert.ok(fetched.split('\n').includes(`Source: ${sourceId}`), 'fetch_url names the snapshot to the model');

    // The quote is in what was fetched: the source is verified and names that snapshot.
    const rows = await h.request('GET', `/task/${id}/output`);
    assert.equal(rows.body.total, 1);
    assert.deepEqual(rows.body.rows[0]._sources, [{ url: page, title: 'Granite', quote: ARTICLE_FACT, fields: ['name', 'opened'], verified: true, check: 'quote_found', source_id: sourceId, supports: { name: true, opened: true } }]);
    assert.deepEqual(rows.body.rows[0]._support, { name: 'supported', opened: 'supported', source_url: 'unchecked' });
    assert.equal(toolResult(4, 'write_rows'), 'Wrote 1 rows to quarries (rows 1-1); 1 of them verified. quarries now has 1 rows.');
    const outputs = (await h.request('GET', `/task/${id}/outputs`)).body.outputs as { id: string; row_count: number; verified_rows: number; unverified_rows: number }[];
    assert.deepEqual(outputs.map((o) => [o.id, o.row_count, o.verified_rows, o.unverified_rows]), [['quarries', 1, 1, 0]]);

    const events = (await h.request('GET', `/task/${id}/events?limit=1000`)).body.events as { type: string; reason?: string; task?: { phase: string }; name?: string; state?: string }[];
    const tools = events.filter((e) => e.type === 'tool' && e.state === 'finished').map((e) => e.name);
    assert.deepEqual(tools, ['update_spec', 'web_search', 'fetch_url', 'write_rows']);
    const phases = events.filter((e) => e.type === 'task').map((e) => e.task!.phase);
    assert.equal(phases[0], 'plan');
    assert.ok(phases.includes('execute'), 'the turn moved from planning to executing');
    assert.deepEqual(events.at(-1), { ...events.at(-1), type: 'done', rows_written: 1, verified_rows: 1, unverified_rows: 0 });
  });

  it('reads an uploaded input and cites it by upload_id', async () => {
    const csv = 'name,country\nCava Fantiscritti,IT\n';
    const ticket = await h.request('POST', '/upload-url', { body: { filename: 'shortlist.csv', content_type: 'text/csv', size_bytes: csv.length } });
    const put = await putUpload(h, ticket.body, csv);
    assert.equal(put.status, 201, put.text);
    const uploadId = ticket.body.upload_id;
    h.model!.script(
      { toolCalls: [{ name: 'read_input', arguments: { upload_id: uploadId } }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'sites', rows: [{ name: 'Cava Fantiscritti', country: 'IT' }], sources: [{ upload_id: uploadId, title: 'shortlist.csv' }] } }] },
      { text: 'Done.' },
    );
    const start = await h.request('POST', '/task/start', {
      body: { task: { prompt: 'Copy the shortlist', inputs: [{ upload_id: uploadId }], outputs: [{ id: 'sites', kind: 'table', columns: [{ name: 'name', type: 'string' }, { name: 'country', type: 'string' }] }] } },
    });
    assert.equal(start.status, 200);
    const before = h.model!.requests.length;
    await waitIdle(h, start.body.task_id);
    assert.match(toolResult(before + 1, 'read_input'), /Cava Fantiscritti,IT/);
    // The input read is kept as a snapshot; cited without a quote, the source counts as read.
    const snapshots = (await h.request('GET', `/task/${start.body.task_id}/sources`)).body.sources as { source_id: string; url: string; upload_id: string | null }[];
    assert.deepEqual(snapshots.map((s) => [s.url, s.upload_id]), [[`upload:${uploadId}`, uploadId]]);
    const rows = await h.request('GET', `/task/${start.body.task_id}/output`);
    assert.deepEqual(rows.body.rows[0]._sources, [{ upload_id: uploadId, title: 'shortlist.csv', verified: true, check: 'page_read', source_id: snapshots[0]!.source_id }]);
  });

  it('refuses to fetch a private address unless the operator allows it', async () => {
    const strict = await startHarness();
    try {
      strict.model!.script({ toolCalls: [{ name: 'fetch_url', arguments: { url: `${web.url}/articles/granite.html` } }] }, { text: 'Could not fetch.' });
      const created = await strict.request('POST', '/task/start', { body: { task: { prompt: 'fetch a loopback page' } } });
      await waitIdle(strict, created.body.task_id);
      const message = [...(strict.model!.requests[1]!.body.messages ?? [])].reverse().find((m) => m.role === 'tool');
      assert.match(String(message?.content), /refused|not allowed|private|loopback/i);
      assert.equal(web.requests.filter((r) => r.path === '/articles/granite.html').length, 1, 'only the first test reached the page');
    } finally {
      await strict.close();
    }
  });
});

describe('run_code in a turn', () => {
  it('computes over an uploaded CSV in the sandbox and loads its result file as rows', async (t) => {
    const h = await startHarness({ env: { QUARRY_SANDBOX: 'bwrap' } });
    t.after(() => h.close());
    const csv = 'part,price\nbolt,0.25\nnut,0.1\ngear,4\n';
    const ticket = await h.request('POST', '/upload-url', { body: { filename: 'parts.csv', content_type: 'text/csv', size_bytes: csv.length } });
    const put = await putUpload(h, ticket.body, csv);
    assert.equal(put.status, 201, put.text);
    const uploadId = ticket.body.upload_id;
    const program = [
      'import csv',
      "rows = list(csv.DictReader(open('/workspace/inputs/parts.csv')))",
      "with open('/workspace/outputs/doubled.csv', 'w') as f:",
      "    f.write('part,price\\n')",
      "    for r in rows: f.write(f\"{r['part']},{float(r['price']) * 2}\\n\")",
      'print(len(rows))',
    ].join('\n');
    h.model!.script(
      { toolCalls: [{ name: 'run_code', arguments: { language: 'python', code: program } }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'prices', from_file: 'doubled.csv', sources: [{ upload_id: uploadId }] } }] },
      { text: 'Doubled.' },
    );
    const start = await h.request('POST', '/task/start', {
      body: { task: { prompt: 'Double the prices', inputs: [{ upload_id: uploadId, name: 'parts.csv' }], outputs: [{ id: 'prices', kind: 'table', columns: [{ name: 'part', type: 'string' }, { name: 'price', type: 'number' }] }] } },
    });
    await waitIdle(h, start.body.task_id, 30_000);
    const toolMessage = [...(h.model!.requests[1]!.body.messages ?? [])].reverse().find((m) => m.role === 'tool');
    if (/not available/.test(String(toolMessage?.content))) return skipTestWithout(t, 'bubblewrap', String(toolMessage?.content));
    assert.match(String(toolMessage?.content), /\b3\b/);
    const rows = await h.request('GET', `/task/${start.body.task_id}/output`);
    assert.deepEqual(rows.body.rows.map((r: { part: string; price: number }) => [r.part, r.price]), [['bolt', 0.5], ['nut', 0.2], ['gear', 8]]);
  });
});

describe('the Anthropic provider, configured by environment', () => {
  let anthropic: FakeAnthropic;
  let h: Harness;

  before(async () => {
    anthropic = await startFakeAnthropic();
    h = await startHarness({ model: false, env: { QUARRY_MODEL_PROVIDER: 'anthropic', QUARRY_MODEL_BASE_URL: anthropic.url, QUARRY_MODEL_API_KEY: 'sk-test', QUARRY_MODEL: 'claude-test' } });
  });
  after(async () => {
    await h.close();
    await anthropic.close();
  });

  it('runs a turn with tool use and streamed text', async () => {
    anthropic.script(
      { toolCalls: [{ name: 'update_spec', input: { name: 'via anthropic', outputs: [{ id: 'notes', kind: 'report' }] } }] },
      { toolCalls: [{ name: 'write_rows', input: { output: 'notes', rows: [{ heading: 'Summary', markdown: 'Granite is old.' }], sources: [{ url: 'https://example.com/g' }] } }] },
      { text: 'Wrote the summary.' },
    );
    const created = await h.request('POST', '/task', { body: { prompt: 'Summarize granite' } });
    await waitIdle(h, created.body.task_id);
    const task = await h.request('GET', `/task/${created.body.task_id}`);
    assert.equal(task.body.name, 'via anthropic');
    const done = task.body.events.at(-1);
    assert.equal(done.type, 'done');
    assert.equal(done.outcome, 'completed');
    assert.deepEqual([done.rows_written, done.verified_rows, done.unverified_rows], [1, 0, 1], 'the page cited was never fetched');
    const text = task.body.events.filter((e: { type: string }) => e.type === 'text').map((e: { text: string }) => e.text).join('');
    assert.match(text, /Wrote the summary/);
    assert.equal(anthropic.requests[0]!.headers['x-api-key'], 'sk-test');
    assert.equal(anthropic.requests[0]!.body.model, 'claude-test');

    // Each request extends the one before; what the fake reported as read from the cache is the turn's tokens_in_cached.
    const cache = new Set<string>();
    const reported = anthropic.requests.map((r) => cacheUsage(r.body, cache));
    const cached = reported.reduce((n, u) => n + u.cache_read_input_tokens, 0);
    assert.ok(reported[0]!.cache_read_input_tokens === 0 && reported.slice(1).every((u) => u.cache_read_input_tokens > 0), JSON.stringify(reported));
    assert.equal(done.tokens_in, reported.reduce((n, u) => n + u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens, 0));
    assert.equal(done.tokens_in_cached, cached);
    assert.equal(done.compactions, 0);
  });
});

describe('turn limits', () => {
  it('a turn running past spec.limits.max_turn_seconds ends with limit_reached and keeps its rows', async (t) => {
    const h = await startHarness();
    t.after(() => h.close());
    h.model!.script(
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'items', rows: [{ name: 'kept' }], sources: [{ url: 'https://example.com/' }] } }] },
      { hang: true },
    );
    const start = await h.request('POST', '/task/start', {
      body: { task: { prompt: 'slow', limits: { max_turn_seconds: 1 }, outputs: [{ id: 'items', kind: 'table', columns: [{ name: 'name', type: 'string' }] }] } },
    });
    await waitIdle(h, start.body.task_id, 15_000);
    const events = (await h.request('GET', `/task/${start.body.task_id}/events?limit=1000`)).body.events as { type: string; error?: string; message?: string; outcome?: string }[];
    const error = events.find((e) => e.type === 'error')!;
    assert.equal(error.error, 'limit_reached');
    assert.match(error.message!, /max_turn_seconds/);
    assert.equal(events.at(-1)!.outcome, 'failed');
    // The model server sees the abandoned call when its connection closes, a moment after the turn ends.
    await until('the hanging model call to be abandoned', () => h.model!.pending() === 0);
    assert.equal((await h.request('GET', `/task/${start.body.task_id}/output`)).body.total, 1);
  });
});
