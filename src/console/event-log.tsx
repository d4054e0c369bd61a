/**
 * A task's events as a person reads them: the model's text run together as it arrives, each
 * tool call as one folded line (its input and result inside) that follows the call from
 * started to finished, and where turns start and end.
 */
import type { TaskEvent, ToolEvent } from './api.js';
import { credits } from './ui.js';

type Entry =
  | { kind: 'text'; key: string; turn: string | null; text: string }
  | { kind: 'tool'; key: string; event: ToolEvent }
  | { kind: 'note'; key: string; text: string; tone: 'info' | 'error' };

const DONE_LABELS: Record<string, string> = { completed: 'Turn completed', stopped: 'Turn stopped', failed: 'Turn failed', refused: 'Refused' };

function entriesOf(events: readonly TaskEvent[]): Entry[] {
  const entries: Entry[] = [];
  /** Where each call's line is, so its later states replace it. */
  const calls = new Map<string, number>();
  for (const event of events) {
    const key = `${event.seq ?? event.at}-${event.type}`;
    switch (event.type) {
      case 'text': {
        const last = entries.at(-1);
        if (last?.kind === 'text' && last.turn === event.turn_id) last.text += event.text;
        else entries.push({ kind: 'text', key, turn: event.turn_id, text: event.text });
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
  return entries;
}

function ToolLine(props: { event: ToolEvent }) {
  const { event } = props;
  const state = event.state === 'started' ? 'running…' : event.state;
  return (
    <details class={`tool tool-${event.state}`}>
      <summary>
        <span class="tool-name">{event.name}</span> <span class="tool-summary">{event.summary ?? state}</span>
        {event.state !== 'finished' && <span class="visually-hidden"> ({state})</span>}
      </summary>
      <h3>Input</h3>
      <pre>{JSON.stringify(event.input, null, 2)}</pre>
      {event.output !== undefined && (
        <>
          <h3>Result{event.duration_ms !== null ? ` (${event.duration_ms} ms)` : ''}</h3>
          <pre>{event.output}</pre>
        </>
      )}
    </details>
  );
}

export function EventLog(props: { events: readonly TaskEvent[] }) {
  const entries = entriesOf(props.events);
  if (entries.length === 0) return <p class="hint">Nothing has happened yet.</p>;
  return (
    <ol class="log">
      {entries.map((entry) => (
        <li key={entry.key} class={`log-${entry.kind}${entry.kind === 'note' ? ` log-${entry.tone}` : ''}`}>
          {entry.kind === 'text' && <p class="log-words">{entry.text}</p>}
          {entry.kind === 'tool' && <ToolLine event={entry.event} />}
          {entry.kind === 'note' && entry.text}
        </li>
      ))}
    </ol>
  );
}
