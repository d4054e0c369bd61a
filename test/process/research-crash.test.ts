/**
 * The research tool survives kill -9 (decisions §16.2): a built `quarry serve` runs a turn whose
 * lead hands three companies to sub-researchers, one at a time (QUARRY_SUBAGENT_CONCURRENCY=1, so
 * that which of them had ended when the process died does not depend on timing), and is killed
 * while the second one is mid-way, then restarted over the same data dir. Each sub-researcher
 * replies six times (search, fetch three pages, search, fetch two, write its row, answer), so:
 *   model.replied:10  the second one's third reply arrived and was not stored (the lead's research
 *                     call, the first one's six replies, the second's search and fetches before it);
 *   tool.started:13   the last of the second one's three fetches started (the lead's research call,
 *                     the first one's eight calls, the second's search and two fetches before it).
 * The turn ends, and what a user can see holds: one row per company; no page fetched twice unless
 * its fetch's result was not stored before the kill (read from the data dir between the two
 * processes); the finished sub-researcher asks the model nothing again; the interrupted one asks
 * again only a reply it lost; the lead does not ask for its research call again; and every
 * sub-researcher's tool event names its agent.
 *
 * A second suite stops such a turn (POST /task/{id}/stop) while the fake model holds the first
 * sub-researcher's reply: the turn ends `stopped` without waiting for it, and once the reply is
 * let through no sub-researcher of the stopped turn asks the model anything more.
 *
 * The fake model is test/kit/researcher-model.ts (a policy that reads each request, as the
 * bench:research runs use it), the web test/kit/research-web.ts, both answering at once.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { until } from '../kit/bounded-waits.js';
import { fetchJson, httpClient, waitIdle, type Send } from '../kit/http.js';
import { killAll, makeDataDir, removeDataDir, startServer } from '../kit/process.js';
import { startResearcherModel } from '../kit/researcher-model.js';
import { RESEARCH_COMPANIES, RESEARCH_OUTPUT, researchSpec, startResearchWeb } from '../kit/research-web.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const ADMIN_KEY = 'research-crash-admin-key-0123456789';
const OUTPUT = RESEARCH_OUTPUT;
const COMPANIES = RESEARCH_COMPANIES.slice(0, 3);
/** Where each case kills the process, how many model requests came before, and how many replies were lost. */
const CASES = [
  { crashAt: 'model.replied:10', requestsBefore: 10, lostReplies: 1 },
  { crashAt: 'tool.started:13', requestsBefore: 9, lostReplies: 0 },
];

const SPEC = researchSpec('Three companies', COMPANIES, { max_subagents: COMPANIES.length });

/** The server's configuration: the fake model and web, one sub-researcher at a time. */
function serverEnv(modelUrl: string, webUrl: string): Record<string, string> {
  return {
    QUARRY_MODEL_BASE_URL: modelUrl,
    QUARRY_MODEL: 'fake-model',
    QUARRY_ADMIN_KEY: ADMIN_KEY,
    QUARRY_SEARCH_PROVIDER: 'searxng',
    QUARRY_SEARCH_URL: webUrl,
    QUARRY_FETCH_ALLOW_PRIVATE: '1',
    QUARRY_SUBAGENT_CONCURRENCY: '1',
  };
}

/** A new account's API key. */
async function openAccount(url: string): Promise<string> {
  const account = await fetchJson('POST', `${url}/admin/accounts`, { key: ADMIN_KEY, body: { name: 'research crash', credits: 1e6 } });
  assert.equal(account.status, 201, account.text);
  return account.body.api_key as string;
}

/** Every event of the task so far, page by page. */
async function taskEvents(send: Send, taskId: string): Promise<Json[]> {
  const events: Json[] = [];
  for (let afterSeq = 0; ;) {
    const res = await send('GET', `/task/${taskId}/events?after=${afterSeq}&limit=1000`);
    assert.equal(res.status, 200, res.text);
    events.push(...res.body.events);
    if (res.body.next_after === null) return events;
    afterSeq = res.body.next_after;
  }
}

/** The turn's stored steps, and the URLs of the fetch_url calls whose results are among them. */
function storedSteps(dataDir: string): { steps: Json[]; fetched: Set<string> } {
  const db = new SQLite(path.join(dataDir, 'quarry.db'), { readonly: true });
  try {
    const steps = (db.prepare('select data from turn_steps order by turn_id, step').all() as { data: string }[]).map((r) => JSON.parse(r.data) as Json);
    const urls = new Map<string, string>();
    for (const s of steps) {
      if (s.type !== 'sub' || s.step.type !== 'model') continue;
      for (const c of s.step.toolCalls) if (c.name === 'fetch_url') urls.set(c.id, String(JSON.parse(c.arguments).url));
    }
    return { steps, fetched: new Set(steps.filter((s) => s.type === 'sub' && s.step.type === 'tool' && s.step.name === 'fetch_url').map((s) => urls.get(s.step.callId)!)) };
  } finally {
    db.close();
  }
}

describe('research: kill -9 while sub-researchers work, restart', () => {
  after(() => killAll());

  for (const c of CASES) {
    it(`at ${c.crashAt}: each sub-researcher resumes from its own last step, none that ended runs again`, { timeout: 120_000 }, () => crashCase(c));
  }
});

describe('research: stop while sub-researchers work', () => {
  after(() => killAll());

  it('stop while a sub-researcher waits on the model: the turn ends stopped at once, and no sub-researcher asks the model again', { timeout: 60_000 }, () => stopCase());
});

async function crashCase({ crashAt, requestsBefore, lostReplies }: (typeof CASES)[number]): Promise<void> {
  const web = await startResearchWeb({ scale: 0 });
  const model = await startResearcherModel({ output: OUTPUT, latencyMs: [0, 0] });
  const dataDir = makeDataDir('quarry-research-crash-');
  const env = serverEnv(model.url, web.url);
  try {
    const first = await startServer({ dataDir, env, crashAt });
    assert.ok(first.url, `the first process died before listening\n${first.output()}`);
    const key = await openAccount(first.url);
    const created = await fetchJson('POST', `${first.url}/task/start`, { key, body: { task: SPEC } });
    assert.equal(created.status, 200, created.text);
    const taskId = created.body.task_id as string;

    const exit = await first.exited;
    assert.equal(exit.signal, 'SIGKILL', `the first process ended at its crash point\n${first.output()}`);
    const before = model.stats().requests;
    const pagesBefore = web.pageRequestsByPath();
    const asked = (requests: typeof before, company: string | undefined) => requests.filter((r) => r.company === company).length;
    // Where the kill landed: the lead had asked once (its research call), the first company's
    // sub-researcher had ended, the second's was mid-way, the third had not begun.
    assert.equal(before.filter((r) => !r.sub).length, 1, 'the lead asked the model once before the kill');
    const perCompany = asked(before, COMPANIES[0]!.name);
    assert.ok(perCompany >= 4, `the first sub-researcher took ${perCompany} replies`);
    assert.equal(before.length, requestsBefore, 'model requests before the kill');
    const secondBefore = asked(before, COMPANIES[1]!.name);
    assert.ok(secondBefore >= 2 && secondBefore < perCompany, `the second sub-researcher was mid-way (${secondBefore} of ${perCompany} requests)`);
    assert.equal(asked(before, COMPANIES[2]!.name), 0, 'the third sub-researcher had not begun');
    const stored = storedSteps(dataDir);
    assert.ok(stored.steps.filter((s) => s.type === 'sub' && s.agent.endsWith('/1')).length >= 3, 'the second sub-researcher had stored its first search and its next reply');

    const second = await startServer({ dataDir, env });
    const send = httpClient(second.url, key);
    await waitIdle(send, taskId, { timeoutMs: 60_000 });

    // The turn completed, with one row per company.
    const events = await taskEvents(send, taskId);
    const done = events.filter((e) => e.type === 'done');
    assert.deepEqual(done.map((e) => e.outcome), ['completed'], `one turn, completed\n${second.output()}`);
    const rows = await send('GET', `/task/${taskId}/output?output=${OUTPUT}&limit=1000`);
    assert.equal(rows.status, 200, rows.text);
    assert.deepEqual((rows.body.rows as Json[]).map((r) => r.company).sort(), COMPANIES.map((c) => c.name).sort(), 'exactly one row per company');

    // No page was fetched again unless its fetch's result was lost at the kill; each sub-researcher read its company's pages.
    for (const [page, n] of web.pageRequestsByPath()) {
      const once = stored.fetched.has(`${web.url}${page}`) || !pagesBefore.has(page);
      assert.ok(n <= (once ? 1 : 2), `${page} was fetched ${n} times (its result ${stored.fetched.has(`${web.url}${page}`) ? 'was' : 'was not'} stored before the kill)`);
    }
    for (const c of COMPANIES) assert.ok([...web.pageRequestsByPath().keys()].some((p) => p.startsWith(`/${c.slug}/`)), `${c.name}'s pages were read`);

    // After the restart the finished sub-researcher asked nothing, the interrupted one only once
    // more than an uninterrupted one (the reply lost at the kill), the third as many as the first.
    const all = model.stats().requests;
    const since = all.slice(before.length);
    assert.equal(asked(since, COMPANIES[0]!.name), 0, 'the finished sub-researcher asked the model nothing after the restart');
    assert.equal(asked(all, COMPANIES[1]!.name), perCompany + lostReplies, 'the interrupted sub-researcher asked again only a reply lost at the kill');
    assert.equal(asked(all, COMPANIES[2]!.name), perCompany, 'the third sub-researcher ran once');
    assert.equal(all.filter((r) => !r.sub).length - 1, since.filter((r) => !r.sub).length, 'the lead did not ask for its research call again');

    // One research call; every other tool call is a sub-researcher's and names its agent.
    const tools = events.filter((e) => e.type === 'tool');
    const research = tools.filter((e) => e.name === 'research');
    assert.ok(research.length > 0 && research.every((e) => e.agent === undefined && e.call_id === research[0].call_id), 'one research call, the lead\'s');
    const subs = tools.filter((e) => e.name !== 'research');
    assert.ok(subs.length > 0);
    for (const e of subs) assert.match(String(e.agent), new RegExp(`^${research[0].call_id}/[0-2]$`), `${e.name} ${e.state} names its agent`);
    assert.deepEqual([...new Set(subs.map((e) => e.agent))].sort(), [0, 1, 2].map((i) => `${research[0].call_id}/${i}`));
    await second.kill9();
  } finally {
    await killAll();
    await model.close();
    await web.close();
    removeDataDir(dataDir);
  }
}

async function stopCase(): Promise<void> {
  const web = await startResearchWeb({ scale: 0 });
  const model = await startResearcherModel({ output: OUTPUT, latencyMs: [0, 0], holdSubReplies: true });
  const dataDir = makeDataDir('quarry-research-stop-');
  try {
    const server = await startServer({ dataDir, env: serverEnv(model.url, web.url) });
    const send = httpClient(server.url, await openAccount(server.url));
    const created = await send('POST', '/task/start', { body: { task: SPEC } });
    assert.equal(created.status, 200, created.text);
    const taskId = created.body.task_id as string;

    await until('a sub-researcher\'s model request', () => model.stats().requests.some((r) => r.sub), { timeoutMs: 30_000 });
    const stop = await send('POST', `/task/${taskId}/stop`);
    assert.equal(stop.status, 200, stop.text);
    assert.equal(stop.body.status, 'plan', 'the stopped task is back in plan');
    const atStop = model.stats().requests.length;

    // The held sub-researcher's reply never comes before the turn ends: it ends without it.
    await waitIdle(send, taskId, { timeoutMs: 10_000 });
    const stopped = await taskEvents(send, taskId);
    assert.deepEqual(stopped.filter((e) => e.type === 'done').map((e) => e.outcome), ['stopped'], `one turn, stopped\n${server.output()}`);
    const state = await send('GET', `/task/${taskId}/state`);
    assert.equal(state.body.active, false, state.text);

    // Once the held reply is let through, a sub-researcher still at work would ask the model its
    // next step; the follow-up turn's lead request marks the point by which it would have.
    model.release();
    const more = await send('POST', `/task/${taskId}/continue`, { body: { message: 'Say in one sentence where the research stands.' } });
    assert.equal(more.status, 200, more.text);
    await waitIdle(send, taskId, { timeoutMs: 30_000 });
    const events = await taskEvents(send, taskId);
    assert.deepEqual(events.filter((e) => e.type === 'done').map((e) => e.outcome), ['stopped', 'completed'], `the follow-up turn completed\n${server.output()}`);
    const since = model.stats().requests.slice(atStop);
    const lead = since.findIndex((r) => !r.sub);
    assert.ok(lead >= 0, 'the follow-up turn\'s lead asked the model');
    assert.deepEqual(since.slice(0, lead), [], 'no sub-researcher asked the model between the stop and the follow-up turn');
    // The follow-up lead delegates afresh; a stopped sub-researcher still at work would add to its
    // company's requests after the marker too.
    const asked = COMPANIES.map((c) => since.slice(lead).filter((r) => r.company === c.name).length);
    assert.deepEqual(asked, COMPANIES.map(() => asked[2]), `after the follow-up began, each company was asked for by one sub-researcher run (${asked.join(', ')} requests)`);
    await server.kill9();
  } finally {
    await killAll();
    await model.close();
    await web.close();
    removeDataDir(dataDir);
  }
}
