/**
 * A reply's text reaches the task's events (and so its streams) as `text` exactly once, whether
 * the model streamed it, was asked for whole replies (QUARRY_MODEL_STREAM=0), or ignored
 * `stream: true` and answered with one JSON body. Real HTTP to the fake model servers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitIdle, type Harness } from '../kit/harness.js';
import { fakeModel, startTestHarness, taskEvents } from '../kit/task-api.js';
import { startFakeAnthropic, type FakeAnthropic } from '../kit/fake-anthropic-server.js';
import type { FakeReply } from '../kit/fake-openai-server.js';
import { readSse } from '../kit/sse-client.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

const PLAN = { toolCalls: [{ name: 'update_spec', arguments: { outputs: [{ id: 'notes', kind: 'report' }] } }] };

/** Runs one prompt task to its end and returns its stored events. */
async function runTask(h: Harness, prompt: string): Promise<any[]> {
  const res = await h.request('POST', '/task', { body: { prompt } });
  assert.equal(res.status, 200, res.text);
  await waitIdle(h, res.body.task_id);
  return taskEvents(h, res.body.task_id);
}

/** The text of a task's `text` events, joined. */
function textOf(events: any[]): string {
  return events.filter((e) => e.type === 'text').map((e) => e.text).join('');
}

describe('model text without a stream', () => {
  it('QUARRY_MODEL_STREAM=0: the whole reply is one text event, before the turn ends', async (t) => {
    const h = await startTestHarness(t, { env: { QUARRY_MODEL_STREAM: '0' } });
    fakeModel(h).script({ text: 'Found two plants in Sweden.' });
    const events = await runTask(h, 'Li-ion plants in Sweden.');
    assert.equal(fakeModel(h).requests[0]!.body.stream, false);
    const texts = events.filter((e) => e.type === 'text');
    assert.deepEqual(texts.map((e) => e.text), ['Found two plants in Sweden.']);
    assert.ok(texts[0].seq < events.find((e) => e.type === 'done').seq);
    assert.equal(events.at(-1).outcome, 'completed');
  });

  it('QUARRY_MODEL_STREAM=0: the text of every reply of a turn, tool calls too, once each and in order', async (t) => {
    const h = await startTestHarness(t, { env: { QUARRY_MODEL_STREAM: '0' } });
    fakeModel(h).script({ ...PLAN, text: 'Planning the notes.' }, { text: 'Nothing more to add.' }, { text: 'Done here.' });
    const events = await runTask(h, 'Notes on granite.');
    const texts = events.filter((e) => e.type === 'text').map((e) => e.text);
    assert.deepEqual(texts, ['Planning the notes.', 'Nothing more to add.', 'Done here.']);
    // The first reply's text is stored before its tool call runs.
    const toolStarted = events.find((e) => e.type === 'tool' && e.state === 'started');
    assert.ok(events.find((e) => e.text === 'Planning the notes.').seq < toolStarted.seq);
  });

  it('a server that ignores stream: true and answers with one JSON body', async (t) => {
    const h = await startTestHarness(t);
    const ignoring: FakeReply = { text: 'One whole answer.', ignoreStream: true };
    fakeModel(h).script(ignoring);
    const events = await runTask(h, 'Quarries in Vermont.');
    assert.equal(fakeModel(h).requests[0]!.body.stream, true, 'a stream was asked for');
    assert.deepEqual(events.filter((e) => e.type === 'text').map((e) => e.text), ['One whole answer.']);
  });

  it('streamed text is sent once, not again when the reply is complete', async (t) => {
    const h = await startTestHarness(t, { listen: true });
    const text = 'Streamed in several pieces, with ünïcode and emoji 🪨 too.';
    fakeModel(h).script({ text, chunkDelayMs: 5 });
    const res = await h.request('POST', '/task', { body: { prompt: 'Streamed granite.' } });
    assert.equal(res.status, 200, res.text);
    const stream = await readSse(h.url, `/task/${res.body.task_id}/stream?after=0`, { key: h.key });
    assert.equal(stream.events.filter((e) => e.event === 'text').map((e) => e.json.text).join(''), text);
    assert.equal(textOf(await taskEvents(h, res.body.task_id)), text);
  });

  it('the Anthropic provider with whole replies', async (t) => {
    const anthropic: FakeAnthropic = await startFakeAnthropic();
    t.after(() => anthropic.close());
    const h = await startTestHarness(t, {
      model: false,
      env: { QUARRY_MODEL_PROVIDER: 'anthropic', QUARRY_MODEL_BASE_URL: anthropic.url, QUARRY_MODEL_API_KEY: 'sk-ant-test', QUARRY_MODEL: 'claude-test', QUARRY_MODEL_STREAM: '0' },
    });
    anthropic.script({ text: 'Granite from Barre.' });
    const events = await runTask(h, 'Granite in Vermont.');
    assert.equal(anthropic.requests[0]!.body.stream, false);
    assert.deepEqual(events.filter((e) => e.type === 'text').map((e) => e.text), ['Granite from Barre.']);
  });
});
