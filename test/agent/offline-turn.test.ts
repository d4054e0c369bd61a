/**
 * Offline turns (decisions §17.2) through the API: `execute` and `continue` with `offline: true`
 * run against the pages the task already read. The fixture web and the fake search engine count
 * every request, so "nothing was fetched" is a count that did not move; the fake model records the
 * tools it was offered.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeSearch, type FakeSearch } from '../kit/fake-search-server.js';
import { ARTICLE_FACT, startFixtureWeb, type FixtureWeb } from '../kit/fixture-web.js';
import { startHarness, waitIdle, type Harness } from '../kit/harness.js';

describe('an offline turn', () => {
  let web: FixtureWeb;
  let search: FakeSearch;
  let h: Harness;
  let taskId: string;
  let granite: string;
  let sourceId: string;

  before(async () => {
    web = await startFixtureWeb();
    search = await startFakeSearch();
    h = await startHarness({ env: { QUARRY_SEARCH_PROVIDER: 'searxng', QUARRY_SEARCH_URL: search.url, QUARRY_FETCH_ALLOW_PRIVATE: '1' } });
    granite = `${web.url}/articles/granite.html`;
    // A first, online turn searches and reads one page: the evidence the offline turns get.
    h.model!.script(
      { toolCalls: [{ name: 'web_search', arguments: { query: 'granite quarry' } }] },
      { toolCalls: [{ name: 'fetch_url', arguments: { url: granite } }] },
      { text: 'Read the granite page.' },
    );
    const start = await h.request('POST', '/task/start', {
      body: { task: { prompt: 'When did the Rock of Ages quarry open?', tools: ['web_search', 'fetch_url'], outputs: [{ id: 'facts', kind: 'table', columns: [{ name: 'opened', type: 'integer' }] }] } },
    });
    assert.equal(start.status, 200, start.text);
    taskId = start.body.task_id;
    await waitIdle(h, taskId);
    const sources = (await h.request('GET', `/task/${taskId}/sources`)).body.sources as { source_id: string }[];
    assert.equal(sources.length, 1);
    sourceId = sources[0]!.source_id;
  });
  after(async () => {
    await h.close();
    await web.close();
    await search.close();
  });

  const toolNames = (index: number) => (h.model!.requests[index]!.body.tools ?? []).map((t) => t.function.name);
  /** The tool results the model was sent in request `index`, in order. */
  const toolResults = (index: number) => (h.model!.requests[index]!.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content));

  it('offers no web_search, reads fetched pages from their snapshots and fetches nothing', async () => {
    const fetches = web.requests.length;
    const searches = search.requests.length;
    const marble = `${web.url}/articles/marble.html`;
    const first = h.model!.requests.length;
    h.model!.script(
      { toolCalls: [{ name: 'fetch_url', arguments: { url: granite } }, { name: 'fetch_url', arguments: { url: marble } }, { name: 'read_source', arguments: { source_id: sourceId } }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows: [{ opened: 1885 }], sources: [{ url: granite, quote: ARTICLE_FACT }] } }] },
      { text: 'Answered from the stored page.' },
    );
    const res = await h.request('POST', `/task/${taskId}/execute`, { body: { offline: true } });
    assert.equal(res.status, 200, res.text);
    await waitIdle(h, taskId);

    assert.equal(web.requests.length, fetches, 'the fixture web was not asked for anything');
    assert.equal(search.requests.length, searches, 'the search engine was not asked');
    const offered = toolNames(first);
    assert.ok(!offered.includes('web_search'), `web_search is not offered: ${offered}`);
    assert.ok(offered.includes('fetch_url') && offered.includes('read_source'), `fetch_url and read_source are: ${offered}`);
    assert.match(String(h.model!.requests[first]!.body.messages![0]!.content), /This turn is offline/);

    const [stored, never, readBack] = toolResults(first + 1).slice(-3);
    assert.ok(stored!.includes(ARTICLE_FACT), 'a page fetched before is answered from its snapshot');
    assert.ok(stored!.split('\n').includes(`Source: ${sourceId}`), stored);
    assert.match(never!, /offline/);
    assert.match(never!, /never fetched/);
    assert.ok(never!.includes(marble));
    assert.ok(readBack!.includes(ARTICLE_FACT), 'read_source works as usual');

    // The row cites the page read offline: its quote is checked against the same snapshot.
    const rows = await h.request('GET', `/task/${taskId}/output?output=facts`);
    assert.deepEqual(rows.body.rows.at(-1)._sources.map((s: { check: string; source_id: string }) => [s.check, s.source_id]), [['quote_found', sourceId]]);
    const sources = (await h.request('GET', `/task/${taskId}/sources`)).body.sources as unknown[];
    assert.equal(sources.length, 1, 'no snapshot was added');
  });

  it('holds for one turn: a continue with offline, then a turn online again', async () => {
    const first = h.model!.requests.length;
    h.model!.script({ text: 'Offline reply.' }, { text: 'Online reply.' });
    const offline = await h.request('POST', `/task/${taskId}/continue`, { body: { message: 'Check again from what you have.', offline: true } });
    assert.equal(offline.status, 200, offline.text);
    await waitIdle(h, taskId);
    assert.ok(!toolNames(first).includes('web_search'), 'the offline continue offers no web_search');
    const online = await h.request('POST', `/task/${taskId}/continue`, { body: { message: 'Now look further.' } });
    assert.equal(online.status, 200, online.text);
    await waitIdle(h, taskId);
    assert.ok(toolNames(first + 1).includes('web_search'), 'the next turn is online');
  });

  it('a queued continue keeps its offline flag until it runs', async () => {
    const first = h.model!.requests.length;
    // The first turn's model call waits until the second message is queued behind it.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    h.model!.setResponder(async (_body, index) => {
      if (index > first) return { text: 'Offline, queued.' };
      await held;
      return { text: 'Online, held.' };
    });
    const running = await h.request('POST', `/task/${taskId}/continue`, { body: { message: 'Work online.' } });
    assert.equal(running.status, 200, running.text);
    const queued = await h.request('POST', `/task/${taskId}/continue`, { body: { message: 'Then offline.', offline: true } });
    assert.equal(queued.status, 202, queued.text);
    release();
    await waitIdle(h, taskId);
    h.model!.setResponder(null);
    assert.ok(toolNames(first).includes('web_search'));
    assert.ok(!toolNames(first + 1).includes('web_search'), 'the queued offline message ran offline');
  });

  it('refuses an offline that is not a boolean, naming the field', async () => {
    for (const [path, body] of [[`/task/${taskId}/execute`, {}], [`/task/${taskId}/continue`, { message: 'm' }]] as const) {
      const res = await h.request('POST', path, { body: { ...body, offline: 'yes' } });
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.error, 'invalid_request');
      assert.equal(res.body.param, 'offline', res.text);
    }
  });
});
