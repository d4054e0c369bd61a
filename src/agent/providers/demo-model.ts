/**
 * The demo model (QUARRY_MODEL_PROVIDER=demo): a scripted stand-in for a real model, so a
 * newcomer without one can watch a turn go through every stage — tool calls, streamed text,
 * typed rows with sources, credits charged, `done`. It asks nothing and knows nothing: it counts
 * the words of the latest message, or, in a group's run, writes one row for its input in the
 * group's table. Every row it writes and every answer it gives says so.
 */
import type { ColumnType, OutputDecl } from '../../contract/index.js';
import { parseRunMessage } from '../../domain/run-message.js';
import { GAPS_HEADING } from '../output-check.js';
import { CARRY_OUT_PLAN, SPEC_HEADING } from '../system-prompt.js';
import type { ModelMessage, ModelProvider, ModelRequest, ModelResponse, ModelToolCall } from './model-provider.js';
import { modelResponse } from './provider-http.js';

export const DEMO_OUTPUT_ID = 'demo_word_counts';
/** A source that names itself as not real (.invalid is reserved for exactly that). */
const DEMO_SOURCE = { url: 'https://demo-model.quarry.invalid/', title: 'Quarry demo model: no page was read' };
const MAX_WORDS = 10;

export function createDemoProvider(): ModelProvider {
  return { specificationVersion: 'v1', name: 'demo', generate: async (request) => nextStep(request) };
}

function nextStep(request: ModelRequest): ModelResponse {
  const last = request.messages.at(-1);
  if (last?.role === 'user' && last.content.startsWith(GAPS_HEADING)) {
    const text = 'I am the demo model: I read no pages, so my rows cite none and stay unverified. There is nothing more I can do.';
    request.onTextDelta?.(text);
    return answer(request, text, [], 'stop');
  }
  // The message to count: the latest one from the user, not the loop's own nudge to carry a plan out.
  let lastUser = request.messages.length - 1;
  while (lastUser >= 0 && (request.messages[lastUser]!.role !== 'user' || request.messages[lastUser]!.content === CARRY_OUT_PLAN)) lastUser--;
  const message = lastUser >= 0 ? (request.messages[lastUser] as { content: string }).content : '';
  const since = request.messages.slice(lastUser + 1);
  const called = new Set(since.flatMap((m) => (m.role === 'assistant' ? m.toolCalls ?? [] : [])).map((c) => c.name));
  const offered = new Set(request.tools.map((t) => t.name));

  const run = parseRunMessage(message);
  if (run && offered.has('write_rows') && !called.has('write_rows')) {
    const output = specOutputs(request.messages).find((o) => o.id === run.outputId);
    const about = Object.values(run.input).map(String).join(', ');
    const row = Object.fromEntries((output?.columns ?? []).map((c) => [c.name, demoValue(c.type, about)]));
    return toolStep(request, `I am the demo model: I will write one made-up row for input ${run.index} (${about}).`, {
      name: 'write_rows',
      arguments: JSON.stringify({ output: run.outputId, rows: [row], sources: [DEMO_SOURCE] }),
    });
  }
  if (!run && offered.has('update_spec') && !called.has('update_spec')) {
    return toolStep(request, 'I am the demo model: I will count the words of your message into a table.', {
      name: 'update_spec',
      arguments: JSON.stringify({
        outputs: [{
          id: DEMO_OUTPUT_ID,
          kind: 'table',
          description: 'Written by the demo model: how often each word occurs in the latest message.',
          columns: [{ name: 'word', type: 'string', required: true }, { name: 'count', type: 'integer', required: true }],
        }],
      }),
    });
  }
  const rows = wordCounts(message);
  if (!run && offered.has('write_rows') && !called.has('write_rows') && rows.length > 0) {
    return toolStep(request, `Writing ${rows.length} rows.`, {
      name: 'write_rows',
      arguments: JSON.stringify({ output: DEMO_OUTPUT_ID, rows, sources: [DEMO_SOURCE] }),
    });
  }
  const results = since.filter((m): m is Extract<ModelMessage, { role: 'tool' }> => m.role === 'tool').map((m) => `${m.name}: ${m.content}`);
  const text = [
    'This turn was run by Quarry\'s demo model (QUARRY_MODEL_PROVIDER=demo): no real model was asked and no page was read.',
    results.length ? `What the tools answered — ${results.join(' ')}` : 'No tool was offered to it, so it only answers.',
    'To research for real, point Quarry at a model: QUARRY_MODEL_BASE_URL=… QUARRY_MODEL=… npm start (docs/agent.md).',
  ].join('\n');
  // Streamed as a real model would, one line at a time.
  for (const line of text.split(/(?<=\n)/)) request.onTextDelta?.(line);
  return answer(request, text, [], 'stop');
}

/** The outputs of the spec the system message ends with. */
function specOutputs(messages: ModelMessage[]): OutputDecl[] {
  const system = messages.find((m) => m.role === 'system');
  const at = system ? system.content.lastIndexOf(SPEC_HEADING) : -1;
  if (!system || at < 0) return [];
  return (JSON.parse(system.content.slice(at + SPEC_HEADING.length)) as { outputs?: OutputDecl[] }).outputs ?? [];
}

/** A value of the column's type that says it is made up (a string names the input it is about). */
function demoValue(type: ColumnType, about: string): unknown {
  switch (type) {
    case 'number':
    case 'integer': return about.split(/\s+/).filter(Boolean).length;
    case 'boolean': return true;
    case 'date': return new Date().toISOString().slice(0, 10);
    case 'url': return DEMO_SOURCE.url;
    case 'json': return { demo: about };
    default: return `demo value for ${about}`;
  }
}

function toolStep(request: ModelRequest, text: string, call: Omit<ModelToolCall, 'id'>): ModelResponse {
  request.onTextDelta?.(text);
  return answer(request, text, [{ id: `demo_call_${request.messages.length}`, ...call }], 'tool_calls');
}

/** The most frequent words (letters and digits, any script), most frequent first, ties in order of appearance. */
function wordCounts(message: string): { word: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const word of message.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) counts.set(word, (counts.get(word) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).slice(0, MAX_WORDS).map(([word, count]) => ({ word, count }));
}

/** The demo reports no usage: its tokens are estimated as for a server that reports none, and charged like a model's. */
function answer(request: ModelRequest, text: string, toolCalls: ModelToolCall[], finishReason: string): ModelResponse {
  return modelResponse(request, { text, toolCalls, inputTokens: undefined, outputTokens: undefined }, finishReason);
}
