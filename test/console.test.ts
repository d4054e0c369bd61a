/**
 * The web console (decisions §15.5) in a real browser: Debian's Chromium driven by
 * playwright-core against a real server and the fake model. A person signs in, starts a task,
 * watches its text stream in, reads the rows with their source marks and a quote, exports CSV,
 * stops a running turn, follows a group's progress, and uses it all 390 pixels wide. Every
 * control is found by its role and accessible name, so unlabelled controls fail here.
 *
 * Skipped when there is no Chromium (QUARRY_CHROMIUM, default /usr/bin/chromium); `.ci/run`
 * installs it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startHarness, type Harness } from './helpers/harness.js';
import { CLOSING_TEXT, PLANT_PAGE_TITLE, researchTurn, startPlantPages, VERIFIED_QUOTE } from './helpers/console-demo.js';
import { quarryBuild } from './helpers/process.js';
import type { LoopbackServer } from './fake-model/loopback-server.js';

const CHROMIUM = process.env.QUARRY_CHROMIUM ?? '/usr/bin/chromium';
const noBrowser = fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM}: apt-get install chromium (or set QUARRY_CHROMIUM)`;
/** Long enough for a turn on a loaded CI machine; every wait is for something the page shows. */
const SHOWN_MS = 15_000;

describe('the console in a real browser', { skip: noBrowser }, () => {
  let h: Harness;
  let pages: LoopbackServer;
  let browser: Browser;
  let page: Page;
  let taskId: string;
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
    h = await startHarness({ env: { QUARRY_FETCH_ALLOW_PRIVATE: '1' } });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    context.setDefaultTimeout(SHOWN_MS);
    page = await context.newPage();
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource: the server responded with a status of')) problems.push(`console error: ${message.text()}`);
    });
  });

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
    await page.getByLabel('Prompt', { exact: true }).fill('List the EU plants making Li-ion cells, with country and capacity in GWh.');
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
    await page.getByText('Turn completed').waitFor();
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

  it('stops a running turn', async () => {
    // Streams a few words, then never finishes: only a stop ends the turn.
    h.model!.script({ text: 'Still reading the ACC page, which is long.', hangAfterEvents: 4 });
    await page.getByLabel('Message').fill('Check the ACC plant.');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('Still readin').waitFor();
    const stop = page.getByRole('button', { name: 'Stop', exact: true });
    await page.waitForFunction(() => [...document.querySelectorAll('button')].some((b) => b.textContent === 'Stop' && !b.disabled));
    await stop.click();
    await page.getByText('Turn stopped').waitFor();
    // Idle again: nothing left to stop, and the task can run again.
    await page.waitForFunction(() => document.querySelector('.badge')?.textContent === 'idle');
    assert.equal(await stop.isDisabled(), true);
    assert.equal(await page.getByRole('button', { name: 'Execute again' }).isDisabled(), false);
  });

  it('shows a group\'s progress and merged rows', async (t) => {
    const probe = await h.request('POST', '/group', { body: {} });
    if (probe.status === 404) {
      t.skip('POST /group answers 404: task groups are not in this build yet');
      return;
    }
    h.model!.setResponder(() => ({ text: 'Nothing more to add for this company.' }));
    t.after(() => h.model!.setResponder(null));
    const created = await h.request('POST', '/group', {
      body: {
        name: 'Plants by company',
        task: {
          prompt: 'Find the company\'s battery plants.',
          input_columns: [{ name: 'company', type: 'string', required: true }],
          outputs: [{ id: 'plants', kind: 'table', columns: [{ name: 'plant', type: 'string' }] }],
        },
        inputs: [{ company: 'Northvolt' }, { company: 'ACC' }],
      },
    });
    assert.equal(created.status, 200, created.text);
    await page.getByRole('link', { name: 'Groups' }).click();
    await page.getByRole('link', { name: 'Plants by company' }).click();
    await page.getByRole('heading', { name: 'Plants by company' }).waitFor();
    await page.getByText('2 of 2 runs done').waitFor();
    const progress = page.getByLabel('2 of 2 runs done');
    assert.equal(await progress.evaluate((p) => (p as HTMLProgressElement).value), 2);
  });

  it('fits 390 pixels wide: nothing runs off the side', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    // Each page with what it loads, so the widths are measured with the content in place.
    const views: [string, string][] = [
      ['/console', 'EU battery plants'],
      [`/console/tasks/${encodeURIComponent(taskId)}`, 'Turn stopped'],
      ['/console/new', 'Start from'],
      ['/console/groups', 'Groups'],
      ['/console/webhooks', 'Register an endpoint'],
    ];
    for (const [path, shown] of views) {
      await page.goto(h.url + path);
      await page.getByText(shown).first().waitFor();
      const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, view: document.documentElement.clientWidth }));
      assert.ok(widths.page <= widths.view, `${path} is ${widths.page} px wide in a ${widths.view} px window`);
    }
    // The rows table scrolls sideways inside its own region, never the page.
    await page.goto(`${h.url}/console/tasks/${encodeURIComponent(taskId)}`);
    await page.getByRole('button', { name: 'capacity_gwh: 1 source, verified' }).click();
    const box = await page.getByRole('group', { name: 'Sources of capacity_gwh' }).boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 390, 'the sources panel stays inside the window');
  });

  it('reported no script error and no refused resource (CSP)', () => {
    assert.deepEqual(problems, []);
  });
});
