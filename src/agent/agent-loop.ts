/**
 * One turn of agent work: call the model, run the tools it asks for, repeat until it answers
 * without a tool call. Everything it does to the task goes through the turn's TurnPort, and every
 * completed step is checkpointed there before the next begins, so a turn taken up again after a
 * crash replays stored steps instead of redoing them.
 */
import type { ValidateFunction } from 'ajv';
import { schemaValidator } from '../domain/json-schema.js';
import { crashPoint } from '../crash-points.js';
import { turnError, type ErrorName, type TurnError } from '../errors.js';
import type { TaskPhase, TaskSpec, ToolName } from '../contract/index.js';
import { ModelProviderError, type ModelMessage, type ModelProvider, type ModelToolCall, type ModelToolDefinition } from './providers/model-provider.js';
import { compact, CompactionNote, requestTokens, type SourceLookup } from './context-window.js';
import { outputGaps } from './output-check.js';
import { RESEARCH_DESCRIPTION, researchParameters, SubResearcherPort, SUMMARY_CAP, type AgentPort, type ResearchTask } from './research.js';
import { CARRY_OUT_PLAN, subResearcherMessage, subResearcherPrompt, systemPrompt } from './system-prompt.js';
import type { AgentTools } from './tools/index.js';
import { defineTool, toolContext, type AgentTool, type ToolResult } from './tools/tool.js';
import type { Charge, ResearchTaskResult, StepUsage, StoredStep, SubTally, TurnPort } from './turn-port.js';
import { sleep } from '../sleep.js';
import { RetryPolicy } from '../retry-policy.js';
import { ProviderWaitTooLong, type Permit, type ProviderGate } from './providers/provider-gate.js';

export type TurnResult = { outcome: 'completed' } | { outcome: 'failed'; error: TurnError };

export interface AgentOptions {
  provider: ModelProvider | undefined;
  /** The tools a turn may be given (update_spec and write_rows always; the rest as the spec's `tools` allows). */
  tools: AgentTools;
  /** Waits between retries of a failed model call (ms): one retry per entry (docs/agent.md: 0.5 s, 1 s, 2 s). */
  retryDelaysMs?: number[];
  /** The model's context window in tokens (QUARRY_MODEL_CONTEXT_TOKENS): no request is sent over it. */
  contextTokens?: number;
  /** Concurrent tool calls (AgentTool.concurrent) of one reply run at most this many at once (QUARRY_TOOL_CONCURRENCY). */
  toolConcurrency?: number;
  /** Sub-researchers of a research call that run at once (QUARRY_SUBAGENT_CONCURRENCY). */
  subagentConcurrency?: number;
  /** Where each model call waits its place under the provider's limits (provider-gate.ts); none: calls go at once. */
  modelGate?: ProviderGate;
}

/** The spec's tools a sub-researcher gets; with any of them the lead is offered `research`. */
const RESEARCH_TOOLS = new Set<string>(['web_search', 'fetch_url', 'read_input']);
/** The tools whose reads read_source reads back. */
const SOURCE_TOOLS = new Set<string>(['fetch_url', 'read_input']);

/**
 * The longest `Retry-After` a turn waits out. A provider that asks for more (a quota that
 * resets in an hour, say) is not going to answer this turn: it fails at once, retryable, and
 * says how long the provider asked for.
 */
export const MAX_RETRY_AFTER_MS = 60_000;

const INPUT_CAP = 2_000;
const INPUT_ARRAY_CAP = 100;
const ajv = schemaValidator('tool-arguments');
// By schema: the research tool has one per task count (research.ts researchParameters).
const validators = new WeakMap<object, ValidateFunction>();

function validatorFor(tool: AgentTool<unknown>): ValidateFunction {
  let v = validators.get(tool.parameters);
  if (!v) {
    v = ajv.compile(tool.parameters);
    validators.set(tool.parameters, v);
  }
  return v;
}

/** Cuts long strings in a tool's input for the event (the model's full input stays in the step). */
export function capStrings(value: unknown): unknown {
  if (typeof value === 'string') return value.length > INPUT_CAP ? `${value.slice(0, INPUT_CAP)}…` : value;
  // A long array (e.g. thousands of rows) keeps its head and says how much was left out.
  if (Array.isArray(value)) return value.length > INPUT_ARRAY_CAP ? [...value.slice(0, INPUT_ARRAY_CAP).map(capStrings), `… ${value.length - INPUT_ARRAY_CAP} more`] : value.map(capStrings);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, capStrings(v)]));
  return value;
}

function failed(name: ErrorName, message: string): TurnResult {
  return { outcome: 'failed', error: turnError(name, message) };
}

/** Numbers and stores a turn's steps: one sequence for the lead and its sub-researchers. */
class StepLog {
  private last: number;
  // Checkpoints are chained so that step numbers are stored in order, however many agents store
  // at once: a turn taken up again finds no gap.
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly port: TurnPort) {
    this.last = port.steps.length;
  }

  store(data: StoredStep, usage: StepUsage): Promise<{ step: number; charge: Charge }> {
    const stored = this.chain.then(async () => {
      const step = ++this.last;
      return { step, charge: await this.port.checkpoint(step, data, usage) };
    });
    this.chain = stored;
    return stored;
  }
}

const NO_USAGE: StepUsage = { tokensIn: 0, tokensInCached: 0, tokensOut: 0, toolCalls: 0, compactions: 0 };

/** One agent of a turn: the lead, or one of its sub-researchers (decisions §16.2). */
interface AgentRun {
  port: AgentPort;
  /** The lead (plan phase, outputs check, the task's state) or a sub-researcher. */
  lead: boolean;
  phase: TaskPhase;
  planOnly: boolean;
  /** Its system message when it has stored none (a resumed agent sends the one it was sent). */
  system: string;
  tools: AgentTool<unknown>[];
  userMessages: readonly string[];
  /** Its steps stored so far, with their numbers in the turn. */
  steps: { step: number; data: StoredStep }[];
  /** Stores one of its steps. */
  store(data: StoredStep, usage: StepUsage): Promise<{ step: number; charge: Charge }>;
  maxSteps: number;
  /** Names maxSteps in the message of a turn that reaches it. */
  maxStepsName: string;
  deadline: number;
}

export class Agent {
  private readonly provider: ModelProvider | undefined;
  private readonly tools: AgentTools;
  /** The documented schedule as it stands, no jitter; a provider's Retry-After may only lengthen a wait. */
  private readonly retries: RetryPolicy;
  private readonly contextTokens: number;
  private readonly toolConcurrency: number;
  private readonly subagentConcurrency: number;
  private readonly modelGate: ProviderGate | undefined;

  constructor(opts: AgentOptions) {
    this.modelGate = opts.modelGate;
    this.contextTokens = opts.contextTokens ?? 100_000;
    this.toolConcurrency = opts.toolConcurrency ?? 8;
    this.subagentConcurrency = opts.subagentConcurrency ?? 4;
    this.provider = opts.provider;
    this.tools = opts.tools;
    const delaysMs = opts.retryDelaysMs ?? [500, 1000, 2000];
    this.retries = new RetryPolicy({ delaysMs, retries: delaysMs.length, jitter: 'none', retryAfter: 'at-least', maxRetryAfterMs: MAX_RETRY_AFTER_MS });
  }

  async runTurn(port: TurnPort): Promise<TurnResult> {
    const provider = this.provider;
    if (!provider) {
      return failed('service_unavailable', 'No model provider is configured: set QUARRY_MODEL_BASE_URL (and QUARRY_MODEL, QUARRY_MODEL_API_KEY), or QUARRY_MODEL_PROVIDER=anthropic with QUARRY_MODEL_API_KEY, and restart Quarry (QUARRY_MODEL_PROVIDER=demo runs scripted turns, to try Quarry without a model).');
    }
    const spec = port.spec();
    const phase: TaskPhase = port.kind === 'plan' ? 'plan' : 'execute';
    // The turn runner aborts the turn at this time (it started its clock a moment earlier); a
    // retry that could only start after it is not waited for.
    const deadline = Date.now() + spec.limits.max_turn_seconds * 1000;
    const log = new StepLog(port);
    const { result } = await this.runAgent(provider, {
      port, lead: true, phase, planOnly: port.planOnly,
      system: systemPrompt(spec, { phase, planOnly: port.planOnly, offline: port.offline }),
      tools: this.toolsFor(port, provider, log, deadline),
      userMessages: port.userMessages,
      steps: port.steps.flatMap((data, i) => (data.type === 'sub' || data.type === 'sub_end' ? [] : [{ step: i + 1, data }])),
      store: (data, usage) => log.store(data, usage),
      maxSteps: spec.limits.max_steps, maxStepsName: 'spec.limits.max_steps', deadline,
    });
    return result;
  }

  /**
   * Runs one agent until it answers without a tool call (the lead: once the outputs are checked),
   * or fails. `answer` is its last answer's text.
   */
  private async runAgent(provider: ModelProvider, run: AgentRun): Promise<{ result: TurnResult; answer: string }> {
    const { port, tools } = run;
    let phase = run.phase;
    // The prefix every request of the turn starts with (decisions §16.3): the system message and
    // the tools are fixed when the turn starts; a resumed turn sends the system message its first
    // model step was sent with, whatever update_spec changed since. Later changes reach the model
    // in tool results.
    const firstModelStep = run.steps.find((s) => s.data.type === 'model')?.data as Extract<StoredStep, { type: 'model' }> | undefined;
    const system: ModelMessage = { role: 'system', content: firstModelStep?.system ?? run.system };
    let storedSystem = firstModelStep !== undefined;
    const definitions = tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters as Record<string, unknown> }));
    // The conversation as the model last saw it: only ever appended to, except by a compaction.
    let history: ModelMessage[] = run.userMessages.map((content) => ({ role: 'user', content }));
    const note = new CompactionNote();
    const lookup: SourceLookup = async (id) => {
      const found = await port.source(id);
      return found ? { url: found.url, title: found.title } : null;
    };
    // `used` counts what the step limit limits: replies, nudges and rounds of tool calls (however
    // many calls a round has).
    let used = 0;
    let answer = '';
    const done = (result: TurnResult) => ({ result, answer });
    // The calls of the last reply, the step that stored it, and the results of them stored so far.
    let pendingCalls: ModelToolCall[] = [];
    let callStep = 0;
    let results = new Map<string, string>();
    const roundDone = () => {
      for (const call of pendingCalls) history.push({ role: 'tool', toolCallId: call.id, name: call.name, content: results.get(call.id)! });
      pendingCalls = [];
      used++;
    };
    // The outputs were checked before the turn's end (at most once a turn).
    let checked = false;
    for (const { step, data: stored } of run.steps) {
      if (stored.type === 'model') {
        used++;
        phase = stored.phase;
        answer = stored.text;
        history.push({ role: 'assistant', content: stored.text || null, toolCalls: stored.toolCalls });
        pendingCalls = stored.toolCalls;
        callStep = step;
        results = new Map();
      } else if (stored.type === 'tool') {
        results.set(stored.callId, stored.content);
        if (pendingCalls.every((c) => results.has(c.id))) roundDone();
      } else if (stored.type === 'tools') {
        // Stored before each call had a step of its own: the round's results together.
        for (const r of stored.results) results.set(r.callId, r.content);
        roundDone();
      } else if (stored.type === 'nudge') {
        used++;
        phase = 'execute';
        if (stored.check) checked = true;
        history.push({ role: 'user', content: stored.content });
      }
    }
    const limits = port.spec().limits;
    // The model answered without a tool call: the agent ends, or a plan turn goes on to execute.
    // Also the state a resumed agent is in when its last checkpoint is such an answer.
    const lastStep = run.steps.at(-1)?.data;
    let answered = lastStep?.type === 'model' && lastStep.toolCalls.length === 0;

    while (true) {
      if (port.signal.aborted) throw port.signal.reason;
      if (answered) {
        answered = false;
        // A plan turn that finished planning goes on to carry the plan out in the same turn.
        if (phase === 'plan' && !run.planOnly && port.spec().outputs.length > 0) {
          phase = 'execute';
          used++;
          await run.store({ type: 'nudge', content: CARRY_OUT_PLAN }, NO_USAGE);
          history.push({ role: 'user', content: CARRY_OUT_PLAN });
          continue;
        }
        // Once a turn, what the outputs lack goes back to the lead before the turn ends, if the
        // steps left allow it one more answer. A sub-researcher's answer goes back to the lead.
        if (run.lead && !checked && phase === 'execute' && !run.planOnly && used + 1 < run.maxSteps) {
          checked = true;
          const gaps = await outputGaps(port.spec(), (id) => port.readRows(id));
          if (gaps) {
            used++;
            await run.store({ type: 'nudge', content: gaps, check: true }, NO_USAGE);
            history.push({ role: 'user', content: gaps });
            continue;
          }
        }
        return done({ outcome: 'completed' });
      }
      if (pendingCalls.length === 0) {
        if (used >= run.maxSteps) return done(failed('limit_reached', `The turn reached its limit of ${run.maxSteps} steps (${run.maxStepsName}).`));
        await port.setState(phase === 'plan' ? { phase, activity: 'planning' } : { phase, activity: 'thinking' });
        let compactions = 0;
        let promptTokens = requestTokens([system, ...history], definitions);
        if (promptTokens > this.contextTokens) {
          try {
            history = (await compact(system, history, run.userMessages.length, { contextTokens: this.contextTokens, tools: definitions }, note, lookup)) ?? history;
          } catch (err) {
            if (!(err instanceof RangeError)) throw err;
            return done(failed('limit_reached', `The conversation does not fit in the model's context window (QUARRY_MODEL_CONTEXT_TOKENS=${this.contextTokens}): ${err.message}.`));
          }
          compactions = 1;
          promptTokens = requestTokens([system, ...history], definitions);
        }
        const reply = await port.budgetedModelCall(promptTokens, () => this.callModel(provider, [system, ...history], definitions, port, run.deadline));
        if (reply === null) return done(failed('limit_reached', 'The task group\'s budget (max_credits) is spent: no more model calls are made for its runs.'));
        if ('outcome' in reply) return done(reply);
        crashPoint('model.replied');
        used++;
        answer = reply.text;
        const stored: StoredStep = { type: 'model', text: reply.text, toolCalls: reply.toolCalls, phase, ...(storedSystem ? {} : { system: system.content }) };
        storedSystem = true;
        const { step, charge } = await run.store(stored, {
          tokensIn: reply.usage.inputTokens, tokensInCached: reply.usage.cachedInputTokens, tokensOut: reply.usage.outputTokens, toolCalls: 0, compactions,
        });
        history.push({ role: 'assistant', content: reply.text || null, toolCalls: reply.toolCalls });
        const over = this.overBudget(charge, limits.max_credits_per_turn);
        if (over) return done(over);
        if (reply.toolCalls.length === 0) {
          answered = true;
          continue;
        }
        pendingCalls = reply.toolCalls;
        callStep = step;
        results = new Map();
      }

      // A plan turn moves to execute as soon as the model reaches for a tool other than update_spec.
      if (phase === 'plan' && !run.planOnly && pendingCalls.some((c) => c.name !== 'update_spec')) phase = 'execute';
      await port.setState(phase === 'plan' ? { phase, activity: 'planning' } : { phase, activity: 'executing' });
      // Each result is stored (and its call charged) as the call ends.
      let charge: Charge | undefined;
      // Row writes keep the key they had when a reply's results were stored as one step after it.
      await this.runCalls(pendingCalls.filter((c) => !results.has(c.id)), port, tools, callStep + 1, async (call, content) => {
        results.set(call.id, content);
        ({ charge } = await run.store({ type: 'tool', callId: call.id, name: call.name, content }, { ...NO_USAGE, toolCalls: 1 }));
      });
      roundDone();
      const over = charge && this.overBudget(charge, limits.max_credits_per_turn);
      if (over) return done(over);
    }
  }

  /**
   * Runs the calls of one reply: those of concurrent tools (reads) first, at most
   * toolConcurrency at once, then the others one at a time in the model's order. `done` gets each
   * result as its call ends.
   */
  private async runCalls(calls: ModelToolCall[], port: AgentPort, offeredTools: AgentTool<unknown>[], step: number, done: (call: ModelToolCall, content: string) => Promise<void>): Promise<void> {
    const reads = calls.filter((c) => offeredTools.find((t) => t.name === c.name)?.concurrent);
    const run = async (call: ModelToolCall) => {
      if (port.signal.aborted) throw port.signal.reason;
      await done(call, await this.runTool(call, port, offeredTools, step));
    };
    let next = 0;
    const worker = async () => {
      while (next < reads.length) await run(reads[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(this.toolConcurrency, reads.length) }, worker));
    for (const call of calls) if (!reads.includes(call)) await run(call);
  }

  /** The lead's tools, the same list for the whole turn. */
  private toolsFor(port: TurnPort, provider: ModelProvider, log: StepLog, deadline: number): AgentTool<unknown>[] {
    if (port.planOnly) return [this.tools.get('update_spec')!];
    const spec = port.spec();
    // Offline (decisions §17.2), decided here once for the turn: nothing may search.
    const specTools = (spec.tools as ToolName[]).filter((t) => !(port.offline && t === 'web_search'));
    // read_source reads back what fetch_url and read_input stored: offered with them.
    const readsSources = specTools.some((t) => SOURCE_TOOLS.has(t));
    const allowed = new Set<string>(['update_spec', 'write_rows', ...specTools, ...(readsSources ? ['read_source'] : [])]);
    const tools = [...this.tools.values()].filter((t) => allowed.has(t.name));
    if (specTools.some((t) => RESEARCH_TOOLS.has(t)) && spec.limits.max_subagents > 0) {
      tools.push(defineTool<{ tasks: ResearchTask[] }>({
        name: 'research', description: RESEARCH_DESCRIPTION, parameters: researchParameters(spec.limits.max_subagents),
        run: (args, ctx) => this.research(provider, port, log, deadline, ctx.callId, args.tasks),
      }));
    }
    return tools;
  }

  /** The tools a sub-researcher gets: the spec's research tools, read_source and write_rows. */
  private subResearcherTools(spec: TaskSpec, offline: boolean): AgentTool<unknown>[] {
    const allowed = new Set<string>(['write_rows', 'read_source', ...spec.tools.filter((t) => RESEARCH_TOOLS.has(t) && !(offline && t === 'web_search'))]);
    return [...this.tools.values()].filter((t) => allowed.has(t.name));
  }

  /**
   * A research call: its tasks run as sub-researchers, at most subagentConcurrency at once; the
   * result lists what each did, in call order.
   */
  private async research(provider: ModelProvider, port: TurnPort, log: StepLog, deadline: number, callId: string, tasks: ResearchTask[]): Promise<ToolResult> {
    const outputs = port.spec().outputs.map((o) => o.id);
    const unknown = [...new Set(tasks.flatMap((t) => (t.output !== undefined && !outputs.includes(t.output) ? [t.output] : [])))];
    if (unknown.length > 0) {
      return { isError: true, content: `No output ${unknown.map((o) => `"${o}"`).join(', ')}. Declared outputs: ${outputs.join(', ') || 'none yet; declare one with update_spec'}.`, summary: 'unknown output' };
    }
    const results: ResearchTaskResult[] = [];
    let next = 0;
    const worker = async () => {
      while (next < tasks.length) {
        const index = next++;
        results[index] = await this.subResearcher(provider, port, log, deadline, `${callId}/${index}`, tasks[index]!);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.subagentConcurrency, tasks.length) }, worker));
    const completed = results.filter((r) => r.outcome === 'completed').length;
    const rows = results.reduce((n, r) => n + r.rows_written, 0);
    return { content: JSON.stringify(results, null, 2), summary: `${completed} of ${results.length} sub-researchers completed; ${rows} rows written` };
  }

  /** Runs (or takes up again) one sub-researcher; one that ended in an earlier run is not run again. */
  private async subResearcher(provider: ModelProvider, port: TurnPort, log: StepLog, deadline: number, agent: string, task: ResearchTask): Promise<ResearchTaskResult> {
    const steps: { step: number; data: StoredStep }[] = [];
    let tally: SubTally | undefined;
    for (const [i, data] of port.steps.entries()) {
      if (data.type === 'sub_end' && data.agent === agent) return data.result;
      if (data.type === 'sub' && data.agent === agent) {
        steps.push({ step: i + 1, data: data.step });
        tally = data.tally;
      }
    }
    const sub = new SubResearcherPort(port, agent, task.output, tally);
    const spec = sub.spec();
    const { result, answer } = await this.runAgent(provider, {
      port: sub, lead: false, phase: 'execute', planOnly: false,
      system: subResearcherPrompt(spec, task.objective, port.offline),
      tools: this.subResearcherTools(spec, port.offline),
      userMessages: [subResearcherMessage(task.objective, task.context)],
      steps,
      store: (data, usage) => log.store({ type: 'sub', agent, step: data, tally: sub.tally() }, usage),
      maxSteps: spec.limits.max_subagent_steps, maxStepsName: 'spec.limits.max_subagent_steps', deadline,
    });
    const outcome = result.outcome === 'completed' ? 'completed' : result.error.error === 'limit_reached' ? 'limit_reached' : 'failed';
    const summary = result.outcome === 'completed' ? answer : `${answer ? `${answer}\n\n` : ''}${result.error.message}`;
    const ended: ResearchTaskResult = { objective: task.objective, outcome, ...sub.tally(), summary: summary.slice(0, SUMMARY_CAP) };
    await log.store({ type: 'sub_end', agent, result: ended }, NO_USAGE);
    return ended;
  }

  private overBudget(charge: Charge, maxPerTurn: number): TurnResult | null {
    if (charge.balance <= 0) return failed('out_of_credits', 'The account ran out of credits during the turn: add credits, then continue the task.');
    if (charge.turnCredits >= maxPerTurn) return failed('limit_reached', `The turn used ${charge.turnCredits.toFixed(4)} credits, its limit (spec.limits.max_credits_per_turn) is ${maxPerTurn}.`);
    return null;
  }

  /**
   * Calls the model, retrying retryable failures after each of retryDelaysMs, or after the
   * provider's Retry-After when that is longer (this.retries); gives up with a bad_gateway failure when the
   * retries are spent, when the provider asks for a wait over MAX_RETRY_AFTER_MS, or when the
   * wait would end past the turn's deadline (failing now beats sleeping into limit_reached).
   * Each try first waits its place under the provider's limits (the model gate); a 429 tells the
   * gate, which slows every turn, and the call waits its place again without spending a retry.
   */
  private async callModel(provider: ModelProvider, messages: ModelMessage[], definitions: ModelToolDefinition[], port: AgentPort, deadline: number) {
    const gate = this.modelGate;
    for (let attempt = 0; ; ) {
      let streamed = '';
      let permit: Permit | undefined;
      try {
        permit = await gate?.acquire({
          tokens: () => requestTokens(messages, definitions), signal: port.signal, deadline,
          onLongWait: () => port.waitingOn('model_rate_limit'),
        });
        const reply = await provider.generate({
          messages, tools: definitions, signal: port.signal, cacheKey: port.taskId,
          onTextDelta: (delta) => {
            streamed += delta;
            port.text(delta);
          },
          // What every answer says of the limits reaches the other turns before they hit them.
          onRateLimits: gate?.onRateLimits,
        });
        permit?.release(reply.usage.inputTokens + reply.usage.outputTokens);
        // A reply that came whole (no stream asked for, or a server that ignored `stream: true`)
        // passed no deltas: its text reaches the task's stream here, and streamed text only once.
        if (reply.text.startsWith(streamed) && reply.text.length > streamed.length) port.text(reply.text.slice(streamed.length));
        return reply;
      } catch (err) {
        permit?.release();
        if (port.signal.aborted) throw port.signal.reason;
        if (err instanceof ProviderWaitTooLong) {
          return failed('bad_gateway', `The model provider's rate limits leave no place for the next model call within the turn's limit (spec.limits.max_turn_seconds): the next place is ${seconds(err.waitMs)} s away.`);
        }
        // Whether it is tried again or not, the reply never completed: a reader drops its text.
        if (streamed) await port.withdrawText();
        if (!(err instanceof ModelProviderError)) throw err;
        const failure = `The model provider failed${err.status ? ` (HTTP ${err.status})` : ''}`;
        const tries = attempt === 0 ? 'at the first try' : `after ${attempt + 1} tries`;
        if (!err.retryable) return failed('bad_gateway', `${failure}: ${err.message}`);
        if (gate && !RetryPolicy.spendsATry(err.status) && (err.retryAfterMs ?? 0) <= MAX_RETRY_AFTER_MS) {
          await gate.learn(err.rateLimits ?? {}, { retryAfterMs: err.retryAfterMs }).catch(() => undefined);
          continue;
        }
        attempt++;
        const next = this.retries.next(attempt, err.retryAfterMs);
        if (!next.retry && next.reason === 'exhausted') return failed('bad_gateway', `${failure} ${tries}: ${err.message}`);
        if (!next.retry) {
          // The other turns keep away from the provider until then too.
          if (gate && err.status === 429) await gate.learn(err.rateLimits ?? {}, { retryAfterMs: err.retryAfterMs }).catch(() => undefined);
          return failed('bad_gateway', `${failure}: ${err.message}. It asked to be called again in ${seconds(err.retryAfterMs!)} s, longer than a turn waits (${seconds(MAX_RETRY_AFTER_MS)} s).`);
        }
        const wait = next.delayMs;
        if (Date.now() + wait >= deadline) {
          return failed('bad_gateway', `${failure}: ${err.message}. Waiting ${seconds(wait)} s to try again would pass the turn's limit (spec.limits.max_turn_seconds).`);
        }
        await sleep(wait, port.signal);
      }
    }
  }

  /** Runs one tool call; every failure becomes text for the model, never a crashed turn. */
  private async runTool(call: ModelToolCall, port: AgentPort, offeredTools: AgentTool<unknown>[], step: number): Promise<string> {
    const started = Date.now();
    let input: unknown;
    try {
      input = JSON.parse(call.arguments || '{}');
    } catch {
      input = call.arguments;
    }
    await port.tool({ call_id: call.id, name: call.name, state: 'started', input: capStrings(input), summary: null, duration_ms: null });
    crashPoint('tool.started');
    const finish = async (ok: boolean, summary: string, content: string, rows?: ToolResult['rows']) => {
      await port.tool({
        call_id: call.id, name: call.name, state: ok ? 'finished' : 'failed', input: capStrings(input), summary, duration_ms: Date.now() - started, output: content, ...(rows ? { rows } : {}),
      });
      return content;
    };
    const tool = offeredTools.find((t) => t.name === call.name);
    if (!tool) return finish(false, `unknown tool ${call.name}`, `Error: there is no tool named "${call.name}" in this turn.`);
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      return finish(false, 'arguments are not a JSON object', 'Error: the arguments must be a JSON object. Call the tool again with valid JSON.');
    }
    const validate = validatorFor(tool);
    if (!validate(input)) {
      const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '(arguments)'} ${e.message}`).join('; ');
      return finish(false, 'invalid arguments', `Error: invalid arguments for ${tool.name}: ${problems}. Call it again with corrected arguments.`);
    }
    try {
      const result = await tool.run(input, toolContext(port, `${port.turnId}:${step}:${call.id}`, call.id));
      return finish(!result.isError, result.summary, result.content, result.rows);
    } catch (err) {
      if (port.signal.aborted) throw port.signal.reason;
      return finish(false, `${tool.name} failed`, `Error: ${tool.name} failed: ${(err as Error).message}`);
    }
  }
}

function seconds(ms: number): string {
  return String(Math.ceil(ms / 1000));
}
