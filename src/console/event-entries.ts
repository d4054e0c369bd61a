/**
 * A task's events as the console's log lists them: the model's text run together as it arrives
 * (less the text of replies cut off and asked for again), each tool call as one entry that
 * follows the call from started to finished, and notes where turns start and end. Plain
 * TypeScript, so that tests run it without a browser.
 */
import { startsModelReply, type TaskEvent, type ToolEvent } from '../../packages/client/src/index.js';
import { credits } from './credits.js';

type TextEntry = { kind: 'text'; key: string; turn: string | null; text: string };
export type Entry =
  | TextEntry
  | { kind: 'tool'; key: string; event: ToolEvent }
  | { kind: 'note'; key: string; text: string; tone: 'info' | 'error' };

const DONE_LABELS: Record<string, string> = { completed: 'Turn completed', stopped: 'Turn stopped', failed: 'Turn failed', refused: 'Refused' };

export function entriesOf(events: readonly TaskEvent[]): Entry[] {
  const entries: Entry[] = [];
  /** Where each call's line is, so its later states replace it. */
  const calls = new Map<string, number>();
  /** The text entries the model reply under way writes into, each with where the reply's text starts in it. */
  let reply: { entry: TextEntry; start: number }[] = [];
  for (const event of events) {
    const key = `${event.seq ?? event.at}-${event.type}`;
    if (startsModelReply(event)) reply = [];
    switch (event.type) {
      case 'text': {
        if (event.restart) {
          // The reply was cut off and is asked for again: its text goes (docs/api.md).
          for (const { entry, start } of reply) entry.text = entry.text.slice(0, start);
          reply = [];
        }
        let last = entries.at(-1);
        if (last?.kind !== 'text' || last.turn !== event.turn_id) {
          last = { kind: 'text', key, turn: event.turn_id, text: '' };
          entries.push(last);
        }
        if (reply.at(-1)?.entry !== last) reply.push({ entry: last, start: last.text.length });
        last.text += event.text;
        break;
      }
      case 'tool': {
        const call = `${event.turn_id}/${event.call_id}`;
        const at = calls.get(call);
        if (at === undefined) {
          calls.set(call, entries.length);
          entries.push({ kind: 'tool', key, event });
        } else {
          entries[at] = { kind: 'tool', key: entries[at]!.key, event };
        }
        break;
      }
      case 'task':
        if (event.reason === 'created') entries.push({ kind: 'note', key, text: 'Task created', tone: 'info' });
        else if (event.reason === 'turn_started') entries.push({ kind: 'note', key, text: 'Turn started', tone: 'info' });
        else if (event.reason === 'message_queued') entries.push({ kind: 'note', key, text: 'Message queued behind the running turn', tone: 'info' });
        break;
      case 'error':
        entries.push({ kind: 'note', key, text: event.message, tone: 'error' });
        break;
      case 'done':
        if (event.outcome !== 'idle') entries.push({ kind: 'note', key, text: `${DONE_LABELS[event.outcome] ?? event.outcome} · ${credits(event.credits_used)} credits`, tone: event.outcome === 'failed' ? 'error' : 'info' });
        break;
    }
  }
  // A reply withdrawn whole leaves its entries empty.
  return entries.filter((entry) => entry.kind !== 'text' || entry.text !== '');
}
