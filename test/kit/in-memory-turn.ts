/**
 * Test doubles for the agent loop, with no sockets and no database: a scripted ModelProvider that
 * records every call it receives, and an in-memory TurnPort that keeps the task's spec, rows,
 * steps and credits and journals everything the turn did to it.
 */
import { fromMicros, pricesInMicros, stepCostMicros, toMicros, type MicroPrices } from '../../src/domain/credits.js';
import { loadConfig } from '../../src/config.js';
import type { Prices } from '../../src/domain/credits.js';
import type {
  ModelMessage,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelToolCall,
  ModelToolDefinition,
  ModelUsage,
} from '../../src/agent/providers/model-provider.js';
import crypto from 'node:crypto';
import type { Charge, InputFile, ReadSource, RowWriter, StepUsage, StoredStep, ToolEvent, TurnPort, TurnState } from '../../src/agent/turn-port.js';
import type { SourceSnapshotRecord } from '../../src/domain/records.js';
import type { TaskActivity, TaskPhase, TaskWait, TurnKind } from '../../src/contract/index.js';
import type { TaskSpec, TaskSpecInput } from '../../src/contract/index.js';
import { normalizeSpec } from '../../src/domain/spec.js';

// ---- the model --------------------------------------------------------------------------------

/** A tool call in a script: arguments given as a value are sent as JSON, a string is sent as it is. */
export interface ScriptedCall {
  id?: string;
  name: string;
  arguments: unknown;
}

/** One scripted answer: a reply, a failure to throw, or a function of the request. */
export type ScriptedReply =
  | { text?: string; toolCalls?: ScriptedCall[]; usage?: Partial<ModelUsage> }
  | { error: Error }
  | ((request: ModelRequest) => ModelResponse | Promise<ModelResponse>);

/** A call the model received, copied as it was sent. */
export interface RecordedCall {
  messages: ModelMessage[];
  /** Names of the tools offered. */
  tools: string[];
  /** The tools offered, as sent. */
  definitions: ModelToolDefinition[];
  /** The system prompt (the first message). */
  system: string;
}

/** A reply that never comes: rejects with an AbortError when the request's signal fires, as real providers do. */
export function untilAborted(onCalled?: () => void): ScriptedReply {
  return (request) =>
    new Promise<ModelResponse>((_, reject) => {
      const abort = () => reject(Object.assign(new Error('the model call was aborted'), { name: 'AbortError' }));
      if (request.signal.aborted) return abort();
      request.signal.addEventListener('abort', abort, { once: true });
      onCalled?.();
    });
}

export class ScriptedModel implements ModelProvider {
  readonly specificationVersion = 'v1' as const;
  readonly name = 'scripted';
  readonly calls: RecordedCall[] = [];
  private readonly script: ScriptedReply[];

  constructor(...script: ScriptedReply[]) {
    this.script = script;
  }

  /** Replies not used yet. */
  get remaining(): number {
    return this.script.length;
  }

  async generate(request: ModelRequest): Promise<ModelResponse> {
    const messages = structuredClone(request.messages);
    const first = messages[0];
    this.calls.push({ messages, tools: request.tools.map((t) => t.name), definitions: structuredClone(request.tools), system: first?.role === 'system' ? first.content : '' });
    const next = this.script.shift();
    if (!next) throw new Error(`the model was called ${this.calls.length} times, more than its script has replies`);
    if (typeof next === 'function') return next(request);
    if ('error' in next) throw next.error;
    const text = next.text ?? '';
    // Streamed in two pieces, as a streaming provider would.
    if (text) for (const piece of [text.slice(0, text.length >> 1), text.slice(text.length >> 1)]) if (piece) request.onTextDelta?.(piece);
    const toolCalls: ModelToolCall[] = (next.toolCalls ?? []).map((c, i) => ({
      id: c.id ?? `call_${this.calls.length}_${i + 1}`,
      name: c.name,
      arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
    }));
    return {
      text,
      toolCalls,
      usage: { inputTokens: next.usage?.inputTokens ?? 100, cachedInputTokens: next.usage?.cachedInputTokens ?? 0, outputTokens: next.usage?.outputTokens ?? 10 },
      finishReason: toolCalls.length ? 'tool_calls' : 'stop',
    };
  }
}

// ---- the task ---------------------------------------------------------------------------------

/** Everything the turn did through the port, in order. */
export type TurnJournalEntry =
  | { type: 'state'; phase: TaskPhase | null; activity: TaskActivity | null }
  | { type: 'text'; text: string; restart?: true }
  | { type: 'tool'; event: ToolEvent }
  | { type: 'checkpoint'; step: number; data: StoredStep; usage: StepUsage }
  | { type: 'spec'; spec: TaskSpec }
  | { type: 'rows'; outputId: string; writeKey: string; rows: string[] };

/** A spec as a request gives it; defaults are filled as for a request. */
export type SpecRequest = { [K in keyof TaskSpecInput]?: unknown };

export interface InMemoryTurnOptions {
  turnId?: string;
  kind?: TurnKind;
  planOnly?: boolean;
  offline?: boolean;
  /** The task's spec; default: the first user message as its prompt. */
  spec?: SpecRequest;
  /** Steps this turn checkpointed before (a resumed turn). */
  steps?: StoredStep[];
  userMessages?: string[];
  /** The account's balance before the turn (default 100 credits). */
  balance?: number;
  prices?: Prices;
  inputs?: InputFile[];
  workspaceDir?: string;
}


export class InMemoryTurn implements TurnPort {
  readonly turnId: string;
  readonly taskId = 'tsk_memory';
  readonly kind: TurnKind;
  readonly planOnly: boolean;
  readonly offline: boolean;
  readonly steps: readonly StoredStep[];
  readonly userMessages: readonly string[];
  readonly journal: TurnJournalEntry[] = [];
  /** Stored rows by output id, in order. */
  readonly rows = new Map<string, string[]>();
  /** Stored steps by step number: earlier ones and this run's checkpoints. */
  readonly stored = new Map<number, StoredStep>();
  private balanceMicros: number;
  private turnMicros = 0;
  phase: TaskPhase | null;
  activity: TaskActivity | null;
  private currentSpec: TaskSpec;
  private readonly controller = new AbortController();
  private readonly prices: MicroPrices;
  private readonly writes = new Map<string, { firstRow: number; count: number }>();
  private readonly inputFiles: InputFile[];
  private readonly workspace: string;

  constructor(opts: InMemoryTurnOptions = {}) {
    this.turnId = opts.turnId ?? 'turn_1';
    this.kind = opts.kind ?? 'execute';
    this.planOnly = opts.planOnly ?? false;
    this.offline = opts.offline ?? false;
    this.steps = opts.steps ?? [];
    this.steps.forEach((s, i) => this.stored.set(i + 1, s));
    this.userMessages = opts.userMessages ?? ['Find the oldest granite quarries.'];
    this.currentSpec = normalizeSpec((opts.spec ?? { prompt: this.userMessages[0] }) as TaskSpecInput);
    this.balanceMicros = toMicros(opts.balance ?? 100);
    // Quarry's own prices unless the test sets some (QUARRY_PRICE_* left at their defaults).
    this.prices = pricesInMicros(opts.prices ?? loadConfig({}).prices);
    this.inputFiles = opts.inputs ?? [];
    this.workspace = opts.workspaceDir ?? '/nonexistent/workspace';
    // The state a claimed turn starts in (task-service's startingState).
    this.phase = this.kind === 'plan' ? 'plan' : 'execute';
    this.activity = this.kind === 'plan' ? 'planning' : 'executing';
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Stops the turn, as `POST /task/{id}/stop` does. */
  stop(reason: unknown = Object.assign(new Error('turn stopped'), { name: 'AbortError' })): void {
    this.controller.abort(reason);
  }

  // ---- what the tests read ----

  get states(): { phase: TaskPhase | null; activity: TaskActivity | null }[] {
    return this.journal.flatMap((e) => (e.type === 'state' ? [{ phase: e.phase, activity: e.activity }] : []));
  }

  get toolEvents(): ToolEvent[] {
    return this.journal.flatMap((e) => (e.type === 'tool' ? [e.event] : []));
  }

  get checkpoints(): { step: number; data: StoredStep; usage: StepUsage }[] {
    return this.journal.flatMap((e) => (e.type === 'checkpoint' ? [{ step: e.step, data: e.data, usage: e.usage }] : []));
  }

  /** The streamed text as a reader shows it: a restart drops the text since the last entry of another kind. */
  get streamedText(): string {
    let shown = '';
    let replyStart = 0;
    for (const e of this.journal) {
      if (e.type !== 'text') replyStart = shown.length;
      else shown = `${e.restart ? shown.slice(0, replyStart) : shown}${e.text}`;
    }
    return shown;
  }

  /** The parsed rows of an output. */
  rowsOf(outputId: string): Record<string, unknown>[] {
    return (this.rows.get(outputId) ?? []).map((r) => JSON.parse(r) as Record<string, unknown>);
  }

  /** Write keys used, in order. */
  get writeKeys(): string[] {
    return this.journal.flatMap((e) => (e.type === 'rows' ? [e.writeKey] : []));
  }

  // ---- the port ----

  spec(): TaskSpec {
    return this.currentSpec;
  }

  async updateSpec(spec: TaskSpec): Promise<void> {
    this.currentSpec = spec;
    this.journal.push({ type: 'spec', spec });
  }

  async rowCounts(): Promise<Map<string, number>> {
    return new Map([...this.rows].map(([id, list]) => [id, list.length]));
  }

  async *readRows(outputId: string): AsyncIterable<string> {
    yield* this.rows.get(outputId) ?? [];
  }

  async appendRows(writeKey: string, outputId: string, rows: RowWriter[]): Promise<{ firstRow: number; count: number }> {
    const earlier = this.writes.get(writeKey);
    if (earlier) return earlier;
    const list = this.rows.get(outputId) ?? [];
    const firstRow = list.length + 1;
    const made = rows.map((make, i) => make(firstRow + i));
    list.push(...made);
    this.rows.set(outputId, list);
    const written = { firstRow, count: rows.length };
    this.writes.set(writeKey, written);
    this.journal.push({ type: 'rows', outputId, writeKey, rows: made });
    return written;
  }

  /** Snapshots of what the turn's tools read, in order; the same URL and text are kept once. */
  readonly sources: SourceSnapshotRecord[] = [];

  async recordSource(source: ReadSource): Promise<string> {
    const sha256 = crypto.createHash('sha256').update(source.text).digest('hex');
    const kept = this.sources.find((s) => s.url === source.url && s.sha256 === sha256);
    if (kept) return kept.id;
    const id = `src_${this.sources.length + 1}`;
    this.sources.push({ id, taskId: this.taskId, ...source, fetchedAt: new Date().toISOString(), sha256, bytes: Buffer.byteLength(source.text) });
    return id;
  }

  async citedSources(urls: string[], uploadIds: string[]): Promise<SourceSnapshotRecord[]> {
    return this.sources.filter((s) => urls.includes(s.url) || urls.includes(s.finalUrl) || (s.uploadId !== null && uploadIds.includes(s.uploadId)));
  }

  async source(sourceId: string): Promise<SourceSnapshotRecord | undefined> {
    return this.sources.find((s) => s.id === sourceId);
  }

  /** Marks a write key as used before the turn runs (a call that wrote, then the worker died). */
  seedWrite(writeKey: string, outputId: string, rows: string[]): void {
    const list = this.rows.get(outputId) ?? [];
    this.writes.set(writeKey, { firstRow: list.length + 1, count: rows.length });
    list.push(...rows);
    this.rows.set(outputId, list);
  }

  async inputs(): Promise<InputFile[]> {
    return this.inputFiles;
  }

  async workspaceDir(): Promise<string> {
    return this.workspace;
  }

  async setState(state: TurnState): Promise<void> {
    const phase = state.phase ?? this.phase;
    const activity = state.activity ?? this.activity;
    if (phase === this.phase && activity === this.activity) return;
    this.phase = phase;
    this.activity = activity;
    this.journal.push({ type: 'state', phase, activity });
  }

  /** Calls waiting long on a provider now, as the task would show them. */
  waitingNow = 0;

  waitingOn(_wait: TaskWait): () => void {
    this.waitingNow++;
    let ended = false;
    return () => {
      if (!ended) this.waitingNow--;
      ended = true;
    };
  }

  text(delta: string): void {
    this.journal.push({ type: 'text', text: delta });
  }

  async withdrawText(): Promise<void> {
    this.journal.push({ type: 'text', text: '', restart: true });
  }

  async tool(event: ToolEvent): Promise<void> {
    this.journal.push({ type: 'tool', event: structuredClone(event) });
  }

  async checkpoint(step: number, data: StoredStep, usage: StepUsage): Promise<Charge> {
    // As the task service does: a step is stored and charged once.
    if (!this.stored.has(step)) {
      this.stored.set(step, structuredClone(data));
      this.journal.push({ type: 'checkpoint', step, data: structuredClone(data), usage });
      const cost = stepCostMicros(this.prices, usage);
      this.turnMicros += cost;
      this.balanceMicros = Math.max(0, this.balanceMicros - cost);
    }
    return { balance: this.balance, turnCredits: this.turnCredits };
  }

  /** The account's balance now, in credits (charged in micro-credits, floor 0, as the task service does). */
  get balance(): number {
    return fromMicros(this.balanceMicros);
  }

  /** What this turn has used, in credits. */
  get turnCredits(): number {
    return fromMicros(this.turnMicros);
  }
}
