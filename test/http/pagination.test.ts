/**
 * GET /task paging (interface §4.1, §4.2 rule 1, §8): pinned tasks first, then the most recently
 * updated; X-Next-Cursor and a Link `<url>; rel="next"` while more remain, neither on the last
 * page; limit default 50, at most 200.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_KEY, startHarness, type Harness, type TestResponse } from '../kit/harness.js';
import { fetchJson } from '../kit/http.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

const TOTAL = 125;

/** The URL of a Link header's rel="next" entry, or undefined. */
function nextLink(res: TestResponse): string | undefined {
  const link = res.headers.get('link');
  if (link === null) return undefined;
  const m = /^\s*<([^>]+)>\s*;\s*rel="next"\s*$/.exec(link);
  assert.ok(m, `the Link header has the form <url>; rel="next": ${link}`);
  return m[1];
}

/** GET over the socket: a path, or an absolute URL as a Link header gives it (following one is the point). */
function get(h: Harness, url: string, key = h.key): Promise<TestResponse> {
  return fetchJson('GET', new URL(url, h.url).href, { key });
}

interface Walk {
  ids: string[];
  pages: any[][];
  links: (string | undefined)[];
  cursors: (string | null)[];
}

/** Walks the list by X-Next-Cursor (or by following Link headers), checking each page's headers. */
async function walk(h: Harness, limit: number, by: 'cursor' | 'link'): Promise<Walk> {
  const out: Walk = { ids: [], pages: [], links: [], cursors: [] };
  let url = `/task?limit=${limit}`;
  for (let n = 0; n < 1000; n++) {
    const res = await get(h, url);
    assert.equal(res.status, 200, res.text);
    assert.ok(Array.isArray(res.body), 'a page is an array of tasks');
    out.pages.push(res.body);
    out.ids.push(...res.body.map((t: any) => t.task_id));
    const cursor = res.headers.get('x-next-cursor');
    const link = nextLink(res);
    out.cursors.push(cursor);
    out.links.push(link);
    assert.equal(cursor === null, link === undefined, 'X-Next-Cursor and Link come together');
    if (cursor === null) return out;
    assert.ok(cursor.length > 0);
    url = by === 'cursor' ? `/task?limit=${limit}&cursor=${encodeURIComponent(cursor)}` : link!;
  }
  throw new Error('the list did not end within 1000 pages');
}

describe('GET /task paging', () => {
  let h: Harness;
  /** Task ids in creation order. */
  const created: string[] = [];
  let pinned: string[] = [];
  let touched: string;
  let deleted: string;
  let otherAccountTask: string;

  before(async () => {
    // An API-only node: tasks stay as created, so their order depends on nothing but this test.
    h = await startHarness({ listen: true, model: false, env: { QUARRY_ROLE: 'api', QUARRY_RATE_LIMIT_PER_MIN: '100000' } });
    for (let i = 0; i < TOTAL; i++) {
      const res = await h.request('POST', '/task', { body: { prompt: `Paging task number ${i}` } });
      assert.equal(res.status, 200, res.text);
      created.push(res.body.task_id);
    }
    // Pin three from the middle and the end; rename one older task, which makes it the most recently updated.
    pinned = [created[40]!, created[100]!, created[7]!];
    for (const id of pinned) {
      const res = await h.request('PATCH', `/task/${id}`, { body: { pinned: true } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.pinned, true);
    }
    touched = created[3]!;
    assert.equal((await h.request('PATCH', `/task/${touched}`, { body: { name: 'renamed last' } })).status, 200);
    deleted = created[60]!;
    assert.equal((await h.request('DELETE', `/task/${deleted}`)).status, 200);

    const other = await h.request('POST', '/admin/accounts', { key: ADMIN_KEY, body: { name: 'other', credits: 10 } });
    assert.equal(other.status, 201, other.text);
    const res = await h.request('POST', '/task', { key: other.body.api_key, body: { prompt: 'Another account\'s task' } });
    assert.equal(res.status, 200, res.text);
    otherAccountTask = res.body.task_id;
  });
  after(() => h.close());

  /** The order the list must have: pinned (last pinned first), then the renamed task, then newest first. */
  function expectedOrder(): string[] {
    const rest = [...created].reverse().filter((id) => !pinned.includes(id) && id !== touched && id !== deleted);
    return [...[...pinned].reverse(), touched, ...rest];
  }

  it('walks every task with limit=7 via X-Next-Cursor: no gaps, no duplicates, pinned first, then most recently updated', async () => {
    const w = await walk(h, 7, 'cursor');
    const expected = expectedOrder();
    assert.equal(w.ids.length, TOTAL - 1, 'every task but the deleted one, once');
    assert.equal(new Set(w.ids).size, w.ids.length, 'no duplicates');
    assert.deepEqual(w.ids, expected);
    assert.ok(!w.ids.includes(deleted), 'a deleted task is gone from the list');
    assert.ok(!w.ids.includes(otherAccountTask), 'another account\'s task is not listed');

    assert.equal(w.pages.length, Math.ceil((TOTAL - 1) / 7));
    for (const page of w.pages.slice(0, -1)) assert.equal(page.length, 7, 'every page but the last is full');
    assert.ok(w.pages.at(-1)!.length >= 1 && w.pages.at(-1)!.length <= 7);
    assert.equal(w.cursors.at(-1), null, 'the last page has no X-Next-Cursor');
    assert.equal(w.links.at(-1), undefined, 'the last page has no Link');
    assert.ok(w.cursors.slice(0, -1).every((c) => c !== null), 'every other page has one');

    // The order the tasks' own fields say: pinned first, then updated_at descending.
    const all = w.pages.flat();
    assert.deepEqual(all.slice(0, 3).map((t) => t.pinned), [true, true, true]);
    assert.ok(all.slice(3).every((t) => t.pinned === false));
    for (let i = 1; i < all.length; i++) {
      const [a, b] = [all[i - 1], all[i]];
      if (a.pinned === b.pinned) assert.ok(a.updated_at >= b.updated_at, `${a.task_id} (${a.updated_at}) comes before ${b.task_id} (${b.updated_at})`);
    }
    assert.equal(all[3].task_id, touched, 'the most recently updated unpinned task comes right after the pinned ones');
    for (const t of all) {
      assert.equal(typeof t.status, 'string');
      assert.equal(t.status_url, `/task/${t.task_id}`);
    }
  });

  it('following the Link header walks the same pages', async () => {
    const byCursor = await walk(h, 7, 'cursor');
    const byLink = await walk(h, 7, 'link');
    assert.deepEqual(byLink.ids, byCursor.ids);
    for (const link of byLink.links.slice(0, -1)) {
      const url = new URL(link!, h.url);
      assert.equal(url.pathname, '/task');
      assert.equal(url.searchParams.get('limit'), '7', 'the next link keeps the page size');
      assert.ok(url.searchParams.get('cursor'), 'the next link carries the cursor');
    }
    // The link is absolute and points at this server.
    const first = await get(h, '/task?limit=7');
    const link = nextLink(first)!;
    assert.match(link, /^https?:\/\//, 'the Link URL is absolute');
    assert.equal(new URL(link).origin, new URL(h.url).origin);
    assert.equal(new URL(link).searchParams.get('cursor'), first.headers.get('x-next-cursor'));
  });

  it('limit defaults to 50 and may be at most 200', async () => {
    const expected = expectedOrder();
    const byDefault = await get(h, '/task');
    assert.equal(byDefault.status, 200);
    assert.equal(byDefault.body.length, 50);
    assert.deepEqual(byDefault.body.map((t: any) => t.task_id), expected.slice(0, 50));
    assert.ok(byDefault.headers.get('x-next-cursor'));
    const next = nextLink(byDefault)!;
    assert.equal(new URL(next, h.url).searchParams.get('limit'), '50');

    const second = await get(h, next);
    assert.deepEqual(second.body.map((t: any) => t.task_id), expected.slice(50, 100));

    const max = await get(h, '/task?limit=200');
    assert.equal(max.status, 200);
    assert.deepEqual(max.body.map((t: any) => t.task_id), expected);
    assert.equal(max.headers.get('x-next-cursor'), null, 'everything fits: no next page');
    assert.equal(max.headers.get('link'), null);

    const exact = await get(h, `/task?limit=${TOTAL - 1}`);
    assert.equal(exact.body.length, TOTAL - 1);
    assert.equal(exact.headers.get('x-next-cursor'), null, 'a page that takes exactly what is left is the last');

    for (const bad of ['201', '0', '-1', 'abc', '1.5']) {
      const res = await get(h, `/task?limit=${bad}`);
      assert.equal(res.status, 422, `limit=${bad}: ${res.text}`);
      assert.equal(res.body.error, 'invalid_request');
      assert.equal(res.body.param, 'limit');
    }
  });

  it('limit=1 pages one task at a time to the end', async () => {
    const w = await walk(h, 1, 'cursor');
    assert.deepEqual(w.ids, expectedOrder());
    assert.ok(w.pages.every((p) => p.length === 1));
  });

  it('a cursor the server did not issue is a 422 naming cursor', async () => {
    for (const bad of ['not-a-cursor', Buffer.from('[1,2]').toString('base64url')]) {
      const res = await get(h, `/task?limit=7&cursor=${bad}`);
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.error, 'invalid_request');
      assert.equal(res.body.param, 'cursor');
    }
  });

  it('another account walks only its own tasks', async () => {
    const made = await h.request('POST', '/admin/accounts', { key: ADMIN_KEY, body: { name: 'empty', credits: 10 } });
    const res = await get(h, '/task?limit=7', made.body.api_key);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, []);
    assert.equal(res.headers.get('x-next-cursor'), null);
    assert.equal(res.headers.get('link'), null);
  });
});

describe('GET /task paging with QUARRY_PUBLIC_URL', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ model: false, env: { QUARRY_ROLE: 'api', QUARRY_PUBLIC_URL: 'https://quarry.example.test/' } });
  });
  after(() => h.close());

  it('the Link URL is built on the public URL', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await h.request('POST', '/task', { body: { prompt: `public ${i}` } })).status, 200);
    const res = await h.request('GET', '/task?limit=2');
    assert.equal(res.body.length, 2);
    const link = nextLink(res)!;
    const cursor = res.headers.get('x-next-cursor')!;
    const url = new URL(link);
    assert.equal(url.origin, 'https://quarry.example.test');
    assert.equal(url.pathname, '/task');
    assert.equal(url.searchParams.get('cursor'), cursor);
    const rest = await h.request('GET', `/task${url.search}`);
    assert.equal(rest.body.length, 1);
    assert.equal(rest.headers.get('link'), null);
  });
});

describe('GET /task after changes', () => {
  /** An API-only node: tasks change only as the test changes them. */
  const apiOnly = { QUARRY_ROLE: 'api', QUARRY_RATE_LIMIT_PER_MIN: '100000' };
  const names = (page: any[]) => page.map((t: any) => [t.task_id, t.name, t.pinned]);

  it('each change of a task shows at the next read of the list, whatever was read before', async (t) => {
    const h = await startHarness({ model: false, env: apiOnly });
    t.after(() => h.close());
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await h.request('POST', '/task', { body: { prompt: `Changing task ${i}` } })).body.task_id);
    const list = async () => (await h.request('GET', '/task?limit=10')).body as any[];
    assert.deepEqual(names(await list()), [[ids[2], null, false], [ids[1], null, false], [ids[0], null, false]]);

    assert.equal((await h.request('PATCH', `/task/${ids[0]}`, { body: { name: 'renamed' } })).status, 200);
    assert.deepEqual(names(await list()), [[ids[0], 'renamed', false], [ids[2], null, false], [ids[1], null, false]]);
    assert.equal((await h.request('PATCH', `/task/${ids[1]}`, { body: { pinned: true } })).status, 200);
    assert.deepEqual(names(await list()), [[ids[1], null, true], [ids[0], 'renamed', false], [ids[2], null, false]]);
    assert.equal((await h.request('DELETE', `/task/${ids[0]}`)).status, 200);
    const page = await list();
    assert.deepEqual(names(page), [[ids[1], null, true], [ids[2], null, false]]);
    // Each body is the task's own, as GET /task/{task_id} shows it (less the spec and events).
    for (const task of page) {
      const { spec: _spec, events: _events, ...detail } = (await h.request('GET', `/task/${task.task_id}`)).body;
      assert.deepEqual(task, detail);
    }
  });

  it('on PostgreSQL, a change made through another process shows at this one\'s next read', { skip: process.env.QUARRY_TEST_STORE !== 'postgres' && 'PostgreSQL only' }, async (t) => {
    const a = await startHarness({ model: false, env: apiOnly });
    t.after(() => a.close());
    const { databaseUrl, databaseSchema } = a.quarry.config;
    const b = await startHarness({ model: false, env: { ...apiOnly, QUARRY_DATABASE_URL: databaseUrl!, QUARRY_DATABASE_SCHEMA: databaseSchema! } });
    t.after(() => b.close());
    const id = (await a.request('POST', '/task', { body: { prompt: 'Shared task' } })).body.task_id;
    const listOn = async (h: Harness) => names((await h.request('GET', '/task?limit=10', { key: a.key })).body as any[]);
    assert.deepEqual(await listOn(a), [[id, null, false]]);
    assert.deepEqual(await listOn(b), [[id, null, false]]);
    assert.equal((await b.request('PATCH', `/task/${id}`, { key: a.key, body: { name: 'after' } })).status, 200);
    assert.deepEqual(await listOn(a), [[id, 'after', false]], 'the process that did not make the change');
  });
});
