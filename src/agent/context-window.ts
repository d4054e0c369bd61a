/**
 * Keeps a turn's conversation inside the model's context window. When the messages grow past the
 * budget, the oldest tool results are cut to a short head plus a note, newest last, until the
 * whole fits; the newest results, the system prompt and the user's words are never cut. The full
 * text of every tool result stays in the turn's `tool` events and step checkpoints.
 */
import type { ModelMessage } from './providers/model-provider.js';

/** Tool results this recent are always sent whole. */
const KEEP_RECENT_RESULTS = 2;
const HEAD_CHARS = 400;

function size(message: ModelMessage): number {
  if (message.role === 'assistant') return (message.content?.length ?? 0) + (message.toolCalls ?? []).reduce((n, c) => n + c.arguments.length + c.name.length, 0);
  return message.content.length;
}

function shorten(content: string): string {
  return `${content.slice(0, HEAD_CHARS)}\n[… ${content.length - HEAD_CHARS} more characters cut to save context; the full result is in the task's event history. Call the tool again if you need it.]`;
}

/** Returns `messages`, or a copy with old tool results shortened so the total is at most `maxChars` where possible. */
export function fitToContext(messages: ModelMessage[], maxChars: number): ModelMessage[] {
  let total = messages.reduce((n, m) => n + size(m), 0);
  if (total <= maxChars) return messages;
  const toolIndexes = messages.flatMap((m, i) => (m.role === 'tool' ? [i] : []));
  const candidates = toolIndexes.slice(0, Math.max(0, toolIndexes.length - KEEP_RECENT_RESULTS));
  const out = [...messages];
  for (const i of candidates) {
    if (total <= maxChars) break;
    const message = out[i] as Extract<ModelMessage, { role: 'tool' }>;
    if (message.content.length <= HEAD_CHARS * 2) continue;
    const content = shorten(message.content);
    total -= message.content.length - content.length;
    out[i] = { ...message, content };
  }
  return out;
}
