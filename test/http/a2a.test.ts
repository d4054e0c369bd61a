/**
 * Quarry as an A2A v1.0 agent (decisions §15.4), driven only by the official A2A SDK's client
 * over real HTTP: the public agent card, the key on /a2a, SendMessage (blocking and not),
 * SendStreamingMessage, GetTask, ListTasks with paging, CancelTask, messages to a task (queued
 * while a turn runs), typed errors carrying our code, and a SubscribeToTask that is dropped and
 * resumed with Last-Event-ID, getting every remaining event once, in order. The client's fetch
 * adds the key; a wrapper around it reads the raw SSE (the `id:` lines and pings) on the side.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { Role, TaskState, type ListTasksRequest, type Message, type SendMessageRequest, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { A2AError, PushNotificationNotSupportedError, RequestMalformedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError, VersionNotSupportedError } from '@a2a-js/sdk/errors';
import { startHarness, waitIdle, type Harness } from '../kit/harness.js';
import { until, within } from '../kit/bounded-waits.js';
import { createAccount, fakeModel, taskEvents, uid, userText, waitIdleAs } from '../kit/task-api.js';
import type { FakeReply, FakeRequestBody } from '../kit/fake-openai-server.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

// ---- the fake model: turns scripted per task by a marker in the prompt ----------------------------

const MAKERS = { id: 'makers', kind: 'table', columns: [{ name: 'company', type: 'string', required: true }, { name: 'capacity_gwh', type: 'number' }] };
const SOURCE = { url: 'https://example.com/makers', title: 'Makers list' };

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A turn's script: the reply to its step-th model request (steps already taken in this turn). */
type Script = (step: number, body: FakeRequestBody) => FakeReply | Promise<FakeReply>;
const scripts = new Map<string, Script>();

/** Registers a script and returns the marker a prompt carries to get it. */
function scripted(script: Script): string {
  const marker = `[script ${uid()}]`;
  scripts.set(marker, script);
  return marker;
}

const writeRows = (rows: Json[]): FakeReply => ({ toolCalls: [{ name: 'write_rows', arguments: { output: 'makers', rows, sources: [SOURCE] } }] });

/** Plans an output, writes two rows, waits at `gate` (when given), writes a third, says it is done. */
function rowsScript(gate?: { reached: () => void; release: Promise<void> }): Script {
  return async (step) => {
    switch (step) {
      case 0: return { toolCalls: [{ name: 'update_spec', arguments: { name: 'EU makers', outputs: [MAKERS] } }] };
      case 1: return writeRows([{ company: 'Northvolt', capacity_gwh: 16 }, { company: 'ACC', capacity_gwh: 13.4 }]);
      case 2:
        if (gate) {
          gate.reached();
          await gate.release;
        }
        return writeRows([{ company: 'Verkor', capacity_gwh: 16 }]);
      default: return { text: 'Found three makers.' };
    }
  };
}

// ---- the official client ---------------------------------------------------------------------------

interface Spy {
  statuses: number[];
  /** Per SSE response, its raw text once it ended (a dropped one: what had arrived). */
  streams: Promise<string>[];
  /** Per SSE response, its raw text so far. */
  sofar: string[];
}

function newSpy(): Spy {
  return { statuses: [], streams: [], sofar: [] };
}

/** fetch with our key (or none), optional header changes, and a spy that tees SSE bodies. */
function fetchWith(key: string | null, spy?: Spy, editHeaders?: (headers: Headers) => void): typeof fetch {
  return async (input, init = {}) => {
    const headers = new Headers(init.headers);
    if (key) headers.set('X-API-Key', key);
    editHeaders?.(headers);
    const res = await fetch(input, { ...init, headers });
    spy?.statuses.push(res.status);
    if (!spy || !res.body || !res.headers.get('content-type')?.startsWith('text/event-stream')) return res;
    const [mine, theirs] = res.body.tee();
    const index = spy.sofar.push('') - 1;
    spy.streams.push((async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of theirs) spy.sofar[index] += decoder.decode(chunk, { stream: true });
      } catch {
        // aborted: keep what arrived
      }
      return spy.sofar[index]!;
    })());
    return new Response(mine, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

async function connect(h: Harness, key: string | null, spy?: Spy, editHeaders?: (headers: Headers) => void): Promise<Client> {
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: fetchWith(key, spy, editHeaders) })],
  }));
  // The card is resolved with a plain fetch, without a key.
  return factory.createFromUrl(h.url);
}

function message(text: string, taskId = '', parts?: Message['parts']): Message {
  return {
    messageId: randomUUID(), contextId: '', taskId, role: Role.ROLE_USER, metadata: undefined, extensions: [], referenceTaskIds: [],
    parts: parts ?? [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
  };
}

const send = (client: Client, msg: Message, returnImmediately = false) =>
  client.sendMessage({ tenant: '', message: msg, metadata: undefined, configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately } }) as Promise<Task>;

const stateName = (state: TaskState | undefined) => (state === undefined ? 'none' : TaskState[state]);
const seqOf = (ev: StreamResponse): number | undefined => (ev.payload?.value as { metadata?: Record<string, unknown> }).metadata?.['quarry/seq'] as number | undefined;
const rowsOf = (task: Task, artifactId = 'makers') => (task.artifacts.find((a) => a.artifactId === artifactId)?.parts ?? []).map((p) => (p.content as { value: Json }).value);
const updateRows = (events: StreamResponse[]) => events.flatMap((ev) => (ev.payload?.$case === 'artifactUpdate' ? ev.payload.value.artifact!.parts.map((p) => (p.content as { value: Json }).value) : []));
const sseIds = (text: string) => text.split('\n').filter((l) => l.startsWith('id:')).map((l) => l.slice(3).trim());

/** The seqs of the stored events an A2A stream sends a frame for (decisions §15.4; see task-mapping.ts). */
function framedSeqs(events: Json[]): number[] {
  return events.filter((e) => {
    if (e.type === 'tool') return e.state !== 'started';
    if (e.type === 'task') return ['created', 'turn_started', 'phase_changed', 'activity_changed', 'message_queued', 'deleted'].includes(e.reason) || (e.reason === 'updated' && e.turn_id !== null);
    return true;
  }).map((e) => e.seq);
}

/** The A2A error a promise rejects with, checked to be of `type` and to carry our code. */
async function rejectsWith(promise: Promise<unknown>, type: abstract new (...args: never[]) => A2AError, quarryCode: string): Promise<A2AError> {
  const thrown = await promise.then(() => assert.fail('expected an A2A error'), (e: unknown) => e);
  // The SDK's client raises an error frame of a stream as a plain Error whose cause is the typed error.
  const err = thrown instanceof A2AError ? thrown : (thrown as Error).cause;
  assert.ok(err instanceof type, `expected ${type.name}, got ${String(err)}`);
  const data = (err as { data?: { metadata?: Record<string, string> }[] }).data;
  assert.equal(data?.[0]?.metadata?.quarry_code, quarryCode, JSON.stringify(data));
  return err;
}

// ---- tests ---------------------------------------------------------------------------------------

describe('A2A endpoint', () => {
  let h: Harness;
  let client: Client;

  before(async () => {
    h = await startHarness({ listen: true, env: { QUARRY_SSE_PING_MS: '150', QUARRY_RATE_LIMIT_PER_MIN: '1000000' } });
    fakeModel(h).setResponder((body, _index) => {
      const text = userText(body);
      const step = (body.messages ?? []).filter((m) => m.role === 'assistant').length;
      for (const [marker, script] of scripts) if (text.includes(marker)) return script(step, body);
      return { text: 'Done.' };
    });
    client = await connect(h, h.key);
  });
  after(() => h?.close());

  /** A new account's client, and the three tasks it started, each idle after its turn. */
  async function threeIdleTasks(name: string): Promise<{ lister: Client; ids: string[] }> {
    const account = await createAccount(h, `${name}-${uid()}`, 10);
    const lister = await connect(h, account.api_key);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await send(lister, message(`Task ${i}`), true)).id);
    for (const id of ids) await waitIdleAs(h, id, account.api_key);
    return { lister, ids };
  }

  it('serves the agent card without a key; /a2a without a key is 401', async () => {
    const card = await client.getAgentCard();
    assert.equal(card.name, 'Quarry');
    assert.equal(card.version, JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
    assert.deepEqual(card.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion]), [[`${h.url}/a2a`, 'JSONRPC', '1.0']]);
    assert.equal(card.capabilities?.streaming, true);
    assert.deepEqual(Object.keys(card.securitySchemes).sort(), ['apiKey', 'bearer']);
    assert.deepEqual(card.skills.map((s) => s.id), ['research']);

    const spy = newSpy();
    const keyless = await connect(h, null, spy);
    await assert.rejects(keyless.getTask({ tenant: '', id: 'tsk_whatever' }));
    assert.deepEqual(spy.statuses, [401]);
  });

  it('SendMessage blocks until the turn ends and returns the task with its rows as an artifact', async () => {
    const task = await send(client, message(`Find EU battery makers ${scripted(rowsScript())}`));
    assert.equal(stateName(task.status?.state), 'TASK_STATE_COMPLETED');
    assert.equal(task.contextId, task.id);
    assert.equal((task.status?.message?.parts[0]?.content as { value: string }).value, 'Found three makers.');
    assert.deepEqual(rowsOf(task).map((r) => r.company), ['Northvolt', 'ACC', 'Verkor']);
    const artifact = task.artifacts[0]!;
    assert.equal(artifact.parts[0]!.mediaType, 'application/json');
    assert.equal(artifact.metadata?.['quarry/row_count'], 3);
    assert.equal(artifact.metadata?.['quarry/truncated'], false);
    assert.equal(task.metadata?.['quarry/seq'], (await taskEvents(h, task.id)).at(-1).seq);
    assert.equal(task.metadata?.['quarry/task'].status, 'plan');

    const got = await client.getTask({ tenant: '', id: task.id });
    assert.equal(stateName(got.status?.state), 'TASK_STATE_COMPLETED');
    assert.deepEqual(rowsOf(got), rowsOf(task));
  });

  it('SendMessage with returnImmediately answers at once; GetTask shows the rows once the turn is done', async () => {
    const gate = deferred();
    const task = await send(client, message(`Quick one ${scripted(async () => { await gate.promise; return { text: 'ok' }; })}`), true);
    assert.equal(stateName(task.status?.state), 'TASK_STATE_WORKING');
    gate.resolve();
    await waitIdle(h, task.id);
    const done = await client.getTask({ tenant: '', id: task.id });
    assert.equal(stateName(done.status?.state), 'TASK_STATE_COMPLETED');

    // A full spec as a data part, as POST /task/start takes it.
    const spec = await send(client, message('', '', [{ content: { $case: 'data', value: { task: { name: 'Spec task', prompt: `Makers ${scripted(rowsScript())}`, outputs: [MAKERS] } } }, metadata: undefined, filename: '', mediaType: 'application/json' }]));
    assert.equal(stateName(spec.status?.state), 'TASK_STATE_COMPLETED');
    assert.equal(spec.metadata?.['quarry/task'].name, 'EU makers');
    assert.ok(rowsOf(spec).length >= 2);

    // A contextId the client made up for a new conversation starts a task; only a taskId names one.
    const fresh = await send(client, { ...message(`New conversation ${scripted(async () => ({ text: 'ok' }))}`), contextId: `ctx-${randomUUID()}` }, true);
    assert.match(fresh.id, /^tsk_/);
    assert.equal(fresh.contextId, fresh.id);
  });

  it('SendStreamingMessage streams the task, then its events in order with their seq as SSE id, ending with a terminal status', async () => {
    const spy = newSpy();
    const streaming = await connect(h, h.key, spy);
    const events: StreamResponse[] = [];
    for await (const ev of streaming.sendMessageStream({ tenant: '', message: message(`Stream it ${scripted(rowsScript())}`), configuration: undefined, metadata: undefined })) events.push(ev);

    const first = events[0]!;
    assert.equal(first.payload?.$case, 'task');
    const taskId = (first.payload!.value as Task).id;
    assert.equal(stateName((first.payload!.value as Task).status?.state), 'TASK_STATE_WORKING');
    const last = events.at(-1)!;
    assert.equal(last.payload?.$case, 'statusUpdate');
    assert.equal(stateName(last.payload.value.status?.state), 'TASK_STATE_COMPLETED');
    assert.ok(events.slice(0, -1).every((ev) => ev.payload?.$case !== 'statusUpdate' || ev.payload.value.status?.state === TaskState.TASK_STATE_WORKING), 'only the last status is terminal');

    const seqs = events.map(seqOf);
    assert.equal(seqs[0], 0, 'the task as the create left it: before its first event');
    assert.deepEqual(seqs.slice(1), framedSeqs(await taskEvents(h, taskId)), 'a frame per event, in order');
    const rowUpdates = events.filter((ev) => ev.payload?.$case === 'artifactUpdate').map((ev) => ev.payload!.value as { append: boolean });
    assert.deepEqual(rowUpdates.map((u) => u.append), [false, true]);
    assert.deepEqual(updateRows(events).map((r) => r.company), ['Northvolt', 'ACC', 'Verkor']);
    assert.deepEqual(sseIds(await spy.streams[0]!), seqs.map(String), 'each SSE frame carries id: <seq>');
  });

  it('GetTask, CancelTask and SubscribeToTask on an unknown task, or another account\'s, are TaskNotFoundError with task_not_found', async () => {
    const mine = await send(client, message('Something small'));
    const other = await createAccount(h, `other-${uid()}`, 10);
    const stranger = await connect(h, other.api_key);
    for (const c of [client, stranger]) {
      const id = c === client ? 'tsk_does_not_exist' : mine.id;
      await rejectsWith(c.getTask({ tenant: '', id }), TaskNotFoundError, 'task_not_found');
      await rejectsWith(c.cancelTask({ tenant: '', id, metadata: undefined }), TaskNotFoundError, 'task_not_found');
      await rejectsWith(send(c, message('more', id)), TaskNotFoundError, 'task_not_found');
      await rejectsWith((async () => { for await (const _ of c.resubscribeTask({ tenant: '', id })) { /* none */ } })(), TaskNotFoundError, 'task_not_found');
    }
    // A finished task has nothing to subscribe to (A2A's rule), and nothing to cancel.
    await rejectsWith((async () => { for await (const _ of client.resubscribeTask({ tenant: '', id: mine.id })) { /* none */ } })(), UnsupportedOperationError, 'invalid_request');
    await rejectsWith(client.cancelTask({ tenant: '', id: mine.id, metadata: undefined }), TaskNotCancelableError, 'invalid_request');
    await rejectsWith(client.deleteTaskPushNotificationConfig({ tenant: '', taskId: mine.id, id: 'x' }), PushNotificationNotSupportedError, 'invalid_request');
  });

  it('a body that is no JSON-RPC request is -32600 Invalid Request (-32700 when not JSON), with the id when it can be read', async () => {
    const rpc = async (opts: { body?: unknown; rawBody?: string }) => {
      const res = await h.request('POST', '/a2a', { ...opts, headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 200);
      return res.body as { jsonrpc: string; id: unknown; error: { code: number; message: string; data?: { metadata?: Record<string, string> }[] } };
    };
    const cases: [unknown, unknown][] = [
      [{ jsonrpc: '1.0', id: 7, method: 'GetTask', params: { id: 'tsk_x' } }, 7],
      [{ id: 'no-version', method: 'GetTask', params: { id: 'tsk_x' } }, 'no-version'],
      [{ jsonrpc: '2.0', id: 'no-method', params: { id: 'tsk_x' } }, 'no-method'],
      [{ jsonrpc: '2.0', id: 3, method: 'GetTask', params: 'tsk_x' }, 3],
      [{ jsonrpc: '2.0', id: { not: 'an id' }, method: 'GetTask', params: { id: 'tsk_x' } }, null],
      [[{ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'tsk_x' } }], null],
      ['GetTask', null],
    ];
    for (const [body, id] of cases) {
      const answer = await rpc({ body });
      assert.equal(answer.jsonrpc, '2.0');
      assert.deepEqual([answer.id, answer.error.code], [id, -32600], JSON.stringify(body));
      assert.equal(answer.error.data?.[0]?.metadata?.quarry_code, 'invalid_request');
    }
    const unparsable = await rpc({ rawBody: '{"jsonrpc": "2.0", "id": 1,' });
    assert.deepEqual([unparsable.id, unparsable.error.code], [null, -32700]);
    // A well-formed request whose params are wrong is -32602 Invalid params, as before.
    const badParams = await rpc({ body: { jsonrpc: '2.0', id: 9, method: 'GetTask', params: ['tsk_x'] } });
    assert.deepEqual([badParams.id, badParams.error.code], [9, -32602]);
  });

  it('a refused streaming call is a stream whose one frame is the JSON-RPC error (-32001 for an unknown task)', async () => {
    const res = await h.request('POST', '/a2a', { body: { jsonrpc: '2.0', id: 'sub-1', method: 'SubscribeToTask', params: { id: 'tsk_does_not_exist' } } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const frames = res.text.split('\n\n').filter((f) => f.startsWith('data:'));
    assert.equal(frames.length, 1, res.text);
    const answer = JSON.parse(frames[0]!.slice('data:'.length));
    assert.deepEqual([answer.jsonrpc, answer.id, answer.error.code, 'result' in answer], ['2.0', 'sub-1', -32001, false]);
    assert.equal(answer.error.data[0].metadata.quarry_code, 'task_not_found');

    const err = await rejectsWith((async () => { for await (const _ of client.resubscribeTask({ tenant: '', id: 'tsk_does_not_exist' })) { /* none */ } })(), TaskNotFoundError, 'task_not_found');
    assert.equal((err as A2AError & { envelopeCode?: number }).envelopeCode, -32001);
  });

  it('ListTasks pages with pageSize and pageToken', async () => {
    const { lister, ids } = await threeIdleTasks('lister');
    const list = (pageToken: string) => lister.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 2, pageToken, statusTimestampAfter: undefined });
    const first = await list('');
    assert.equal(first.tasks.length, 2);
    assert.ok(first.nextPageToken);
    assert.deepEqual(first.tasks.map((t) => t.artifacts.length), [0, 0], 'artifacts only when asked for');
    const second = await list(first.nextPageToken);
    assert.equal(second.tasks.length, 1);
    assert.equal(second.nextPageToken, '');
    assert.deepEqual([...first.tasks, ...second.tasks].map((t) => t.id).sort(), [...ids].sort());
    assert.ok([...first.tasks, ...second.tasks].every((t) => t.status?.state === TaskState.TASK_STATE_COMPLETED));
    const one = await lister.listTasks({ tenant: '', contextId: ids[0]!, status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined });
    assert.deepEqual(one.tasks.map((t) => t.id), [ids[0]]);
  });

  it('ListTasks as the SDK client sends it without a status (UNRECOGNIZED) filters nothing; totalSize counts every task, not the page', async () => {
    const { lister } = await threeIdleTasks('counted');
    // Only what a caller would set: the client fills the rest (status: UNRECOGNIZED on the wire).
    const page = await lister.listTasks({ pageSize: 2 } as ListTasksRequest);
    assert.deepEqual([page.tasks.length, page.pageSize, page.totalSize], [2, 2, 3]);
    assert.ok(page.nextPageToken);
    const all = await lister.listTasks({} as ListTasksRequest);
    assert.deepEqual([all.tasks.length, all.totalSize], [3, 3]);
    const since = await lister.listTasks({ statusTimestampAfter: '2000-01-01T00:00:00Z', pageSize: 1 } as ListTasksRequest);
    assert.deepEqual([since.tasks.length, since.totalSize], [1, 3]);
    const none = await lister.listTasks({ statusTimestampAfter: '2999-01-01T00:00:00+02:00' } as ListTasksRequest);
    assert.deepEqual([none.tasks.length, none.totalSize], [0, 0]);
  });

  it('a task\'s history is its conversation: the prompt, each message and each turn\'s closing reply; historyLength keeps the latest', async () => {
    // The first turn talks between its tool calls too: its reply is what it said after the last one.
    const rows = rowsScript();
    const marker = scripted(async (step, body) => {
      if (userText(body).includes('Second question')) return { text: 'Second answer.' };
      if (step === 1) return { text: 'Writing the first rows.', ...(await rows(step, body)) };
      const reply = await rows(step, body);
      return 'text' in reply ? { text: 'First answer.' } : reply;
    });
    const prompt = `First question ${marker}`;
    const first = await send(client, message(prompt));
    const said = (task: Task) => task.history.map((m) => [m.role === Role.ROLE_USER ? 'user' : 'agent', (m.parts[0]!.content as { value: string }).value]);
    assert.deepEqual(said(first), [['user', prompt], ['agent', 'First answer.']]);
    const second = await client.sendMessage({ message: message('Second question', first.id), configuration: { historyLength: 3 } } as SendMessageRequest) as Task;
    assert.deepEqual(said(second), [['agent', 'First answer.'], ['user', 'Second question'], ['agent', 'Second answer.']]);
    assert.ok(second.history.every((m) => m.taskId === first.id && m.contextId === first.id && m.messageId), 'each message names its task');
    assert.equal(new Set(second.history.map((m) => m.messageId)).size, 3);

    const whole = await client.getTask({ tenant: '', id: first.id });
    assert.deepEqual(said(whole), [['user', prompt], ['agent', 'First answer.'], ['user', 'Second question'], ['agent', 'Second answer.']]);
    assert.deepEqual(said(await client.getTask({ tenant: '', id: first.id, historyLength: 1 })), [['agent', 'Second answer.']]);
    assert.deepEqual(said(await client.getTask({ tenant: '', id: first.id, historyLength: 0 })), []);
    const listed = async (historyLength?: number) => (await client.listTasks({ contextId: first.id, historyLength } as ListTasksRequest)).tasks[0]!;
    assert.deepEqual(said(await listed()), [], 'a page carries no history unless asked');
    assert.deepEqual(said(await listed(2)), [['user', 'Second question'], ['agent', 'Second answer.']]);
  });

  it('a reply cut off and asked for again is the closing text once in the task\'s status and history; the stream marks its restart frame', async () => {
    const REPLY = 'Granite quarries of Vermont: Rock of Ages, Barre, and the Smith quarry, all still cut today.';
    let tries = 0;
    // Events 300 ms apart outlast the 250 ms text coalescing: part of the reply is stored before the cut.
    const marker = scripted(() => (tries++ === 0 ? { text: REPLY, chunkDelayMs: 300, cutAfterEvents: 3 } : { text: REPLY }));
    const frames: StreamResponse[] = [];
    for await (const frame of client.sendMessageStream({ tenant: '', message: message(`Vermont granite ${marker}`), configuration: undefined, metadata: undefined })) frames.push(frame);
    assert.equal(tries, 2, 'the reply was cut, then asked for again');
    const statuses = frames.flatMap((f) => (f.payload?.$case === 'statusUpdate' ? [f.payload.value] : []));
    assert.equal(statuses.filter((s) => s.metadata?.['quarry/restart'] === true).length, 1, 'the withdrawn text is marked for the client to drop');
    const last = statuses.at(-1)!;
    assert.equal(stateName(last.status?.state), 'TASK_STATE_COMPLETED');
    const textOf = (m: Message | undefined) => (m?.parts[0]?.content as { value: string } | undefined)?.value;
    const got = await client.getTask({ tenant: '', id: (frames[0]!.payload!.value as Task).id });
    assert.equal(textOf(got.status?.message), REPLY);
    assert.deepEqual(got.history.filter((m) => m.role === Role.ROLE_AGENT).map(textOf), [REPLY]);
  });

  it('a plan answer stays in the closing text when the first reply after the move to execute is cut off and asked for again', async () => {
    const PLAN = 'Plan: list the makers from trade registers. ';
    const EXECUTE = 'No register lists makers of this chemistry, so there is nothing to write.';
    let calls = 0;
    // Events 300 ms apart outlast the 250 ms text coalescing: part of the reply is stored before the cut.
    const marker = scripted(() => {
      switch (calls++) {
        case 0: return { toolCalls: [{ name: 'update_spec', arguments: { name: 'Sodium cells', outputs: [MAKERS] } }] };
        case 1: return { text: PLAN };
        case 2: return { text: EXECUTE, chunkDelayMs: 300, cutAfterEvents: 3 };
        default: return { text: EXECUTE };
      }
    });
    const done = await send(client, message(`Sodium-ion makers ${marker}`));
    assert.equal(calls, 4, 'the outputs planned, the plan, the cut reply, its retry');
    const textOf = (m: Message | undefined) => (m?.parts[0]?.content as { value: string } | undefined)?.value;
    assert.equal(textOf(done.status?.message), PLAN + EXECUTE);
    const got = await client.getTask({ tenant: '', id: done.id });
    assert.equal(textOf(got.status?.message), PLAN + EXECUTE);
    assert.deepEqual(got.history.filter((m) => m.role === Role.ROLE_AGENT).map(textOf), [PLAN + EXECUTE]);
  });

  it('a negative historyLength or a statusTimestampAfter that is no timestamp is -32602 naming the field', async () => {
    const task = await send(client, message('History bounds'), true);
    const badParam = async (promise: Promise<unknown>, param: string) => {
      const err = await rejectsWith(promise, RequestMalformedError, 'invalid_request');
      assert.equal((err as A2AError & { envelopeCode?: number }).envelopeCode, -32602);
      assert.equal((err as { data?: { metadata?: Record<string, string> }[] }).data?.[0]?.metadata?.param, param);
    };
    await badParam(client.listTasks({ statusTimestampAfter: '-1' } as ListTasksRequest), 'statusTimestampAfter');
    await badParam(client.listTasks({ statusTimestampAfter: '2030-01-01' } as ListTasksRequest), 'statusTimestampAfter');
    await badParam(client.listTasks({ historyLength: -1 } as ListTasksRequest), 'historyLength');
    await badParam(client.getTask({ tenant: '', id: task.id, historyLength: -1 }), 'historyLength');
    await badParam(client.sendMessage({ message: message('More', task.id), configuration: { historyLength: -3, returnImmediately: true } } as SendMessageRequest), 'historyLength');
  });

  it('CancelTask stops a running turn: CANCELED', async () => {
    const reached = deferred();
    const task = await send(client, message(`Hold on ${scripted(() => { reached.resolve(); return new Promise<FakeReply>(() => {}); })}`), true);
    await within(reached.promise, 5000, 'the model request');
    const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    assert.equal(stateName(canceled.status?.state), 'TASK_STATE_CANCELED');
    const events = await taskEvents(h, task.id);
    assert.equal(events.at(-1).outcome, 'stopped');
    assert.equal(stateName((await client.getTask({ tenant: '', id: task.id })).status?.state), 'TASK_STATE_CANCELED');
    // Still CANCELED once the stop lies further back than the events a Task is read from.
    for (let i = 0; i < 105; i++) assert.equal((await h.request('PATCH', `/task/${task.id}`, { body: { pinned: i % 2 === 0 } })).status, 200);
    assert.equal(stateName((await client.getTask({ tenant: '', id: task.id })).status?.state), 'TASK_STATE_CANCELED');
  });

  it('a message to an existing task continues it: queued while a turn runs, then run', async () => {
    const reached = deferred();
    const gate = deferred();
    const marker = scripted(async (_step, body) => {
      if (userText(body).includes('Also count the plants')) return { text: 'Counted the plants.' };
      reached.resolve();
      await gate.promise;
      return { text: 'First answer.' };
    });
    const task = await send(client, message(`Start ${marker}`), true);
    await within(reached.promise, 5000, 'the first turn');
    const queued = await send(client, message('Also count the plants', task.id), true);
    assert.equal(queued.id, task.id);
    assert.equal(stateName(queued.status?.state), 'TASK_STATE_WORKING');
    assert.equal(queued.metadata?.['quarry/task'].queued_messages, 1);
    gate.resolve();
    await waitIdle(h, task.id);
    const done = await client.getTask({ tenant: '', id: task.id });
    assert.equal(stateName(done.status?.state), 'TASK_STATE_COMPLETED');
    assert.equal((done.status?.message?.parts[0]?.content as { value: string }).value, 'Counted the plants.');
    // On an idle task a blocking message runs its turn and answers when it is done.
    const again = await send(client, message('Also count the plants once more', task.id));
    assert.equal(stateName(again.status?.state), 'TASK_STATE_COMPLETED');
    assert.equal((await taskEvents(h, task.id)).filter((e) => e.type === 'done').length, 3);
  });

  it('SubscribeToTask: a dropped stream resumed with Last-Event-ID gets every remaining event once, in order', async () => {
    const reached = deferred();
    const release = deferred();
    const task = await send(client, message(`Resume me ${scripted(rowsScript({ reached: () => reached.resolve(), release: release.promise }))}`), true);
    await within(reached.promise, 5000, 'the held step');

    // Without Last-Event-ID: the task as it stands first (rows so far included), then live.
    const spy = newSpy();
    const watcher = await connect(h, h.key, spy);
    const watched: StreamResponse[] = [];
    const watching = (async () => {
      for await (const ev of watcher.resubscribeTask({ tenant: '', id: task.id })) watched.push(ev);
    })();

    // The watcher follows the task live once its Task has arrived.
    const bus = h.quarry.bus;
    await until('the watcher to follow', () => watched.length > 0 && bus.listenerCount(task.id) === 1);

    // From the start (Last-Event-ID: 0), dropped after a few frames while the turn is held.
    const seen: StreamResponse[] = [];
    const drop = new AbortController();
    await (async () => {
      for await (const ev of client.resubscribeTask({ tenant: '', id: task.id }, { serviceParameters: { 'Last-Event-ID': '0' }, signal: drop.signal })) {
        seen.push(ev);
        if (seen.length === 4) {
          drop.abort();
          break;
        }
      }
    })().catch((err: unknown) => {
      if ((err as Error).name !== 'AbortError') throw err;
    });
    assert.equal(seen.length, 4);
    assert.ok(seen.every((ev) => ev.payload?.$case !== 'task'), 'a resume sends no Task first');
    const lastSeen = seqOf(seen.at(-1)!)!;

    // Resumed while still held (the rest of the replay, then live), then released.
    const resumedSpy = newSpy();
    const resumer = await connect(h, h.key, resumedSpy);
    const resumed: StreamResponse[] = [];
    const resuming = (async () => {
      for await (const ev of resumer.resubscribeTask({ tenant: '', id: task.id }, { serviceParameters: { 'Last-Event-ID': String(lastSeen) } })) resumed.push(ev);
    })();
    // The turn is held, so the stored events end here: once the resumed stream has them all it is
    // following live, and what the released turn adds reaches it through the live path.
    const heldSeqs = framedSeqs(await taskEvents(h, task.id));
    assert.ok(heldSeqs.at(-1)! > lastSeen, 'the resumed stream has stored events left to replay');
    await until('the resumed stream to replay up to the held turn', () => resumed.length > 0 && seqOf(resumed.at(-1)!) === heldSeqs.at(-1));
    await until('a ping on the watcher\'s stream while the turn is held', () => /^: ping$/m.test(spy.sofar[0]!));
    release.resolve();
    await within(Promise.all([resuming, watching]), 10_000, 'the streams to end');

    await until('every stream to stop following the task', () => bus.listenerCount(task.id) === 0);
    const events = await taskEvents(h, task.id);
    const expected = framedSeqs(events);
    assert.deepEqual([...seen, ...resumed].map(seqOf), expected, 'every event once, in order');
    assert.deepEqual(sseIds(await resumedSpy.streams[0]!), resumed.map((ev) => String(seqOf(ev))));
    assert.deepEqual(updateRows([...seen, ...resumed]).map((r) => r.company), ['Northvolt', 'ACC', 'Verkor']);
    assert.equal(stateName((resumed.at(-1)!.payload!.value as { status?: { state: TaskState } }).status?.state), 'TASK_STATE_COMPLETED');

    // The watcher: its Task had the first two rows; after it, only the third came, appended.
    const snapshot = watched[0]!;
    assert.equal(snapshot.payload?.$case, 'task');
    const snapTask = snapshot.payload.value as Task;
    assert.equal(stateName(snapTask.status?.state), 'TASK_STATE_WORKING');
    assert.deepEqual(rowsOf(snapTask).map((r) => r.company), ['Northvolt', 'ACC']);
    assert.deepEqual(watched.slice(1).map(seqOf), expected.filter((s) => s > (snapTask.metadata?.['quarry/seq'] as number)));
    assert.deepEqual(updateRows(watched).map((r) => r.company), ['Verkor']);
    const watchedText = await spy.streams[0]!;
    assert.match(watchedText, /^: ping$/m, 'pings while the turn is held');
  });

  it('refuses A2A versions other than 1.0; a request without A2A-Version is taken as 1.0', async () => {
    const old = await connect(h, h.key, undefined, (headers) => headers.set('A2A-Version', '0.3'));
    await rejectsWith(old.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined }), VersionNotSupportedError, 'invalid_request');
    const bare = await connect(h, h.key, undefined, (headers) => headers.delete('A2A-Version'));
    const page = await bare.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 1, pageToken: '', statusTimestampAfter: undefined });
    assert.equal(page.tasks.length, 1);
  });
});
