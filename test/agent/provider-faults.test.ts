/**
 * A turn against a model server that misbehaves: rate limits with Retry-After, malformed 200
 * answers, and a server that never answers. The agent loop runs on an in-memory turn; the
 * provider is built from what QUARRY_MODEL_* configures, talking HTTP to a fake server of its API. Both
 * providers run the same cases.
 */
import { afterEach, beforeEach, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, type TurnResult } from '../../src/agent/agent-loop.js';
import { createAnthropicProvider } from '../../src/agent/providers/anthropic.js';
import type { ModelProvider } from '../../src/agent/providers/model-provider.js';
import { createOpenAICompatibleProvider } from '../../src/agent/providers/openai-compatible.js';
import { defineTool } from '../../src/agent/tools/tool.js';
import { updateSpecTool } from '../../src/agent/tools/update-spec.js';
import { writeRowsTool } from '../../src/agent/tools/write-rows.js';
import { DEFAULT_MODEL_TIMEOUT_MS, loadConfig, type ModelConfig } from '../../src/config.js';
import { startFakeAnthropic } from '../kit/fake-anthropic-server.js';
import type { FakeModelReply, FakeModelServer } from '../kit/fake-model-server.js';
import { startFakeOpenAI, type FakeReply, type FakeRequestBody } from '../kit/fake-openai-server.js';
import { GAPS_HEADING } from '../../src/agent/output-check.js';
import { ModelText, type TaskEvent } from '../../packages/client/src/index.js';
import { until } from '../kit/bounded-waits.js';
import { InMemoryTurn, type InMemoryTurnOptions } from '../kit/in-memory-turn.js';
import { fakeModel, startTestHarness, taskEvents, userText } from '../kit/task-api.js';
import { readSse } from '../kit/sse-client.js';

/** Three retries, quick ones: the waits under test are the server's, not these. */
const RETRY_DELAYS_MS = [10, 20, 40];

const PROVIDERS: { name: string; start: () => Promise<FakeModelServer<FakeModelReply, unknown>>; env: (url: string) => Record<string, string> }[] = [
  { name: 'openai-compatible', start: startFakeOpenAI, env: (url) => ({ QUARRY_MODEL_BASE_URL: url }) },
  { name: 'anthropic', start: startFakeAnthropic, env: (url) => ({ QUARRY_MODEL_PROVIDER: 'anthropic', QUARRY_MODEL_BASE_URL: url, QUARRY_MODEL_API_KEY: 'sk-ant-test' }) },
];

/** The provider as src/server.ts builds it from QUARRY_MODEL_*, the time limit included. */
function providerFrom(m: ModelConfig): ModelProvider {
  const common = { baseUrl: m.baseUrl, model: m.model, apiKey: m.apiKey, stream: m.stream, timeoutMs: m.timeoutMs };
  return m.provider === 'anthropic' ? createAnthropicProvider({ ...common, maxTokens: m.maxTokens }) : createOpenAICompatibleProvider(common);
}

function assertFailed(result: TurnResult, error: string) {
  assert.equal(result.outcome, 'failed', `expected the turn to fail with ${error}, it ${result.outcome}`);
  assert.equal(result.error.error, error);
  return result.error;
}

describe('QUARRY_MODEL_TIMEOUT_S', () => {
  it('defaults to 120 s, takes fractions of a second, and refuses what is not a number', () => {
    const base = { QUARRY_MODEL_BASE_URL: 'http://127.0.0.1:1/v1' };
    assert.equal(loadConfig(base).model?.timeoutMs, 120_000);
    assert.equal(DEFAULT_MODEL_TIMEOUT_MS, 120_000);
    assert.equal(loadConfig({ ...base, QUARRY_MODEL_TIMEOUT_S: '0.25' }).model?.timeoutMs, 250);
    assert.equal(loadConfig({ ...base, QUARRY_MODEL_TIMEOUT_S: '0' }).model?.timeoutMs, 0);
    assert.throws(() => loadConfig({ ...base, QUARRY_MODEL_TIMEOUT_S: 'soon' }), /QUARRY_MODEL_TIMEOUT_S must be a number/);
  });
});

for (const subject of PROVIDERS) {
  describe(`a turn against a misbehaving ${subject.name} server`, { timeout: 20_000 }, () => {
    let fake: FakeModelServer<FakeModelReply, unknown>;
    /** When each request reached the fake, in ms since the epoch. */
    let arrivals: number[];

    beforeEach(async () => {
      fake = await subject.start();
      arrivals = [];
    });

    afterEach(async () => {
      await fake.close();
    });

    /** Answers request i with replies[i], and every later one with the last reply. */
    function answer(...replies: FakeModelReply[]): void {
      fake.setResponder((_body, index) => {
        arrivals.push(Date.now());
        return replies[Math.min(index, replies.length - 1)]!;
      });
    }

    function runTurn(env: Record<string, string> = {}, turn: InMemoryTurnOptions = {}): Promise<TurnResult> {
      const model = loadConfig({ ...subject.env(fake.url), ...env }).model;
      assert.ok(model);
      const tools = new Map([defineTool(updateSpecTool), defineTool(writeRowsTool)].map((t) => [t.name, t]));
      const agent = new Agent({ provider: providerFrom(model), tools, retryDelaysMs: RETRY_DELAYS_MS });
      return agent.runTurn(new InMemoryTurn(turn));
    }

    it("waits out a 429's Retry-After (longer than its own retry delay), then the turn goes on", async () => {
      answer({ status: 429, errorMessage: 'Rate limited.', headers: { 'retry-after': '1' } }, { text: 'Done.' });

      assert.deepEqual(await runTurn(), { outcome: 'completed' });

      assert.equal(arrivals.length, 2);
      const waited = arrivals[1]! - arrivals[0]!;
      assert.ok(waited >= 950, `retried after ${waited} ms, before the 1 s the server asked for`);
      assert.ok(waited < 3000, `retried after ${waited} ms`);
    });

    it("fails at once with bad_gateway when a 503's Retry-After would pass the turn's deadline", async () => {
      answer({ status: 503, errorMessage: 'Down for a moment.', headers: { 'retry-after': '5' } }, { text: 'Done.' });
      const started = Date.now();

      const result = await runTurn({}, { spec: { prompt: 'Find quarries.', limits: { max_turn_seconds: 2 } } });

      const error = assertFailed(result, 'bad_gateway');
      assert.equal(error.retryable, true);
      assert.match(error.message, /HTTP 503/);
      assert.match(error.message, /Waiting 5 s to try again would pass the turn's limit/);
      assert.equal(arrivals.length, 1, 'no second try');
      assert.ok(Date.now() - started < 1000, 'no sleep towards the deadline');
    });

    it('fails at once with bad_gateway when Retry-After is longer than a turn waits', async () => {
      answer({ status: 429, errorMessage: 'Quota used up.', headers: { 'retry-after': '3600' } });

      const error = assertFailed(await runTurn(), 'bad_gateway');

      assert.equal(error.retryable, true);
      assert.match(error.message, /HTTP 429.*called again in 3600 s, longer than a turn waits \(60 s\)/);
      assert.equal(arrivals.length, 1);
    });

    it('retries a malformed 200 answer, then the turn goes on', async () => {
      answer({ rawBody: '{"choices": [' }, { text: 'Done.' });

      assert.deepEqual(await runTurn(), { outcome: 'completed' });
      assert.equal(arrivals.length, 2);
    });

    it('ends with a retryable bad_gateway after its retries when every answer is malformed', async () => {
      answer({ rawBody: '<html>Bad gateway</html>' }); // labelled application/json

      const error = assertFailed(await runTurn(), 'bad_gateway');

      assert.equal(error.retryable, true);
      assert.match(error.message, /after 4 tries: .*malformed answer/);
      assert.equal(arrivals.length, 1 + RETRY_DELAYS_MS.length);
    });

    it('times out a hung call after QUARRY_MODEL_TIMEOUT_S and retries it: the turn goes on', async () => {
      answer({ hang: true }, { text: 'Done.' });

      assert.deepEqual(await runTurn({ QUARRY_MODEL_TIMEOUT_S: '0.3' }), { outcome: 'completed' });
      assert.equal(arrivals.length, 2);
      // Arrivals are noted by this process's fake server, which a busy host can make note the
      // first one late: the margin keeps that from reading as an early retry.
      assert.ok(arrivals[1]! - arrivals[0]! >= 250, 'the second try came after the limit');
    });

    it('ends with a retryable bad_gateway, not limit_reached, when the model never answers', async () => {
      answer({ hang: true });
      const started = Date.now();

      const error = assertFailed(await runTurn({ QUARRY_MODEL_TIMEOUT_S: '0.3' }), 'bad_gateway');

      assert.equal(error.retryable, true);
      assert.match(error.message, /after 4 tries: .*timed out: the server sent nothing for 300 ms/);
      assert.equal(arrivals.length, 4);
      assert.ok(Date.now() - started < 5000, 'four tries of 0.3 s and short waits');
      await until('every hung request dropped', () => fake.pending() === 0, { timeoutMs: 1000, pollMs: 5 });
    });
  });
}

describe('a streamed reply cut part-way, as a task\'s events show it', { timeout: 30_000 }, () => {
  const REPLY = 'Granite quarries of Vermont: Rock of Ages, Barre, and the Smith quarry, all still cut today.';
  // Events 300 ms apart outlast the 250 ms text coalescing: part of the reply is stored before the cut.
  const CUT = { text: REPLY, chunkDelayMs: 300, cutAfterEvents: 3 };

  /** Runs a task to its end with the model answering `replies` in turn (or as `replies` says), and returns its events. */
  async function runTask(t: TestContext, replies: FakeReply[] | ((body: FakeRequestBody) => FakeReply), create = { path: '/task', body: { prompt: 'Granite quarries of Vermont?' } as object }): Promise<TaskEvent[]> {
    const h = await startTestHarness(t, { listen: true, retryDelaysMs: [10, 20] });
    const model = fakeModel(h);
    model.recordChecks();
    model.setResponder((body, index) => typeof replies === 'function' ? replies(body) : replies[Math.min(index, replies.length - 1)]!);
    const created = await h.request('POST', create.path, { body: create.body });
    assert.equal(created.status, 200, created.text);
    const stream = await readSse(h.url, `/task/${created.body.task_id}/stream?after=0`, { key: h.key });
    const streamed = stream.events.map((e) => e.json as TaskEvent);
    // What was streamed live is what the task's history keeps.
    assert.deepEqual(await taskEvents(h, created.body.task_id), streamed);
    return streamed;
  }

  function outcome(events: TaskEvent[]): string | undefined {
    const last = events.at(-1);
    return last?.type === 'done' ? last.outcome : undefined;
  }

  function shown(events: TaskEvent[]): string {
    const text = new ModelText();
    for (const event of events) text.add(event);
    return text.value;
  }

  it('cut once, then answered: the reply is shown once, whole', async (t) => {
    const events = await runTask(t, [CUT, { text: REPLY }]);

    assert.equal(shown(events), REPLY);
    assert.equal(events.filter((e) => e.type === 'text' && e.restart).length, 1, 'the stored part of the cut reply is withdrawn');
    assert.equal(outcome(events), 'completed');
  });

  it('the reply to the outputs check cut once: the answer before it is kept, each reply shown once', async (t) => {
    // Nothing marks where the reply to the outputs check starts, so the restart drops the answer
    // before it too, and carries that answer's text again.
    const ANSWER = 'No granite quarry list could be written.';
    let checkReplies = 0;
    const events = await runTask(t, (body) => {
      if (!userText(body).includes(GAPS_HEADING)) return { text: ANSWER };
      return checkReplies++ === 0 ? CUT : { text: REPLY };
    }, { path: '/task/start', body: { task: { prompt: 'Granite quarries of Vermont?', outputs: [{ id: 'quarries', kind: 'table', columns: [{ name: 'name' }] }] } } });

    assert.equal(checkReplies, 2, 'the reply to the outputs check was cut, then asked for again');
    assert.equal(shown(events), ANSWER + REPLY);
    const restarts = events.filter((e) => e.type === 'text' && e.restart);
    assert.deepEqual(restarts.map((e) => e.type === 'text' && e.text), [ANSWER]);
    assert.equal(outcome(events), 'completed');
  });

  it('cut at every try: no copy of the unfinished reply comes before the error', async (t) => {
    const events = await runTask(t, [CUT]);

    assert.equal(shown(events), '');
    const error = events.find((e) => e.type === 'error');
    assert.equal(error?.type === 'error' && error.error, 'bad_gateway');
    assert.equal(outcome(events), 'failed');
  });
});
