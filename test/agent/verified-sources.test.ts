/**
 * Verified sources (decisions §15.1) through the real HTTP API: a scripted fake model fetches
 * pages from a loopback web server (QUARRY_FETCH_ALLOW_PRIVATE=1) and reads uploaded inputs,
 * then writes rows whose sources the server checks against the snapshots of what was read. The
 * tests read back what a user sees: each source's `check`, `verified` and `source_id`, the
 * snapshots (GET /task/{id}/sources), `_basis`, the output listing's counts and the exports, and
 * what the model itself was told (tool messages in its next request).
 *
 * Source policy and host names: a `lookup` option cannot be set over HTTP, so the policy cases
 * use two names that really reach the one loopback server: `localhost` (resolved by the system,
 * /etc/hosts) and the literal `127.0.0.1`. To the policy they are different hosts, exactly as
 * two domains would be; the page server records every request, so "the target got no request"
 * is observed, not assumed.
 *
 * The last part kills a real `quarry serve` (from the build) with QUARRY_CRASH_AT=rows.appended
 * and restarts it: the replayed fetch keeps one snapshot and the row's verdicts stay intact.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply, type FakeRequestBody } from '../kit/fake-openai-server.js';
import { startLoopbackServer, type LoopbackServer } from '../kit/loopback-server.js';
import { startFakeSearch, type FakeSearch } from '../kit/fake-search-server.js';
import { within } from '../kit/bounded-waits.js';
import { startHarness, waitIdle, ADMIN_KEY, type Harness } from '../kit/harness.js';
import { fetchJson, waitIdle as waitIdleOn, type TestResponse } from '../kit/http.js';
import { dropSchemas, testStoreEnv } from '../kit/postgres.js';
import { makeDataDir, removeDataDir, startServer, type ServerProcess } from '../kit/process.js';
import { createAccount, putUpload, taskEvents } from '../kit/task-api.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

// ---- the fake model: replies scripted per case ---------------------------------------------------

/** A reply, or one made from the request (e.g. to quote what a tool returned). */
type Step = FakeReply | ((body: FakeRequestBody) => FakeReply);

interface Case {
  /** Per turn (the user messages sent so far, less one), the replies in order. */
  turns: Step[][];
  /** Every request of this case, in order. */
  requests: FakeRequestBody[];
}

/**
 * Answers each request by the `[case:<id>]` marker in its first user message: turn = user
 * messages less one, reply = assistant messages since the last user message. Cases are then
 * independent of each other and of the order of the tests.
 */
class Scripts {
  private readonly cases = new Map<string, Case>();
  private next = 0;

  constructor(model: FakeOpenAI) {
    model.setResponder((body) => this.respond(body));
  }

  add(turns: Step[][]): { id: string; c: Case } {
    const id = `c${++this.next}`;
    const c: Case = { turns, requests: [] };
    this.cases.set(id, c);
    return { id, c };
  }

  private respond(body: FakeRequestBody): FakeReply {
    const messages = body.messages ?? [];
    const users = messages.flatMap((m, i) => (m.role === 'user' ? [i] : []));
    const first = users.length > 0 ? String(messages[users[0]!]!.content) : '';
    const c = this.cases.get(/\[case:(\w+)\]/.exec(first)?.[1] ?? '');
    if (!c) return { text: 'No script for this task.' };
    c.requests.push(body);
    const turn = users.length - 1;
    const reply = messages.slice(users.at(-1)! + 1).filter((m) => m.role === 'assistant').length;
    const step = c.turns[turn]?.[reply] ?? { text: 'Done.' };
    return typeof step === 'function' ? step(body) : step;
  }
}

function call(name: string, args: unknown): FakeReply {
  return { toolCalls: [{ name, arguments: args }] };
}

/** The tool messages of one request, in order. */
function toolMessages(body: FakeRequestBody): string[] {
  return (body.messages ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content));
}

/** The last tool message of one request: the result of the call before it. */
function lastTool(body: FakeRequestBody | undefined): string {
  assert.ok(body, 'the model was asked again after the tool call');
  const last = toolMessages(body).at(-1);
  assert.ok(last !== undefined, 'the request carries a tool message');
  return last;
}

/** The `Source: src_…` line fetch_url heads its text with. */
function sourceLine(toolText: string): string | undefined {
  return /^Source: (src_\S+)$/m.exec(toolText)?.[1];
}

// ---- the web the agent reads ----------------------------------------------------------------------

const EXACT = 'The Rock of Ages quarry in Barre, Vermont, opened in 1885.';
/** Typographic quotes and an em dash on the page; the model quotes them in plain ASCII, other case and spacing. */
const TYPOGRAPHIC_ON_PAGE = 'Its owners call it the \u201clargest deep-hole granite quarry\u201d in the world \u2014 a claim first made in 1925.';
const TYPOGRAPHIC_QUOTED = 'its  owners call it\n the "LARGEST deep-hole granite quarry" in the world -   a claim first made in 1925';
/** Plain ASCII on the page; the model quotes it with curly quotes, a non-breaking hyphen and other case. */
const PLAIN_ON_PAGE = 'Cutters say it\'s "hard, grey and even-grained" stone.';
const PLAIN_QUOTED = 'cutters say it\u2019s \u201cHard, grey and even\u2011grained\u201d STONE';
const FABRICATED = 'The Rock of Ages quarry opened in 1642 under Dutch ownership.';
const MARBLE = 'Carrara marble was chosen for the Piet\u00e0 in 1497.';
const FILLER = 'Barre granite is prized for its fine, even grain and its uniform colour, which make it easy to polish and to carve. '.repeat(4);

const ARTICLE_HTML = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Granite in Barre</title></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<main><article><h1>Granite in Barre</h1>
<p>${EXACT} It is still worked today, and its grey stone has gone into monuments across North America.</p>
<p>${TYPOGRAPHIC_ON_PAGE} ${FILLER}</p>
<p>${PLAIN_ON_PAGE} ${FILLER}</p>
</article></main><footer>All rights reserved.</footer></body></html>`;

/** The 5 MB page: a marker early (inside the 100,000 characters the model is given) and one far beyond. */
const BIG_BYTES = 5_000_000;
const MARKER_INSIDE = 'Marker inside the window: the Smith quarry shipped 4242 tonnes in 1911.';
const MARKER_BEYOND = 'Marker beyond the window: the Jones quarry shipped 9999 tonnes in 1912.';
function bigPage(): Buffer {
  const line = 'Filler line about gravel, sand and crushed stone for the roads of the county.\n';
  const lines = Math.ceil(BIG_BYTES / line.length);
  const all = Array.from({ length: lines }, () => line);
  all[600] = `${MARKER_INSIDE}\n`; // about 47,000 characters in
  all[50_000] = `${MARKER_BEYOND}\n`; // about 3.9 million characters in
  return Buffer.from(all.join('').slice(0, BIG_BYTES));
}

interface Web {
  server: LoopbackServer;
  port: number;
  /** http://127.0.0.1:<port> */
  url: string;
  /** http://localhost:<port>: the same server under another host name. */
  named: string;
  hits(path: string): number;
}

async function startWeb(): Promise<Web> {
  const hits = new Map<string, number>();
  const big = bigPage();
  let visits = 0;
  let port = 0;
  const text = (res: ServerResponse, status: number, body: string | Buffer, type = 'text/plain; charset=utf-8') => {
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const server = await startLoopbackServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://web').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    switch (path) {
      case '/article.html':
      case '/policy.html':
        return text(res, 200, ARTICLE_HTML, 'text/html; charset=utf-8');
      case '/moved':
        res.writeHead(301, { location: '/marble.txt' });
        return res.end();
      case '/marble.txt':
        return text(res, 200, `Marble notes\n\n${MARBLE}\n`);
      case '/missing':
        return text(res, 404, 'Not here: the quarry list moved somewhere else.');
      case '/hop':
        // Out of the allowed host to the other name of this server.
        res.writeHead(302, { location: `http://127.0.0.1:${port}/secret` });
        return res.end();
      case '/secret':
        return text(res, 200, 'The secret page.');
      case '/big.txt':
        return text(res, 200, big);
      case '/nul.txt':
        return text(res, 200, 'Ledger\u0000page. The Barre quarry employs 120 cutters.\n');
      case '/counter':
        visits += 1;
        return text(res, 200, `This page changes: visit number ${visits}.`);
      default:
        return text(res, 404, 'No such page.');
    }
  });
  port = Number(new URL(server.url).port);
  return { server, port, url: server.url, named: `http://localhost:${port}`, hits: (p) => hits.get(p) ?? 0 };
}

// ---- helpers over the API ------------------------------------------------------------------------

const COLUMNS = [{ name: 'name', type: 'string', required: true }, { name: 'opened', type: 'integer' }];
const TABLE = { id: 'facts', kind: 'table', columns: COLUMNS };

interface Ran {
  taskId: string;
  requests: FakeRequestBody[];
}

function sha256(text: string): string {
  return crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

async function rowsOf(h: Harness, taskId: string, output = 'facts'): Promise<Json[]> {
  const res = await h.request('GET', `/task/${taskId}/outputs/${output}?limit=1000`);
  assert.equal(res.status, 200, res.text);
  return res.body.rows;
}

async function sourcesOf(h: Harness, taskId: string, query = 'limit=200'): Promise<{ total: number; sources: Json[] }> {
  const res = await h.request('GET', `/task/${taskId}/sources?${query}`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

function rowNamed(rows: Json[], name: string): Json {
  const row = rows.find((r) => r.name === name);
  assert.ok(row, `a row named ${name} was stored (rows: ${rows.map((r) => r.name).join(', ')})`);
  return row;
}

// ---- the tests over one in-process server ---------------------------------------------------------

describe('verified sources through the API', () => {
  let h: Harness;
  let web: Web;
  let search: FakeSearch;
  let scripts: Scripts;

  before(async () => {
    web = await startWeb();
    search = await startFakeSearch();
    h = await startHarness({ env: { QUARRY_FETCH_ALLOW_PRIVATE: '1', QUARRY_SEARCH_PROVIDER: 'searxng', QUARRY_SEARCH_URL: search.url } });
    scripts = new Scripts(h.model!);
  });
  after(async () => {
    await h.close();
    await web.server.close();
    await search.close();
  });

  /** Starts a task whose turns follow `turns` and waits for the first to end. */
  async function run(task: Json, turns: Step[][]): Promise<Ran> {
    const { id, c } = scripts.add(turns);
    const res = await h.request('POST', '/task/start', { body: { task: { ...task, prompt: `[case:${id}] ${task.prompt ?? 'Collect the facts.'}` } } });
    assert.equal(res.status, 200, res.text);
    await waitIdle(h, res.body.task_id, 20_000);
    return { taskId: res.body.task_id, requests: c.requests };
  }

  describe('each source of a row gets a verdict', () => {
    const page = () => `${web.url}/article.html`;
    let ran: Ran;
    let rows: Json[];
    let snapshots: Json[];

    before(async () => {
      const src = (name: string, sources: Json[]) => ({ name, _sources: sources });
      ran = await run({ outputs: [TABLE] }, [[
        call('fetch_url', { url: page() }),
        call('fetch_url', { url: `${web.url}/moved` }),
        call('fetch_url', { url: `${web.url}/missing` }),
        () => call('write_rows', {
          output: 'facts',
          rows: [
            src('exact', [{ url: page(), quote: EXACT, fields: ['name'] }]),
            src('typographic', [{ url: page(), quote: TYPOGRAPHIC_QUOTED }]),
            src('plain', [{ url: page(), quote: PLAIN_QUOTED }]),
            src('fabricated', [{ url: page(), quote: FABRICATED }]),
            src('never fetched', [{ url: `${web.url}/never-fetched.html`, quote: EXACT }]),
            src('no quote', [{ url: page(), title: 'Granite in Barre' }]),
            src('asked for', [{ url: `${web.url}/moved`, quote: MARBLE }]),
            src('arrived at', [{ url: `${web.url}/marble.txt`, quote: MARBLE }]),
            src('fragment', [{ url: `${page()}#history`, quote: EXACT }]),
            src('error page', [{ url: `${web.url}/missing`, quote: 'the quarry list moved' }]),
            src('other host name', [{ url: `${web.named}/article.html`, quote: EXACT }]),
            src('one bad of two', [{ url: page(), quote: EXACT }, { url: page(), quote: FABRICATED }]),
            src('unsourced', []),
          ],
        }),
        { text: 'Wrote the facts.' },
      ]]);
      rows = await rowsOf(h, ran.taskId);
      snapshots = (await sourcesOf(h, ran.taskId)).sources;
    });

    const check = (name: string, i = 0) => rowNamed(rows, name)._sources[i];
    const snapshotOf = (url: string) => snapshots.find((s) => s.url === url);

    it('an exact quote from a fetched page is quote_found, verified, with the source_id of a snapshot that holds it', async () => {
      const s = check('exact');
      assert.deepEqual({ check: s.check, verified: s.verified, fields: s.fields }, { check: 'quote_found', verified: true, fields: ['name'] });
      assert.match(s.source_id, /^src_/);
      assert.ok(snapshots.some((x) => x.source_id === s.source_id), 'source_id names a listed snapshot');
      const one = await h.request('GET', `/task/${ran.taskId}/sources/${s.source_id}`);
      assert.equal(one.status, 200, one.text);
      assert.equal(one.body.url, page());
      assert.ok(one.body.text.includes(EXACT), 'the snapshot text holds the quote');
    });

    it('a quote differing in white space, case, typographic quotes and dashes is still quote_found', () => {
      for (const name of ['typographic', 'plain']) {
        assert.equal(check(name).check, 'quote_found', name);
        assert.equal(check(name).verified, true, name);
        assert.equal(check(name).source_id, snapshotOf(page()).source_id, name);
      }
    });

    it('a fabricated quote from a page that was read is quote_not_found, not verified, naming the snapshot checked', () => {
      assert.deepEqual(
        { check: check('fabricated').check, verified: check('fabricated').verified, source_id: check('fabricated').source_id },
        { check: 'quote_not_found', verified: false, source_id: snapshotOf(page()).source_id },
      );
    });

    it('a URL this task never fetched is not_read, without a source_id', () => {
      assert.equal(check('never fetched').check, 'not_read');
      assert.equal(check('never fetched').verified, false);
      assert.equal(check('never fetched').source_id, undefined);
      // The same server under another host name is another URL: it was not read as such.
      assert.equal(check('other host name').check, 'not_read');
    });

    it('a source without a quote on a fetched page is page_read and verified', () => {
      assert.deepEqual({ check: check('no quote').check, verified: check('no quote').verified }, { check: 'page_read', verified: true });
      assert.equal(check('no quote').source_id, snapshotOf(page()).source_id);
    });

    it('a redirected page counts under the URL asked for and the URL it arrived at; a #fragment does not matter', () => {
      const marble = snapshotOf(`${web.url}/moved`);
      assert.ok(marble, 'the snapshot is listed under the URL asked for');
      assert.equal(marble.final_url, `${web.url}/marble.txt`);
      for (const name of ['asked for', 'arrived at']) {
        assert.equal(check(name).check, 'quote_found', name);
        assert.equal(check(name).source_id, marble.source_id, name);
      }
      assert.equal(check('fragment').check, 'quote_found');
    });

    it('a page that answered 404 is no source: not kept, and citing it is not_read', () => {
      assert.equal(snapshotOf(`${web.url}/missing`), undefined);
      assert.equal(check('error page').check, 'not_read');
    });

    it('a row is verified only when it has sources and every one is: the output listing counts them', async () => {
      const res = await h.request('GET', `/task/${ran.taskId}/outputs`);
      assert.equal(res.status, 200, res.text);
      const facts = res.body.outputs.find((o: Json) => o.id === 'facts');
      const verified = ['exact', 'typographic', 'plain', 'no quote', 'asked for', 'arrived at', 'fragment'];
      assert.equal(facts.row_count, rows.length);
      assert.equal(facts.verified_rows, verified.length, JSON.stringify(facts));
      assert.equal(facts.unverified_rows, rows.length - verified.length);
      assert.deepEqual(check('one bad of two', 1).check, 'quote_not_found');
    });

    it('the model is told how many rows are verified and which sources are not, with why', () => {
      const told = lastTool(ran.requests[4]);
      assert.match(told, /Wrote 13 rows to facts .*; 7 of them verified\./);
      assert.match(told, /row 4, source 1 \(.*\/article\.html\): quote_not_found: .*\(src_\w+\)/);
      assert.match(told, /row 5, source 1 \(.*\/never-fetched\.html\): not_read/);
      assert.match(told, /row 13: cites no source/);
    });

    it('fetch_url heads the text it gives the model with Source: naming the snapshot, whose text is exactly that text', async () => {
      const told = lastTool(ran.requests[1]);
      const id = sourceLine(told);
      assert.equal(id, snapshotOf(page()).source_id);
      const detail = (await h.request('GET', `/task/${ran.taskId}/sources/${id}`)).body;
      assert.equal(detail.text, told.slice(told.indexOf('\n\n') + 2), 'the snapshot is the text the model was given');
      assert.equal(detail.sha256, sha256(detail.text));
      assert.equal(detail.bytes, Buffer.byteLength(detail.text));
      assert.equal(detail.title, 'Granite in Barre');
      assert.equal(detail.upload_id, null);
      assert.ok(!Number.isNaN(Date.parse(detail.fetched_at)));
    });

    it('the CSV export shows each source as "url [check]"; JSONL keeps verified, check and source_id', async () => {
      const csv = await h.request('GET', `/task/${ran.taskId}/outputs/facts?format=csv`);
      assert.equal(csv.status, 200, csv.text);
      const lines = csv.text.split('\r\n');
      assert.equal(lines[0], '_row,name,opened,_sources');
      assert.equal(lines.find((l) => l.includes(',exact,')), `1,exact,,${page()} [quote_found]`);
      assert.ok(lines.some((l) => l.includes(`${page()} [quote_not_found]`)), csv.text);
      assert.ok(lines.some((l) => l.includes(`${web.url}/never-fetched.html [not_read]`)), csv.text);
      assert.ok(lines.some((l) => l.includes(`${page()} [page_read]`)), csv.text);
      assert.ok(lines.some((l) => l.includes(`${page()} [quote_found] ${page()} [quote_not_found]`)), 'two sources in one cell, each marked');

      const jsonl = await h.request('GET', `/task/${ran.taskId}/outputs/facts?format=jsonl`);
      assert.equal(jsonl.status, 200, jsonl.text);
      const parsed = jsonl.text.trim().split('\n').map((l) => JSON.parse(l));
      // The quote is found, but it does not hold the row's name ("exact"): the cell is unsupported.
      assert.deepEqual(parsed.find((r) => r.name === 'exact')._sources, [{ url: page(), quote: EXACT, fields: ['name'], verified: true, check: 'quote_found', source_id: snapshotOf(page()).source_id, supports: { name: false } }]);
      assert.deepEqual(parsed.find((r) => r.name === 'exact')._support, { name: 'unsupported' });
      assert.deepEqual(parsed.find((r) => r.name === 'fabricated')._sources[0].check, 'quote_not_found');
      assert.equal(parsed.find((r) => r.name === 'fabricated')._sources[0].verified, false);
    });
  });

  it('an input read with read_input is its whole text as a snapshot: quotes anywhere in it are found; an input never read is not_read', async () => {
    const later = 'Last line: Rock of Ages \u2014 4,000 tonnes.';
    const ledger = `Quarry ledger 2024\nCava Fantiscritti: 12,000 tonnes.\n${'Nothing of note this week.\n'.repeat(40)}${later}\n`;
    const other = 'Unread notes: Smith quarry closed in 1950.\n';
    const upload = async (filename: string, text: string) => {
      const ticket = await h.request('POST', '/upload-url', { body: { filename, content_type: 'text/plain', size_bytes: Buffer.byteLength(text) } });
      assert.equal(ticket.status, 200, ticket.text);
      const put = await putUpload(h, ticket.body, text);
      assert.equal(put.status, 201, put.text);
      return ticket.body.upload_id as string;
    };
    const a = await upload('ledger.txt', ledger);
    const b = await upload('notes.txt', other);
    const ran = await run({ inputs: [{ upload_id: a }, { upload_id: b }], outputs: [TABLE] }, [[
      // Only the first 40 characters are read; the snapshot is the whole text all the same.
      call('read_input', { upload_id: a, length: 40 }),
      call('read_input', { upload_id: a, offset: 40, length: 40 }),
      call('write_rows', {
        output: 'facts',
        rows: [
          { name: 'read part', _sources: [{ upload_id: a, quote: 'Cava Fantiscritti: 12,000 tonnes.' }] },
          { name: 'unread part', _sources: [{ upload_id: a, quote: 'last line: rock of ages - 4,000 TONNES' }] },
          { name: 'wrong', _sources: [{ upload_id: a, quote: 'Cava Fantiscritti: 99,000 tonnes.' }] },
          { name: 'no quote', _sources: [{ upload_id: a }] },
          { name: 'never read', _sources: [{ upload_id: b, quote: 'Smith quarry closed in 1950.' }] },
        ],
      }),
      { text: 'Done.' },
    ]]);
    assert.match(lastTool(ran.requests[1]), /Characters 0-40 of/);
    const { total, sources } = await sourcesOf(h, ran.taskId);
    assert.equal(total, 1, 'one input read (twice): one snapshot');
    const snap = sources[0];
    assert.deepEqual({ url: snap.url, final_url: snap.final_url, upload_id: snap.upload_id, title: snap.title }, { url: `upload:${a}`, final_url: `upload:${a}`, upload_id: a, title: 'ledger.txt' });
    const detail = (await h.request('GET', `/task/${ran.taskId}/sources/${snap.source_id}`)).body;
    assert.equal(detail.text, ledger, 'the whole extracted text, not the window that was read');
    assert.equal(detail.sha256, sha256(ledger));

    const rows = await rowsOf(h, ran.taskId);
    const verdict = (name: string) => {
      const s = rowNamed(rows, name)._sources[0];
      return [s.check, s.verified, s.source_id];
    };
    assert.deepEqual(verdict('read part'), ['quote_found', true, snap.source_id]);
    assert.deepEqual(verdict('unread part'), ['quote_found', true, snap.source_id]);
    assert.deepEqual(verdict('wrong'), ['quote_not_found', false, snap.source_id]);
    assert.deepEqual(verdict('no quote'), ['page_read', true, snap.source_id]);
    assert.deepEqual(verdict('never read'), ['not_read', false, undefined]);
    const csv = await h.request('GET', `/task/${ran.taskId}/outputs/facts?format=csv`);
    assert.ok(csv.text.includes(`${a} [quote_found]`), csv.text);
    assert.ok(csv.text.includes(`${b} [not_read]`), csv.text);
  });

  it('a page read in one task is not_read in another task that never fetched it', async () => {
    const url = `${web.url}/article.html`;
    const first = await run({ outputs: [TABLE] }, [[call('fetch_url', { url }), { text: 'Read it.' }]]);
    assert.equal((await sourcesOf(h, first.taskId)).total, 1);
    const second = await run({ outputs: [TABLE] }, [[call('write_rows', { output: 'facts', rows: [{ name: 'borrowed' }], sources: [{ url, quote: EXACT }] }), { text: 'Done.' }]]);
    assert.equal((await rowsOf(h, second.taskId))[0]._sources[0].check, 'not_read');
    assert.equal((await sourcesOf(h, second.taskId)).total, 0);
  });

  it('a page holding a NUL character is kept (on PostgreSQL too) and a quote from it is found', async () => {
    const url = `${web.url}/nul.txt`;
    const ran = await run({ outputs: [TABLE] }, [[
      call('fetch_url', { url }),
      call('write_rows', { output: 'facts', rows: [{ name: 'cutters' }], sources: [{ url, quote: 'The Barre quarry employs 120 cutters.' }] }),
      { text: 'Done.' },
    ]]);
    assert.match(lastTool(ran.requests[1]), /^Source: src_/m, lastTool(ran.requests[1]).slice(0, 300));
    const { sources } = await sourcesOf(h, ran.taskId);
    assert.equal(sources.length, 1);
    const detail = (await h.request('GET', `/task/${ran.taskId}/sources/${sources[0].source_id}`)).body;
    assert.ok(!detail.text.includes('\u0000'), 'no NUL is stored');
    assert.equal(detail.sha256, sha256(detail.text));
    assert.equal((await rowsOf(h, ran.taskId))[0]._sources[0].check, 'quote_found');
  });

  describe('the source policy (spec sources)', () => {
    it('fetch_url refuses a redirect from an allowed host to an excluded one, and the target gets no request', async () => {
      const secretBefore = web.hits('/secret');
      const hopBefore = web.hits('/hop');
      const policyBefore = web.hits('/policy.html');
      const ran = await run({ outputs: [TABLE], sources: { exclude_domains: ['127.0.0.1'] } }, [[
        call('fetch_url', { url: `${web.named}/hop` }),
        call('fetch_url', { url: `${web.url}/policy.html` }),
        call('fetch_url', { url: `${web.named}/policy.html` }),
        call('write_rows', { output: 'facts', rows: [{ name: 'allowed' }], sources: [{ url: `${web.named}/policy.html`, quote: EXACT }] }),
        { text: 'Done.' },
      ]]);
      const redirect = lastTool(ran.requests[1]);
      assert.match(redirect, /^Could not fetch http:\/\/localhost:\d+\/hop: refused: http:\/\/127\.0\.0\.1:\d+\/secret \(redirected from http:\/\/localhost:\d+\/hop\): 127\.0\.0\.1 is excluded by the task's source policy/);
      assert.equal(web.hits('/hop'), hopBefore + 1, 'the allowed page was asked for');
      assert.equal(web.hits('/secret'), secretBefore, 'the excluded target got no request');
      assert.match(lastTool(ran.requests[2]), /^Could not fetch http:\/\/127\.0\.0\.1:\d+\/policy\.html: refused: .*excluded by the task's source policy \(exclude_domains: 127\.0\.0\.1\)/);
      assert.equal(web.hits('/policy.html'), policyBefore + 1, 'only the allowed host name reached the page');
      const events = await taskEvents(h, ran.taskId);
      const fetches = events.filter((e) => e.type === 'tool' && e.name === 'fetch_url' && e.state !== 'started').map((e) => e.state);
      assert.deepEqual(fetches, ['failed', 'failed', 'finished'], 'a refusal is a tool error');
      const { sources } = await sourcesOf(h, ran.taskId);
      assert.deepEqual(sources.map((s) => s.url), [`${web.named}/policy.html`], 'nothing refused was kept');
      assert.equal((await rowsOf(h, ran.taskId))[0]._sources[0].check, 'quote_found');
    });

    it('with include_domains a redirect leaving them is refused too; web_search drops results outside the policy', async () => {
      const secretBefore = web.hits('/secret');
      const ran = await run({ outputs: [TABLE], sources: { include_domains: ['localhost'] } }, [[
        call('fetch_url', { url: `${web.named}/hop` }),
        call('web_search', { query: 'granite quarries' }),
        { text: 'Done.' },
      ]]);
      assert.match(lastTool(ran.requests[1]), /refused: http:\/\/127\.0\.0\.1:\d+\/secret .*127\.0\.0\.1 is outside the task's source policy \(include_domains: localhost\)/);
      assert.equal(web.hits('/secret'), secretBefore);
      // Every hit of the fake search engine is on example.com, which the policy leaves out.
      assert.match(lastTool(ran.requests[2]), /^No results for "granite quarries" \(searxng\)\. \d+ results were left out: outside the task's source policy\./);
      assert.ok(!lastTool(ran.requests[2]).includes('https://example.com/'), 'no result outside the policy reached the model');
    });
  });

  it('citations: require_verified refuses a call with an unverified source, tells the model which row and source, and stores the repaired row verified', async () => {
    const page = `${web.url}/article.html`;
    const ran = await run({ outputs: [TABLE], citations: 'require_verified' }, [[
      call('fetch_url', { url: page }),
      call('write_rows', {
        output: 'facts',
        rows: [
          { name: 'Rock of Ages', opened: 1885, _sources: [{ url: page, quote: FABRICATED }] },
          { name: 'Smith', _sources: [{ url: `${web.url}/never-fetched.html` }] },
          { name: 'Jones', _sources: [] },
        ],
      }),
      call('write_rows', { output: 'facts', rows: [{ name: 'Rock of Ages', opened: 1885 }], sources: [{ url: page, quote: EXACT }] }),
      { text: 'Done.' },
    ]]);
    const refused = lastTool(ran.requests[2]);
    assert.match(refused, /^No rows were written; fix these and call again:/);
    const snapshot = (await sourcesOf(h, ran.taskId)).sources[0];
    assert.ok(refused.includes(`- row 1, source 1 (${page}): quote_not_found: the quote is not in the text read (${snapshot.source_id})`), refused);
    assert.ok(refused.includes(`- row 2, source 1 (${web.url}/never-fetched.html): not_read`), refused);
    assert.ok(refused.includes('- row 3: cites no source'), refused);
    assert.match(refused, /requires every row to cite at least one verified source/);
    assert.match(lastTool(ran.requests[3]), /^Wrote 1 rows to facts \(rows 1-1\); 1 of them verified\./);

    const rows = await rowsOf(h, ran.taskId);
    assert.equal(rows.length, 1, 'nothing of the refused call was stored');
    assert.deepEqual(rows[0]._sources, [{ url: page, quote: EXACT, verified: true, check: 'quote_found', source_id: snapshot.source_id, supports: { name: true, opened: true } }]);
    assert.deepEqual(rows[0]._support, { name: 'supported', opened: 'supported' });
    const events = await taskEvents(h, ran.taskId);
    assert.deepEqual(events.filter((e) => e.type === 'tool' && e.name === 'write_rows' && e.state !== 'started').map((e) => e.state), ['failed', 'finished']);
    const listing = (await h.request('GET', `/task/${ran.taskId}/outputs`)).body.outputs[0];
    assert.deepEqual([listing.verified_rows, listing.unverified_rows], [1, 0]);
  });

  it('a 5 MB page: the model is given at most 100,000 characters, a quote from them is quote_found, one beyond is not, and write_rows stays fast', async () => {
    const url = `${web.url}/big.txt`;
    const ran = await run({ outputs: [TABLE] }, [[
      call('fetch_url', { url }),
      call('write_rows', {
        output: 'facts',
        rows: [
          { name: 'inside', _sources: [{ url, quote: MARKER_INSIDE }] },
          { name: 'beyond', _sources: [{ url, quote: MARKER_BEYOND }] },
        ],
      }),
      { text: 'Done.' },
    ]]);
    const told = lastTool(ran.requests[1]);
    assert.match(told, /only the first 100,000 are shown/);
    assert.ok(told.includes(MARKER_INSIDE) && !told.includes(MARKER_BEYOND));
    const { sources } = await sourcesOf(h, ran.taskId);
    assert.equal(sources.length, 1);
    assert.ok(sources[0].bytes <= 100_000 * 4 && sources[0].bytes >= 99_000, `the snapshot is what the model was given: ${sources[0].bytes} bytes`);
    const rows = await rowsOf(h, ran.taskId);
    assert.equal(rowNamed(rows, 'inside')._sources[0].check, 'quote_found');
    assert.equal(rowNamed(rows, 'beyond')._sources[0].check, 'quote_not_found', 'a passage the model was never given does not verify');
    const events = await taskEvents(h, ran.taskId);
    const write = events.find((e) => e.type === 'tool' && e.name === 'write_rows' && e.state === 'finished');
    assert.ok(write.duration_ms < 1500, `write_rows took ${write.duration_ms} ms checking quotes against a 100,000-character snapshot`);
  });

  it('a call within the API bounds citing 35,000 distinct URLs is stored, every source not_read', async () => {
    // 700 rows of 50 sources each (the most a row may cite), none of them fetched. Checking them
    // must not depend on how many bind parameters one SQL statement takes (SQLite: 32,766;
    // PostgreSQL: 65,535): before citations were checked, such a call was simply stored.
    const ROWS = 700;
    const PER_ROW = 50;
    const rows = Array.from({ length: ROWS }, (_, i) => ({
      name: `site ${i}`,
      _sources: Array.from({ length: PER_ROW }, (_, j) => ({ url: `https://s${i}-${j}.example.org/p` })),
    }));
    // A bounded turn: a store error taken for an outage would otherwise keep it waiting.
    const ran = await run({ outputs: [TABLE], limits: { max_turn_seconds: 10 } }, [[call('write_rows', { output: 'facts', rows }), { text: 'Done.' }]]);
    const told = ran.requests[1] ? lastTool(ran.requests[1]) : '(the model was never asked again: the turn ended inside write_rows)';
    const events = await taskEvents(h, ran.taskId);
    const errors = events.filter((e) => e.type === 'error').map((e) => `${e.error}: ${e.message}`);
    assert.match(told, /^Wrote 700 rows to facts \(rows 1-700\); 0 of them verified\./, `write_rows answered: ${told.slice(0, 300)}; turn errors: ${errors.join(' | ') || 'none'}`);
    const listing = (await h.request('GET', `/task/${ran.taskId}/outputs`)).body.outputs[0];
    assert.deepEqual([listing.row_count, listing.verified_rows, listing.unverified_rows], [ROWS, 0, ROWS]);
    const stored = await rowsOf(h, ran.taskId);
    assert.ok(stored[0]._sources.every((s: Json) => s.check === 'not_read' && s.verified === false));
  });

  it('basis round-trips as _basis; a wrong confidence, an undeclared column or the wrong length is a tool error naming the field', async () => {
    const page = `${web.url}/article.html`;
    const basis = { name: { confidence: 'high', reasoning: 'Named in the first sentence.' }, opened: { confidence: 'medium' } };
    const rows = [{ name: 'Rock of Ages', opened: 1885 }, { name: 'Smith' }];
    const ran = await run({ outputs: [TABLE] }, [[
      call('fetch_url', { url: page }),
      call('write_rows', { output: 'facts', rows, sources: [{ url: page, quote: EXACT }], basis: [basis, null] }),
      call('write_rows', { output: 'facts', rows: [rows[0]], basis: [{ name: { confidence: 'certain' } }] }),
      call('write_rows', { output: 'facts', rows: [rows[0]], basis: [{ founded: { confidence: 'high' } }] }),
      call('write_rows', { output: 'facts', rows, basis: [basis] }),
      call('write_rows', { output: 'facts', rows: [rows[0]], basis: [{ name: { confidence: 'low', reasoning: 42 } }] }),
      { text: 'Done.' },
    ]]);
    const stored = await rowsOf(h, ran.taskId);
    assert.equal(stored.length, 2, 'only the valid call was stored');
    assert.deepEqual(stored[0]._basis, basis);
    assert.ok(!('_basis' in stored[1]), 'a null entry gives the row no _basis');
    const jsonl = await h.request('GET', `/task/${ran.taskId}/outputs/facts?format=jsonl`);
    assert.deepEqual(JSON.parse(jsonl.text.split('\n')[0]!)._basis, basis);

    const [confidence, column, length, reasoning] = [3, 4, 5, 6].map((i) => lastTool(ran.requests[i]));
    assert.match(confidence!, /basis\[0\]\.name\.confidence: must be one of high, medium, low/, confidence);
    assert.match(column!, /basis\[0\]\.founded: is not a declared column/, column);
    assert.match(length!, /basis: must be an array with one entry \(or null\) per row: 2, got 1 entries/, length);
    assert.match(reasoning!, /\/basis\/0\/name\/reasoning|basis\[0\]\.name\.reasoning/, reasoning);
    const events = await taskEvents(h, ran.taskId);
    assert.deepEqual(events.filter((e) => e.type === 'tool' && e.name === 'write_rows' && e.state !== 'started').map((e) => e.state), ['finished', 'failed', 'failed', 'failed', 'failed']);
  });

  it('the same page read again keeps one snapshot, in this turn and the next; a page that changed gets another', async () => {
    const page = `${web.url}/article.html`;
    const { id, c } = scripts.add([
      [call('fetch_url', { url: page }), call('fetch_url', { url: page }), call('fetch_url', { url: `${web.url}/counter` }), call('fetch_url', { url: `${web.url}/counter` }), { text: 'Turn one.' }],
      [call('fetch_url', { url: page }), { text: 'Turn two.' }],
    ]);
    const start = await h.request('POST', '/task/start', { body: { task: { prompt: `[case:${id}] Read twice.`, outputs: [TABLE] } } });
    assert.equal(start.status, 200, start.text);
    const taskId = start.body.task_id;
    await waitIdle(h, taskId, 20_000);
    const more = await h.request('POST', `/task/${taskId}/continue`, { body: { message: 'Read it once more.' } });
    assert.ok(more.status === 200 || more.status === 202, more.text);
    await waitIdle(h, taskId, 20_000);

    const named = [c.requests[1], c.requests[2], c.requests[6]].map((r) => sourceLine(lastTool(r)));
    const { total, sources } = await sourcesOf(h, taskId);
    const article = sources.filter((s) => s.url === page);
    assert.equal(article.length, 1, 'one snapshot of the unchanged page');
    assert.deepEqual(named, [article[0].source_id, article[0].source_id, article[0].source_id], 'each read names that one snapshot');
    assert.equal(sources.filter((s) => s.url === `${web.url}/counter`).length, 2, 'a page whose text changed is kept again');
    assert.equal(total, 3);
  });

  describe('GET /task/{id}/sources and /sources/{source_id}', () => {
    let taskId: string;
    let listed: Json[];

    before(async () => {
      const urls = ['/article.html', '/marble.txt', '/policy.html', '/counter'].map((p) => `${web.url}${p}`);
      const ran = await run({ outputs: [TABLE] }, [[...urls.map((url) => call('fetch_url', { url })), { text: 'Read four pages.' }]]);
      taskId = ran.taskId;
      listed = (await sourcesOf(h, taskId)).sources;
      assert.deepEqual(listed.map((s) => s.url), urls, 'in the order they were read');
    });

    it('pages with limit and offset, total counting them all', async () => {
      const pages = [];
      for (const offset of [0, 2, 4]) pages.push(await sourcesOf(h, taskId, `limit=2&offset=${offset}`));
      assert.deepEqual(pages.map((p) => p.total), [4, 4, 4]);
      assert.deepEqual(pages.map((p) => p.sources.length), [2, 2, 0]);
      assert.deepEqual(pages.flatMap((p) => p.sources.map((s: Json) => s.source_id)), listed.map((s) => s.source_id));
      for (const s of listed) {
        assert.deepEqual(Object.keys(s).sort(), ['bytes', 'fetched_at', 'final_url', 'sha256', 'source_id', 'title', 'upload_id', 'url']);
      }
      assert.equal((await h.request('GET', `/task/${taskId}/sources?limit=0`)).status, 422);
      assert.equal((await h.request('GET', `/task/${taskId}/sources?limit=201`)).status, 422);
    });

    it('one snapshot comes with its text; sha256 and bytes are of that text', async () => {
      const res = await h.request('GET', `/task/${taskId}/sources/${listed[1].source_id}`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual({ ...res.body, text: undefined }, { ...listed[1], text: undefined });
      assert.ok(res.body.text.includes(MARBLE));
      assert.equal(res.body.sha256, sha256(res.body.text));
      assert.equal(res.body.bytes, Buffer.byteLength(res.body.text, 'utf8'));
    });

    it('an unknown source, or one of another task, is 404 source_not_found', async () => {
      const unknown = await h.request('GET', `/task/${taskId}/sources/src_nope`);
      assert.equal(unknown.status, 404, unknown.text);
      assert.equal(unknown.body.error, 'source_not_found');
      const other = await run({ outputs: [TABLE] }, [[call('fetch_url', { url: `${web.url}/article.html` }), { text: 'Done.' }]]);
      const foreign = (await sourcesOf(h, other.taskId)).sources[0].source_id;
      const crossed = await h.request('GET', `/task/${taskId}/sources/${foreign}`);
      assert.equal(crossed.status, 404, crossed.text);
      assert.equal(crossed.body.error, 'source_not_found');
    });

    it("another account's key gets 404 task_not_found for the list and for a snapshot", async () => {
      const stranger = await createAccount(h, 'stranger', 10);
      for (const path of [`/task/${taskId}/sources`, `/task/${taskId}/sources/${listed[0].source_id}`]) {
        const res = await h.request('GET', path, { key: stranger.api_key });
        assert.equal(res.status, 404, `${path}: ${res.text}`);
        assert.equal(res.body.error, 'task_not_found', path);
        assert.ok(!res.text.includes('Granite'), 'nothing of the snapshot leaks');
      }
      const missing = await h.request('GET', '/task/no-such-task/sources');
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error, 'task_not_found');
    });
  });

  describe('spec validation of citations and sources', () => {
    const start = (task: Json) => h.request('POST', '/task/start', { body: { task: { prompt: 'validate', ...task } } });
    const expect422 = (res: TestResponse, param: string) => {
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.error, 'invalid_request', res.text);
      assert.equal(res.body.param, param, res.text);
    };

    it('a domain that is not a host name is 422 naming its place', async () => {
      expect422(await start({ sources: { include_domains: ['https://example.com/path'] } }), 'task.sources.include_domains[0]');
      expect422(await start({ sources: { include_domains: ['example.com', 'not a domain'] } }), 'task.sources.include_domains[1]');
      expect422(await start({ sources: { exclude_domains: ['bad_domain.com'] } }), 'task.sources.exclude_domains[0]');
      expect422(await start({ sources: { include_domains: [''] } }), 'task.sources.include_domains[0]');
    });

    it('more than 200 domains in all is 422', async () => {
      const domains = (n: number, p: string) => Array.from({ length: n }, (_, i) => `${p}${i}.example.com`);
      const one = await start({ sources: { include_domains: domains(201, 'i') } });
      assert.equal(one.status, 422, one.text);
      assert.match(one.body.param, /^task\.sources/);
      const both = await start({ sources: { include_domains: domains(150, 'i'), exclude_domains: domains(51, 'e') } });
      assert.equal(both.status, 422, both.text);
      assert.equal(both.body.param, 'task.sources');
      assert.match(JSON.stringify(both.body), /at most 200 domains in all, got 201/);
      const ok = await start({ sources: { include_domains: domains(150, 'i'), exclude_domains: domains(50, 'e') } });
      assert.equal(ok.status, 200, ok.text);
    });

    it('citations must be flag, require_verified or require_supported', async () => {
      expect422(await start({ citations: 'bogus' }), 'task.citations');
    });

    it('the stored spec shows the policy normalized and citations defaulted', async () => {
      const res = await start({ sources: { include_domains: ['*.Example.COM', 'example.com.'], exclude_domains: ['.Bad.example.com'] } });
      assert.equal(res.status, 200, res.text);
      const task = (await h.request('GET', `/task/${res.body.task_id}`)).body;
      assert.deepEqual(task.spec.sources, { include_domains: ['example.com'], exclude_domains: ['bad.example.com'] });
      assert.equal(task.spec.citations, 'flag');
    });
  });
});

// ---- kill -9 in the middle of the turn --------------------------------------------------------

describe('crash and resume keep one snapshot', { timeout: 60_000 }, () => {
  it('kill -9 right after the rows are appended: the stored fetch is not repeated, ONE snapshot is kept and the row keeps its verdicts', async () => {
    const web = await startWeb();
    const model = await startFakeOpenAI();
    const scripts = new Scripts(model);
    const { env: storeEnv, schema } = testStoreEnv('t_vs');
    const dataDir = makeDataDir();
    const servers: ServerProcess[] = [];
    const page = `${web.url}/article.html`;
    try {
      const env = {
        ...storeEnv,
        QUARRY_MODEL_BASE_URL: model.url,
        QUARRY_MODEL: 'fake-model',
        QUARRY_ADMIN_KEY: ADMIN_KEY,
        QUARRY_FETCH_ALLOW_PRIVATE: '1',
        // On PostgreSQL a restarted process takes up a dead one's turn once its lease runs out.
        QUARRY_LEASE_SECONDS: '2',
      };
      // One reply with both calls: the crash comes after write_rows appended, before its result was stored (fetch_url's was, as it ended).
      const { id } = scripts.add([[
        { toolCalls: [{ name: 'fetch_url', arguments: { url: page } }, { name: 'write_rows', arguments: { output: 'facts', rows: [{ name: 'Rock of Ages', opened: 1885 }], sources: [{ url: page, quote: EXACT }] } }] },
        { text: 'Done.' },
      ]]);
      const first = await startServer({ dataDir, env, crashAt: 'rows.appended:1' });
      servers.push(first);
      const account = await fetchJson('POST', `${first.url}/admin/accounts`, { key: ADMIN_KEY, body: { name: 'crash', credits: 100 } });
      assert.equal(account.status, 201, account.text);
      const key = account.body.api_key;
      const created = await fetchJson('POST', `${first.url}/task/start`, { key, body: { task: { prompt: `[case:${id}] Crash me.`, outputs: [TABLE] } } });
      assert.equal(created.status, 200, created.text);
      const taskId = created.body.task_id;
      const exit = await within(first.exited, 20_000, 'the crash at rows.appended');
      assert.equal(exit.signal, 'SIGKILL', first.output());

      const second = await startServer({ dataDir, env });
      servers.push(second);
      const send = (method: string, p: string, o: { key?: string | null } = {}) => fetchJson(method, second.url + p, { key, ...o });
      await waitIdleOn(send, taskId, { timeoutMs: 20_000 });

      assert.equal(web.hits('/article.html'), 1, 'the resumed turn did not fetch the page again: the fetch_url result was stored');
      const listed = await send('GET', `/task/${taskId}/sources`);
      assert.equal(listed.status, 200, listed.text);
      const pairs = listed.body.sources.map((s: Json) => `${s.url} ${s.sha256}`);
      assert.equal(new Set(pairs).size, pairs.length, `no duplicate (url, sha256): ${pairs.join(', ')}`);
      assert.equal(listed.body.total, 1);
      const snapshot = listed.body.sources[0];

      const rows = await send('GET', `/task/${taskId}/outputs/facts`);
      assert.equal(rows.body.total, 1, 'the replayed write_rows wrote nothing twice');
      assert.deepEqual(rows.body.rows[0]._sources, [{ url: page, quote: EXACT, verified: true, check: 'quote_found', source_id: snapshot.source_id, supports: { name: true, opened: true } }]);
      const outputs = await send('GET', `/task/${taskId}/outputs`);
      assert.deepEqual([outputs.body.outputs[0].verified_rows, outputs.body.outputs[0].unverified_rows], [1, 0]);
      const detail = await send('GET', `/task/${taskId}/sources/${snapshot.source_id}`);
      assert.ok(detail.body.text.includes(EXACT));
      const events = (await send('GET', `/task/${taskId}/events?limit=1000`)).body.events as Json[];
      assert.equal(events.at(-1).type, 'done');
      assert.equal(events.at(-1).outcome, 'completed');
    } finally {
      await Promise.all(servers.map((s) => s.kill9()));
      removeDataDir(dataDir);
      await model.close();
      await web.server.close();
      if (schema) await dropSchemas(schema);
    }
  });
});
