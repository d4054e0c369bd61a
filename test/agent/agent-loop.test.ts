/**
 * The agent loop on its own: a scripted model and an in-memory TurnPort, no HTTP, no sockets, no
 * database. What a turn does to its task is read back from the port; what the model was sent,
 * from the model.
 */
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import { describe, it } from 'node:test';
import { Agent, type TurnResult } from '../../src/agent/agent-loop.js';
import { requestTokens } from '../../src/agent/context-window.js';
import { ModelProviderError, type ModelMessage } from '../../src/agent/providers/model-provider.js';
import { CARRY_OUT_PLAN } from '../../src/agent/system-prompt.js';
import type { AgentTools } from '../../src/agent/tools/index.js';
import { defineTool, type ToolContext, type ToolResult } from '../../src/agent/tools/tool.js';
import { updateSpecTool } from '../../src/agent/tools/update-spec.js';
import { writeRowsTool } from '../../src/agent/tools/write-rows.js';
import type { StoredStep, ToolEvent } from '../../src/agent/turn-port.js';
import { InMemoryTurn, ScriptedModel, untilAborted, type InMemoryTurnOptions, type ScriptedReply, type SpecRequest } from '../kit/in-memory-turn.js';

const QUARRIES = { id: 'quarries', kind: 'table', columns: [{ name: 'name', type: 'string', required: true }, { name: 'opened', type: 'integer' }] };
const SOURCE = { url: 'https://www.example.org/granite', title: 'Granite in Vermont', quote: 'opened in 1885' };
const SPEC_WITH_OUTPUT: SpecRequest = { prompt: 'Find the oldest granite quarries.', outputs: [QUARRIES] };

/** What `web_search` does in a test: the stand-in for a tool with effects outside the task. */
type SearchBehaviour = (args: { query: string }, ctx: ToolContext, turn: InMemoryTurn) => Promise<ToolResult>;

/** A stand-in web_search that records its calls; the real one needs a search provider. */
function fakeSearch(turn: InMemoryTurn, behaviour: SearchBehaviour = async (args) => ({ content: `No results for ${args.query}.`, summary: '0 results' })) {
  const calls: { query: string }[] = [];
  const tool = defineTool<{ query: string }>({
    name: 'web_search',
    description: 'Search the web.',
    concurrent: true,
    parameters: { type: 'object', properties: { query: { type: 'string', minLength: 1 } }, required: ['query'], additionalProperties: false },
    async run(args, ctx) {
      calls.push(args);
      return behaviour(args, ctx, turn);
    },
  });
  return { tool, calls };
}

interface Setup {
  agent: Agent;
  model: ScriptedModel;
  turn: InMemoryTurn;
  searches: { query: string }[];
  run(): Promise<TurnResult>;
}

/** A scripted model, the loop, and an in-memory turn; a script given as a function gets the turn (to stop it). */
function setup(opts: { script: ScriptedReply[] | ((turn: InMemoryTurn) => ScriptedReply[]); turn?: InMemoryTurnOptions; search?: SearchBehaviour; retryDelaysMs?: number[]; contextTokens?: number; toolConcurrency?: number }): Setup {
  const turn = new InMemoryTurn(opts.turn);
  const model = new ScriptedModel(...(typeof opts.script === 'function' ? opts.script(turn) : opts.script));
  const search = fakeSearch(turn, opts.search);
  const tools: AgentTools = new Map([defineTool(updateSpecTool), defineTool(writeRowsTool), search.tool].map((t) => [t.name, t]));
  const agent = new Agent({ provider: model, tools, retryDelaysMs: opts.retryDelaysMs ?? [0, 0, 0], contextTokens: opts.contextTokens, toolConcurrency: opts.toolConcurrency });
  return { agent, model, turn, searches: search.calls, run: () => agent.runTurn(turn) };
}

function toolMessages(messages: ModelMessage[]): Extract<ModelMessage, { role: 'tool' }>[] {
  return messages.filter((m): m is Extract<ModelMessage, { role: 'tool' }> => m.role === 'tool');
}

function eventsOf(turn: InMemoryTurn, callId: string): ToolEvent[] {
  return turn.toolEvents.filter((e) => e.call_id === callId);
}

function assertFailed(result: TurnResult, error: string): Extract<TurnResult, { outcome: 'failed' }>['error'] {
  assert.equal(result.outcome, 'failed', `expected the turn to fail with ${error}`);
  assert.equal(result.error.error, error);
  return result.error;
}

/** The answer to the message listing what the outputs lack, which an execute turn gets before it ends. */
const AFTER_CHECK: ScriptedReply = { text: 'Nothing more can be found.' };

const writeQuarry = (id: string, name: string, opened: number) => ({
  id,
  name: 'write_rows',
  arguments: { output: 'quarries', rows: [{ name, opened }], sources: [SOURCE] },
});

describe('agent loop: planning and executing', () => {
  it('declares outputs while planning, then carries the plan out in the same turn', async () => {
    const t = setup({
      turn: { kind: 'plan' },
      script: [
        { text: 'Declaring the outputs.', toolCalls: [{ name: 'update_spec', arguments: { outputs: [QUARRIES] } }] },
        { text: 'The plan is set.' },
        { toolCalls: [writeQuarry('w1', 'Rock of Ages', 1885)] },
        { text: 'One quarry written.' },
        AFTER_CHECK,
      ],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.deepEqual(t.turn.spec().outputs.map((o) => o.id), ['quarries'], 'update_spec changed the task spec');
    const planned = t.turn.checkpoints.filter((c) => c.data.type === 'model').map((c) => (c.data as Extract<StoredStep, { type: 'model' }>).phase);
    assert.deepEqual(planned, ['plan', 'plan', 'execute', 'execute', 'execute'], 'update_spec ran while planning; writing happened in execute');
    // The task starts in plan/planning; it moves only when the plan is carried out.
    assert.deepEqual(t.turn.states, [
      { phase: 'execute', activity: 'thinking' },
      { phase: 'execute', activity: 'executing' },
      { phase: 'execute', activity: 'thinking' },
    ]);
    assert.equal(t.model.calls.length, 5);
    assert.match(t.model.calls[0]!.system, /You are planning/);
    assert.equal(t.model.calls[2]!.system, t.model.calls[0]!.system, 'the system message is fixed for the whole turn');
    assert.match(toolMessages(t.model.calls[2]!.messages)[0]!.content, /The spec now \(JSON\):\n.*"quarries"/, 'the model sees the spec it declared in update_spec\'s result');
    assert.deepEqual(t.model.calls[2]!.messages.at(-1), { role: 'user', content: CARRY_OUT_PLAN }, 'the model is told to carry the plan out');
    assert.deepEqual(t.turn.checkpoints.filter((c) => c.data.type === 'nudge').map((c) => c.data.type === 'nudge' && c.data.content === CARRY_OUT_PLAN), [true, false]);
    assert.deepEqual(t.turn.rowsOf('quarries').map((r) => r.name), ['Rock of Ages']);
    assert.equal(t.turn.streamedText, 'Declaring the outputs.The plan is set.One quarry written.Nothing more can be found.', 'streamed text reaches the port');
  });

  it('moves to execute as soon as a planning model reaches for a tool other than update_spec', async () => {
    const t = setup({
      turn: { kind: 'plan' },
      script: [
        { toolCalls: [{ name: 'update_spec', arguments: { outputs: [QUARRIES] } }, { name: 'web_search', arguments: { query: 'oldest granite quarry' } }] },
        { text: 'Nothing found.' },
        AFTER_CHECK,
      ],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.deepEqual(t.turn.states, [{ phase: 'execute', activity: 'executing' }, { phase: 'execute', activity: 'thinking' }]);
    assert.equal(t.model.calls.length, 3, 'no nudge to carry the plan out (the turn was already executing), only the check of the outputs');
    assert.deepEqual(t.turn.checkpoints.filter((c) => c.data.type === 'nudge').map((c) => c.data.type === 'nudge' && c.data.check), [true]);
    assert.equal(t.searches.length, 1);
  });

  it('ends a plan turn whose model declares no outputs without carrying anything out', async () => {
    const t = setup({ turn: { kind: 'plan' }, script: [{ text: 'What region do you mean?' }] });

    assert.deepEqual(await t.run(), { outcome: 'completed' });
    assert.equal(t.model.calls.length, 1);
    assert.deepEqual(t.turn.states, [], 'the task stayed in plan/planning');
  });

  it('plan_only offers only update_spec and ends when planning does', async () => {
    const t = setup({
      turn: { kind: 'plan', planOnly: true },
      script: [
        { toolCalls: [{ name: 'update_spec', arguments: { outputs: [QUARRIES] } }, writeQuarry('w1', 'Rock of Ages', 1885)] },
        { text: 'Here is the plan.' },
      ],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.equal(t.model.calls.length, 2, 'no nudge to carry the plan out');
    for (const call of t.model.calls) assert.deepEqual(call.tools, ['update_spec']);
    assert.match(t.model.calls[0]!.system, /planning only/);
    assert.deepEqual(t.turn.spec().outputs.map((o) => o.id), ['quarries']);
    assert.deepEqual(t.turn.states, [], 'the task never left plan/planning');
    assert.equal(t.turn.rows.size, 0, 'write_rows is not offered in a plan_only turn');
    assert.equal(eventsOf(t.turn, 'w1').at(-1)!.state, 'failed');
  });

  it('an execute turn thinks while the model runs and executes while tools run', async () => {
    const t = setup({
      turn: { spec: SPEC_WITH_OUTPUT },
      script: [{ toolCalls: [{ name: 'web_search', arguments: { query: 'granite' } }] }, { text: 'Done.' }, AFTER_CHECK],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });
    assert.deepEqual(t.turn.states, [
      { phase: 'execute', activity: 'thinking' },
      { phase: 'execute', activity: 'executing' },
      { phase: 'execute', activity: 'thinking' },
    ]);
  });
});

describe('agent loop: tool calls', () => {
  it('writes rows under a write key unique to the turn, step and call', async () => {
    const t = setup({
      turn: { spec: SPEC_WITH_OUTPUT },
      script: [{ toolCalls: [writeQuarry('call_a', 'Rock of Ages', 1885), writeQuarry('call_b', 'Smith Quarry', 1890)] }, { text: 'Two quarries.' }, AFTER_CHECK],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.deepEqual(t.turn.rowsOf('quarries').map((r) => [r.name, r.opened]), [['Rock of Ages', 1885], ['Smith Quarry', 1890]]);
    // The page was never fetched in this turn, so the checker marks its source not_read.
    assert.deepEqual(t.turn.rowsOf('quarries')[0]!._sources, [{ ...SOURCE, verified: false, check: 'not_read' }]);
    // Keyed by the step after the model's reply (step 1), whatever step stores each result.
    assert.deepEqual(t.turn.writeKeys, ['turn_1:2:call_a', 'turn_1:2:call_b']);
    assert.deepEqual(t.turn.checkpoints.map((c) => [c.step, c.data.type, c.usage.toolCalls]), [[1, 'model', 0], [2, 'tool', 1], [3, 'tool', 1], [4, 'model', 0], [5, 'nudge', 0], [6, 'model', 0]]);
  });

  it('reports each call as started, then finished, with the fields a tool event carries', async () => {
    const t = setup({ turn: { spec: SPEC_WITH_OUTPUT }, script: [{ toolCalls: [writeQuarry('call_a', 'Rock of Ages', 1885)] }, { text: 'Done.' }, AFTER_CHECK] });

    await t.run();

    const [started, finished] = eventsOf(t.turn, 'call_a');
    assert.deepEqual(started, {
      call_id: 'call_a', name: 'write_rows', state: 'started',
      input: writeQuarry('call_a', 'Rock of Ages', 1885).arguments, summary: null, duration_ms: null,
    });
    assert.equal(finished!.state, 'finished');
    assert.deepEqual(finished!.input, started!.input);
    assert.equal(finished!.summary, 'wrote 1 rows to quarries (0 verified)');
    assert.equal(typeof finished!.duration_ms, 'number');
    assert.ok(finished!.duration_ms! >= 0);
    const [result] = toolMessages(t.model.calls[1]!.messages);
    assert.deepEqual(result, { role: 'tool', toolCallId: 'call_a', name: 'write_rows', content: finished!.output }, 'the event carries what the model was given');
    // The cited page was never fetched in this turn: the answer says so, naming the source.
    assert.equal(finished!.output, 'Wrote 1 rows to quarries (rows 1-1); 0 of them verified. quarries now has 1 rows. These sources could not be verified:\n' +
      '- row 1, source 1 (https://www.example.org/granite): not_read: this task never fetched that URL with fetch_url (or it is outside the source policy)');
  });

  it('cuts long input strings in the event, never in the call', async () => {
    const query = 'q'.repeat(5_000);
    const t = setup({ script: [{ toolCalls: [{ id: 'c1', name: 'web_search', arguments: { query } }] }, { text: 'Done.' }] });

    await t.run();

    assert.equal(t.searches[0]!.query, query);
    for (const event of eventsOf(t.turn, 'c1')) assert.equal((event.input as { query: string }).query, `${'q'.repeat(2_000)}…`);
  });

  it('sends bad calls back to the model as tool errors and goes on', async () => {
    const t = setup({
      turn: { spec: SPEC_WITH_OUTPUT },
      script: [
        {
          toolCalls: [
            { id: 'unknown', name: 'no_such_tool', arguments: {} },
            { id: 'not_json', name: 'web_search', arguments: '{"query": ' },
            { id: 'not_object', name: 'web_search', arguments: '["granite"]' },
            { id: 'wrong_type', name: 'web_search', arguments: { query: 42 } },
            { id: 'missing', name: 'write_rows', arguments: { rows: [{ name: 'Rock of Ages' }] } },
          ],
        },
        { text: 'I will try again later.' },
        AFTER_CHECK,
      ],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.equal(t.searches.length, 0, 'no tool ran with bad arguments');
    assert.equal(t.turn.rows.size, 0);
    const results = toolMessages(t.model.calls[1]!.messages);
    assert.deepEqual(results.map((r) => r.toolCallId), ['unknown', 'not_json', 'not_object', 'wrong_type', 'missing']);
    for (const r of results) {
      assert.match(r.content, /^Error: /);
      assert.deepEqual(eventsOf(t.turn, r.toolCallId).map((e) => e.state), ['started', 'failed']);
      assert.equal(eventsOf(t.turn, r.toolCallId)[1]!.output, r.content);
    }
    const content = (id: string) => results.find((r) => r.toolCallId === id)!.content;
    assert.match(content('unknown'), /no_such_tool/);
    assert.match(content('not_json'), /JSON object/);
    assert.match(content('wrong_type'), /\/query/);
    assert.match(content('missing'), /output/);
    assert.equal(eventsOf(t.turn, 'not_json')[0]!.input, '{"query": ', 'arguments that do not parse are shown as sent');
  });

  it('refuses a tool the spec does not offer', async () => {
    const t = setup({
      turn: { spec: { ...SPEC_WITH_OUTPUT, tools: [] } },
      script: [{ toolCalls: [{ id: 'c1', name: 'web_search', arguments: { query: 'granite' } }] }, { text: 'Done.' }, AFTER_CHECK],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });
    assert.deepEqual(t.model.calls[0]!.tools.sort(), ['update_spec', 'write_rows']);
    assert.equal(t.searches.length, 0);
    assert.match(toolMessages(t.model.calls[1]!.messages)[0]!.content, /no tool named "web_search"/);
  });

  it('turns a tool that throws or reports an error into a failed call, not a failed turn', async () => {
    const t = setup({
      turn: { spec: SPEC_WITH_OUTPUT },
      search: async () => {
        throw new Error('search backend exploded');
      },
      script: [
        { toolCalls: [{ id: 'throws', name: 'web_search', arguments: { query: 'granite' } }, { id: 'rejected', name: 'write_rows', arguments: { output: 'nope', rows: [{}] } }] },
        { text: 'Giving up.' },
        AFTER_CHECK,
      ],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });
    const results = toolMessages(t.model.calls[1]!.messages);
    assert.match(results[0]!.content, /search backend exploded/);
    assert.match(results[1]!.content, /No output "nope"/);
    assert.equal(eventsOf(t.turn, 'throws')[1]!.state, 'failed');
    assert.equal(eventsOf(t.turn, 'rejected')[1]!.state, 'failed');
  });
});

/** Resolves when the turn has sent a `tool` event of `callId` in `state`. */
function toolEventSent(turn: InMemoryTurn, callId: string, state: ToolEvent['state']): Promise<void> {
  const send = turn.tool.bind(turn);
  return new Promise((resolve) => {
    turn.tool = async (event) => {
      await send(event);
      if (event.call_id === callId && event.state === state) resolve();
    };
  });
}

const search = (id: string, query: string) => ({ id, name: 'web_search', arguments: { query } });

describe('agent loop: the calls of one reply', () => {
  it('runs reads at once: a slow first call ends last, yet its result goes back first', async () => {
    let fastFinished: Promise<void> = Promise.resolve();
    const t = setup({
      turn: { spec: SPEC_WITH_OUTPUT },
      search: async (args) => {
        if (args.query === 'slow') await fastFinished;
        return { content: `Results for ${args.query}.`, summary: '1 result' };
      },
      script: [{ toolCalls: [search('slow', 'slow'), search('fast', 'fast')] }, { text: 'Done.' }, AFTER_CHECK],
    });
    fastFinished = toolEventSent(t.turn, 'fast', 'finished');

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.deepEqual(t.turn.toolEvents.map((e) => [e.call_id, e.state]), [['slow', 'started'], ['fast', 'started'], ['fast', 'finished'], ['slow', 'finished']]);
    assert.deepEqual(toolMessages(t.model.calls[1]!.messages).map((m) => [m.toolCallId, m.content]), [['slow', 'Results for slow.'], ['fast', 'Results for fast.']]);
    // Each result is stored as its call ends.
    assert.deepEqual(t.turn.checkpoints.map((c) => [c.step, c.data.type === 'tool' ? c.data.callId : c.data.type]), [[1, 'model'], [2, 'fast'], [3, 'slow'], [4, 'model'], [5, 'nudge'], [6, 'model']]);
  });

  it('runs calls with effects one at a time, in the model\'s order, after the reads', async () => {
    const t = setup({
      turn: { spec: SPEC_WITH_OUTPUT },
      script: [{ toolCalls: [writeQuarry('w1', 'Rock of Ages', 1885), search('s1', 'granite'), writeQuarry('w2', 'Smith Quarry', 1890), search('s2', 'marble')] }, { text: 'Done.' }, AFTER_CHECK],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.deepEqual(t.turn.toolEvents.map((e) => [e.call_id, e.state]), [
      ['s1', 'started'], ['s2', 'started'], ['s1', 'finished'], ['s2', 'finished'],
      ['w1', 'started'], ['w1', 'finished'], ['w2', 'started'], ['w2', 'finished'],
    ]);
    assert.deepEqual(t.turn.rowsOf('quarries').map((r) => r.name), ['Rock of Ages', 'Smith Quarry']);
    assert.deepEqual(toolMessages(t.model.calls[1]!.messages).map((m) => m.toolCallId), ['w1', 's1', 'w2', 's2'], 'results in call order');
  });

  it('runs at most toolConcurrency reads at once', async () => {
    let inFlight = 0;
    let most = 0;
    const t = setup({
      toolConcurrency: 2,
      turn: { spec: SPEC_WITH_OUTPUT },
      search: async (args) => {
        inFlight++;
        most = Math.max(most, inFlight);
        // Each call waits for the next macrotask: calls started together overlap.
        await new Promise((resolve) => setImmediate(resolve));
        inFlight--;
        return { content: `Results for ${args.query}.`, summary: '1 result' };
      },
      script: [{ toolCalls: ['a', 'b', 'c', 'd', 'e'].map((q) => search(q, q)) }, { text: 'Done.' }, AFTER_CHECK],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });
    assert.equal(most, 2);
    assert.equal(t.searches.length, 5);
  });

  it('takes up a round whose results were partly stored: stored calls are not run again nor charged twice', async () => {
    const steps: StoredStep[] = [
      { type: 'model', text: '', phase: 'execute', toolCalls: [search('s1', 'granite'), search('s2', 'marble'), writeQuarry('w1', 'Rock of Ages', 1885)].map((c) => ({ ...c, arguments: JSON.stringify(c.arguments) })) },
      { type: 'tool', callId: 's2', name: 'web_search', content: 'Stored results for marble.' },
    ];
    const t = setup({ turn: { spec: SPEC_WITH_OUTPUT, steps }, script: [{ text: 'Done.' }, AFTER_CHECK] });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.deepEqual(t.searches, [{ query: 'granite' }], 'the stored call was not repeated');
    assert.deepEqual(t.turn.toolEvents.filter((e) => e.state === 'started').map((e) => e.call_id), ['s1', 'w1']);
    const results = toolMessages(t.model.calls[0]!.messages);
    assert.deepEqual(results.map((m) => m.toolCallId), ['s1', 's2', 'w1']);
    assert.deepEqual(results.slice(0, 2).map((m) => m.content), ['No results for granite.', 'Stored results for marble.']);
    assert.deepEqual(t.turn.checkpoints.map((c) => [c.step, c.data.type === 'tool' ? c.data.callId : c.data.type, c.usage.toolCalls]), [[3, 's1', 1], [4, 'w1', 1], [5, 'model', 0], [6, 'nudge', 0], [7, 'model', 0]]);
    assert.deepEqual(t.turn.writeKeys, ['turn_1:2:w1'], 'the write key of a call does not depend on when it ran');
  });
});

describe('agent loop: finishing well', () => {
  const REPORT = { id: 'notes', kind: 'table', columns: [{ name: 'note', type: 'string' }] };
  const checks = (turn: InMemoryTurn) => turn.checkpoints.flatMap((c) => (c.data.type === 'nudge' && c.data.check ? [c.data.content] : []));

  it('lists what the outputs lack in one message before the turn ends, and ends at the next answer', async () => {
    const t = setup({
      turn: { spec: { ...SPEC_WITH_OUTPUT, outputs: [QUARRIES, REPORT] } },
      script: [{ text: 'Done.' }, { text: 'The rest cannot be found.' }],
    });
    // Rows as earlier turns stored them: one whose source did not check out, one with its required column null.
    t.turn.seedWrite('turn_0:2:w', 'quarries', [
      JSON.stringify({ _row: 1, name: 'Rock of Ages', opened: 1885, _sources: [{ ...SOURCE, verified: false, check: 'not_read' }] }),
      JSON.stringify({ _row: 2, name: null, opened: 1890, _sources: [{ ...SOURCE, verified: true, check: 'quote_found' }] }),
    ]);

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.equal(t.model.calls.length, 2, 'one more answer after the check, then the turn ends');
    const [message] = checks(t.turn);
    assert.deepEqual(t.model.calls[1]!.messages.at(-1), { role: 'user', content: message });
    assert.deepEqual(message!.split('\n').filter((l) => l.startsWith('- ')), [
      '- quarries row 1: no verified source',
      '- quarries row 2: required column "name" left empty',
      '- notes: no rows',
    ]);
  });

  it('lists at most 20 items, then how many more', async () => {
    const rows = Array.from({ length: 25 }, (_, i) => ({ name: `Quarry ${i + 1}` }));
    const t = setup({
      turn: { spec: SPEC_WITH_OUTPUT },
      script: [{ toolCalls: [{ name: 'write_rows', arguments: { output: 'quarries', rows } }] }, { text: 'Done.' }, AFTER_CHECK],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    const lines = checks(t.turn)[0]!.split('\n');
    assert.equal(lines.filter((l) => l.startsWith('- ')).length, 20);
    assert.equal(lines.filter((l) => l.startsWith('- ')).at(-1), '- quarries row 20: no verified source');
    assert.ok(lines.includes('… and 5 more.'));
  });

  it('sends nothing when every output has rows with verified sources and its required columns', async () => {
    const t = setup({
      turn: { spec: SPEC_WITH_OUTPUT },
      script: [{ toolCalls: [writeQuarry('w', 'Rock of Ages', 1885)] }, { text: 'Done.' }],
    });
    await t.turn.recordSource({ url: SOURCE.url, finalUrl: SOURCE.url, uploadId: null, title: SOURCE.title, text: 'The Rock of Ages quarry opened in 1885.' });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.equal(t.model.calls.length, 2);
    assert.deepEqual(checks(t.turn), []);
  });

  it('checks once a turn, also when the turn is taken up again after its final answer', async () => {
    const steps: StoredStep[] = [{ type: 'model', text: 'Done.', phase: 'execute', toolCalls: [] }];
    const t = setup({ turn: { spec: SPEC_WITH_OUTPUT, steps }, script: [{ toolCalls: [{ name: 'web_search', arguments: { query: 'granite' } }] }, { text: 'Nothing found.' }] });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.equal(checks(t.turn).length, 1);
    assert.match(checks(t.turn)[0]!, /- quarries: no rows/);
    assert.equal(t.model.calls.length, 2, 'the answer after the check ends the turn, though the outputs still lack rows');
  });

  it('does not check when the steps left allow no further answer', async () => {
    const t = setup({ turn: { spec: { ...SPEC_WITH_OUTPUT, limits: { max_steps: 2 } } }, script: [{ text: 'Done.' }] });

    assert.deepEqual(await t.run(), { outcome: 'completed' });
    assert.deepEqual(checks(t.turn), []);
  });
});

describe('agent loop: limits', () => {
  const searchForever: ScriptedReply[] = Array.from({ length: 10 }, (_, i) => ({ toolCalls: [{ name: 'web_search', arguments: { query: `granite ${i}` } }] }));

  it('ends limit_reached after spec.limits.max_steps steps', async () => {
    const t = setup({ turn: { spec: { ...SPEC_WITH_OUTPUT, limits: { max_steps: 3 } } }, script: searchForever });

    const error = assertFailed(await t.run(), 'limit_reached');
    assert.match(error.message, /max_steps/);
    assert.equal(t.model.calls.length, 2);
    assert.equal(t.turn.checkpoints.at(-1)!.data.type, 'tool', 'the last tool round finished and was kept');
  });

  it('ends out_of_credits when the balance runs out mid-turn, keeping the charged step', async () => {
    // 100 input + 10 output tokens cost 0.0013; one tool call 0.01.
    const t = setup({ turn: { spec: SPEC_WITH_OUTPUT, balance: 0.005 }, script: searchForever });

    const error = assertFailed(await t.run(), 'out_of_credits');
    assert.equal(error.retryable, false);
    assert.equal(t.model.calls.length, 1, 'no model call once the credits are gone');
    assert.deepEqual(t.turn.checkpoints.map((c) => c.data.type), ['model', 'tool']);
    assert.ok(t.turn.balance <= 0);
  });

  it('ends limit_reached when the turn has used spec.limits.max_credits_per_turn', async () => {
    const t = setup({
      turn: { spec: { ...SPEC_WITH_OUTPUT, limits: { max_credits_per_turn: 2 } }, prices: { inputPerMillion: 0, cachedInputPerMillion: 0, outputPerMillion: 0, toolCall: 1 } },
      script: searchForever,
    });

    const error = assertFailed(await t.run(), 'limit_reached');
    assert.match(error.message, /max_credits_per_turn/);
    assert.equal(t.model.calls.length, 2);
    assert.equal(t.turn.turnCredits, 2);
  });

  it('stops during a model call: the turn rejects with the stop reason and stores nothing more', async () => {
    const reason = new Error('stopped by the user');
    const t = setup({ turn: { spec: SPEC_WITH_OUTPUT }, script: (turn) => [untilAborted(() => turn.stop(reason)), { text: 'never sent' }] });

    await assert.rejects(t.run(), (err) => err === reason);
    assert.equal(t.model.calls.length, 1);
    assert.deepEqual(t.turn.checkpoints, []);
  });

  it('stops during tool calls: every call in flight sees the abort, the later ones never start, and no result is stored', async () => {
    const reason = new Error('stopped by the user');
    const t = setup({
      turn: { spec: SPEC_WITH_OUTPUT },
      search: (args, ctx, turn) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
          if (args.query === 'marble') turn.stop(reason);
        }),
      script: [{ toolCalls: [
        { id: 'c1', name: 'web_search', arguments: { query: 'granite' } },
        { id: 'c2', name: 'web_search', arguments: { query: 'marble' } },
        writeQuarry('c3', 'Rock of Ages', 1885),
      ] }],
    });

    await assert.rejects(t.run(), (err) => err === reason);
    assert.deepEqual(t.turn.toolEvents.map((e) => [e.call_id, e.state]), [['c1', 'started'], ['c2', 'started']], 'the write after them did not start');
    assert.deepEqual(t.turn.checkpoints.map((c) => c.data.type), ['model']);
  });
});

describe('agent loop: resuming from checkpoints', () => {
  const modelStep = (toolCalls: { id: string; name: string; arguments: unknown }[], text = ''): StoredStep => ({
    type: 'model', text, phase: 'execute', toolCalls: toolCalls.map((c) => ({ ...c, arguments: JSON.stringify(c.arguments) })),
  });

  it('replays stored steps without calling the model or running their tools again', async () => {
    const call = writeQuarry('call_a', 'Rock of Ages', 1885);
    const steps: StoredStep[] = [modelStep([call], 'Writing.'), { type: 'tools', results: [{ callId: 'call_a', name: 'write_rows', content: 'Wrote 1 rows to quarries (rows 1-1).' }] }];
    const t = setup({ turn: { spec: SPEC_WITH_OUTPUT, steps }, script: [{ text: 'Done.' }, AFTER_CHECK] });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.equal(t.model.calls.length, 2, 'only the steps after the stored ones ask the model');
    const sent = t.model.calls[0]!.messages;
    assert.deepEqual(sent.find((m) => m.role === 'assistant'), { role: 'assistant', content: 'Writing.', toolCalls: steps[0]!.type === 'model' ? steps[0]!.toolCalls : [] });
    assert.deepEqual(toolMessages(sent), [{ role: 'tool', toolCallId: 'call_a', name: 'write_rows', content: 'Wrote 1 rows to quarries (rows 1-1).' }]);
    assert.deepEqual(t.turn.toolEvents, [], 'stored tool calls are not run again');
    assert.equal(t.turn.rows.size, 0);
    assert.deepEqual(t.turn.checkpoints.map((c) => c.step), [3, 4, 5], 'numbering goes on after the stored steps');
  });

  it('runs the tool calls of a stored reply whose results were never stored, under the same write keys', async () => {
    const call = writeQuarry('call_a', 'Rock of Ages', 1885);
    const t = setup({ turn: { spec: SPEC_WITH_OUTPUT, steps: [modelStep([call])] }, script: [{ text: 'Done.' }, AFTER_CHECK] });
    // The call wrote its rows, then the worker died before the round was checkpointed.
    t.turn.seedWrite('turn_1:2:call_a', 'quarries', [JSON.stringify({ _row: 1, name: 'Rock of Ages', opened: 1885 })]);

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.equal(t.model.calls.length, 2);
    assert.deepEqual(eventsOf(t.turn, 'call_a').map((e) => e.state), ['started', 'finished']);
    assert.equal(t.turn.rowsOf('quarries').length, 1, 'the replayed call wrote nothing twice');
    assert.deepEqual(t.turn.checkpoints.map((c) => [c.step, c.data.type]), [[2, 'tool'], [3, 'model'], [4, 'nudge'], [5, 'model']]);
  });

  it('makes no model call when the stored steps end with the final reply after the check', async () => {
    const steps: StoredStep[] = [modelStep([], 'All done.'), { type: 'nudge', content: 'Before you finish, …', check: true }, modelStep([], 'Nothing more.')];
    const t = setup({ turn: { spec: SPEC_WITH_OUTPUT, steps }, script: [] });

    assert.deepEqual(await t.run(), { outcome: 'completed' });
    assert.equal(t.model.calls.length, 0);
    assert.deepEqual(t.turn.checkpoints, []);
  });

  it('carries out a plan whose planning was stored before the turn was taken up again', async () => {
    const steps: StoredStep[] = [
      { type: 'model', text: '', phase: 'plan', toolCalls: [{ id: 'p1', name: 'update_spec', arguments: JSON.stringify({ outputs: [QUARRIES] }) }] },
      { type: 'tools', results: [{ callId: 'p1', name: 'update_spec', content: 'Spec updated; spec now has 1 output: quarries.' }] },
      { type: 'model', text: 'The plan is set.', phase: 'plan', toolCalls: [] },
    ];
    const t = setup({ turn: { kind: 'plan', spec: SPEC_WITH_OUTPUT, steps }, script: [{ text: 'Nothing to add.' }, AFTER_CHECK] });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.equal(t.model.calls.length, 2);
    assert.deepEqual(t.model.calls[0]!.messages.at(-1), { role: 'user', content: CARRY_OUT_PLAN });
    assert.deepEqual(t.turn.checkpoints.map((c) => [c.step, c.data.type]), [[4, 'nudge'], [5, 'model'], [6, 'nudge'], [7, 'model']]);
  });
});

describe('agent loop: a context that stays cached, and stays small', () => {
  /** Request n+1 starts with exactly request n's messages, then n's reply: a prompt cache can serve the prefix. */
  function assertPrefixStable(calls: ScriptedModel['calls']): void {
    for (let n = 1; n < calls.length; n++) {
      const [before, after] = [calls[n - 1]!, calls[n]!];
      assert.deepEqual(after.messages.slice(0, before.messages.length), before.messages, `request ${n + 1} starts with request ${n}'s messages`);
      assert.equal(after.messages[before.messages.length]!.role, 'assistant', `request ${n + 1} goes on with the reply to request ${n}`);
      assert.deepEqual(after.definitions, before.definitions, `request ${n + 1} offers the tools request ${n} offered`);
    }
  }

  it('keeps every request a prefix of the next across update_spec, write_rows and the plan nudge', async () => {
    const t = setup({
      turn: { kind: 'plan' },
      script: [
        { toolCalls: [{ name: 'update_spec', arguments: { outputs: [QUARRIES] } }] },
        { text: 'The plan is set.' },
        { toolCalls: [writeQuarry('w1', 'Rock of Ages', 1885)] },
        { toolCalls: [{ name: 'web_search', arguments: { query: 'granite' } }, writeQuarry('w2', 'Barre', 1900)] },
        { text: 'Two quarries written.' },
        AFTER_CHECK,
      ],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    assert.equal(t.model.calls.length, 6, 'the check of the outputs is appended too: the prefix holds across it');
    assertPrefixStable(t.model.calls);
    assert.deepEqual(t.model.calls[0]!.tools, ['update_spec', 'write_rows', 'web_search', 'research'], 'write_rows and research are offered while planning too');
    const results = toolMessages(t.model.calls[4]!.messages).map((m) => m.content);
    assert.match(results[1]!, /quarries now has 1 rows/);
    assert.match(results[3]!, /quarries now has 2 rows/, 'rows written so far reach the model in write_rows\' result');
  });

  it('sends a resumed turn the system message its first model step was sent with', async () => {
    const steps: StoredStep[] = [
      { type: 'model', text: '', phase: 'execute', system: 'The system message as the turn started.', toolCalls: [{ id: 's1', name: 'web_search', arguments: '{"query":"granite"}' }] },
      { type: 'tools', results: [{ callId: 's1', name: 'web_search', content: 'No results.' }] },
    ];
    const t = setup({ turn: { spec: SPEC_WITH_OUTPUT, steps }, script: [{ text: 'Done.' }, AFTER_CHECK] });

    assert.deepEqual(await t.run(), { outcome: 'completed' });
    assert.equal(t.model.calls[0]!.system, 'The system message as the turn started.');
  });

  it('stores the system message with the first model step, and only there', async () => {
    const t = setup({ turn: { spec: SPEC_WITH_OUTPUT }, script: [{ toolCalls: [{ name: 'web_search', arguments: { query: 'granite' } }] }, { text: 'Done.' }, AFTER_CHECK] });

    assert.deepEqual(await t.run(), { outcome: 'completed' });
    const models = t.turn.checkpoints.flatMap((c) => (c.data.type === 'model' ? [c.data] : []));
    assert.equal(models[0]!.system, t.model.calls[0]!.system);
    assert.equal(models[1]!.system, undefined);
  });

  /** A web_search that reads a long page each call and says its source_id, as fetch_url does. */
  const readsAPage: SearchBehaviour = async (args, ctx) => {
    const n = args.query.replace(/\D/g, '');
    const url = `https://quarries.example.org/page-${n}`;
    const text = `Page ${n} about granite. `.repeat(150);
    const id = await ctx.recordSource({ url, finalUrl: url, uploadId: null, title: `Quarry page ${n}`, text });
    return { content: `URL: ${url}\nSource: ${id}\nTitle: Quarry page ${n}\n\n${text}`, summary: `read page ${n}` };
  };

  it('compacts the oldest steps into a note that keeps every source read, and never sends a request over the budget', async () => {
    const budget = 10_000;
    const searches = Array.from({ length: 16 }, (_, i) => ({ text: `Reading page ${i + 1}.`, toolCalls: [{ name: 'web_search', arguments: { query: `page ${i + 1}` } }] }));
    const t = setup({ turn: { spec: SPEC_WITH_OUTPUT }, contextTokens: budget, search: readsAPage, script: [...searches, { text: 'Done.' }, AFTER_CHECK] });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    const sizes = t.model.calls.map((c) => requestTokens(c.messages, c.definitions));
    for (const [i, size] of sizes.entries()) assert.ok(size <= budget, `request ${i + 1} is ${size} tokens, over the budget of ${budget}`);
    const compacted = t.model.calls.flatMap((c, i) => (i > 0 && !isDeepStrictEqual(c.messages.slice(0, t.model.calls[i - 1]!.messages.length), t.model.calls[i - 1]!.messages) ? [i] : []));
    assert.ok(compacted.length >= 1, 'the conversation was compacted');
    for (const i of compacted) assert.ok(sizes[i]! <= budget / 2, `a compaction leaves at most half the budget (request ${i + 1}: ${sizes[i]})`);
    const usage = t.turn.checkpoints.reduce((n, c) => n + c.usage.compactions, 0);
    assert.equal(usage, compacted.length, 'each compaction is counted in the turn\'s usage');
    assert.ok(compacted.length <= 4, `compactions are rare (${compacted.length} in 17 requests)`);

    const last = t.model.calls.at(-1)!.messages;
    assert.equal(t.model.calls.at(-1)!.system, t.model.calls[0]!.system, 'the system message is never compacted');
    assert.deepEqual(last[1], { role: 'user', content: SPEC_WITH_OUTPUT.prompt }, 'the caller\'s words are never compacted');
    const note = last.find((m) => m.role === 'user' && m.content.startsWith('[Context note]'))?.content ?? '';
    const kept = toolMessages(last).map((m) => m.content);
    assert.ok(kept.length >= 2 && kept.slice(-2).every((c) => c.length > 3_000), 'the last two tool results are whole');
    for (const source of t.turn.sources) {
      if (kept.some((c) => c.includes(source.id))) continue;
      assert.ok(note.includes(`${source.id}: ${source.url} "${source.title}"`), `the note keeps ${source.id} with its URL and title`);
    }
  });

  it('shortens the arguments of a huge call already answered, rather than fail, when the kept steps alone do not fit', async () => {
    const budget = 4_000;
    const hugeName = 'Rock of Ages '.repeat(2_000);
    const t = setup({
      turn: { spec: SPEC_WITH_OUTPUT },
      contextTokens: budget,
      script: [{ toolCalls: [writeQuarry('w1', hugeName, 1885)] }, { text: 'Written.' }, AFTER_CHECK],
    });

    assert.deepEqual(await t.run(), { outcome: 'completed' });
    for (const [i, call] of t.model.calls.entries()) {
      const size = requestTokens(call.messages, call.definitions);
      assert.ok(size <= budget, `request ${i + 1} is ${size} tokens, over the budget of ${budget}`);
    }
    const second = t.model.calls[1]!.messages.find((m) => m.role === 'assistant')!;
    assert.ok(second.role === 'assistant' && second.toolCalls?.[0]?.arguments.length !== undefined && second.toolCalls[0].arguments.length < 1_000, 'the answered call is sent with its arguments shortened');
    assert.doesNotThrow(() => JSON.parse((second as { toolCalls: { arguments: string }[] }).toolCalls[0]!.arguments), 'the shortened arguments are still JSON');
  });

  it('shortens a huge reply of the model in what it is sent next, rather than fail the turn', async () => {
    const budget = 4_000;
    const t = setup({ turn: { spec: SPEC_WITH_OUTPUT }, contextTokens: budget, script: [{ text: 'granite '.repeat(5_000) }, AFTER_CHECK] });

    assert.deepEqual(await t.run(), { outcome: 'completed' });
    assert.equal(t.model.calls.length, 2, 'the check of the outputs reached the model after the long reply');
    const size = requestTokens(t.model.calls[1]!.messages, t.model.calls[1]!.definitions);
    assert.ok(size <= budget, `the request after the long reply is ${size} tokens, over the budget of ${budget}`);
  });

  it('fails limit_reached rather than send a request over the budget when the caller\'s words alone do not fit', async () => {
    const t = setup({ turn: { spec: { ...SPEC_WITH_OUTPUT, prompt: 'granite '.repeat(2_000) } }, contextTokens: 1_000, script: [{ text: 'never' }] });

    const error = assertFailed(await t.run(), 'limit_reached');
    assert.match(error.message, /QUARRY_MODEL_CONTEXT_TOKENS/);
    assert.equal(t.model.calls.length, 0);
  });
});

describe('agent loop: model provider failures', () => {
  const unavailable = () => ({ error: new ModelProviderError('upstream unavailable', { status: 503, retryable: true }) });

  it('retries a retryable failure, then fails the turn with bad_gateway', async () => {
    const t = setup({ retryDelaysMs: [0, 0], script: [unavailable(), unavailable(), unavailable(), { text: 'too late' }] });

    const error = assertFailed(await t.run(), 'bad_gateway');
    assert.equal(error.retryable, true);
    assert.match(error.message, /HTTP 503/);
    assert.equal(t.model.calls.length, 3, 'the first try and one per retry delay');
    assert.deepEqual(t.turn.checkpoints, []);
  });

  it('goes on when a retry succeeds', async () => {
    const t = setup({ script: [unavailable(), { text: 'Done.' }] });

    assert.deepEqual(await t.run(), { outcome: 'completed' });
    assert.equal(t.model.calls.length, 2);
    assert.deepEqual(t.turn.checkpoints.map((c) => c.step), [1], 'the failed try stored nothing');
  });

  it('does not retry a failure that cannot pass', async () => {
    const t = setup({ script: [{ error: new ModelProviderError('bad request', { status: 400, retryable: false }) }, { text: 'never' }] });

    assertFailed(await t.run(), 'bad_gateway');
    assert.equal(t.model.calls.length, 1);
  });

  it('fails with service_unavailable when no model is configured', async () => {
    const turn = new InMemoryTurn();
    const agent = new Agent({ provider: undefined, tools: new Map() });

    const error = assertFailed(await agent.runTurn(turn), 'service_unavailable');
    assert.match(error.message, /QUARRY_MODEL_BASE_URL/);
  });
});
