/**
 * The research tool on its own (decisions §16.2): a lead that hands objectives to sub-researchers,
 * a scripted model that answers each agent by what its request holds, and an in-memory TurnPort.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Agent, type TurnResult } from '../../src/agent/agent-loop.js';
import type { ModelMessage, ModelRequest, ModelResponse } from '../../src/agent/providers/model-provider.js';
import type { AgentTools } from '../../src/agent/tools/index.js';
import { defineTool } from '../../src/agent/tools/tool.js';
import { updateSpecTool } from '../../src/agent/tools/update-spec.js';
import { writeRowsTool } from '../../src/agent/tools/write-rows.js';
import type { ResearchTaskResult, StoredStep } from '../../src/agent/turn-port.js';
import { InMemoryTurn, ScriptedModel, untilAborted, type InMemoryTurnOptions, type ScriptedReply } from '../kit/in-memory-turn.js';

const QUARRIES = { id: 'quarries', kind: 'table', columns: [{ name: 'name', type: 'string', required: true }, { name: 'opened', type: 'integer' }] };
const LEAD_PROMPT = 'Find the oldest granite quarries.';
const SPEC = { prompt: LEAD_PROMPT, outputs: [QUARRIES], tools: ['web_search'] };

/** What a sub-researcher's request is about: the objective its system message states. */
function objectiveOf(request: ModelRequest): string {
  const system = request.messages[0]?.role === 'system' ? request.messages[0].content : '';
  return /^Your objective: (.*)$/m.exec(system)?.[1] ?? '';
}

const isLead = (request: ModelRequest) => request.tools.some((t) => t.name === 'update_spec');

function reply(text: string, toolCalls: { id: string; name: string; arguments: unknown }[] = [], inputTokens = 100): ModelResponse {
  return {
    text, toolCalls: toolCalls.map((c) => ({ ...c, arguments: JSON.stringify(c.arguments) })),
    usage: { inputTokens, cachedInputTokens: 0, outputTokens: 10 }, finishReason: toolCalls.length ? 'tool_calls' : 'stop',
  };
}

const toolResults = (messages: ModelMessage[]) => messages.filter((m): m is Extract<ModelMessage, { role: 'tool' }> => m.role === 'tool');

/**
 * A sub-researcher that searches for its objective, writes one row named after it, and answers;
 * a lead that delegates `objectives` in one research call (id `r1`) and then answers.
 */
function delegating(objectives: string[], opts: { sub?: (request: ModelRequest, objective: string) => ModelResponse | Promise<ModelResponse> } = {}) {
  return async (request: ModelRequest): Promise<ModelResponse> => {
    if (isLead(request)) {
      const answered = toolResults(request.messages).some((m) => m.name === 'research');
      if (answered) return reply('Done.');
      const text = 'Delegating.';
      request.onTextDelta?.(text);
      return reply(text, [{ id: 'r1', name: 'research', arguments: { tasks: objectives.map((objective) => ({ objective, output: 'quarries', context: `Look for ${objective}.` })) } }], 0);
    }
    const objective = objectiveOf(request);
    if (opts.sub) return opts.sub(request, objective);
    return subWork(request, objective);
  };
}

/** Search, then write one row, then answer with a summary; streamed text too, which must not reach the task. */
function subWork(request: ModelRequest, objective: string): ModelResponse {
  const done = toolResults(request.messages).map((m) => m.name);
  const n = objective.replace(/\W/g, '');
  if (!done.includes('web_search')) return reply('', [{ id: `s_${n}`, name: 'web_search', arguments: { query: objective } }]);
  if (!done.includes('write_rows')) return reply('', [{ id: `w_${n}`, name: 'write_rows', arguments: { output: 'quarries', rows: [{ name: objective, opened: 1900 }] } }]);
  const text = `Found ${objective}.`;
  request.onTextDelta?.(text);
  return reply(text);
}

function setup(opts: { script: ScriptedReply[]; turn?: InMemoryTurnOptions; subagentConcurrency?: number }) {
  const turn = new InMemoryTurn({ spec: SPEC, userMessages: [LEAD_PROMPT], ...opts.turn });
  const model = new ScriptedModel(...opts.script);
  const searches: string[] = [];
  const search = defineTool<{ query: string }>({
    name: 'web_search', description: 'Search the web.', concurrent: true,
    parameters: { type: 'object', properties: { query: { type: 'string', minLength: 1 } }, required: ['query'], additionalProperties: false },
    async run(args) {
      searches.push(args.query);
      return { content: `No results for ${args.query}.`, summary: '0 results' };
    },
  });
  const tools: AgentTools = new Map([defineTool(updateSpecTool), defineTool(writeRowsTool), search].map((t) => [t.name, t]));
  const agent = new Agent({ provider: model, tools, retryDelaysMs: [0], subagentConcurrency: opts.subagentConcurrency });
  return { turn, model, searches, run: (): Promise<TurnResult> => agent.runTurn(turn) };
}

/** The last research call's result as the lead read it. */
function researchResult(model: ScriptedModel): ResearchTaskResult[] {
  const lead = model.calls.filter((c) => c.tools.includes('update_spec')).at(-1)!;
  return JSON.parse(toolResults(lead.messages).filter((m) => m.name === 'research').at(-1)!.content) as ResearchTaskResult[];
}

describe('research tool', () => {
  it('is offered with the research tools and a max_subagents above 0, with at most max_subagents tasks a call', async () => {
    const t = setup({ script: [reply('Nothing to do.'), reply('Nothing to do.')] as ScriptedReply[], turn: { spec: { ...SPEC, limits: { max_subagents: 3 } } } });
    await t.run();
    const research = t.model.calls[0]!.definitions.find((d) => d.name === 'research');
    assert.equal((research?.parameters as { properties: { tasks: { maxItems: number } } }).properties.tasks.maxItems, 3);

    const off = setup({ script: [reply('Nothing to do.'), reply('Nothing to do.')] as ScriptedReply[], turn: { spec: { ...SPEC, limits: { max_subagents: 0 } } } });
    await off.run();
    assert.ok(!off.model.calls[0]!.tools.includes('research'), 'max_subagents 0 removes the tool');
    const none = setup({ script: [reply('Nothing to do.'), reply('Nothing to do.')] as ScriptedReply[], turn: { spec: { ...SPEC, tools: [] } } });
    await none.run();
    assert.ok(!none.model.calls[0]!.tools.includes('research'), 'no research tool without web_search, fetch_url or read_input');
  });

  it('runs each task as a sub-researcher of its own and reports them in call order', async () => {
    const objectives = ['Barre quarry', 'Rock of Ages quarry', 'Smith quarry'];
    const handler = delegating(objectives);
    const t = setup({ script: Array.from({ length: 20 }, () => handler) });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    const subCalls = t.model.calls.filter((c) => !c.tools.includes('update_spec'));
    assert.equal(subCalls.length, 9, 'three steps per sub-researcher');
    for (const call of subCalls) {
      assert.deepEqual(call.tools, ['write_rows', 'web_search'], 'no update_spec, no research');
      const sent = JSON.stringify(call.messages);
      assert.ok(!sent.includes(LEAD_PROMPT) && !sent.includes('Delegating'), 'a sub-researcher never sees the lead\'s conversation');
      assert.equal(call.messages.filter((m) => m.role === 'user').length, 1);
      assert.match(call.system, /"id": "quarries"/, 'its system message names the target output and its columns');
    }
    const first = subCalls.find((c) => objectiveOf({ messages: c.messages } as ModelRequest) === 'Smith quarry')!;
    assert.equal((first.messages[1] as { content: string }).content, 'Smith quarry\n\nContext from the lead researcher:\nLook for Smith quarry.');

    assert.deepEqual(researchResult(t.model).map((r) => [r.objective, r.outcome, r.rows_written, r.verified_rows, r.sources, r.summary]), objectives.map((o) => [o, 'completed', 1, 0, [], `Found ${o}.`]));
    assert.deepEqual(t.turn.rows.get('quarries')!.map((r) => (JSON.parse(r) as { name: string }).name).sort(), [...objectives].sort());

    const subEvents = t.turn.toolEvents.filter((e) => e.name !== 'research');
    assert.equal(subEvents.length, 12);
    for (const e of subEvents) assert.match(e.agent ?? '', /^r1\/[0-2]$/);
    assert.deepEqual([...new Set(subEvents.filter((e) => e.input && (e.input as { query?: string }).query).map((e) => `${e.agent} ${(e.input as { query: string }).query}`))].sort(), objectives.map((o, i) => `r1/${i} ${o}`));
    assert.ok(t.turn.toolEvents.filter((e) => e.name === 'research').every((e) => !('agent' in e)), 'the lead\'s events carry no agent');
    assert.equal(t.turn.streamedText, 'Delegating.Done.Done.', 'only the lead\'s text is streamed');

    const subSteps = t.turn.checkpoints.filter((c) => c.data.type === 'sub');
    assert.equal(subSteps.length, 15, 'each sub-researcher\'s replies and results are checkpointed');
    assert.deepEqual(t.turn.checkpoints.map((c) => c.step), t.turn.checkpoints.map((_, i) => i + 1), 'one step sequence, no gaps');
  });

  it('lets a sub-researcher write only to its task\'s output, and refuses a task naming an output the spec lacks', async () => {
    const KILNS = { id: 'kilns', kind: 'table', columns: [{ name: 'name', type: 'string' }] };
    let refused = '';
    const handler = async (request: ModelRequest): Promise<ModelResponse> => {
      if (isLead(request)) {
        const results = toolResults(request.messages).filter((m) => m.name === 'research');
        if (results.length === 0) return reply('', [{ id: 'r0', name: 'research', arguments: { tasks: [{ objective: 'A quarry', output: 'ovens' }] } }]);
        if (results.length === 1) {
          refused = results[0]!.content;
          return reply('', [{ id: 'r1', name: 'research', arguments: { tasks: [{ objective: 'A quarry', output: 'quarries' }] } }]);
        }
        return reply('Done.');
      }
      if (toolResults(request.messages).length === 0) return reply('', [{ id: 'w', name: 'write_rows', arguments: { output: 'kilns', rows: [{ name: 'Kiln' }] } }]);
      return reply(`Could not write: ${toolResults(request.messages)[0]!.content}`);
    };
    const t = setup({ script: Array.from({ length: 10 }, () => handler), turn: { spec: { ...SPEC, outputs: [QUARRIES, KILNS] } } });

    await t.run();

    assert.match(refused, /No output "ovens"/);
    const [result] = researchResult(t.model);
    assert.match(result!.summary, /No output "kilns"\. Declared outputs: quarries\./);
    assert.equal(t.turn.rows.get('kilns'), undefined);
    const sub = t.model.calls.find((c) => !c.tools.includes('update_spec'))!;
    assert.ok(sub.system.includes('"id": "quarries"') && !sub.system.includes('"id": "kilns"'), 'its system message shows only its output');
  });

  it('runs at most QUARRY_SUBAGENT_CONCURRENCY sub-researchers at once', async () => {
    const objectives = ['A quarry', 'B quarry', 'C quarry', 'D quarry', 'E quarry'];
    let inFlight = 0;
    let started = 0;
    let most = 0;
    let waiting: (() => void)[] = [];
    // Each sub-researcher's one reply is held until two are waiting (or every one has started):
    // with no bound, all five would be in flight at once.
    const handler = delegating(objectives, {
      sub: async (_request, objective) => {
        inFlight++;
        started++;
        most = Math.max(most, inFlight);
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          if (waiting.length === 2 || started === objectives.length) {
            for (const release of waiting) release();
            waiting = [];
          }
        });
        inFlight--;
        return reply(`Nothing on ${objective}.`);
      },
    });
    const t = setup({ script: Array.from({ length: 10 }, () => handler), subagentConcurrency: 2 });

    await t.run();

    assert.equal(most, 2);
    assert.deepEqual(researchResult(t.model).map((r) => r.summary), objectives.map((o) => `Nothing on ${o}.`));
  });

  it('charges every step of a sub-researcher to the turn: its budget stops them all', async () => {
    const handler = delegating(['A quarry', 'B quarry'], { sub: () => reply('', [{ id: 's', name: 'web_search', arguments: { query: 'granite' } }], 50_000_000) });
    const t = setup({ script: Array.from({ length: 10 }, () => handler), turn: { spec: { ...SPEC, limits: { max_credits_per_turn: 1 } }, balance: 1_000_000 } });

    const result = await t.run();

    assert.equal(result.outcome, 'failed');
    assert.equal(result.outcome === 'failed' && result.error.error, 'limit_reached');
    assert.match(result.outcome === 'failed' ? result.error.message : '', /max_credits_per_turn/);
    assert.equal(t.model.calls.filter((c) => !c.tools.includes('update_spec')).length, 2, 'each sub-researcher stops after its first over-budget step');
    assert.deepEqual(t.searches, [], 'no tool runs past the budget');
    const ended = t.turn.checkpoints.flatMap((c) => (c.data.type === 'sub_end' ? [c.data.result.outcome] : []));
    assert.deepEqual(ended, ['limit_reached', 'limit_reached']);
  });

  it('ends a sub-researcher at max_subagent_steps, as limit_reached in the lead\'s result', async () => {
    const handler = delegating(['A quarry'], { sub: (request) => reply('Still looking.', [{ id: `s${request.messages.length}`, name: 'web_search', arguments: { query: 'granite' } }]) });
    const t = setup({ script: Array.from({ length: 10 }, () => handler), turn: { spec: { ...SPEC, limits: { max_subagent_steps: 3 } } } });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    const [result] = researchResult(t.model);
    assert.equal(result!.outcome, 'limit_reached');
    assert.match(result!.summary, /^Still looking\.\n\n.*max_subagent_steps/s);
    assert.equal(t.searches.length, 2, 'a reply and its round of calls are two steps; the calls of its last reply run, as the lead\'s do');
  });

  it('takes up a turn again: a finished sub-researcher is not rerun, an unfinished one continues from its checkpoint', async () => {
    const research = { id: 'r1', name: 'research', arguments: JSON.stringify({ tasks: [{ objective: 'A quarry', output: 'quarries' }, { objective: 'B quarry', output: 'quarries' }] }) };
    const finished: ResearchTaskResult = { objective: 'A quarry', outcome: 'completed', rows_written: 1, verified_rows: 0, sources: [], summary: 'Found A quarry.' };
    const tally = { rows_written: 0, verified_rows: 0, sources: [] };
    const steps: StoredStep[] = [
      { type: 'model', text: 'Delegating.', toolCalls: [research], phase: 'execute', system: 'lead system' },
      { type: 'sub', agent: 'r1/1', step: { type: 'model', text: '', toolCalls: [{ id: 's_B', name: 'web_search', arguments: '{"query":"B quarry"}' }], phase: 'execute', system: 'Your objective: B quarry' }, tally },
      { type: 'sub', agent: 'r1/0', step: { type: 'model', text: 'Found A quarry.', toolCalls: [], phase: 'execute', system: 'Your objective: A quarry' }, tally },
      { type: 'sub_end', agent: 'r1/0', result: finished },
      { type: 'sub', agent: 'r1/1', step: { type: 'tool', callId: 's_B', name: 'web_search', content: 'No results for B quarry.' }, tally },
    ];
    const handler = delegating([]);
    const t = setup({ script: Array.from({ length: 10 }, () => handler), turn: { steps } });

    assert.deepEqual(await t.run(), { outcome: 'completed' });

    const subCalls = t.model.calls.filter((c) => !c.tools.includes('update_spec'));
    assert.ok(subCalls.every((c) => c.system === 'Your objective: B quarry'), 'the finished one is not run again; the other keeps its system message');
    assert.deepEqual(subCalls[0]!.messages.slice(1).map((m) => m.role), ['user', 'assistant', 'tool'], 'it continues from its last checkpoint');
    assert.deepEqual(t.searches, [], 'its stored search is not repeated');
    assert.equal(subCalls.length, 2, 'it writes, then answers');
    assert.deepEqual(researchResult(t.model).map((r) => [r.objective, r.outcome, r.rows_written, r.summary]), [['A quarry', 'completed', 1, 'Found A quarry.'], ['B quarry', 'completed', 1, 'Found B quarry.']]);
    assert.equal(t.turn.checkpoints[0]!.step, steps.length + 1);
    assert.equal(t.turn.rows.get('quarries')!.length, 1);
  });

  it('stop aborts the sub-researchers, and the research call stores no result', async () => {
    const handler = delegating(['A quarry', 'B quarry'], { sub: (request) => (untilAborted(() => t.turn.stop()) as (r: ModelRequest) => Promise<ModelResponse>)(request) });
    const t = setup({ script: Array.from({ length: 10 }, () => handler) });

    await assert.rejects(t.run(), { name: 'AbortError' });

    assert.ok(!t.turn.checkpoints.some((c) => c.data.type === 'tool' || c.data.type === 'sub_end'));
  });
});
