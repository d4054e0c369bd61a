/**
 * Keeps a turn's conversation inside the model's context window (decisions §16.3) without
 * breaking the prompt cache: messages are only ever appended, until a request would pass the
 * budget. Then the oldest part of the conversation is replaced by one note, built from the
 * dropped messages without asking the model, that keeps what was learned: every source read
 * (source_id, URL, title; read_source reads it back), what was written where, and what is still
 * open. It compacts down to at most half the budget, so that it happens rarely. The system
 * message, the caller's words and the last two tool results are never dropped.
 */
import type { ModelMessage, ModelToolDefinition } from './providers/model-provider.js';
import { estimateTokens, messageChars } from './providers/provider-http.js';

/** The estimate's ratio (estimateTokens), to size a cut. */
const CHARS_PER_TOKEN = 4;

/** Tool results this recent are never dropped. */
const KEEP_RECENT_RESULTS = 2;
const SOURCE_ID = /\bsrc_[0-9A-Za-z]+\b/g;
const NOTE_HEAD = '[Context note] Earlier steps of this turn were compacted to keep the context small; this note keeps what they found.';
/** A kept tool result cut to fit (the last resort, when even a full compaction leaves too much). */
const CUT_NOTE = (id: string) => `\n[… cut to fit the context window; read the rest with read_source ${id ? `(source ${id})` : ''} or call the tool again.]`;

type ToolMessage = Extract<ModelMessage, { role: 'tool' }>;
type AssistantMessage = Extract<ModelMessage, { role: 'assistant' }>;

/**
 * The estimated tokens of a request: its messages and its tool definitions as JSON, the way they
 * go on the wire. Counting the encoding too (quotes, escapes, the fields around each message)
 * keeps the estimate on the safe side of what a provider counts: text alone ran about 8% under
 * (bench:research).
 */
export function requestTokens(messages: readonly ModelMessage[], tools: readonly ModelToolDefinition[]): number {
  return estimateTokens(JSON.stringify(messages).length + JSON.stringify(tools).length);
}

/** A snapshot's URL and title, looked up by source_id (null when the task has no such snapshot). */
export type SourceLookup = (sourceId: string) => Promise<{ url: string; title: string | null } | null>;

/** What compaction keeps across compactions of one turn: each note carries the earlier ones'. */
export class CompactionNote {
  private sources = new Map<string, string>();
  private written: string[] = [];
  private failed: string[] = [];
  private said: string[] = [];
  private lastPlan = '';

  clone(): CompactionNote {
    const copy = new CompactionNote();
    copy.adopt(this);
    return copy;
  }

  /** Takes over what `other` holds (the candidate note a compaction settled on). */
  adopt(other: CompactionNote): void {
    this.sources = new Map(other.sources);
    this.written = [...other.written];
    this.failed = [...other.failed];
    this.said = [...other.said];
    this.lastPlan = other.lastPlan;
  }

  /** Takes in the messages being dropped (an earlier note among them is already held here). */
  async absorb(dropped: readonly ModelMessage[], lookup: SourceLookup): Promise<void> {
    const callsById = new Map<string, { name: string; arguments: string }>();
    for (const m of dropped) {
      if (m.role === 'assistant') {
        for (const c of m.toolCalls ?? []) callsById.set(c.id, c);
        if (m.content?.trim()) this.lastPlan = m.content.trim();
      } else if (m.role === 'user') {
        if (!m.content.startsWith(NOTE_HEAD)) this.said.push(m.content);
      } else if (m.role === 'tool') {
        await this.absorbResult(m, callsById.get(m.toolCallId)?.arguments ?? '', lookup);
      }
    }
  }

  private async absorbResult(m: ToolMessage, args: string, lookup: SourceLookup): Promise<void> {
    const firstLine = m.content.split('\n', 1)[0]!.slice(0, 300);
    const isError = /^(Error|No rows were written|The spec was not changed|Could not)/.test(m.content);
    if (isError) {
      this.failed.push(`${m.name}(${args.slice(0, 200)}): ${firstLine}`);
      return;
    }
    if (m.name === 'write_rows' || m.name === 'update_spec') this.written.push(firstLine);
    if (m.name === 'web_search') this.written.push(`web_search ${args.slice(0, 200)} was run`);
    for (const id of new Set(m.content.match(SOURCE_ID) ?? [])) {
      if (this.sources.has(id)) continue;
      const found = await lookup(id);
      if (found) this.sources.set(id, `${found.url}${found.title ? ` "${found.title}"` : ''}`);
    }
  }

  message(): ModelMessage {
    const lines = [NOTE_HEAD];
    lines.push('', 'Sources read (read one again with read_source {source_id}):');
    lines.push(...(this.sources.size ? [...this.sources].map(([id, what]) => `- ${id}: ${what}`) : ['- none']));
    lines.push('', 'Done so far:', ...(this.written.length ? this.written.map((w) => `- ${w}`) : ['- nothing written yet']));
    const open = [
      ...this.said.map((s) => `- instruction: ${s.slice(0, 1000)}`),
      ...this.failed.map((f) => `- failed, not yet redone: ${f}`),
      ...(this.lastPlan ? [`- your last stated plan: ${this.lastPlan.slice(0, 2000)}`] : []),
    ];
    lines.push('', 'Still open:', ...(open.length ? open : ['- nothing noted']));
    return { role: 'user', content: lines.join('\n') };
  }
}

export interface Budget {
  /** QUARRY_MODEL_CONTEXT_TOKENS. */
  contextTokens: number;
  tools: readonly ModelToolDefinition[];
}

/**
 * `history` (the messages after the system message) made to fit, or null when it already fits.
 * `lead` messages at its start (the caller's words) are never dropped. Throws a RangeError when
 * even the kept messages cannot fit.
 */
export async function compact(system: ModelMessage, history: readonly ModelMessage[], lead: number, budget: Budget, note: CompactionNote, lookup: SourceLookup): Promise<ModelMessage[] | null> {
  const size = (messages: readonly ModelMessage[]) => requestTokens([system, ...messages], budget.tools);
  if (size(history) <= budget.contextTokens) return null;
  const toolAt = history.flatMap((m, i) => (m.role === 'tool' ? [i] : []));
  // The assistant message that asked for the oldest kept tool result is kept with it.
  const keepResult = toolAt.at(-Math.min(KEEP_RECENT_RESULTS, toolAt.length));
  let keepFrom = history.length;
  if (keepResult !== undefined) {
    keepFrom = keepResult;
    while (keepFrom > lead && history[keepFrom]!.role !== 'assistant') keepFrom--;
  }
  // Cuts fall just before an assistant message, so no tool result loses the call it answers.
  const cuts = history.flatMap((m, i) => (i > lead && i <= keepFrom && m.role === 'assistant' ? [i] : []));
  const half = Math.floor(budget.contextTokens / 2);
  const lookups = new Map<string, Awaited<ReturnType<SourceLookup>>>();
  const cached: SourceLookup = async (id) => {
    if (!lookups.has(id)) lookups.set(id, await lookup(id));
    return lookups.get(id)!;
  };
  let kept: ModelMessage[] = [...history];
  let chosen: CompactionNote | undefined;
  // The shortest cut that gets under half the budget, else the longest there is.
  for (const cut of cuts) {
    chosen = note.clone();
    await chosen.absorb(history.slice(lead, cut), cached);
    kept = [...history.slice(0, lead), chosen.message(), ...history.slice(cut)];
    if (size(kept) <= half) break;
  }
  if (chosen) note.adopt(chosen);
  return cutToFit(kept, lead, budget.contextTokens, size);
}

/** How much of a long reply of the model is kept when it is cut, and what follows the cut. */
const REPLY_KEEP_CHARS = 2_000;
const REPLY_CUT_NOTE = '\n[… the rest of this reply is cut to fit the context window.]';

/** What an answered call's arguments become when they are cut (valid JSON, so every provider takes it). */
const CUT_ARGUMENTS = (chars: number) => JSON.stringify({ note: `arguments of ${chars} characters, cut to fit the context window; the call was made and answered` });

/**
 * The last resort, until the request fits: the arguments of calls already answered are cut (the
 * call is done; its result says what came of it), largest first, then the model's long replies
 * (their head kept), then the longest kept tool results.
 */
function cutToFit(messages: ModelMessage[], lead: number, maxTokens: number, size: (m: readonly ModelMessage[]) => number): ModelMessage[] {
  const out = [...messages];
  let over = size(out) - maxTokens;
  const answered = new Set(out.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  const calls = out.flatMap((m, i) => (i >= lead && m.role === 'assistant' && m.toolCalls?.length ? [i] : [])).sort((a, b) => messageChars(out[b]!) - messageChars(out[a]!));
  for (const i of calls) {
    if (over <= 0) break;
    const m = out[i] as AssistantMessage;
    const toolCalls = m.toolCalls!.map((c) => {
      const cut = CUT_ARGUMENTS(c.arguments.length);
      if (over <= 0 || !answered.has(c.id) || c.arguments.length <= cut.length) return c;
      over -= Math.floor((c.arguments.length - cut.length) / CHARS_PER_TOKEN);
      return { ...c, arguments: cut };
    });
    out[i] = { ...m, toolCalls };
  }
  // The model's own long replies: their head stays, the rest was said and acted on.
  const replies = out.flatMap((m, i) => (i >= lead && m.role === 'assistant' && (m.content?.length ?? 0) > REPLY_KEEP_CHARS ? [i] : [])).sort((a, b) => messageChars(out[b]!) - messageChars(out[a]!));
  for (const i of replies) {
    if (over <= 0) break;
    const m = out[i] as AssistantMessage;
    const text = m.content!;
    const keep = Math.max(REPLY_KEEP_CHARS, text.length - over * CHARS_PER_TOKEN - REPLY_CUT_NOTE.length - CHARS_PER_TOKEN);
    const content = text.slice(0, keep) + REPLY_CUT_NOTE;
    over -= Math.floor((text.length - content.length) / CHARS_PER_TOKEN);
    out[i] = { ...m, content };
  }
  const results = out.flatMap((m, i) => (i >= lead && m.role === 'tool' ? [i] : [])).sort((a, b) => messageChars(out[b]!) - messageChars(out[a]!));
  for (const i of results) {
    if (over <= 0) break;
    const m = out[i] as ToolMessage;
    const id = m.content.match(SOURCE_ID)?.[0] ?? '';
    const keep = Math.max(0, m.content.length - over * CHARS_PER_TOKEN - CUT_NOTE(id).length - CHARS_PER_TOKEN);
    const content = m.content.slice(0, keep) + CUT_NOTE(id);
    over -= Math.floor((m.content.length - content.length) / CHARS_PER_TOKEN);
    out[i] = { ...m, content };
  }
  if (size(out) > maxTokens) throw new RangeError(`what must stay (the system message, the caller's words and the last call) needs about ${size(out)} tokens`);
  return out;
}
