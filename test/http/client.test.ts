/**
 * @quarry/client against a real server: the retry rule (429 and 503 honouring retry_after with
 * one X-Request-ID per call, no retry on 4xx, safe resends of creates), writes serialized per
 * task, pagination over 500 tasks and over thousands of rows, exports, resumable streams through
 * a loopback proxy that cuts or stalls the connection, waiting for a turn, aborts and errors.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { ADMIN_KEY, startHarness, waitIdle, type Harness } from '../kit/harness.js';
import type { FakeReply, FakeRequestBody } from '../kit/fake-openai-server.js';
import {
  AtCapacityError, AuthenticationError, QuarryAbortError, QuarryClient, RateLimitedError, TaskExecutingError, TaskExistsError,
  TaskNotFoundError, ValidationError, type ClientOptions, type Fetch, type TaskEvent,
} from '../../packages/client/src/index.js';

// ---- instruments -------------------------------------------------------------------------------

interface Sent {
  method: string;
  url: URL;
  requestId: string | null;
  idempotencyKey: string | null;
  lastEventId: string | null;
  start: number;
  /** When the response head arrived. */
  end?: number;
  status?: number;
  errorBody?: { error: string; retry_after?: number };
}

/** A fetch that records every attempt the client makes, then lets `onResponse` act on it. */
function recordingFetch(log: Sent[], onResponse?: (sent: Sent, res: Response) => void | Promise<void>): Fetch {
  return async (input, init) => {
    const headers = new Headers(init.headers);
    const sent: Sent = {
      method: init.method ?? 'GET',
      url: new URL(input),
      requestId: headers.get('x-request-id'),
      idempotencyKey: headers.get('idempotency-key'),
      lastEventId: headers.get('last-event-id'),
      start: Date.now(),
    };
    log.push(sent);
    const res = await fetch(input, init);
    sent.end = Date.now();
    sent.status = res.status;
    if (!res.ok) sent.errorBody = await res.clone().json().catch(() => undefined);
    await onResponse?.(sent, res);
    return res;
  };
}

function client(h: Harness, opts: ClientOptions = {}): QuarryClient {
  return new QuarryClient({ baseURL: h.url, apiKey: h.key, retryBaseDelayMs: 50, ...opts });
}

/**
 * A loopback TCP proxy in front of the server. `cutAfter(n)` arms it: the first connection whose
 * answer then carries `n` more event ids (`id:` lines) is cut (both sockets destroyed) or
 * stalled (kept open, nothing more forwarded). Every request head that passes is kept.
 */
interface Proxy {
  url: string;
  heads: string[];
  cutAfter(ids: number, mode: 'cut' | 'stall'): Promise<void>;
  close(): Promise<void>;
}

async function startProxy(target: string): Promise<Proxy> {
  const upstream = new URL(target);
  const sockets = new Set<net.Socket>();
  const heads: string[] = [];
  let plan: { ids: number; mode: 'cut' | 'stall'; fired: () => void } | undefined;
  const server = net.createServer((client) => {
    const server = net.connect(Number(upstream.port), upstream.hostname);
    sockets.add(client).add(server);
    let ids = 0;
    let stalled = false;
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      if (/^[A-Z]+ \S+ HTTP\/1\.1\r\n/.test(text)) heads.push(text.slice(0, text.indexOf('\r\n\r\n')));
      server.write(chunk);
    });
    server.on('data', (chunk: Buffer) => {
      if (stalled) return;
      client.write(chunk);
      if (!plan) return;
      ids += (chunk.toString('utf8').match(/^id: /gm) ?? []).length;
      if (ids < plan.ids) return;
      const { mode, fired } = plan;
      plan = undefined;
      if (mode === 'cut') {
        client.destroy();
        server.destroy();
      } else {
        stalled = true;
      }
      fired();
    });
    const drop = () => {
      client.destroy();
      server.destroy();
    };
    client.on('error', drop).on('close', drop);
    server.on('error', drop).on('close', () => {
      if (!stalled) drop();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    heads,
    cutAfter(n, mode) {
      return new Promise((resolve) => {
        plan = { ids: n, mode, fired: resolve };
      });
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Answers each model request from the script of the task whose prompt it carries. */
function routeModel(h: Harness): (prompt: string, ...replies: FakeReply[]) => void {
  const scripts = new Map<string, FakeReply[]>();
  const promptOf = (body: FakeRequestBody): string => {
    const first = (body.messages ?? []).find((m) => m.role === 'user');
    return typeof first?.content === 'string' ? first.content : '';
  };
  h.model!.setResponder((body) => scripts.get(promptOf(body))?.shift() ?? { text: 'Done.' });
  return (prompt, ...replies) => scripts.set(prompt, [...(scripts.get(prompt) ?? []), ...replies]);
}

const ITEMS = { id: 'items', kind: 'table' as const, columns: [{ name: 'name', type: 'string' as const, required: true }, { name: 'n', type: 'integer' as const }] };

function writeRows(from: number, count: number, delayMs = 0): FakeReply {
  const rows = Array.from({ length: count }, (_, i) => ({ name: `item ${from + i}`, n: from + i }));
  return { toolCalls: [{ name: 'write_rows', arguments: { output: 'items', rows, sources: [{ url: 'https://example.com/items' }] } }], delayMs };
}

async function collect(stream: AsyncIterable<TaskEvent>): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

// ---- retries -------------------------------------------------------------------------------------

describe('client retries on 429 rate_limited', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ listen: true, model: false, env: { QUARRY_ROLE: 'api', QUARRY_RATE_LIMIT_PER_MIN: '60' } });
  });
  after(() => h.close());

  /** Spends the key's budget: sends until the server says 429. */
  async function exhaust(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`${h.url}/task?limit=1`, { headers: { 'x-api-key': h.key } });
      await res.arrayBuffer();
      if (res.status === 429) return;
    }
    assert.fail('the rate limit never answered 429');
  }

  /**
   * Runs `call` right after spending the key's budget. The bucket refills a token a second, so
   * now and then it refills between the last 429 and the call; then the budget is spent again.
   */
  async function rightAfterExhausting<T>(call: () => Promise<T>, limited: (result: T) => boolean): Promise<T> {
    for (let attempt = 0; attempt < 5; attempt++) {
      await exhaust();
      const result = await call();
      if (limited(result)) return result;
    }
    assert.fail('the call was never the one refused: the bucket refilled before it every time');
  }

  it('with no retries left, throws RateLimitedError carrying the body and our request id', async () => {
    const err = await rightAfterExhausting(
      () => client(h).tasks.list({}, { maxRetries: 0, requestId: 'rl-check.1' }).then(() => undefined, (e: unknown) => e),
      (e) => e !== undefined,
    );
    assert.ok(err instanceof RateLimitedError, String(err));
    assert.equal(err.status, 429);
    assert.equal(err.error, 'rate_limited');
    assert.equal(err.retryable, true);
    assert.equal(err.request_id, 'rl-check.1');
    assert.ok(err.retry_after !== undefined && err.retry_after >= 1);
  });

  it('waits retry_after, then resends with the same X-Request-ID', async () => {
    let log: Sent[] = [];
    const page = await rightAfterExhausting(
      () => {
        log = [];
        return client(h, { fetch: recordingFetch(log) }).tasks.list({ limit: 1 });
      },
      () => log[0]?.status === 429,
    );
    assert.ok(Array.isArray(page.data));
    assert.deepEqual(log.map((s) => s.status), [429, 200]);
    const [first, second] = log as [Sent, Sent];
    assert.equal(first.requestId, second.requestId);
    assert.match(first.requestId!, /^[A-Za-z0-9_.:-]{1,64}$/);
    const waitMs = first.errorBody!.retry_after! * 1000;
    assert.ok(second.start - first.end! >= waitMs, `resent after ${second.start - first.end!} ms, retry_after was ${waitMs} ms`);
  });
});

describe('client against an API-only server', () => {
  let h: Harness;
  before(async () => {
    // No worker: turns stay pending, so tasks keep status execute and their turns never end.
    h = await startHarness({ listen: true, model: false, env: { QUARRY_ROLE: 'api', QUARRY_RATE_LIMIT_PER_MIN: '1000000', QUARRY_MAX_PENDING_TURNS: '1000' } });
  });
  after(() => h.close());

  it('waits retry_after on 503 at_capacity, then resends with the same X-Request-ID and Idempotency-Key', async () => {
    const tight = await startHarness({ listen: true, model: false, env: { QUARRY_ROLE: 'api', QUARRY_MAX_PENDING_TURNS: '1' } });
    try {
      const blocker = await tight.request('POST', '/task', { body: { prompt: 'takes the only place in line' } });
      assert.equal(blocker.status, 200);
      const log: Sent[] = [];
      let freed = false;
      const c = client(tight, {
        fetch: recordingFetch(log, async (sent) => {
          // Capacity frees up while the client waits: the resend then goes through.
          if (sent.status === 503 && !freed) {
            freed = true;
            assert.equal((await tight.request('DELETE', `/task/${blocker.body.task_id}`)).status, 200);
          }
        }),
      });
      const task = await c.tasks.create({ prompt: 'waits for a place in line' });
      assert.equal(task.status, 'execute');
      assert.deepEqual(log.map((s) => s.status), [503, 200]);
      const [first, second] = log as [Sent, Sent];
      assert.equal(first.errorBody?.error, 'at_capacity');
      assert.equal(first.requestId, second.requestId);
      assert.ok(first.idempotencyKey, 'creates carry an Idempotency-Key');
      assert.equal(first.idempotencyKey, second.idempotencyKey);
      const waitMs = first.errorBody!.retry_after! * 1000;
      assert.ok(second.start - first.end! >= waitMs, `resent after ${second.start - first.end!} ms, retry_after was ${waitMs} ms`);

      // With no retries, the same refusal is thrown as its class.
      const blocked = await c.tasks.create({ prompt: 'no place left' }, { maxRetries: 0 }).then(() => undefined, (e: unknown) => e);
      assert.ok(blocked instanceof AtCapacityError, String(blocked));
      assert.equal(blocked.status, 503);
      assert.equal(blocked.retryable, true);
    } finally {
      await tight.close();
    }
  });

  it('does not retry 404 or 422, and throws their classes with the body facts', async () => {
    const log: Sent[] = [];
    const c = client(h, { fetch: recordingFetch(log), maxRetries: 5 });
    const missing = await c.tasks.retrieve('no-such-task').then(() => undefined, (e: unknown) => e);
    assert.ok(missing instanceof TaskNotFoundError, String(missing));
    assert.equal(missing.status, 404);
    assert.equal(missing.error, 'task_not_found');
    assert.equal(missing.retryable, false);
    assert.equal(missing.task_id, 'no-such-task');
    assert.equal(missing.request_id, log[0]!.requestId);
    assert.equal(log.length, 1);
    const recheckMissing = await c.tasks.recheck('no-such-task').then(() => undefined, (e: unknown) => e);
    assert.ok(recheckMissing instanceof TaskNotFoundError, String(recheckMissing));
    log.length = 1;

    const invalid = await c.tasks.create({ prompt: '   ' }).then(() => undefined, (e: unknown) => e);
    assert.ok(invalid instanceof ValidationError, String(invalid));
    assert.equal(invalid.status, 422);
    assert.equal(invalid.error, 'invalid_request');
    assert.equal(invalid.param, 'prompt');
    assert.ok(Array.isArray(invalid.detail) && invalid.detail.length > 0);
    assert.equal(log.length, 2);

    const badKey = await new QuarryClient({ baseURL: h.url, apiKey: 'qry_wrong', fetch: recordingFetch(log) }).tasks.list().then(() => undefined, (e: unknown) => e);
    assert.ok(badKey instanceof AuthenticationError, String(badKey));
    assert.equal(log.length, 3);
  });

  it('does not resend a 409 task_exists; retries the retryable task_executing, then throws it', async () => {
    const c = client(h);
    await c.tasks.start({ task_id: 'client-exists-1', task: { prompt: 'first create' } });
    const again = await c.tasks.start({ task_id: 'client-exists-1', task: { prompt: 'first create' } }).then(() => undefined, (e: unknown) => e);
    assert.ok(again instanceof TaskExistsError, String(again));
    assert.equal(again.task_id, 'client-exists-1');

    const log: Sent[] = [];
    const busy = await client(h, { fetch: recordingFetch(log) }).tasks.execute('client-exists-1').then(() => undefined, (e: unknown) => e);
    assert.ok(busy instanceof TaskExecutingError, String(busy));
    assert.equal(busy.retryable, true);
    assert.equal(log.length, 3, 'the first attempt and two retries');
    assert.equal(new Set(log.map((s) => s.requestId)).size, 1);
    assert.equal(new Set(log.map((s) => s.idempotencyKey)).size, 1);
  });

  it('resends a create whose answer was lost under the same Idempotency-Key: one task, not two', async () => {
    const account = await h.quarry.accounts.createAccount('lost-answer', 10);
    const log: Sent[] = [];
    let dropped = false;
    const flaky: Fetch = async (input, init) => {
      const res = await recordingFetch(log)(input, init);
      if (!dropped && init.method === 'POST') {
        dropped = true;
        await res.arrayBuffer(); // the server did the work; the client never hears of it
        throw new TypeError('fetch failed');
      }
      return res;
    };
    const c = new QuarryClient({ baseURL: h.url, apiKey: account.apiKey, fetch: flaky, retryBaseDelayMs: 10 });
    const task = await c.tasks.create({ prompt: 'created once' });
    assert.equal(log.length, 2);
    assert.equal(log[0]!.idempotencyKey, log[1]!.idempotencyKey);
    assert.equal(log[0]!.requestId, log[1]!.requestId);
    const all = (await c.tasks.list()).data;
    assert.deepEqual(all.map((t) => t.task_id), [task.task_id]);
  });

  it('does not resend a stop whose answer was lost (a second stop could stop the next turn)', async () => {
    const c = client(h);
    const task = await c.tasks.create({ prompt: 'stop me once' });
    let calls = 0;
    const failing: Fetch = async () => {
      calls += 1;
      throw new TypeError('fetch failed');
    };
    const err = await client(h, { fetch: failing }).tasks.stop(task.task_id).then(() => undefined, (e: unknown) => e);
    assert.equal((err as { error?: string }).error, 'connection_error');
    assert.equal(calls, 1);
    // A read is resent after a failure like that.
    calls = 0;
    const reads = await client(h, { fetch: failing, maxRetries: 2 }).tasks.state(task.task_id).then(() => undefined, (e: unknown) => e);
    assert.equal((reads as { error?: string }).error, 'connection_error');
    assert.equal(calls, 3);
  });

  it('serializes writes per task: the second continue goes out after the first is answered', async () => {
    const log: Sent[] = [];
    const c = client(h, { fetch: recordingFetch(log) });
    const task = await c.tasks.create({ prompt: 'two messages in order' });
    log.length = 0;
    const [a, b] = await Promise.all([
      c.tasks.continue(task.task_id, { message: 'first' }),
      c.tasks.continue(task.task_id, { message: 'second' }),
    ]);
    assert.equal(a.status, 'accepted');
    assert.equal(b.status, 'accepted');
    assert.deepEqual([a.queued_messages, b.queued_messages], [1, 2]);
    const [first, second] = log as [Sent, Sent];
    assert.ok(second.start >= first.end!, 'the second write waited for the first answer');
    assert.notEqual(first.requestId, second.requestId);
    assert.notEqual(first.idempotencyKey, second.idempotencyKey);
  });

  it('pages through 500 tasks by X-Next-Cursor', async () => {
    const account = await h.quarry.accounts.createAccount('pager', 10);
    const created = new Set<string>();
    for (let batch = 0; batch < 20; batch++) {
      const answers = await Promise.all(Array.from({ length: 25 }, (_, i) =>
        fetch(`${h.url}/task`, { method: 'POST', headers: { 'x-api-key': account.apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: `paged task ${batch * 25 + i}` }) })
          .then((r) => r.json() as Promise<{ task_id: string }>)));
      for (const a of answers) created.add(a.task_id);
    }
    assert.equal(created.size, 500);

    const log: Sent[] = [];
    const c = new QuarryClient({ baseURL: h.url, apiKey: account.apiKey, fetch: recordingFetch(log) });
    const seen: string[] = [];
    for await (const task of c.tasks.list({ limit: 200 })) seen.push(task.task_id);
    assert.equal(seen.length, 500);
    assert.deepEqual(new Set(seen), created);
    assert.equal(log.length, 3, 'pages of 200, 200 and 100');
    assert.equal(log[0]!.url.searchParams.get('cursor'), null);
    assert.ok(log[1]!.url.searchParams.get('cursor'));
    assert.ok(log[2]!.url.searchParams.get('cursor'));

    const first = await c.tasks.list({ limit: 50 });
    assert.equal(first.data.length, 50);
    assert.ok(first.hasNextPage());
    assert.ok(first.nextCursor);
    const second = await first.getNextPage();
    assert.equal(second.data.length, 50);
    assert.ok(second.data.every((t) => !first.data.some((f) => f.task_id === t.task_id)));
    let pages = 0;
    for await (const page of first.iterPages()) pages += page.data.length > 0 ? 1 : 0;
    assert.equal(pages, 10);
  });

  it('uploads a file and starts a task that reads it', async () => {
    const c = client(h);
    const stored = await c.uploads.upload({ data: 'company\nNorthvolt\n', filename: 'shortlist.csv', content_type: 'text/csv' });
    assert.match(stored.upload_id, /^upl_/);
    assert.equal(stored.size_bytes, 18);
    assert.match(stored.sha256, /^[0-9a-f]{64}$/);
    const task = await c.tasks.start({ task: { prompt: 'Check the shortlist.', inputs: [{ upload_id: stored.upload_id, name: 'shortlist.csv' }] } });
    assert.equal((await c.tasks.retrieve(task.task_id)).spec.inputs[0]!.upload_id, stored.upload_id);
  });

  it('manages accounts, keys and credits with the admin key', async () => {
    const admin = new QuarryClient({ baseURL: h.url, adminKey: ADMIN_KEY });
    const account = await admin.admin.accounts.create({ name: 'client-admin', credits: 5 });
    assert.match(account.account_id, /^acct_/);
    assert.equal((await admin.admin.accounts.addCredits(account.account_id, 2.5)).balance, 7.5);
    assert.equal((await admin.admin.accounts.retrieve(account.account_id)).balance, 7.5);
    const key = await admin.admin.keys.create(account.account_id);
    assert.equal((await admin.admin.keys.list(account.account_id)).length, 2);
    const user = new QuarryClient({ baseURL: h.url, apiKey: key.api_key });
    await user.tasks.list();
    // The key's own account, with no admin key; and the list's filters reach the API.
    assert.deepEqual(await user.account(), { account_id: account.account_id, name: 'client-admin', balance: 7.5, credits_used: 0 });
    await user.tasks.create({ prompt: 'Battery plants in Hungary' });
    assert.equal((await user.tasks.list({ q: 'hungary' })).data.length, 1);
    assert.equal((await user.tasks.list({ q: 'norway' })).data.length, 0);
    await admin.admin.keys.revoke(account.account_id, key.key_id);
    await assert.rejects(user.tasks.list(), AuthenticationError);
    assert.deepEqual(await admin.admin.accounts.usage(account.account_id), []);
    // An API key is no admin key; no key at all fails before anything is sent.
    await assert.rejects(new QuarryClient({ baseURL: h.url, adminKey: h.key }).admin.accounts.retrieve(account.account_id), AuthenticationError);
    await assert.rejects(new QuarryClient({ baseURL: h.url, apiKey: h.key, adminKey: '' }).admin.accounts.retrieve(account.account_id), /adminKey/);
  });
});

// ---- streams, rows, exports, waiting -------------------------------------------------------------

describe('client against a server that runs turns', () => {
  let h: Harness;
  let proxy: Proxy;
  let script: (prompt: string, ...replies: FakeReply[]) => void;
  before(async () => {
    h = await startHarness({ listen: true, env: { QUARRY_RATE_LIMIT_PER_MIN: '1000000' } });
    proxy = await startProxy(h.url);
    script = routeModel(h);
  });
  after(async () => {
    await proxy.close();
    await h.close();
  });

  /** The stored history of a task, as `GET /task/{id}/events` pages it. */
  async function history(taskId: string): Promise<TaskEvent[]> {
    const events: TaskEvent[] = [];
    for await (const event of client(h).tasks.events(taskId, { limit: 5 })) events.push(event);
    return events;
  }

  function assertEveryEventOnce(events: TaskEvent[], stored: TaskEvent[]): void {
    const seqs = events.map((e) => e.seq);
    assert.deepEqual(seqs, stored.map((e) => e.seq), 'the stream handed out the stored events, each once, in order');
    assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1));
    assert.deepEqual(events.map((e) => e.type), stored.map((e) => e.type));
  }

  it('resumes a start stream cut mid-turn with Last-Event-ID and sees every event exactly once', async () => {
    const prompt = 'resume a cut start stream';
    script(prompt, writeRows(1, 2, 150), writeRows(3, 2, 150), writeRows(5, 2, 150), { text: 'All six.', delayMs: 150 });
    const c = new QuarryClient({ baseURL: proxy.url, apiKey: h.key, retryBaseDelayMs: 50 });
    const cut = proxy.cutAfter(4, 'cut');
    const stream = c.tasks.startAndStream({ task: { prompt, outputs: [ITEMS] } });
    const events = await collect(stream);
    await cut;
    assert.ok(stream.reconnects >= 1, 'the stream reconnected');
    const resume = proxy.heads.find((head) => /^GET \/task\/[^/]+\/stream /.test(head));
    assert.ok(resume, 'the client came back on GET /task/{id}/stream');
    const lastEventId = Number(/^last-event-id: (\d+)$/im.exec(resume)?.[1]);
    assert.ok(lastEventId >= 4, `resumed after event ${lastEventId}`);
    const done = events.at(-1)!;
    assert.equal(done.type, 'done');
    assert.equal(done.type === 'done' && done.outcome, 'completed');
    assert.equal(done.turn_id, stream.turnId);
    assertEveryEventOnce(events, await history(stream.taskId!));
    assert.equal((await c.tasks.output(stream.taskId!)).total, 6);
  });

  it('resumes a follow stream that went silent (idle timeout) and ends when the task is idle', async () => {
    const prompt = 'resume a stalled follow stream';
    script(prompt, { text: 'Starting.', delayMs: 300 }, writeRows(1, 1, 150), writeRows(2, 1, 150), { text: 'Two.', delayMs: 150 });
    const task = await client(h).tasks.start({ task: { prompt, outputs: [ITEMS] } });
    const c = new QuarryClient({ baseURL: proxy.url, apiKey: h.key, retryBaseDelayMs: 50, streamIdleTimeoutMs: 400 });
    const stall = proxy.cutAfter(3, 'stall');
    const stream = c.tasks.stream(task.task_id);
    const events = await collect(stream);
    await stall;
    assert.ok(stream.reconnects >= 1);
    assert.equal(events.at(-1)!.type, 'done');
    assertEveryEventOnce(events, await history(task.task_id));
  });

  it('on an idle task, streams the snapshot and an idle done', async () => {
    const task = await client(h).tasks.create({ prompt: 'idle stream' });
    await waitIdle(h, task.task_id);
    const events = await collect(client(h).tasks.stream(task.task_id));
    assert.deepEqual(events.map((e) => e.type), ['task', 'done']);
    assert.equal(events[0]!.type === 'task' && events[0]!.reason, 'snapshot');
    assert.equal(events[1]!.type === 'done' && events[1]!.outcome, 'idle');
  });

  it('on an idle task, with after 0: every stored event, then the snapshot and an idle done', async () => {
    const task = await client(h).tasks.create({ prompt: 'idle stream from the first event' });
    await waitIdle(h, task.task_id);
    const stream = client(h).tasks.stream(task.task_id, { after: 0 });
    const events = await collect(stream);
    const stored = await history(task.task_id);
    assert.ok(stored.length > 2);
    assert.deepEqual(events.slice(0, stored.length), stored);
    assert.deepEqual(events.slice(stored.length).map((e) => e.type === 'done' ? `done ${e.outcome}` : e.type), ['task', 'done idle']);
    assert.equal(stream.lastEventId, stored.at(-1)!.seq);
  });

  it('on an idle task, from its last event: the snapshot and idle done, in one connection, and its position kept', async () => {
    const task = await client(h).tasks.create({ prompt: 'idle stream from its last event' });
    await waitIdle(h, task.task_id);
    const last = (await client(h).tasks.state(task.task_id)).last_event_id;
    for (const stream of [client(h).tasks.stream(task.task_id), client(h).tasks.stream(task.task_id, { after: last })]) {
      const events = await collect(stream);
      assert.deepEqual(events.map((e) => e.type === 'done' ? `done ${e.outcome}` : e.type), ['task', 'done idle']);
      assert.equal(stream.reconnects, 0, 'the idle done ended the stream');
      assert.equal(stream.lastEventId, last, 'the stream knows where it got to');
    }
  });

  it('throws a refusal inside a stream as its error class, without resending', async () => {
    const prompt = 'refused inside the stream';
    script(prompt, { hang: true });
    const log: Sent[] = [];
    const c = client(h, { fetch: recordingFetch(log) });
    const task = await c.tasks.create({ prompt });
    log.length = 0;
    await assert.rejects(collect(c.tasks.executeAndStream(task.task_id)), TaskExecutingError);
    assert.equal(log.length, 1);
    await c.tasks.stop(task.task_id);
  });

  it('waits for a turn by long-polling /state, or by polling it', async () => {
    const prompt = 'wait for my turn';
    script(prompt, { text: 'Slow.', delayMs: 700 });
    const log: Sent[] = [];
    const c = client(h, { fetch: recordingFetch(log) });
    const task = await c.tasks.create({ prompt });
    const state = await c.tasks.waitForTurn(task);
    assert.equal(state.active, false);
    assert.equal(state.status, 'plan');
    const polls = log.filter((s) => s.url.pathname.endsWith('/state'));
    assert.ok(polls.length <= 2, `${polls.length} long-polls`);
    assert.equal(polls[0]!.url.searchParams.get('wait'), '50');

    script(prompt, { text: 'Slow again.', delayMs: 700 });
    log.length = 0;
    await c.tasks.continue(task.task_id, { message: 'again' });
    const polled = await c.tasks.waitForTurn(task.task_id, { mode: 'poll', pollAfterS: 0.1 });
    assert.equal(polled.active, false);
    const plain = log.filter((s) => s.url.pathname.endsWith('/state'));
    assert.ok(plain.length >= 2 && plain.every((s) => !s.url.searchParams.has('wait')));
  });

  it('aborts a long-poll and a stream with an AbortSignal', async () => {
    const prompt = 'abort me';
    script(prompt, { hang: true });
    const c = client(h);
    const task = await c.tasks.create({ prompt });
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 150);
    await assert.rejects(c.tasks.state(task.task_id, { wait: 30 }, { signal: ac.signal }), QuarryAbortError);
    assert.ok(Date.now() - started < 5000);

    const streamAbort = new AbortController();
    const seen: TaskEvent[] = [];
    const reading = (async () => {
      for await (const event of c.tasks.stream(task.task_id, {}, { signal: streamAbort.signal })) {
        seen.push(event);
        streamAbort.abort();
      }
    })();
    await assert.rejects(reading, QuarryAbortError);
    assert.ok(seen.length >= 1);
    await c.tasks.stop(task.task_id);
  });

  it('reads and exports an output of 6,000 rows', async () => {
    const prompt = 'six thousand rows';
    script(prompt, writeRows(1, 2000), writeRows(2001, 2000), writeRows(4001, 2000), { text: 'Wrote them all.' });
    const log: Sent[] = [];
    const c = client(h, { fetch: recordingFetch(log) });
    const task = await c.tasks.start({ task: { prompt, outputs: [ITEMS] } });
    const done = await c.tasks.stream(task.task_id).finalDone();
    assert.equal(done?.outcome, 'completed');

    log.length = 0;
    let expected = 1;
    for await (const row of c.tasks.rows(task.task_id, { output: 'items', pageSize: 2500 })) {
      assert.equal(row._row, expected);
      assert.equal(row.n, expected);
      expected += 1;
    }
    assert.equal(expected - 1, 6000);
    assert.equal(log.length, 3, 'pages of 2500, 2500 and 1000');
    const firstPage = await c.tasks.rows(task.task_id, { output: 'items', pageSize: 10, offset: 5990 });
    assert.equal(firstPage.total, 6000);
    assert.deepEqual(firstPage.data.map((r) => r._row), [5991, 5992, 5993, 5994, 5995, 5996, 5997, 5998, 5999, 6000]);

    const csv = await c.tasks.export(task.task_id, { output: 'items', format: 'csv' });
    assert.equal(csv.filename, 'items.csv');
    let lines = 0;
    let last = '';
    for await (const line of csv.lines()) {
      if (lines === 0) assert.equal(line, '_row,name,n,_sources');
      lines += 1;
      last = line;
    }
    assert.equal(lines, 6001);
    // Never fetched in this task: the source carries its not_read mark.
    assert.equal(last, '6000,item 6000,6000,https://example.com/items [not_read]');
    // Checked again against the snapshots: the same verdicts, nothing stored again.
    assert.deepEqual(await c.tasks.recheck(task.task_id), { rows: 6000, changed: 0 });

    const jsonl = await c.tasks.export(task.task_id, { format: 'jsonl' });
    let count = 0;
    for await (const row of jsonl.rows()) {
      count += 1;
      assert.equal(row._row, count);
    }
    assert.equal(count, 6000);
  });
});
