/**
 * The web console (decisions §15.5) in a real browser: Debian's Chromium driven by
 * playwright-core against a real server and the fake model. A person signs in, starts a task,
 * watches its text stream in under its prompt, reads the rows with their source marks and a quote,
 * exports CSV, follows a long turn's log (and stops following when scrolled up), stops a running
 * turn, starts a group and watches it run to the end without a reload, opens a run from the
 * group's rows, pages the task list with "Show more", reads why a failed turn failed, checks
 * every page with axe-core, and uses it all 390 pixels wide. Every control is found by its role
 * and accessible name, so unlabelled controls fail here.
 *
 * Skipped when there is no Chromium (QUARRY_CHROMIUM, default /usr/bin/chromium), except in CI,
 * where it fails; `.ci/run` installs it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startHarness, waitIdle, type Harness } from '../kit/harness.js';
import { CLOSING_TEXT, GROUP_PLANTS, GROUP_TASK, groupResponder, PLANT_PAGE_TITLE, researchTurn, startPlantPages, VERIFIED_QUOTE } from '../kit/console-demo.js';
import { quarryBuild } from '../kit/process.js';
import type { LoopbackServer } from '../kit/loopback-server.js';
import { skipUnlessAvailable } from '../kit/require-tool.js';
import type { FakeReply } from '../kit/fake-openai-server.js';
import { until } from '../kit/bounded-waits.js';
import { startWebhookReceiver } from '../kit/webhook-receiver.js';
import { createRequire } from 'node:module';

const CHROMIUM = process.env.QUARRY_CHROMIUM ?? '/usr/bin/chromium';
const noBrowser = skipUnlessAvailable('Chromium', !fs.existsSync(CHROMIUM) && `no Chromium at ${CHROMIUM}: apt-get install chromium (or set QUARRY_CHROMIUM)`);
/** Long enough for a turn on a loaded CI machine; every wait is for something the page shows. */
const SHOWN_MS = 15_000;
const PROMPT = 'List the EU plants making Li-ion cells, with country and capacity in GWh.';
/** axe-core's script, run in the page to check it as a screen reader or keyboard user meets it. */
const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical findings on the page as it is now: rule, and the elements it found. */
async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated by the browser's debugger, not the page's own scripts: the console's CSP stays as it is.
  await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: { id: string; impact: string | null; nodes: { target: string[] }[] }[] }> } }).axe;
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] } });
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
  return found;
}

describe('the console in a real browser', { skip: noBrowser }, () => {
  let h: Harness;
  let pages: LoopbackServer;
  let browser: Browser;
  let page: Page;
  let taskId: string;
  let groupId: string;
  let keyedTaskId: string;
  /** A delivery whose attempt failed: its page is checked by axe-core and at 390 px too. */
  let deliveryPage: string;
  /**
   * What the page reported as broken: script errors, and CSP refusals (they come as console
   * errors). Error answers of the API (a wrong key) are the browser's console errors too; the
   * page shows those, so they are left out.
   */
  const problems: string[] = [];

  before(async () => {
    // The console is part of the build (scripts/build-console.ts): check it is there and fresh.
    quarryBuild();
    pages = await startPlantPages();
    h = await startHarness({ listen: true, env: { QUARRY_FETCH_ALLOW_PRIVATE: '1' } });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    context.setDefaultTimeout(SHOWN_MS);
    page = await context.newPage();
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource: the server responded with a status of')) problems.push(`console error: ${message.text()}`);
    });
  });

  /** Waits until the task's turn has failed (the API says so). */
  async function waitForFailure(id: string): Promise<void> {
    await until(`task ${id} failed`, async () => {
      const state = await h.request('GET', `/task/${id}/state`);
      return !state.body.active && state.body.last_error;
    }, { timeoutMs: SHOWN_MS, pollMs: 100 });
  }

  after(async () => {
    await browser?.close();
    await h?.close();
    await pages?.close();
  });

  it('is served without a key: the page revalidated under a strict CSP, its hashed assets cached for good', async () => {
    const res = await fetch(`${h.url}/console`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'; script-src 'self'; style-src 'self'/);
    const html = await res.text();
    const assets = [...html.matchAll(/"\/console\/assets\/([^"]+)"/g)].map((m) => m[1]!);
    assert.equal(assets.length, 2, 'one script, one style sheet');
    for (const asset of assets) {
      assert.match(asset, /^main-[A-Z0-9]{8}\.(js|css)$/, 'content-hashed names');
      const file = await fetch(`${h.url}/console/assets/${asset}`);
      assert.equal(file.status, 200);
      assert.equal(file.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    }
    assert.ok(!/https?:\/\//.test(html), 'nothing from another origin');
    assert.equal((await fetch(`${h.url}/console/tasks/anything`)).status, 200, 'a page of the console, routed in the browser');
    assert.equal((await fetch(`${h.url}/console/assets/main-NOSUCHFILE.js`)).status, 404);
  });

  it('signs in with an API key, showing the API\'s message for a wrong one', async () => {
    await page.goto(`${h.url}/console`);
    const key = page.getByLabel('API key');
    await key.fill('qry_not_a_key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The API key is invalid or revoked.' }).waitFor();
    await key.fill(h.key);
    await key.press('Enter');
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
  });

  it('starts a task from a prompt and shows its text as it streams in, tool calls folded', async () => {
    const replies = researchTurn(pages.url);
    // The first answer waits, so the task's page is open and following before anything happens.
    h.model!.script({ ...replies[0]!, delayMs: 1000 }, ...replies.slice(1));
    const streams: string[] = [];
    page.on('request', (request) => {
      if (/\/task\/[^/]+\/stream/.test(request.url())) streams.push(request.url());
    });
    await page.getByRole('link', { name: 'New task' }).first().click();
    await page.getByLabel('Prompt', { exact: true }).fill(PROMPT);
    await page.getByRole('button', { name: 'Start task' }).click();
    await page.waitForURL(/\/console\/tasks\/tsk_/);
    taskId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);

    await page.getByText(CLOSING_TEXT).waitFor();
    assert.ok(streams.length > 0, 'the text came over the task\'s stream, not a reload');
    await page.getByRole('heading', { name: 'EU battery plants' }).waitFor();
    // A tool call is one folded line; opening it shows what it was given.
    const fetchCall = page.locator('details.tool').filter({ has: page.locator('.tool-name', { hasText: /^fetch_url$/ }) });
    await fetchCall.waitFor();
    assert.equal(await fetchCall.evaluate((d) => (d as HTMLDetailsElement).open), false, 'folded');
    await fetchCall.locator('summary').click();
    await fetchCall.getByText('/northvolt-ett').first().waitFor();
    await page.getByText(/^Turn completed in /).waitFor();
    // What was asked stays on the page: the prompt opens the timeline, the spec the agent wrote beside it.
    const activity = page.getByRole('list', { name: 'Events, oldest first' });
    await activity.locator('.log-said').getByText(PROMPT).waitFor();
    await page.getByText('Spec: 1 output, citations flag').click();
    await page.getByRole('region', { name: 'Output plants' }).getByText('capacity_gwh').waitFor();
    await page.getByText('Last turn completed').waitFor();
    assert.match(await page.title(), /^completed · EU battery plants · Quarry$/, 'the tab says how the task stands');
  });

  it('shows the rows with a verified mark per cell and the quote behind it, by click or by keyboard', async () => {
    const rows = page.getByRole('region', { name: 'Rows of plants' });
    await rows.getByRole('cell', { name: /Northvolt/ }).waitFor();
    await rows.getByRole('cell', { name: /ACC/ }).waitFor();
    const verified = rows.getByRole('button', { name: 'capacity_gwh: 1 source, verified' });
    assert.equal(await verified.getAttribute('title'), `\u201c${VERIFIED_QUOTE}\u201d`, 'the quote on hover');
    await verified.click();
    const panel = page.getByRole('group', { name: 'Sources of capacity_gwh' });
    await panel.getByText(VERIFIED_QUOTE).waitFor();
    await panel.getByText('quote found in the page read').waitFor();
    await panel.getByRole('link', { name: PLANT_PAGE_TITLE }).waitFor();
    await panel.getByText('Confidence: high').waitFor();
    // The quote holds the value (decisions §17.1): the mark and the panel say so, and the task counts it.
    await panel.getByText('holds this value').waitFor();
    assert.match(await verified.getAttribute('aria-label') ?? '', /, value found in a quote$/);
    await page.getByText('cells: 1 in a quote · 0 in none').waitFor();
    await page.getByText('citation accuracy 100%').waitFor();
    await page.keyboard.press('Escape');
    await panel.waitFor({ state: 'detached' });

    const unverified = rows.getByRole('button', { name: 'company: 1 source, 1 not verified' });
    await unverified.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('group', { name: 'Sources of company' }).getByText('never read in this task').waitFor();
    await page.keyboard.press('Escape');
    await page.getByText('2 rows · 1 verified · 1 not').waitFor();
  });

  it('exports the rows as CSV', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    assert.match(download.suggestedFilename(), /\.csv$/);
    const csv = fs.readFileSync((await download.path())!, 'utf8');
    const lines = csv.split('\r\n');
    assert.equal(lines[0], '_row,company,country,capacity_gwh,_sources');
    assert.match(lines[1]!, /^1,Northvolt,SE,16,/);
    assert.match(lines[2]!, /^2,ACC,FR,13\.4,/);
  });

  it('follows a long turn\'s log as it grows, stays where the reader scrolled up, and shows the message that started it', async () => {
    const pageUrl = `${pages.url}/northvolt-ett`;
    const paragraph = (i: number) => `Reading pass ${i}: the page lists the plant's lines, their start dates and the cells they make, and I compare each with what the table holds so far.`;
    const replies: FakeReply[] = Array.from({ length: 14 }, (_, i) => ({ text: paragraph(i + 1), toolCalls: [{ name: 'fetch_url', arguments: { url: pageUrl } }], delayMs: 250 }));
    h.model!.script(...replies, { text: 'Every pass agrees with the table.' });
    await page.getByLabel('Message').fill('Read the plant page again, line by line.');
    await page.getByRole('button', { name: 'Continue' }).click();
    // The focus stays in the message box, ready for the next message.
    await page.waitForFunction(() => document.activeElement?.id === 'message');
    const log = page.getByRole('list', { name: 'Events, oldest first' });
    await log.getByText('Read the plant page again, line by line.').waitFor();
    const atEnd = () => log.evaluate((el) => el.scrollHeight > el.clientHeight + 40 && el.scrollHeight - el.scrollTop - el.clientHeight <= 2);
    await log.getByText(paragraph(6)).waitFor();
    assert.equal(await atEnd(), true, 'the log scrolled itself to the newest event');
    await log.getByText(paragraph(8)).waitFor();
    assert.equal(await atEnd(), true, 'and again as more came');

    // Scrolled up, the reader stays put while events arrive, and is offered the way down.
    await log.evaluate((el) => el.scrollTo({ top: 0 }));
    await page.getByRole('button', { name: 'Newer events below: follow' }).waitFor();
    await log.getByText(paragraph(12)).waitFor({ state: 'attached' });
    assert.equal(await log.evaluate((el) => el.scrollTop), 0, 'still where the reader scrolled');
    await page.getByRole('button', { name: 'Newer events below: follow' }).click();
    await page.getByText('Every pass agrees with the table.').waitFor();
    await page.waitForFunction(() => {
      const el = document.querySelector('ol.log')!;
      return el.scrollHeight - el.scrollTop - el.clientHeight <= 2;
    });
    // Each event has its time, and the turn's end says how long it took.
    await log.locator('.log-completed').getByText(/Turn completed in \d+ (ms|s)/).last().waitFor();
    assert.ok(await log.locator('li time').count() > 10, 'events carry their times');
  });

  it('stops a running turn', async () => {
    // Streams a few words, then never finishes: only a stop ends the turn.
    h.model!.script({ text: 'Still reading the ACC page, which is long.', hangAfterEvents: 4 });
    await page.getByLabel('Message').fill('Check the ACC plant.');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('Still readin').waitFor();
    const stop = page.getByRole('button', { name: 'Stop', exact: true });
    await page.waitForFunction(() => [...document.querySelectorAll('button')].some((b) => b.textContent === 'Stop' && !b.disabled));
    await stop.click();
    await page.getByText(/^Turn stopped in /).waitFor();
    // Idle again: nothing left to stop, and the task can run again.
    await page.waitForFunction(() => document.querySelector('.badge')?.textContent === 'stopped');
    await page.getByText('Last turn stopped').waitFor();
    assert.equal(await stop.isDisabled(), true);
    assert.equal(await page.getByRole('button', { name: 'Execute again' }).isDisabled(), false);
  });

  it('starts a group and follows it live: the bar fills without a reload, input and output columns apart, each run linked to its task', async (t) => {
    // Every run waits until released, so the page is open and following before any run ends.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    h.model!.setResponder(groupResponder(pages.url, () => held));
    t.after(() => {
      release();
      h.model!.setResponder(null);
    });
    const streams: string[] = [];
    page.on('request', (request) => {
      if (/\/group\/[^/]+\/stream/.test(request.url())) streams.push(request.url());
    });

    await page.getByRole('link', { name: 'Groups' }).click();
    await page.getByRole('link', { name: 'New group' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Plants by company');
    await page.getByLabel('Prompt for every input').fill(GROUP_TASK.prompt);
    const output = page.getByRole('group', { name: 'Output 1' });
    await output.getByLabel('Id').fill('plants');
    await output.getByRole('button', { name: 'Add column' }).click();
    await output.getByRole('button', { name: 'Add column' }).click();
    await output.getByLabel('Column 1 name').fill('plant');
    await output.getByLabel('Column 2 name').fill('country');
    await output.getByLabel('Column 3 name').fill('capacity_gwh');
    await output.getByLabel('Column 3 type').selectOption('number');
    // With one input column a line may be just its value, as pasted from a spreadsheet.
    const [first, second, third] = GROUP_PLANTS.map((p) => p.company);
    await page.getByLabel('Inputs, one per line').fill(`${first}\n${second}\n${JSON.stringify({ company: third })}`);
    await page.getByLabel('Runs at once').fill('1');
    await page.getByRole('button', { name: 'Start group' }).click();
    await page.waitForURL(/\/console\/groups\/grp_/);
    groupId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
    await page.getByRole('heading', { name: 'Plants by company' }).waitFor();
    await page.getByText('0 completed · 0 failed · 0 stopped · 1 running · 2 pending').waitFor();

    // A reload would lose this mark.
    await page.evaluate(() => Object.assign(window, { sameDocument: true }));
    release();
    await page.getByText('3 completed · 0 failed · 0 stopped · 0 running · 0 pending').waitFor();
    assert.equal(await page.getByLabel('3 of 3 runs done').evaluate((p) => (p as HTMLProgressElement).value), 3);
    assert.equal(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument), true, 'the same page, never reloaded');
    assert.ok(streams.some((url) => url.includes(`/group/${groupId}/stream`)), 'the progress came over the group\'s stream');
    await page.locator('.card-meta .badge', { hasText: 'finished' }).waitFor();

    // The merged rows: the input's columns under one heading, the output's under another.
    const rows = page.getByRole('region', { name: 'Merged rows of the group' });
    await rows.getByRole('cell', { name: GROUP_PLANTS[2]!.plant }).waitFor();
    await rows.getByRole('columnheader', { name: 'Input', exact: true }).waitFor();
    await rows.getByRole('columnheader', { name: 'Output: plants' }).waitFor();
    // Sources mark the output's cells (a run that read its page: verified), never the input's.
    assert.equal(await rows.getByRole('button', { name: 'capacity_gwh: 1 source, verified' }).count(), 2);
    await rows.getByRole('button', { name: 'plant: 1 source, 1 not verified' }).waitFor();
    assert.equal(await rows.getByRole('button', { name: /^company:/ }).count(), 0);

    // Each row links its run's task.
    const merged = await h.request('GET', `/group/${groupId}/rows`);
    assert.equal(merged.status, 200, merged.text);
    const accRun = merged.body.rows.find((r: { _input: number }) => r._input === 1)._run.task_id as string;
    await rows.getByRole('link', { name: 'Run of input 1: completed' }).click();
    await page.waitForURL(`**/console/tasks/${encodeURIComponent(accRun)}`);
    await page.getByRole('region', { name: 'Rows of plants' }).getByRole('cell', { name: GROUP_PLANTS[1]!.plant }).waitFor();
    await page.getByText(`Found ${GROUP_PLANTS[1]!.company}'s plant`).waitFor();
    // And back: a run names its group.
    await page.getByRole('link', { name: groupId }).click();
    await page.getByRole('heading', { name: 'Plants by company' }).waitFor();
    await page.getByText('3 of 3 runs done').waitFor();
  });

  it('shows a group whose run failed as failed, and opens the failed run from the group\'s page', async (t) => {
    const plants = groupResponder(pages.url);
    h.model!.setResponder(async (body) => {
      const asked = JSON.stringify(body.messages ?? []);
      return asked.includes('Failvolt') ? { status: 400, errorMessage: 'This model does not accept the request.' } : plants(body);
    });
    t.after(() => h.model!.setResponder(null));
    const created = await h.request('POST', '/group', { body: { name: 'Plants, one failing', task: GROUP_TASK, inputs: [{ company: 'Northvolt' }, { company: 'Failvolt' }] } });
    assert.equal(created.status, 200, created.text);
    const failingGroup = created.body.group_id as string;
    await until('the group to finish', async () => (await h.request('GET', `/group/${failingGroup}`)).body.status === 'finished', { timeoutMs: SHOWN_MS, pollMs: 100 });

    await page.goto(`${h.url}/console/groups/${encodeURIComponent(failingGroup)}`);
    // Not green: one run of two failed, and the bar and counts say so.
    await page.locator('.card-meta .badge', { hasText: 'finished, 1 failed' }).waitFor();
    assert.match(await page.locator('.card-meta .badge').getAttribute('class') ?? '', /tone-failed/);
    await page.getByText('1 completed · 1 failed · 0 stopped · 0 running · 0 pending').waitFor();
    const runs = page.getByRole('region', { name: 'Runs of the group' });
    await page.getByRole('group', { name: 'Show' }).getByLabel('failed').check();
    await page.waitForFunction(() => document.querySelectorAll('table.runs tbody tr').length === 1);
    const failedRuns = await h.request('GET', `/group/${failingGroup}/runs?status=failed`);
    assert.equal(failedRuns.body.runs.length, 1, failedRuns.text);
    await runs.getByText(failedRuns.body.runs[0].error.message).waitFor();
    await runs.getByRole('link', { name: 'Input 1' }).click();
    await page.waitForURL(/\/console\/tasks\/tsk_/);
    await page.getByRole('alert').filter({ hasText: 'Last turn failed' }).waitFor();
    await page.getByRole('link', { name: failingGroup }).click();

    // Retried (the model answers it now), the failed run runs again and the group turns green.
    h.model!.setResponder(plants);
    await page.getByRole('button', { name: 'Retry failed runs' }).click();
    await page.getByText('2 completed · 0 failed · 0 stopped · 0 running · 0 pending').waitFor();
    await page.locator('.card-meta .badge', { hasText: /^finished$/ }).waitFor();

    // The group list finds it by name.
    await page.getByRole('link', { name: 'Groups', exact: true }).click();
    const search = page.getByRole('search', { name: 'Groups' });
    await search.getByLabel('Search').fill('one failing');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.waitForFunction(() => document.querySelectorAll('ul[aria-label="Groups"] > li').length === 1);
    await page.getByRole('list', { name: 'Groups' }).getByRole('link', { name: 'Plants, one failing' }).waitFor();
  });

  it('pages the task list with "Show more", pinned tasks first', async () => {
    // A page is 50 tasks: these push the research task to the second.
    const made = await Promise.all(Array.from({ length: 50 }, (_, i) => h.request('POST', '/task', { body: { prompt: `Filler task ${i + 1}` } })));
    for (const res of made) assert.equal(res.status, 200, res.text);
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    const tasks = page.getByRole('list', { name: 'Tasks', exact: true });
    await page.getByText('50 tasks shown').waitFor();
    assert.equal(await tasks.getByRole('link', { name: 'EU battery plants' }).count(), 0, 'on the second page');

    await page.getByRole('button', { name: 'Show more tasks' }).click();
    await page.getByText('51 tasks shown').waitFor();
    const research = tasks.getByRole('link', { name: 'EU battery plants' });
    await research.waitFor();
    assert.equal(await page.getByRole('button', { name: 'Show more tasks' }).count(), 0, 'nothing more');
    // The focus goes to the first task read, where reading goes on.
    await page.waitForFunction(() => document.activeElement?.textContent === 'EU battery plants');

    // Pinned, it comes first, and the list still shows all 51.
    await page.getByRole('button', { name: 'Pin EU battery plants' }).click();
    await page.waitForFunction(() => document.querySelector('ul[aria-label="Tasks"] > li .card-title')?.textContent === 'EU battery plants');
    await page.getByText('51 tasks shown').waitFor();
    assert.equal(await tasks.getByRole('listitem').count(), 51);
  });

  it('finds a failed task by the list\'s filter and shows why it failed, on its card and on its page', async () => {
    h.model!.script({ status: 400, errorMessage: 'This model does not accept the request.' });
    const created = await h.request('POST', '/task', { body: { prompt: 'Which plants opened in 2025?' } });
    assert.equal(created.status, 200, created.text);
    const failedId = created.body.task_id as string;
    await waitForFailure(failedId);
    const events = await h.request('GET', `/task/${failedId}/events`);
    const reason = (events.body.events as { type: string; message?: string }[]).find((e) => e.type === 'error')!.message!;

    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    await page.getByText('tasks shown').waitFor();
    const search = page.getByRole('search', { name: 'Tasks' });
    await search.getByLabel('Last turn').selectOption('failed');
    await search.getByRole('button', { name: 'Search' }).click();
    const matching = page.getByRole('list', { name: 'Matching tasks' });
    await matching.getByText(reason).waitFor();
    assert.equal(await matching.getByRole('listitem').count(), 1, 'only the failed task');
    await matching.locator('.badge', { hasText: 'failed' }).waitFor();
    // The prompt's words find it too.
    await search.getByLabel('Last turn').selectOption('');
    await search.getByLabel('Search').fill('opened in 2025');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.waitForFunction(() => document.querySelectorAll('ul[aria-label="Matching tasks"] > li').length === 1);
    await matching.getByRole('link', { name: failedId }).click();

    await page.waitForURL(`**/console/tasks/${encodeURIComponent(failedId)}`);
    const outcome = page.getByRole('alert').filter({ hasText: 'Last turn failed' });
    await outcome.getByText(reason).waitFor();
    assert.equal(await page.locator('.card-meta .badge').textContent(), 'failed');
    assert.match(await page.title(), /^failed · /);
    await page.getByRole('list', { name: 'Events, oldest first' }).getByText('Which plants opened in 2025?').waitFor();
  });

  it('shows the account\'s balance on every page', async () => {
    const account = await h.request('GET', '/account');
    assert.equal(account.status, 200, account.text);
    // Nothing runs now: the balance read on opening a page is the API's.
    await page.goto(`${h.url}/console/groups`);
    await page.getByText(/^Balance/).waitFor();
    const shown = await page.locator('header .balance strong').textContent();
    assert.equal(Number(shown!.replace(/[^\d.]/g, '')), Number(account.body.balance.toFixed(4)));
  });

  it('says plainly when a task does not exist, with nothing to press', async () => {
    await page.goto(`${h.url}/console/tasks/tsk_NOSUCHTASK`);
    await page.getByRole('heading', { name: 'No such task' }).waitFor();
    await page.getByRole('alert').waitFor();
    assert.equal(await page.getByRole('button', { name: /Stop|Continue|Execute/ }).count(), 0);
    assert.equal(await page.locator('.badge').count(), 0, 'no state for a task that is not there');
  });

  it('shows a plan-only task\'s plan, and offers to execute it', async () => {
    h.model!.script(
      { toolCalls: [{ name: 'update_spec', arguments: { name: 'Cathode makers', outputs: [{ id: 'makers', kind: 'table', columns: [{ name: 'maker', type: 'string', required: true }, { name: 'site', type: 'url' }] }] } }] },
      { text: 'The plan: one table of makers and their sites.' },
    );
    const created = await h.request('POST', '/task', { body: { prompt: 'Who makes cathode material in Europe?', plan_only: true } });
    assert.equal(created.status, 200, created.text);
    await waitIdle(h, created.body.task_id as string);
    await page.goto(`${h.url}/console/tasks/${encodeURIComponent(created.body.task_id as string)}`);
    const plan = page.getByRole('region', { name: 'Output makers' });
    await plan.getByText('maker', { exact: true }).waitFor();
    assert.equal(await plan.isVisible(), true, 'the plan is open, not folded away');
    assert.equal(await page.locator('.card-meta .badge').textContent(), 'planned');
    await page.getByRole('button', { name: 'Execute the plan' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Execute again' }).count(), 0);
    // An output with no rows yet still shows its columns.
    await page.getByRole('region', { name: 'Rows of makers' }).getByRole('columnheader', { name: 'site' }).waitFor();
    await page.getByText('No rows yet.').waitFor();
  });

  it('shows a deleted task\'s history, and nothing to do to it', async () => {
    h.model!.script({ text: 'Nothing found.' });
    const created = await h.request('POST', '/task', { body: { prompt: 'Which plants closed in 2024?' } });
    const id = created.body.task_id as string;
    await waitIdle(h, id);
    assert.equal((await h.request('DELETE', `/task/${id}`)).status, 200);
    await page.goto(`${h.url}/console/tasks/${encodeURIComponent(id)}`);
    await page.getByText('This task was deleted').waitFor();
    await page.getByText('Nothing found.').waitFor();
    assert.equal(await page.getByRole('button', { name: /Stop|Continue|Execute/ }).count(), 0);
  });

  it('lists what each turn changed in a keyed output: cells before and after, and both quotes', async () => {
    const source = (quote: string) => ({ url: `${pages.url}/northvolt-ett`, title: PLANT_PAGE_TITLE, quote });
    const writes = (capacity: number, quote: string): FakeReply[] => [
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'plants', rows: [{ company: 'Northvolt', capacity_gwh: capacity, _sources: [source(quote)] }] } }] },
      { text: 'Written.' },
    ];
    h.model!.script(...writes(16, '16 GWh of annual capacity'), ...writes(20, '20 GWh after the expansion'));
    const spec = { name: 'Watched plants', prompt: 'Keep the plants up to date.', outputs: [{ id: 'plants', kind: 'table', key: ['company'], columns: [{ name: 'company', type: 'string', required: true }, { name: 'capacity_gwh', type: 'number' }] }] };
    const created = await h.request('POST', '/task/start', { body: { task: spec } });
    assert.equal(created.status, 200, created.text);
    const id = created.body.task_id as string;
    keyedTaskId = id;
    await waitIdle(h, id);
    assert.equal((await h.request('POST', `/task/${id}/execute`, { body: {} })).status, 200);
    await waitIdle(h, id);

    await page.goto(`${h.url}/console/tasks/${encodeURIComponent(id)}`);
    const changes = page.getByRole('region', { name: 'Changes' });
    const changed = changes.getByRole('row').filter({ has: page.locator('.badge', { hasText: 'changed' }) });
    await changed.locator('del', { hasText: '16' }).waitFor();
    await changed.locator('ins', { hasText: '20' }).waitFor();
    await changed.getByText('16 GWh of annual capacity').waitFor();
    await changed.getByText('20 GWh after the expansion').waitFor();
    await changes.getByRole('row').filter({ has: page.locator('.badge', { hasText: 'added' }) }).getByText('Northvolt').first().waitFor();
  });

  it('opens a delivery from an endpoint\'s list: its failed attempt\'s status and answer, and its payload to copy', async (t) => {
    const receiver = await startWebhookReceiver(() => ({ status: 503, body: 'receiver down for maintenance' }));
    t.after(() => receiver.close());
    const hook = await h.request('POST', '/webhooks', { body: { url: `${receiver.url}/hook`, events: ['task.turn_completed'] } });
    assert.equal(hook.status, 201, hook.text);
    const webhookId = hook.body.webhook_id as string;
    h.model!.script({ text: 'Nothing new.' });
    const created = await h.request('POST', '/task', { body: { prompt: 'Any new plants this week?' } });
    await waitIdle(h, created.body.task_id as string);
    await receiver.waitFor(1);
    // The attempt is recorded as it ends, just after the receiver answered.
    const delivery = await until('the failed attempt recorded', async () => {
      const res = await h.request('GET', `/webhooks/${webhookId}/deliveries`);
      const d = res.body.deliveries[0];
      return d && d.attempts > 0 ? d : undefined;
    }, { timeoutMs: SHOWN_MS, pollMs: 100 });

    await page.goto(`${h.url}/console/webhooks/${encodeURIComponent(webhookId)}`);
    const link = page.getByRole('link', { name: `task.turn_completed ${delivery.delivery_id as string}` });
    // By keyboard: the link takes the focus and Enter opens the delivery.
    await link.focus();
    await link.press('Enter');
    await page.getByRole('heading', { name: 'Delivery', exact: true, level: 1 }).waitFor();
    deliveryPage = new URL(page.url()).pathname;
    const first = page.getByRole('listitem', { name: 'Attempt 1' });
    await first.getByText('HTTP 503', { exact: true }).waitFor();
    await first.getByText('the receiver answered HTTP 503').waitFor();
    await first.locator('.badge', { hasText: 'failed' }).waitFor();
    await first.getByRole('region', { name: 'Answer to attempt 1' }).getByText('receiver down for maintenance').waitFor();
    await first.getByText(/took \d+ ms|took \d+ s/).waitFor();
    const payload = page.getByRole('region', { name: 'Payload' });
    assert.equal(JSON.parse(await payload.textContent() ?? '').data.task_id, created.body.task_id, 'the payload, as sent');
    assert.match(await page.title(), /^pending · delivery task\.turn_completed/);
    assert.deepEqual(await seriousViolations(page), [], 'the delivery');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.url });
    await page.getByRole('button', { name: 'Copy payload' }).click();
    await page.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), await payload.textContent());
  });

  it('passes axe-core with no serious violation on every page', async () => {
    const hook = await h.request('POST', '/webhooks', { body: { url: 'https://example.com/quarry-hook', events: ['task.turn_failed'] } });
    assert.equal(hook.status, 201, hook.text);
    const views: [string, string][] = [
      ['/console', 'EU battery plants'],
      [`/console/tasks/${encodeURIComponent(taskId)}`, 'Last turn stopped'],
      ['/console/new', 'Start from'],
      ['/console/groups', 'Plants by company'],
      ['/console/groups/new', 'Inputs, one per line'],
      [`/console/groups/${encodeURIComponent(groupId)}`, 'Northvolt Ett'],
      ['/console/webhooks', 'Register an endpoint'],
      [`/console/webhooks/${encodeURIComponent(hook.body.webhook_id as string)}`, 'Deliveries'],
      ['/console/tasks/tsk_NOSUCHTASK', 'No such task'],
      [`/console/tasks/${encodeURIComponent(keyedTaskId)}`, 'Cells, before → after'],
    ];
    for (const [path, shown] of views) {
      await page.goto(h.url + path);
      await page.getByText(shown).first().waitFor();
      assert.deepEqual(await seriousViolations(page), [], path);
    }
    // The sources panel open, too.
    await page.goto(`${h.url}/console/tasks/${encodeURIComponent(taskId)}`);
    await page.getByRole('button', { name: 'capacity_gwh: 1 source, verified' }).click();
    await page.getByRole('group', { name: 'Sources of capacity_gwh' }).waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'the sources panel');
  });

  it('fits 390 pixels wide: nothing runs off the side, and axe-core finds nothing serious there either', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    // Each page with what it loads, so the widths are measured with the content in place.
    const views: [string, string][] = [
      ['/console', 'EU battery plants'],
      [`/console/tasks/${encodeURIComponent(taskId)}`, 'Turn stopped'],
      ['/console/new', 'Start from'],
      ['/console/groups', 'Plants by company'],
      [`/console/groups/${encodeURIComponent(groupId)}`, 'Northvolt Ett'],
      ['/console/webhooks', 'Register an endpoint'],
      [deliveryPage, 'receiver down for maintenance'],
    ];
    for (const [path, shown] of views) {
      await page.goto(h.url + path);
      await page.getByText(shown).first().waitFor();
      const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, view: document.documentElement.clientWidth }));
      assert.ok(widths.page <= widths.view, `${path} is ${widths.page} px wide in a ${widths.view} px window`);
      assert.deepEqual(await seriousViolations(page), [], `${path} at 390 px`);
    }
    // The rows table scrolls sideways inside its own region, never the page.
    await page.goto(`${h.url}/console/tasks/${encodeURIComponent(taskId)}`);
    await page.getByRole('button', { name: 'capacity_gwh: 1 source, verified' }).click();
    const box = await page.getByRole('group', { name: 'Sources of capacity_gwh' }).boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 390, 'the sources panel stays inside the window, across');
    assert.ok(box.y >= 0 && box.y + box.height <= 844, `and down: ${box.y} to ${box.y + box.height} in 844 px`);
    assert.deepEqual(await seriousViolations(page), [], 'the task at 390 px, its sources open');
  });

  it('reported no script error and no refused resource (CSP)', () => {
    assert.deepEqual(problems, []);
  });
});
