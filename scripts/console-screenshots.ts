/**
 * Takes the console's screenshots in docs/screenshots/ (shown in the README and docs/console.md):
 * starts a Quarry with the fake model, a few tasks worth seeing and a group caught mid-run
 * (test/kit/console-demo.ts), then photographs the pages in Chromium at 1280 and at 390
 * pixels wide. Run by hand after the console changes, on a fresh build:
 *
 *   npm run build && node --import tsx scripts/console-screenshots.ts
 *
 * QUARRY_CHROMIUM names the browser (default /usr/bin/chromium).
 */
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { until } from '../test/kit/bounded-waits.js';
import { startHarness, waitIdle, type Harness } from '../test/kit/harness.js';
import { GROUP_PLANTS, GROUP_TASK, groupResponder, researchTurn, startPlantPages } from '../test/kit/console-demo.js';
import { startWebhookReceiver } from '../test/kit/webhook-receiver.js';
import { ROOT } from './build-state.js';

const OUT = path.join(ROOT, 'docs', 'screenshots');
const CHROMIUM = process.env.QUARRY_CHROMIUM ?? '/usr/bin/chromium';

async function task(h: Harness, prompt: string): Promise<string> {
  const res = await h.request('POST', '/task', { body: { prompt } });
  if (res.status !== 200) throw new Error(`POST /task answered ${res.status}: ${res.text}`);
  await waitIdle(h, res.body.task_id, 30_000);
  return res.body.task_id;
}

/** Runs of the group from this input on wait, so it is photographed mid-run: some done, some running, one pending. */
const HELD_FROM = 8;
const GROUP_PARALLEL = 3;

/** A group of GROUP_PLANTS, once every run before HELD_FROM has ended and the next ones are running. */
async function groupMidRun(h: Harness): Promise<string> {
  const res = await h.request('POST', '/group', {
    body: { name: 'Plants by company', task: GROUP_TASK, inputs: GROUP_PLANTS.map((p) => ({ company: p.company })), max_parallel: GROUP_PARALLEL },
  });
  if (res.status !== 200) throw new Error(`POST /group answered ${res.status}: ${res.text}`);
  const groupId: string = res.body.group_id;
  await until('the group to reach its held runs', async () => {
    const { counts } = (await h.request('GET', `/group/${groupId}`)).body;
    return counts.completed === HELD_FROM && counts.running === GROUP_PARALLEL;
  }, { timeoutMs: 30_000, pollMs: 50 });
  return groupId;
}

async function shoot(page: Page, name: string): Promise<void> {
  // Fonts and the last answers settle.
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(OUT, name) });
  process.stdout.write(`docs/screenshots/${name}\n`);
}

const pages = await startPlantPages();
// A receiver that is down for the first attempt of a delivery and takes the second, retried soon.
const receiver = await startWebhookReceiver((req) => (req.index === 0 ? { status: 503, body: 'Service Unavailable: down for maintenance' } : { status: 200, body: 'ok' }));
const h = await startHarness({ listen: true, env: { QUARRY_FETCH_ALLOW_PRIVATE: '1', QUARRY_WEBHOOK_RETRY_S: '1' } });
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
let release = () => {};
const held = new Promise<void>((resolve) => (release = resolve));
try {
  const model = h.model!;
  const hook = await h.request('POST', '/webhooks', { body: { url: `${receiver.url}/quarry-hook`, events: ['task.turn_completed'] } });
  if (hook.status !== 201) throw new Error(`POST /webhooks answered ${hook.status}: ${hook.text}`);
  const webhookId: string = hook.body.webhook_id;
  model.script({ text: 'Three makers announced solid-state lines: Toyota, Idemitsu and Maxell.' });
  const japan = await task(h, 'Who makes solid-state batteries in Japan?');
  await h.request('PATCH', `/task/${japan}`, { body: { name: 'Solid-state makers in Japan' } });
  model.script({ text: 'Nothing new since last week.' });
  const weekly = await task(h, 'Weekly: new gigafactory announcements in Europe.');
  await h.request('PATCH', `/task/${weekly}`, { body: { name: 'Gigafactory announcements', pinned: true } });
  model.script({ status: 400, errorMessage: 'This model does not accept requests this long.' });
  const poland = await task(h, 'Which battery recycling plants opened in Poland in 2025?');
  await h.request('PATCH', `/task/${poland}`, { body: { name: 'Recycling plants in Poland' } });
  model.script(...researchTurn(pages.url));
  const plants = await task(h, 'List the EU plants making Li-ion cells, with country and capacity in GWh.');
  model.script({ text: 'Adding the Polish plants now.', hangAfterEvents: 3 });
  await h.request('POST', `/task/${plants}/continue`, { body: { message: 'Add the plants in Poland too.' } });
  await until('the turn to stream', async () => (await h.request('GET', `/task/${plants}/state`)).body.activity === 'thinking', { timeoutMs: 10_000, pollMs: 50 });
  await h.request('POST', `/task/${plants}/stop`, { body: {} });
  await waitIdle(h, plants, 10_000);
  model.setResponder(groupResponder(pages.url, (index) => (index >= HELD_FROM ? held : Promise.resolve())));
  const group = await groupMidRun(h);

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
  const page = await context.newPage();
  await page.goto(`${h.url}/console`);
  await page.getByLabel('API key').fill(h.key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: 'EU battery plants' }).waitFor();
  await shoot(page, 'console-tasks-1280.png');

  await page.getByRole('link', { name: 'EU battery plants' }).click();
  await page.getByRole('cell', { name: /Northvolt/ }).waitFor();
  await page.getByRole('button', { name: 'capacity_gwh: 1 source, verified' }).click();
  await shoot(page, 'console-task-1280.png');

  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${h.url}/console/tasks/${plants}`);
  await page.getByRole('cell', { name: /Northvolt/ }).waitFor();
  await shoot(page, 'console-task-390.png');
  await page.goto(`${h.url}/console`);
  await page.getByRole('link', { name: 'EU battery plants' }).waitFor();
  await shoot(page, 'console-tasks-390.png');
  const lastDone = GROUP_PLANTS[HELD_FROM - 1]!.plant;
  await page.goto(`${h.url}/console/groups/${group}`);
  await page.getByRole('cell', { name: lastDone }).waitFor();
  await shoot(page, 'console-group-390.png');
  const firstDelivery = await until('a delivery taken on its second attempt', async () => {
    const { deliveries } = (await h.request('GET', `/webhooks/${webhookId}/deliveries`)).body;
    const first = deliveries.at(-1);
    return first?.status === 'delivered' ? first.delivery_id as string : undefined;
  }, { timeoutMs: 10_000, pollMs: 100 });
  await page.goto(`${h.url}/console/webhooks/${webhookId}/deliveries/${firstDelivery}`);
  await page.getByText('down for maintenance').waitFor();
  await shoot(page, 'console-delivery-390.png');

  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${h.url}/console/groups/${group}`);
  await page.getByRole('cell', { name: lastDone }).waitFor();
  await shoot(page, 'console-group-1280.png');
} finally {
  release();
  await browser.close();
  await h.close();
  await pages.close();
  await receiver.close();
}
