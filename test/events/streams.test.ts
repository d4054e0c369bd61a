/**
 * Event streams (interface §6, decisions §10, §13): the start, message and follow streams, the
 * wire form of each event kind, resuming with Last-Event-ID or ?after=, refusals inside and
 * before a stream, keep-alive comments, and cutting off a client that does not read.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_KEY, startHarness, waitIdle, type Harness } from '../kit/harness.js';
import { taskEvents, taskState, waitIdleAs } from '../kit/task-api.js';
import type { FakeOpenAI, FakeReply, FakeRequestBody } from '../kit/fake-openai-server.js';
import { isStored, openSse, parseRawResponse, parseSseText, readSse, stalledGet, type SseEvent, type SseStream } from '../kit/sse-client.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

const KINDS = new Set(['task', 'tool', 'text', 'error', 'done']);
const ITEMS = { id: 'items', kind: 'table', columns: [{ name: 'name', type: 'string', required: true }] };

// ---- a model that answers each task by its prompt ----------------------------------------------

type Step = FakeReply | (() => FakeReply | Promise<FakeReply>);

/** The text of the first user message: the task's prompt, which names the task's script. */
function promptOf(body: FakeRequestBody): string {
  const first = (body.messages ?? []).find((m) => m.role === 'user');
  return typeof first?.content === 'string' ? first.content : '';
}

/**
 * Routes each model request to the script of the task whose prompt it carries, so that tests
 * never consume each other's replies. An unscripted request is answered "Done.".
 */
class ModelRouter {
  private readonly scripts = new Map<string, Step[]>();
  readonly calls = new Map<string, FakeRequestBody[]>();
  private readonly waiters = new Set<() => void>();

  constructor(model: FakeOpenAI) {
    model.setResponder(async (body) => {
      const key = promptOf(body);
      const list = this.calls.get(key) ?? [];
      list.push(body);
      this.calls.set(key, list);
      for (const w of [...this.waiters]) w();
      const step = this.scripts.get(key)?.shift();
      if (!step) return { text: 'Done.' };
      return typeof step === 'function' ? step() : step;
    });
  }

  script(prompt: string, ...steps: Step[]): void {
    this.scripts.set(prompt, [...(this.scripts.get(prompt) ?? []), ...steps]);
  }

  /** Resolves once the model has been asked `n` times for this prompt's task. */
  waitForCalls(prompt: string, n: number, timeoutMs = 10_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if ((this.calls.get(prompt)?.length ?? 0) >= n) {
          this.waiters.delete(check);
          clearTimeout(timer);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`the model was asked ${this.calls.get(prompt)?.length ?? 0} times for "${prompt}" within ${timeoutMs} ms, not ${n}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }
}

function gate(): { open: () => void; step: (reply: FakeReply) => Step } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, step: (reply) => async () => { await opened; return reply; } };
}

// ---- helpers -----------------------------------------------------------------------------------

/** The whole event history of a task, paged through GET /task/{id}/events with a small limit. */
async function history(h: Harness, taskId: string, afterSeq = 0): Promise<any[]> {
  const out: any[] = [];
  let cursor = afterSeq;
  for (let page = 0; page < 500; page++) {
    const res = await h.request('GET', `/task/${taskId}/events?after=${cursor}&limit=4`);
    assert.equal(res.status, 200, res.text);
    assert.ok(Array.isArray(res.body.events));
    assert.ok(res.body.events.length <= 4, 'a page holds at most limit events');
    out.push(...res.body.events);
    if (res.body.next_after === null) return out;
    assert.equal(res.body.next_after, res.body.events.at(-1).seq, 'next_after is the last seq of the page');
    cursor = res.body.next_after;
  }
  throw new Error('the event history did not end within 500 pages');
}

/** The envelope every stored event carries on the wire. */
function checkStored(e: SseEvent, taskId: string): void {
  assert.ok(e.json, `event data is JSON: ${e.data}`);
  assert.ok(KINDS.has(e.event), `event kind ${e.event} is one of task/tool/text/error/done`);
  assert.equal(e.id, String(e.json.seq), 'id: is the event seq');
  assert.equal(e.json.type, e.event, 'data.type is the event: name');
  assert.equal(e.json.task_id, taskId);
  assert.ok(e.json.turn_id === null || typeof e.json.turn_id === 'string', 'turn_id is a string or null');
  assert.ok(typeof e.json.at === 'string' && !Number.isNaN(Date.parse(e.json.at)), `at is a timestamp: ${e.json.at}`);
}

function seqs(events: SseEvent[]): number[] {
  return events.map((e) => Number(e.id));
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
}

async function startTask(h: Harness, prompt: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await h.request('POST', '/task/start', { body: { task: { name: prompt, prompt, outputs: [ITEMS], ...extra } } });
  assert.equal(res.status, 200, res.text);
  return res.body.task_id;
}

function post(h: Harness, path: string, body: unknown, key: string | null = h.key): Promise<SseStream> {
  return openSse(h.url, path, { method: 'POST', body, key });
}

function writeRows(rows: unknown[]): FakeReply['toolCalls'] {
  return [{ name: 'write_rows', arguments: { output: 'items', rows, sources: [{ url: 'https://example.com/list' }] } }];
}

// ---- the main suite ----------------------------------------------------------------------------

describe('event streams', () => {
  let h: Harness;
  let router: ModelRouter;

  before(async () => {
    h = await startHarness({ listen: true, env: { QUARRY_STARTER_CREDITS: '1000', QUARRY_RATE_LIMIT_PER_MIN: '100000' } });
    router = new ModelRouter(h.model!);
  });
  after(() => h.close());

  it('POST /task/stream streams its turn as task/tool/text/done events and ends after its done', async () => {
    const prompt = 'Stream-a-prompt: list two things.';
    router.script(
      prompt,
      { text: 'Planning the list. ', toolCalls: [{ name: 'update_spec', arguments: { outputs: [ITEMS] } }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'nope', rows: [{ name: 'x' }] } }, ...writeRows([{ name: 'alpha' }, { name: 'beta' }])!] },
      { text: 'All done here.' },
    );
    const s = await post(h, '/task/stream', { prompt });
    assert.equal(s.status, 200);
    assert.match(String(s.headers['content-type']), /^text\/event-stream/);
    await s.finished(15_000);
    assert.ok(s.completed, 'the server ended the stream itself');

    const taskId = s.events[0]!.json.task_id;
    for (const e of s.events) checkStored(e, taskId);
    assert.deepEqual(seqs(s.events), range(1, s.events.length), 'a create stream sends the whole history from seq 1, in order, no gaps');

    const first = s.events[0]!;
    assert.equal(first.event, 'task');
    assert.equal(first.json.reason, 'created');
    assert.equal(first.json.task.task_id, taskId, 'a task event carries the task snapshot');
    const turnId = first.json.turn_id;
    assert.equal(typeof turnId, 'string');

    const last = s.events.at(-1)!;
    assert.equal(last.event, 'done', 'the stream ends with its turn\'s done');
    assert.equal(last.json.turn_id, turnId);
    assert.equal(last.json.outcome, 'completed');
    assert.equal(last.json.output_count, 1);
    assert.equal(typeof last.json.credits_used, 'number');
    assert.equal(s.events.filter((e) => e.event === 'done').length, 1);

    const kinds = new Set(s.events.map((e) => e.event));
    for (const k of ['task', 'tool', 'text', 'done']) assert.ok(kinds.has(k), `a ${k} event was sent`);

    const text = s.events.filter((e) => e.event === 'text').map((e) => {
      assert.equal(typeof e.json.text, 'string', 'a text event carries its text in `text`');
      return e.json.text as string;
    }).join('');
    assert.ok(text.includes('Planning the list.'), `text events carry the model's words: ${JSON.stringify(text)}`);
    assert.ok(text.includes('All done here.'), `text events carry the model's words: ${JSON.stringify(text)}`);

    const tools = s.events.filter((e) => e.event === 'tool').map((e) => e.json);
    for (const t of tools) {
      assert.equal(typeof t.call_id, 'string');
      assert.ok(['started', 'finished', 'failed'].includes(t.state), `tool state ${t.state}`);
      for (const field of ['name', 'input', 'summary', 'duration_ms']) assert.ok(field in t, `a tool event carries ${field}`);
    }
    const failedCall = tools.filter((t) => t.name === 'write_rows' && t.input?.output === 'nope');
    assert.deepEqual(failedCall.map((t) => t.state), ['started', 'failed'], 'a tool the model misused is reported failed');
    assert.equal(typeof failedCall[1].summary, 'string');
    assert.equal(typeof failedCall[1].duration_ms, 'number');
    const write = tools.filter((t) => t.name === 'write_rows' && t.input?.output === 'items');
    assert.deepEqual(write.map((t) => t.state), ['started', 'finished']);
    assert.notEqual(write[0].call_id, failedCall[0].call_id);
    assert.equal(write[0].call_id, write[1].call_id, 'started and finished share the call_id');
    assert.deepEqual(write[1].input, { output: 'items', rows: [{ name: 'alpha' }, { name: 'beta' }], sources: [{ url: 'https://example.com/list' }] }, 'input is what the model sent');
    assert.equal(typeof write[1].summary, 'string');
    assert.ok(typeof write[1].duration_ms === 'number' && write[1].duration_ms >= 0, 'a finished tool has its duration');
    assert.deepEqual(tools.filter((t) => t.name === 'update_spec').map((t) => t.state), ['started', 'finished']);

    assert.deepEqual(s.events.map((e) => e.json), await history(h, taskId), 'the stream carries exactly the stored events');
    assert.equal((await taskState(h, taskId)).active, false);
  });

  it('POST /task/start/stream streams the execute turn of a spec and ends after its done', async () => {
    const prompt = 'Stream-a-spec: list one thing.';
    router.script(prompt, { text: 'Writing.', toolCalls: writeRows([{ name: 'gamma' }]) }, { text: 'Finished.' });
    const s = await post(h, '/task/start/stream', { task: { prompt, outputs: [ITEMS] } });
    assert.equal(s.status, 200);
    assert.match(String(s.headers['content-type']), /^text\/event-stream/);
    await s.finished(15_000);
    assert.ok(s.completed);
    const taskId = s.events[0]!.json.task_id;
    for (const e of s.events) checkStored(e, taskId);
    assert.equal(s.events[0]!.json.reason, 'created');
    const last = s.events.at(-1)!;
    assert.equal(last.event, 'done');
    assert.equal(last.json.outcome, 'completed');
    assert.equal(last.json.turn_id, s.events[0]!.json.turn_id);
    assert.deepEqual(s.events.map((e) => e.json), await history(h, taskId));
    const rows = await h.request('GET', `/task/${taskId}/output`);
    assert.equal(rows.body.total, 1);
  });

  it('continue/stream and execute/stream on an idle task send only their own turn and end after its done', async () => {
    const prompt = 'Stream-messages: a task to talk to.';
    const taskId = await startTask(h, prompt);
    await waitIdle(h, taskId);
    const before1 = (await taskState(h, taskId)).last_event_id as number;

    router.script(prompt, { text: 'Continuing as asked.' });
    const c = await post(h, `/task/${taskId}/continue/stream`, { message: 'Add more, please.' });
    assert.equal(c.status, 200);
    assert.match(String(c.headers['content-type']), /^text\/event-stream/);
    await c.finished(15_000);
    assert.ok(c.completed);
    for (const e of c.events) checkStored(e, taskId);
    const afterContinue = (await taskState(h, taskId)).last_event_id as number;
    assert.deepEqual(seqs(c.events), range(before1 + 1, afterContinue), 'exactly the events of this turn, in order');
    const cDone = c.events.at(-1)!;
    assert.equal(cDone.event, 'done');
    assert.equal(cDone.json.outcome, 'completed');
    assert.ok(c.events.every((e) => e.json.turn_id === cDone.json.turn_id), 'every event belongs to the continue turn');
    assert.ok(c.events.some((e) => e.event === 'text' && String(e.json.text).includes('Continuing as asked.')));
    assert.deepEqual(c.events.map((e) => e.json), await history(h, taskId, before1));

    const x = await post(h, `/task/${taskId}/execute/stream`, { instruction: 'Refresh the data.' });
    assert.equal(x.status, 200);
    await x.finished(15_000);
    assert.ok(x.completed);
    for (const e of x.events) checkStored(e, taskId);
    const afterExecute = (await taskState(h, taskId)).last_event_id as number;
    assert.deepEqual(seqs(x.events), range(afterContinue + 1, afterExecute));
    const xDone = x.events.at(-1)!;
    assert.equal(xDone.event, 'done');
    assert.equal(xDone.json.outcome, 'completed');
    assert.notEqual(xDone.json.turn_id, cDone.json.turn_id, 'execute ran a turn of its own');
    assert.ok(x.events.every((e) => e.json.turn_id === xDone.json.turn_id));
  });

  it('a turn that fails after the stream opened arrives as an error event, then done failed', async () => {
    const prompt = 'Stream-fail: the model is down.';
    router.script(prompt, { status: 500, errorMessage: 'down' }, { status: 500, errorMessage: 'down' }, { status: 500, errorMessage: 'down' }, { status: 500, errorMessage: 'down' });
    const s = await post(h, '/task/start/stream', { task: { prompt, outputs: [ITEMS] } });
    assert.equal(s.status, 200);
    await s.finished(15_000);
    assert.ok(s.completed);
    const taskId = s.events[0]!.json.task_id;
    for (const e of s.events) checkStored(e, taskId);
    assert.equal(s.events.at(-1)!.event, 'done');
    const error = s.events.find((e) => e.event === 'error');
    assert.ok(error, 'an error event was sent');
    assert.equal(typeof error.json.error, 'string');
    assert.equal(typeof error.json.message, 'string');
    assert.equal(typeof error.json.retryable, 'boolean');
    assert.ok(Number(error.id) < Number(s.events.at(-1)!.id), 'the error comes before the done');
    assert.equal(s.events.at(-1)!.json.outcome, 'failed');
    const state = await taskState(h, taskId);
    assert.equal(state.active, false);
    assert.equal(state.status, 'plan');
  });

  it('execute/stream takes no body at all (its instruction is optional)', async () => {
    const prompt = 'Stream-execute-nobody: run again.';
    const taskId = await startTask(h, prompt);
    await waitIdle(h, taskId);
    const s = await openSse(h.url, `/task/${taskId}/execute/stream`, { method: 'POST', key: h.key });
    await s.finished(15_000);
    assert.equal(s.status, 200, `execute/stream without a body: ${JSON.stringify(s.body)}`);
    assert.equal(s.events.at(-1)?.event, 'done');
    assert.equal(s.events.at(-1)?.json.outcome, 'completed');
  });

  it('a message stream that gets queued follows the running turn and ends after its own turn\'s done', async () => {
    const prompt = 'Stream-queued: a busy task.';
    router.script(prompt, { hang: true });
    const taskId = await startTask(h, prompt);
    await router.waitForCalls(prompt, 1);

    const s = await post(h, `/task/${taskId}/continue/stream`, { message: 'Queued message.' });
    assert.equal(s.status, 200);
    const queued = await s.waitFor((e) => e.event === 'task' && e.json.reason === 'message_queued', 10_000, 'the message_queued event');
    const firstTurn = (await taskState(h, taskId)).turn.id as string;
    const queuedTurn = queued.json.turn_id as string;
    assert.notEqual(queuedTurn, firstTurn);

    const stop = await h.request('POST', `/task/${taskId}/stop`, { body: {} });
    assert.equal(stop.status, 200, stop.text);
    await s.finished(15_000);
    assert.ok(s.completed);
    for (const e of s.events) checkStored(e, taskId);
    const dones = s.events.filter((e) => e.event === 'done');
    assert.deepEqual(dones.map((e) => [e.json.turn_id, e.json.outcome]), [[firstTurn, 'stopped'], [queuedTurn, 'completed']], 'the running turn\'s done did not end the stream');
    assert.equal(s.events.at(-1)!.event, 'done');
    assert.equal(s.events.at(-1)!.json.turn_id, queuedTurn);
    assert.deepEqual(s.events.map((e) => e.json), await history(h, taskId, Number(s.events[0]!.id) - 1));
  });

  it('GET /task/{id}/stream on an idle task sends a task snapshot without an id and a done with the last stored seq, and no other frame', async () => {
    const prompt = 'Stream-idle: finishes at once.';
    const taskId = await startTask(h, prompt);
    await waitIdle(h, taskId);
    const last = (await taskState(h, taskId)).last_event_id as number;
    assert.ok(last > 0);
    // The bytes on the wire, frame by frame: nothing the SSE reader might pass over.
    const client = await stalledGet(h.url, `/task/${taskId}/stream`, { 'X-API-Key': h.key });
    const raw = parseRawResponse((await client.drain(5_000)).bytes);
    assert.equal(raw.status, 200);
    assert.match(raw.head, /content-type: text\/event-stream/i);
    assert.ok(raw.complete, 'the stream ended');
    const frames = raw.body.split('\n\n');
    assert.equal(frames.pop(), '', 'the body is whole frames');
    const lines = frames.map((f) => f.split('\n'));
    assert.equal(lines.length, 2, `two frames, no more: ${JSON.stringify(raw.body)}`);
    const [task, done] = lines as [string[], string[]];
    assert.equal(task.length, 2);
    assert.equal(task[0], 'event: task', 'the snapshot carries no id:');
    assert.equal(done.length, 3);
    assert.equal(done[0], `id: ${last}`, 'the done carries the last stored seq');
    assert.equal(done[1], 'event: done');
    const snapshot = JSON.parse(task[1]!.replace(/^data: /, ''));
    assert.equal(snapshot.type, 'task');
    assert.equal(snapshot.task_id, taskId);
    assert.equal(snapshot.seq, undefined, 'not stored');
    assert.equal(snapshot.reason, 'snapshot');
    assert.equal(snapshot.task.task_id, taskId);
    assert.equal(snapshot.task.status, 'plan');
    assert.equal(snapshot.task.activity, 'idle');
    const idle = JSON.parse(done[2]!.replace(/^data: /, ''));
    assert.equal(idle.type, 'done');
    assert.equal(idle.outcome, 'idle');
    assert.equal(idle.seq, undefined, 'not stored');

    // Reconnecting from that id, as an EventSource does: nothing new, 204.
    const again = await openSse(h.url, `/task/${taskId}/stream`, { key: h.key, headers: { 'last-event-id': String(last) } });
    assert.equal(again.status, 204);
  });

  it('GET /task/{id}/stream on an active task follows until no turn runs and nothing is queued', async () => {
    const prompt = 'Stream-follow: runs two turns.';
    router.script(prompt, { hang: true }, { text: 'Second turn text.' });
    const taskId = await startTask(h, prompt);
    await router.waitForCalls(prompt, 1);
    const queued = await h.request('POST', `/task/${taskId}/continue`, { body: { message: 'Then do this.' } });
    assert.equal(queued.status, 202, queued.text);

    const s = await openSse(h.url, `/task/${taskId}/stream`, { key: h.key });
    assert.equal(s.status, 200);
    assert.match(String(s.headers['content-type']), /^text\/event-stream/);
    await s.waitFor((e) => e.event === 'task' && e.json.reason === 'message_queued', 10_000, 'the queued message');
    const firstTurn = (await taskState(h, taskId)).turn.id as string;
    assert.equal(s.ended, false, 'the stream stays open while a turn runs');

    assert.equal((await h.request('POST', `/task/${taskId}/stop`, { body: {} })).status, 200);
    await s.finished(15_000);
    assert.ok(s.completed);
    for (const e of s.events) checkStored(e, taskId);
    const dones = s.events.filter((e) => e.event === 'done');
    assert.equal(dones.length, 2, 'the stream went on past the stopped turn to the queued one');
    assert.equal(dones[0]!.json.turn_id, firstTurn);
    assert.equal(dones[0]!.json.outcome, 'stopped');
    assert.equal(dones[1]!.json.outcome, 'completed');
    assert.equal(s.events.at(-1), dones[1], 'it ended after the last turn\'s done');
    assert.ok(s.events.some((e) => e.event === 'text' && String(e.json.text).includes('Second turn text.')));
    const state = await taskState(h, taskId);
    assert.equal(state.active, false);
    assert.equal(state.queued_messages, 0);
    assert.equal(Number(s.events.at(-1)!.id), state.last_event_id, 'nothing was left unsent');
    const seen = seqs(s.events);
    assert.deepEqual(seen, range(seen[0]!, seen.at(-1)!), 'no gaps and no duplicates');
  });

  for (const mode of ['Last-Event-ID', '?after='] as const) {
    it(`resumes after a disconnect with ${mode}: exactly the missed events, in order, then live ones`, async () => {
      const prompt = `Stream-resume via ${mode}: three steps.`;
      const g1 = gate();
      const g2 = gate();
      try {
        router.script(
          prompt,
          { toolCalls: writeRows([{ name: 'one' }]) },
          g1.step({ text: 'Second step.', toolCalls: writeRows([{ name: 'two' }]) }),
          g2.step({ text: 'Third step.' }),
        );
        const taskId = await startTask(h, prompt);
        const s1 = await openSse(h.url, `/task/${taskId}/stream`, { key: h.key });
        await router.waitForCalls(prompt, 2); // held at gate 1: no event happens meanwhile
        const seenUpTo = (await taskState(h, taskId)).last_event_id as number;
        await s1.waitFor((e) => Number(e.id) === seenUpTo, 10_000, `event ${seenUpTo}`);
        s1.close();
        const lastId = Number(s1.events.at(-1)!.id);
        assert.equal(lastId, seenUpTo);

        g1.open();
        await router.waitForCalls(prompt, 3); // step two is stored; held at gate 2
        const storedUpTo = (await taskState(h, taskId)).last_event_id as number;
        assert.ok(storedUpTo > lastId, 'events happened while disconnected');

        const s2 = mode === 'Last-Event-ID'
          ? await openSse(h.url, `/task/${taskId}/stream`, { key: h.key, headers: { 'last-event-id': String(lastId) } })
          : await openSse(h.url, `/task/${taskId}/stream?after=${lastId}`, { key: h.key });
        assert.equal(s2.status, 200);
        await s2.waitFor((e) => Number(e.id) === storedUpTo, 10_000, `replayed event ${storedUpTo}`);
        assert.deepEqual(seqs(s2.events), range(lastId + 1, storedUpTo), 'the replay is exactly the missed events');
        assert.deepEqual(s2.events.map((e) => e.json), await history(h, taskId, lastId));

        g2.open();
        await s2.finished(15_000);
        assert.ok(s2.completed);
        const all = await history(h, taskId);
        for (const e of s2.events) checkStored(e, taskId);
        assert.deepEqual(s2.events.map((e) => e.json), all.filter((e) => e.seq > lastId), 'missed events, then live ones, no duplicates');
        assert.deepEqual(s1.events.map((e) => e.json), all.filter((e) => e.seq <= lastId));
        assert.equal(s2.events.at(-1)!.event, 'done');
        assert.equal(s2.events.at(-1)!.json.outcome, 'completed');
        assert.ok(s2.events.some((e) => e.event === 'text' && String(e.json.text).includes('Third step.')), 'live events followed the replay');
      } finally {
        g1.open();
        g2.open();
      }
    });
  }

  it('resuming a finished task with Last-Event-ID replays what was missed, then the snapshot and done', async () => {
    const prompt = 'Stream-resume-idle: finishes.';
    router.script(prompt, { text: 'Some words.', toolCalls: writeRows([{ name: 'x' }]) });
    const taskId = await startTask(h, prompt);
    await waitIdle(h, taskId);
    const all = await history(h, taskId);
    const from = 3;
    const s = await readSse(h.url, `/task/${taskId}/stream`, { key: h.key, headers: { 'last-event-id': String(from) } }, 5_000);
    assert.equal(s.status, 200);
    const stored = s.events.filter(isStored);
    assert.deepEqual(stored.map((e) => e.json), all.filter((e) => e.seq > from));
    const last = String(all.at(-1).seq);
    // The replay ended on the last stored event, so the client is there already: the done repeats no id.
    assert.equal(stored.at(-1)!.id, last);
    assert.deepEqual(s.events.slice(stored.length).map((e) => [e.id, e.event]), [[undefined, 'task'], [undefined, 'done']], 'no other frame');
    const again = await openSse(h.url, `/task/${taskId}/stream`, { key: h.key, headers: { 'last-event-id': last } });
    assert.equal(again.status, 204);
  });

  it('?after=0 on a finished task replays every stored event, then the snapshot and done (a turn that ended before the stream opened is still seen)', async () => {
    const prompt = 'Stream-after-zero: finishes before anyone follows.';
    router.script(prompt, { text: 'Done already.', toolCalls: writeRows([{ name: 'y' }]) });
    const taskId = await startTask(h, prompt);
    await waitIdle(h, taskId);
    const all = await history(h, taskId);
    const resumes: { query: string; headers: Record<string, string> }[] = [{ query: '?after=0', headers: {} }, { query: '', headers: { 'last-event-id': '0' } }];
    for (const resume of resumes) {
      const s = await readSse(h.url, `/task/${taskId}/stream${resume.query}`, { key: h.key, headers: resume.headers }, 5_000);
      assert.equal(s.status, 200);
      const stored = s.events.filter(isStored);
      assert.deepEqual(stored.map((e) => e.json), all, `every stored event, from the first (${JSON.stringify(resume)})`);
      assert.deepEqual(s.events.slice(stored.length).map((e) => [e.id, e.event]), [[undefined, 'task'], [undefined, 'done']], 'no other frame');
    }
  });

  it('a reading client resuming a history larger than the buffer limit (1 MiB default) gets all of it', async () => {
    const prompt = 'Stream-big-history: much text.';
    const piece = 320 * 1024;
    const text = ['a', 'b', 'c', 'd'].map((c) => c.repeat(piece)).join('');
    router.script(prompt, { text, chunkDelayMs: 300, usage: { prompt_tokens: 10, completion_tokens: 10 } });
    const taskId = await startTask(h, prompt);
    const live = await openSse(h.url, `/task/${taskId}/stream`, { key: h.key });
    await live.finished(20_000);
    assert.ok(live.completed, 'the live stream went through');
    assert.equal(live.events.filter((e) => e.event === 'text').map((e) => e.json.text).join('').length, text.length);

    const all = await history(h, taskId);
    let s: SseStream;
    try {
      s = await readSse(h.url, `/task/${taskId}/stream`, { key: h.key, headers: { 'last-event-id': '1' } }, 20_000);
    } catch (err) {
      assert.fail(`the resumed stream was dropped before its first byte: ${String(err)}`);
    }
    assert.equal(s.status, 200);
    assert.ok(s.completed, `the resumed stream was cut off after ${s.events.length} events`);
    const stored = s.events.filter(isStored);
    assert.deepEqual(seqs(stored), all.slice(1).map((e) => e.seq), 'every missed event is replayed');
    assert.deepEqual(s.events.slice(stored.length).map((e) => e.event), ['task', 'done']);
  });

  it('refusals from the task\'s state open the stream (200) and arrive as an error event then done refused', async () => {
    const expectRefusal = async (s: SseStream, code: string, retryable: boolean) => {
      assert.equal(s.status, 200, `a ${code} refusal opens the stream: ${JSON.stringify(s.body)}`);
      assert.match(String(s.headers['content-type']), /^text\/event-stream/);
      await s.finished(5_000);
      assert.ok(s.completed);
      assert.deepEqual(s.events.map((e) => e.event), ['error', 'done'], `${code}: an error event, then done`);
      const [error, done] = s.events as [SseEvent, SseEvent];
      assert.equal(error.json.error, code);
      assert.equal(typeof error.json.message, 'string');
      assert.equal(error.json.retryable, retryable);
      assert.equal(done.json.outcome, 'refused');
      for (const e of s.events) assert.equal(e.id, undefined, 'a refusal is not stored');
      return { error, done };
    };

    // 409 task_executing: execute while a turn runs.
    const busyPrompt = 'Stream-refuse: busy.';
    router.script(busyPrompt, { hang: true });
    const busy = await startTask(h, busyPrompt);
    await router.waitForCalls(busyPrompt, 1);
    const r1 = await expectRefusal(await post(h, `/task/${busy}/execute/stream`, { instruction: 'again' }), 'task_executing', true);
    assert.equal(r1.error.json.task_id, busy);
    assert.equal((await taskState(h, busy)).active, true, 'the running turn was not touched');
    await h.request('POST', `/task/${busy}/stop`, { body: {} });
    await waitIdle(h, busy);

    // 409 task_exists: a create under an id that exists.
    await expectRefusal(await post(h, '/task/start/stream', { task_id: busy, task: { prompt: 'again', outputs: [ITEMS] } }), 'task_exists', false);

    // 409 task_in_cron_mode: a message to a scheduled task.
    const cron = await startTask(h, 'Stream-refuse: scheduled.', { schedule: { cron: '0 0 1 1 *', timezone: 'UTC' } });
    await expectRefusal(await post(h, `/task/${cron}/continue/stream`, { message: 'hello' }), 'task_in_cron_mode', false);
    await expectRefusal(await post(h, `/task/${cron}/execute/stream`, {}), 'task_in_cron_mode', false);
    await waitIdle(h, cron);

    // 402 out_of_credits: a create by an account with no credits stores nothing.
    const made = await h.request('POST', '/admin/accounts', { key: ADMIN_KEY, body: { name: 'broke', credits: 0 } });
    assert.equal(made.status, 201, made.text);
    const brokeKey = made.body.api_key as string;
    await expectRefusal(await post(h, '/task/stream', { prompt: 'no money' }, brokeKey), 'out_of_credits', false);
    const listed = await h.request('GET', '/task', { key: brokeKey });
    assert.deepEqual(listed.body, [], 'the refused create stored no task');

    // 402 out_of_credits: a message to an idle task of an account that ran dry.
    const poor = await h.request('POST', '/admin/accounts', { key: ADMIN_KEY, body: { name: 'poor', credits: 5 } });
    const poorKey = poor.body.api_key as string;
    const created = await h.request('POST', '/task/start', { key: poorKey, body: { task: { prompt: 'Stream-refuse: poor.', outputs: [ITEMS] } } });
    assert.equal(created.status, 200, created.text);
    const poorTask = created.body.task_id as string;
    await waitIdleAs(h, poorTask, poorKey);
    await h.request('POST', `/admin/accounts/${poor.body.account_id}/credits`, { key: ADMIN_KEY, body: { amount: -1000 } });
    await expectRefusal(await post(h, `/task/${poorTask}/continue/stream`, { message: 'more' }, poorKey), 'out_of_credits', false);
    const poorState = await h.request('GET', `/task/${poorTask}/state`, { key: poorKey });
    assert.equal(poorState.body.active, false, 'no turn started');
    assert.equal(poorState.body.status, 'plan');
  });

  it('request-level refusals (401, 404, 422) are ordinary HTTP errors before any stream', async () => {
    const idle = await startTask(h, 'Stream-errors: a real task.');
    await waitIdle(h, idle);
    const cases: { name: string; open: () => Promise<SseStream>; status: number; error: string; param?: string }[] = [
      { name: 'POST /task/stream without a key', open: () => post(h, '/task/stream', { prompt: 'x' }, null), status: 401, error: 'unauthorized' },
      { name: 'POST /task/start/stream with a bad key', open: () => post(h, '/task/start/stream', { prompt: 'x' }, 'not-a-key'), status: 401, error: 'unauthorized' },
      { name: 'GET stream without a key', open: () => openSse(h.url, `/task/${idle}/stream`, { key: null }), status: 401, error: 'unauthorized' },
      { name: 'continue/stream without a key', open: () => post(h, `/task/${idle}/continue/stream`, { message: 'x' }, null), status: 401, error: 'unauthorized' },
      { name: 'GET stream of an unknown task', open: () => openSse(h.url, '/task/no-such-task/stream', { key: h.key }), status: 404, error: 'task_not_found' },
      { name: 'continue/stream of an unknown task', open: () => post(h, '/task/no-such-task/continue/stream', { message: 'x' }), status: 404, error: 'task_not_found' },
      { name: 'execute/stream of an unknown task', open: () => post(h, '/task/no-such-task/execute/stream', {}), status: 404, error: 'task_not_found' },
      { name: 'POST /task/stream with a blank prompt', open: () => post(h, '/task/stream', { prompt: '   ' }), status: 422, error: 'invalid_request', param: 'prompt' },
      { name: 'POST /task/stream without a prompt', open: () => post(h, '/task/stream', {}), status: 422, error: 'invalid_request', param: 'prompt' },
      { name: 'POST /task/start/stream with a bad output id', open: () => post(h, '/task/start/stream', { task: { prompt: 'x', outputs: [{ id: 'Bad Id', kind: 'report' }] } }), status: 422, error: 'invalid_request', param: 'task.outputs[0].id' },
      { name: 'continue/stream with an empty message', open: () => post(h, `/task/${idle}/continue/stream`, { message: '' }), status: 422, error: 'invalid_request', param: 'message' },
    ];
    for (const c of cases) {
      const s = await c.open();
      await s.finished(5_000);
      assert.equal(s.status, c.status, `${c.name}: status`);
      assert.doesNotMatch(String(s.headers['content-type']), /event-stream/, `${c.name}: no stream was opened`);
      assert.equal(s.body?.error, c.error, `${c.name}: ${JSON.stringify(s.body)}`);
      if (c.param) assert.equal(s.body.param, c.param, `${c.name}: param`);
    }
    assert.equal((await taskState(h, idle)).active, false, 'nothing started');
  });

  it('speaks HTTP/1.1 chunks to an HTTP/1.1 client and a plain body to an HTTP/1.0 client, both whole', async () => {
    const taskId = await startTask(h, 'Say one thing.');
    await waitIdle(h, taskId, 10_000);
    // Resumed after the first event: the rest of the history, then the stream ends.
    const path = `/task/${taskId}/stream?after=1`;
    const expected = (await history(h, taskId, 1)).map((e) => e.seq);
    for (const version of ['1.1', '1.0'] as const) {
      const client = await stalledGet(h.url, path, { 'X-API-Key': h.key, Connection: 'close' }, { httpVersion: version });
      const { bytes, closedByServer } = await client.drain(10_000);
      assert.ok(closedByServer, `HTTP/${version}: the server ended the stream`);
      const raw = parseRawResponse(bytes);
      assert.equal(raw.status, 200, `HTTP/${version}`);
      if (version === '1.1') assert.ok(raw.complete, 'the chunked body ended with its last chunk');
      else assert.doesNotMatch(raw.head, /transfer-encoding/i, 'no chunks for HTTP/1.0');
      // Without chunks, parseRawResponse gives the body as it came.
      assert.doesNotMatch(raw.body, /^[0-9a-f]+\r?$/m, `HTTP/${version}: no chunk framing left in the body`);
      const events = parseSseText(raw.body).events;
      assert.deepEqual(events.filter(isStored).map((e) => Number(e.id)), expected, `HTTP/${version}: every stored event once, in order`);
      assert.equal(events.at(-1)?.event, 'done');
    }
  });
});

// ---- keep-alive comments -----------------------------------------------------------------------

describe('event streams: keep-alive', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ listen: true, env: { QUARRY_SSE_PING_MS: '50' } });
  });
  after(() => h.close());

  it('sends ": ping" comment lines while nothing else happens', async () => {
    h.model!.script({ hang: true });
    const res = await h.request('POST', '/task/start', { body: { task: { prompt: 'Ping me.', outputs: [ITEMS] } } });
    const taskId = res.body.task_id as string;
    await h.model!.waitForRequests(1);
    const s = await openSse(h.url, `/task/${taskId}/stream`, { key: h.key });
    try {
      await s.waitForComments(3, 5_000);
      assert.ok(s.comments.every((c) => c === 'ping'), `comments: ${JSON.stringify(s.comments)}`);
      assert.equal(s.ended, false, 'pings keep the stream open');
      const events = s.events.length;
      assert.ok(events > 0 && s.events.every((e) => e.id !== undefined), 'pings are comments, not events');
    } finally {
      await h.request('POST', `/task/${taskId}/stop`, { body: {} });
      await s.finished(10_000);
    }
    assert.ok(s.completed);
    assert.equal(s.events.at(-1)!.event, 'done');
  });
});

// ---- a client that never reads -----------------------------------------------------------------

describe('event streams: slow clients (QUARRY_SSE_MAX_BUFFER_BYTES=2048)', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ listen: true, env: { QUARRY_SSE_MAX_BUFFER_BYTES: '2048', QUARRY_SSE_PING_MS: '50' } });
  });
  after(() => h.close());

  it('a client that never reads is disconnected, not buffered without bound, and the server stays healthy', async () => {
    // About 12 MB of text in large, paced chunks: far more than the kernel's socket buffers hold.
    const chunkChars = 3 * 1024 * 1024;
    const text = ['A', 'B', 'C', 'D'].map((c) => c.repeat(chunkChars)).join('');
    h.model!.script({ hang: true }, { text, chunkDelayMs: 300, usage: { prompt_tokens: 10, completion_tokens: 10 } });
    const res = await h.request('POST', '/task/start', { body: { task: { prompt: 'Talk a lot.', outputs: [ITEMS] } } });
    assert.equal(res.status, 200, res.text);
    const taskId = res.body.task_id as string;
    await h.model!.waitForRequests(1);
    // The flood comes in the queued turn, so the stream is open well before it starts.
    assert.equal((await h.request('POST', `/task/${taskId}/continue`, { body: { message: 'Now write it all out.' } })).status, 202);
    const slow = await stalledGet(h.url, `/task/${taskId}/stream`, { 'x-api-key': h.key });
    try {
      assert.equal((await taskState(h, taskId)).active, true);
      assert.equal((await h.request('POST', `/task/${taskId}/stop`, { body: {} })).status, 200);
      await h.model!.waitForRequests(2);
      await waitIdle(h, taskId, 30_000);

      const health = await h.request('GET', '/healthz', { key: null });
      assert.equal(health.status, 200, 'the server stays healthy');
      const list = await h.request('GET', '/task');
      assert.equal(list.status, 200);
      const texts = (await taskEvents(h, taskId)).filter((e) => e.type === 'text');
      assert.equal(texts.map((e) => e.text).join('').length, text.length, 'the turn itself was unharmed: all its text is stored');
      assert.ok(texts.length >= 2, 'the reply arrived as several text events');

      const { bytes, closedByServer } = await slow.drain(10_000);
      assert.ok(closedByServer, 'the server closed the slow connection');
      const raw = parseRawResponse(bytes);
      if (bytes.length > 0) assert.equal(raw.status, 200);
      assert.equal(raw.complete, false, 'the slow stream was cut off, not ended');
      assert.ok(bytes.length < text.length / 2, `the server did not keep the stream for the slow client (${bytes.length} bytes arrived)`);
      const got = parseSseText(raw.body).events;
      assert.ok(!got.some((e) => e.event === 'done' && e.json?.outcome === 'completed'), 'the slow client never saw the last done');
    } finally {
      slow.socket.destroy();
    }

    // A fresh stream works: the idle task's snapshot and done.
    const again = await readSse(h.url, `/task/${taskId}/stream`, { key: h.key }, 5_000);
    assert.equal(again.status, 200);
    assert.deepEqual(again.events.map((e) => e.event), ['task', 'done']);
  });

  it('a client that reads along is not cut off because a few events were sent at once', async () => {
    h.model!.script({ hang: true });
    const asked = h.model!.requests.length;
    const res = await h.request('POST', '/task/start', { body: { task: { prompt: 'Run a little.', outputs: [ITEMS] } } });
    const taskId = res.body.task_id as string;
    await h.model!.waitForRequests(asked + 1);
    let s: SseStream | undefined;
    try {
      // The replay (created, turn_started, activity events: a few KB) goes out in one burst.
      s = await openSse(h.url, `/task/${taskId}/stream`, { key: h.key });
    } catch (err) {
      assert.fail(`a reading client's stream was dropped before its first byte: ${String(err)}`);
    } finally {
      await h.request('POST', `/task/${taskId}/stop`, { body: {} });
    }
    await s.finished(10_000);
    assert.ok(s.completed, `the stream was cut off after ${s.events.length} events`);
    assert.equal(s.events.at(-1)?.event, 'done');
    const state = await taskState(h, taskId);
    assert.deepEqual(seqs(s.events), range(1, state.last_event_id));
  });
});
