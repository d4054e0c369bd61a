/**
 * Webhooks from the user's side, against a real server (the build, on the demo model) that
 * POSTs to a loopback receiver: `quarry webhooks …` run as a child process (create, ls, show,
 * rotate-secret, rm, deliveries, redeliver; `--json`; the exit codes), and `client.webhooks` (the
 * same calls, deliveries paged by X-Next-Cursor, the error classes). The secret each prints is
 * the one the deliveries are signed with, as the reference `standardwebhooks` library checks.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { until } from '../kit/bounded-waits.js';
import { dropSchemas, testStoreEnv } from '../kit/postgres.js';
import { runQuarryCli, startServer, tempDataDir, type ServerProcess } from '../kit/process.js';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../kit/webhook-receiver.js';
import { NotFoundError, QuarryClient, type Fetch, type WebhookDelivery } from '../../packages/client/src/index.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

const ADMIN_KEY = 'webhooks-cli-admin-key';
/** QUARRY_TEST_STORE=postgres (npm run test:postgres): the server runs on a schema of its own. */
const store = testStoreEnv('t_whcli');

let server: ServerProcess;
let receiver: WebhookReceiver;

/** A new account with its own key, so each suite counts only its own endpoints' deliveries. */
async function newAccountClient(name: string, fetch?: Fetch): Promise<QuarryClient> {
  const { api_key } = await new QuarryClient({ baseURL: server.url, adminKey: ADMIN_KEY }).admin.accounts.create({ name, credits: 100 });
  return new QuarryClient({ baseURL: server.url, apiKey: api_key, fetch });
}

/** Runs one turn to its end (the demo model completes it): one task.turn_completed per endpoint. */
async function runTurn(client: QuarryClient, prompt: string): Promise<void> {
  const task = await client.tasks.create({ prompt });
  const state = await client.tasks.waitForTurn(task, { timeoutMs: 30_000 });
  assert.equal(state.last_error, null);
}

/** The requests the receiver got on `path`. */
function receivedOn(path: string): ReceivedWebhook[] {
  return receiver.received.filter((r) => r.path === path);
}

/** Waits until every delivery of the endpoint has left `pending` (or `check` holds), and returns them, newest first. */
async function settledDeliveries(client: QuarryClient, webhookId: string, check = (d: WebhookDelivery[]) => d.length > 0 && d.every((x) => x.status !== 'pending')): Promise<WebhookDelivery[]> {
  let deliveries: WebhookDelivery[] = [];
  await until(`the deliveries of ${webhookId} to settle`, async () => {
    deliveries = [];
    for await (const d of client.webhooks.deliveries(webhookId)) deliveries.push(d);
    return check(deliveries);
  }, { timeoutMs: 15_000, pollMs: 50 });
  return deliveries;
}

/** Checks a received request's Standard Webhooks signature against `secret`; returns the payload. */
function verified(request: ReceivedWebhook, secret: string): any {
  return new StandardWebhook(secret).verify(request.body, request.headers as Record<string, string>);
}

before(async () => {
  receiver = await startWebhookReceiver();
  server = await startServer({
    dataDir: tempDataDir('quarry-webhooks-cli-'),
    waitForStarterKey: true,
    env: {
      QUARRY_MODEL_PROVIDER: 'demo',
      // The receiver listens on loopback.
      QUARRY_FETCH_ALLOW_PRIVATE: '1',
      // A failed attempt stays pending (and visible) instead of being retried while the test looks.
      QUARRY_WEBHOOK_RETRY_S: '3600',
      QUARRY_RATE_LIMIT_PER_MIN: '1000000',
      QUARRY_ADMIN_KEY: ADMIN_KEY,
      ...store.env,
    },
  });
});
after(async () => {
  await server?.kill9();
  await receiver?.close();
  if (store.schema) await dropSchemas(store.schema);
});

describe('quarry webhooks', () => {
  let env: Record<string, string>;
  let client: QuarryClient;
  const quarry = (args: string[], extra: Record<string, string | undefined> = {}) => runQuarryCli(args, { env: { NO_COLOR: '1', ...env, ...extra } });

  before(() => {
    env = { QUARRY_URL: server.url, QUARRY_API_KEY: server.starterKey! };
    client = new QuarryClient({ baseURL: server.url, apiKey: server.starterKey! });
  });

  it('create prints the secret once; ls, show, rotate-secret and rm, as text and with --json', async () => {
    const created = await quarry(['webhooks', 'create', '--url', 'https://hooks.example.com/quarry', '--events', 'task.turn_completed, task.turn_failed', '--description', 'CI pipeline']);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /^webhook {6}wh_\w+\nurl {10}https:\/\/hooks\.example\.com\/quarry\nevents {7}task\.turn_completed, task\.turn_failed\ndescription {2}CI pipeline\ncreated {6}\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\nsecret {7}whsec_\S+\n$/);
    assert.equal(created.stderr, 'the signing secret is shown only once: store it where your receiver verifies webhook-signature\n');
    const webhookId = /wh_\w+/.exec(created.stdout)![0];

    const asJson = await quarry(['webhooks', 'create', '--url', 'https://hooks.example.com/other', '--events', 'task.turn_stopped', '--json']);
    assert.equal(asJson.code, 0, asJson.stderr);
    assert.equal(asJson.stderr, '', 'no note with --json: the secret is in the JSON');
    const other = JSON.parse(asJson.stdout);
    assert.match(other.secret, /^whsec_/);
    assert.deepEqual(other.events, ['task.turn_stopped']);
    assert.equal(other.description, null);

    const [ls, lsText, show, showText] = await Promise.all([
      quarry(['webhooks', 'ls', '--json']),
      quarry(['webhooks', 'ls']),
      quarry(['webhooks', 'get', webhookId, '--json']),
      quarry(['webhooks', 'show', webhookId]),
    ]);
    for (const r of [ls, lsText, show, showText]) assert.equal(r.code, 0, r.stderr);
    const listed = JSON.parse(ls.stdout);
    assert.deepEqual(listed.map((h: any) => h.webhook_id), [other.webhook_id, webhookId], 'newest first');
    assert.ok(listed.every((h: any) => !('secret' in h)), 'a list never carries secrets');
    assert.match(lsText.stdout, /^WEBHOOK +EVENTS +CREATED +URL +DESCRIPTION\n/);
    assert.match(lsText.stdout, new RegExp(`\\n${webhookId} +task\\.turn_completed,task\\.turn_failed +\\S+ \\S+ +https://hooks\\.example\\.com/quarry +CI pipeline\\n`));
    assert.doesNotMatch(lsText.stdout + showText.stdout + show.stdout, /whsec_/);
    assert.deepEqual(JSON.parse(show.stdout), listed[1]);
    assert.match(showText.stdout, /^webhook {6}wh_/);
    assert.doesNotMatch(showText.stdout, /previous/, 'no previous secret before a rotation');

    const rotated = await quarry(['webhooks', 'rotate-secret', webhookId]);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, new RegExp(`^webhook {2}${webhookId}\\nsecret {3}whsec_\\S+\\n$`));
    assert.notEqual(/whsec_\S+/.exec(rotated.stdout)![0], /whsec_\S+/.exec(created.stdout)![0], 'a new secret');
    assert.match(rotated.stderr, /^the new signing secret is shown only once: store it; the previous one signs too until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n$/);
    const afterRotation = await quarry(['webhooks', 'show', webhookId]);
    assert.match(afterRotation.stdout, /\nprevious {5}the previous secret signs too until \d{4}-/);

    const removed = await Promise.all([quarry(['webhooks', 'rm', webhookId]), quarry(['webhooks', 'delete', other.webhook_id, '--json'])]);
    assert.equal(removed[0].code, 0, removed[0].stderr);
    assert.equal(removed[0].stdout, `${webhookId} deleted\n`);
    assert.equal(JSON.parse(removed[1].stdout).webhook_id, other.webhook_id);
    const none = await quarry(['webhooks', 'ls']);
    assert.equal(none.stdout, 'no webhooks\n');
  });

  it('deliveries lists what a turn sent, newest first; redeliver sends one again under the same webhook-id', async () => {
    const created = JSON.parse((await quarry(['webhooks', 'create', '--url', `${receiver.url}/cli`, '--events', 'task.turn_completed', '--json'])).stdout);
    const webhookId: string = created.webhook_id;
    const empty = await quarry(['webhooks', 'deliveries', webhookId]);
    assert.equal(empty.stdout, 'no deliveries\n');

    await runTurn(client, 'solar panel makers');
    const [first] = await settledDeliveries(client, webhookId);
    assert.equal(first!.status, 'delivered');
    const sent = receivedOn('/cli');
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.headers['webhook-id'], first!.delivery_id);
    const payload = verified(sent[0]!, created.secret);
    assert.equal(payload.type, 'task.turn_completed');

    // The next turn's delivery fails: it stays pending (the retry is an hour away) with the receiver's answer.
    receiver.answer = (r) => (r.path === '/cli' ? 500 : 200);
    await runTurn(client, 'wind turbine makers');
    await settledDeliveries(client, webhookId, (d) => d.length === 2 && d[0]!.last_status_code === 500);

    const [listed, newest, text] = await Promise.all([
      quarry(['webhooks', 'deliveries', webhookId, '--all', '--json']),
      quarry(['webhooks', 'deliveries', webhookId, '--limit', '1', '--json']),
      quarry(['webhooks', 'deliveries', webhookId]),
    ]);
    for (const r of [listed, newest, text]) assert.equal(r.code, 0, r.stderr);
    const deliveries = JSON.parse(listed.stdout);
    assert.equal(deliveries.length, 2);
    assert.equal(deliveries[1].delivery_id, first!.delivery_id, 'newest first');
    const failed = deliveries[0];
    assert.equal(failed.status, 'pending');
    assert.equal(failed.last_status_code, 500);
    assert.match(failed.last_error, /HTTP 500/);
    assert.deepEqual(JSON.parse(newest.stdout), [failed]);
    assert.match(text.stdout, /^DELIVERY +EVENT +STATUS +ATTEMPTS +HTTP +CREATED +NEXT ATTEMPT +LAST ERROR\n/);
    assert.match(text.stdout, new RegExp(`\\n${failed.delivery_id} +task\\.turn_completed +pending +1 +500 +.+the receiver answered HTTP 500\\n`));
    assert.match(text.stdout, new RegExp(`\\n${first!.delivery_id} +task\\.turn_completed +delivered +1 +200 +\\S+ \\S+ +-\\n`));

    receiver.answer = () => 200;
    const again = await quarry(['webhooks', 'redeliver', webhookId, failed.delivery_id]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, `${failed.delivery_id} due again now (task.turn_completed)\n`);
    await settledDeliveries(client, webhookId);
    const attempts = receiver.byId(failed.delivery_id);
    assert.equal(attempts.length, 2, 'the failed attempt and the redelivery');
    assert.equal(verified(attempts[1]!, created.secret).data.task_id, verified(attempts[0]!, created.secret).data.task_id);
    const redelivered = JSON.parse((await quarry(['webhooks', 'deliveries', webhookId, '--limit', '1', '--json'])).stdout)[0];
    assert.equal(redelivered.status, 'delivered');
    assert.equal(redelivered.attempts, 2);
    assert.equal(redelivered.last_status_code, 200);
  });

  it('prints the API\'s message and exits with the documented code on failure', async () => {
    const cases: [string, string[], Record<string, string | undefined>, number, RegExp][] = [
      ['unknown webhook', ['webhooks', 'show', 'wh_nope'], {}, 4, /^quarry: No webhook endpoint with webhook_id "wh_nope"\. \(webhook_not_found, HTTP 404, request qc_\w+\)\n$/],
      ['rm of an unknown webhook', ['webhooks', 'rm', 'wh_nope'], {}, 4, /webhook_not_found, HTTP 404/],
      ['rotate-secret of an unknown webhook', ['webhooks', 'rotate-secret', 'wh_nope'], {}, 4, /webhook_not_found, HTTP 404/],
      ['deliveries of an unknown webhook', ['webhooks', 'deliveries', 'wh_nope'], {}, 4, /webhook_not_found, HTTP 404/],
      ['redeliver to an unknown webhook', ['webhooks', 'redeliver', 'wh_nope', 'msg_nope'], {}, 4, /webhook_not_found, HTTP 404/],
      ['unknown event', ['webhooks', 'create', '--url', 'https://hooks.example.com/x', '--events', 'task.done'], {}, 1, /\[events\[0\]\] \(invalid_request, HTTP 422/],
      ['a URL not http(s)', ['webhooks', 'create', '--url', 'ftp://hooks.example.com/x', '--events', 'task.turn_completed'], {}, 1, /only http and https URLs .*\[url\] \(invalid_request, HTTP 422/],
      ['missing --url', ['webhooks', 'create', '--events', 'task.turn_completed'], {}, 2, /missing --url URL/],
      ['empty --events', ['webhooks', 'create', '--url', 'https://hooks.example.com/x', '--events', ','], {}, 2, /--events needs at least one event/],
      ['missing DELIVERY_ID', ['webhooks', 'redeliver', 'wh_nope'], {}, 2, /missing ID and DELIVERY_ID/],
      ['bad --limit', ['webhooks', 'deliveries', 'wh_nope', '--limit', '0'], {}, 2, /--limit must be at least 1/],
      ['unknown subcommand', ['webhooks', 'purge'], {}, 2, /unknown command "webhooks purge"/],
      ['no key', ['webhooks', 'ls'], { QUARRY_API_KEY: undefined }, 3, /QUARRY_API_KEY is not set/],
    ];
    const runs = await Promise.all(cases.map(([, args, extra]) => quarry(args, extra)));
    cases.forEach(([what, , , code, stderr], i) => {
      assert.equal(runs[i]!.code, code, `${what}: ${runs[i]!.stderr}`);
      assert.match(runs[i]!.stderr, stderr, what);
      assert.equal(runs[i]!.stdout, '', what);
    });

    const hook = JSON.parse((await quarry(['webhooks', 'create', '--url', 'https://hooks.example.com/x', '--events', 'task.turn_failed', '--json'])).stdout);
    const asJson = await quarry(['webhooks', 'redeliver', hook.webhook_id, 'msg_nope', '--json']);
    assert.equal(asJson.code, 4);
    const body = JSON.parse(asJson.stderr);
    assert.equal(body.error, 'delivery_not_found');
    assert.equal(body.status, 404);
    assert.equal(body.message, `No delivery with delivery_id "msg_nope" for webhook "${hook.webhook_id}".`);

    const help = await quarry(['webhooks', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /webhooks create --url URL --events EVENT\[,EVENT\.\.\.\] \[--description TEXT\]/);
  });
});

describe('client.webhooks', () => {
  it('creates, lists, retrieves, rotates and deletes endpoints; an unknown one is NotFoundError', async () => {
    const client = await newAccountClient('webhooks-client-crud');
    const hook = await client.webhooks.create({ url: 'https://hooks.example.com/client', events: ['task.turn_completed', 'group.finished'], description: 'nightly' });
    assert.match(hook.webhook_id, /^wh_/);
    assert.match(hook.secret, /^whsec_/);
    assert.equal(hook.url, 'https://hooks.example.com/client');
    assert.equal(hook.previous_secret_expires_at, null);
    const { secret, ...view } = hook;

    assert.deepEqual(await client.webhooks.list(), [view]);
    assert.deepEqual(await client.webhooks.retrieve(hook.webhook_id), view);

    const rotated = await client.webhooks.rotateSecret(hook.webhook_id);
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, secret);
    const overlapMs = Date.parse(rotated.previous_secret_expires_at!) - Date.now();
    assert.ok(overlapMs > 23 * 3600_000 && overlapMs <= 24 * 3600_000, `the previous secret signs for 24 h (${overlapMs} ms left)`);
    assert.equal((await client.webhooks.retrieve(hook.webhook_id)).previous_secret_expires_at, rotated.previous_secret_expires_at);

    const deleted = await client.webhooks.delete(hook.webhook_id);
    assert.equal(deleted.webhook_id, hook.webhook_id);
    assert.deepEqual(await client.webhooks.list(), []);
    for (const call of [() => client.webhooks.retrieve(hook.webhook_id), () => client.webhooks.delete(hook.webhook_id), () => client.webhooks.deliveries(hook.webhook_id).then((p) => p.data)]) {
      const err = await call().then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof NotFoundError, String(err));
      assert.equal(err.status, 404);
      assert.equal(err.error, 'webhook_not_found');
      assert.equal(err.message, `No webhook endpoint with webhook_id "${hook.webhook_id}".`);
    }
  });

  it('pages through deliveries by X-Next-Cursor, newest first, and redelivers one', async () => {
    const urls: URL[] = [];
    const client = await newAccountClient('webhooks-client-deliveries', (input, init) => {
      urls.push(new URL(input));
      return fetch(input, init);
    });
    const hook = await client.webhooks.create({ url: `${receiver.url}/client`, events: ['task.turn_completed'] });
    for (const prompt of ['first battery makers', 'second battery makers', 'third battery makers']) await runTurn(client, prompt);
    await until('three deliveries to /client', () => receivedOn('/client').length >= 3, { timeoutMs: 15_000 });
    await settledDeliveries(client, hook.webhook_id, (d) => d.length === 3 && d.every((x) => x.status === 'delivered'));

    // Every delivery, two a page: two requests, the second with the first's X-Next-Cursor.
    urls.length = 0;
    const all: WebhookDelivery[] = [];
    for await (const d of client.webhooks.deliveries(hook.webhook_id, { limit: 2 })) all.push(d);
    assert.equal(all.length, 3);
    assert.deepEqual(all.map((d) => d.delivery_id), receivedOn('/client').map((r) => r.headers['webhook-id']).reverse(), 'newest first');
    assert.deepEqual(all.map((d) => verified(receivedOn('/client').find((r) => r.headers['webhook-id'] === d.delivery_id)!, hook.secret).type), Array(3).fill('task.turn_completed'));
    assert.deepEqual(urls.map((u) => [u.pathname, u.searchParams.get('limit'), u.searchParams.get('cursor')]), [
      [`/webhooks/${hook.webhook_id}/deliveries`, '2', null],
      [`/webhooks/${hook.webhook_id}/deliveries`, '2', all[1]!.delivery_id],
    ]);

    // One page at a time.
    const page = await client.webhooks.deliveries(hook.webhook_id, { limit: 2 });
    assert.deepEqual(page.data, all.slice(0, 2));
    assert.equal(page.nextCursor, all[1]!.delivery_id);
    assert.ok(page.hasNextPage());
    const last = await page.getNextPage();
    assert.deepEqual(last.data, all.slice(2));
    assert.equal(last.nextCursor, null);
    assert.equal(last.hasNextPage(), false);
    assert.deepEqual((await client.webhooks.deliveries(hook.webhook_id, { limit: 2, cursor: page.nextCursor! })).data, all.slice(2));

    const oldest = all[2]!;
    const again = await client.webhooks.redeliver(hook.webhook_id, oldest.delivery_id);
    assert.equal(again.delivery_id, oldest.delivery_id);
    assert.equal(again.status, 'pending');
    await until('the redelivery', () => receiver.byId(oldest.delivery_id).length === 2, { timeoutMs: 15_000 });
    const [first, second] = receiver.byId(oldest.delivery_id) as [ReceivedWebhook, ReceivedWebhook];
    assert.equal(second.body, first.body, 'the same body under the same webhook-id');
    verified(second, hook.secret);
    const redelivered = (await settledDeliveries(client, hook.webhook_id)).find((d) => d.delivery_id === oldest.delivery_id)!;
    assert.equal(redelivered.status, 'delivered');
    assert.equal(redelivered.attempts, 2);

    const missing = await client.webhooks.redeliver(hook.webhook_id, 'msg_nope').then(() => undefined, (e: unknown) => e);
    assert.ok(missing instanceof NotFoundError, String(missing));
    assert.equal(missing.error, 'delivery_not_found');
  });
});
