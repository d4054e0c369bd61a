/**
 * A task's events as a person reads them: the model's text run together as it arrives, each
 * tool call as one folded line (its input and result inside) that follows the call from
 * started to finished, and where turns start and end.
 */
import type { TaskEvent, ToolEvent } from './api.js';
import { entriesOf } from './event-entries.js';

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
