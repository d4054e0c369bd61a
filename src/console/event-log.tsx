/**
 * A task's events as a person reads them: the caller's words, the model's text run together as it
 * arrives, each tool call as one folded line (its input and result inside; a `research` call with
 * each sub-researcher's calls under it), and where turns start and end, each with its time. The
 * log follows new events while the reader is at its end; scrolled up, it stays where they read
 * and offers a way down.
 */
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { TaskEvent, ToolEvent } from './api.js';
import { entriesOf, type SubResearcher } from './event-entries.js';
import { duration, Time } from './ui.js';

/** How near the end (in pixels) still counts as reading the newest events. */
const AT_END_PX = 24;

function ToolLine(props: { event: ToolEvent; researchers?: SubResearcher[] }) {
  const { event, researchers = [] } = props;
  const state = event.state === 'started' ? 'running…' : event.state;
  return (
    <details class={`tool tool-${event.state}`}>
      <summary>
        <span class="tool-name">{event.name}</span> <span class="tool-summary">{event.summary ?? state}</span>
        {event.duration_ms !== null && <span class="hint"> · {duration(event.duration_ms)}</span>}
        {researchers.length > 0 && <span class="hint"> · {researchers.length} sub-researcher{researchers.length === 1 ? '' : 's'}</span>}
        {event.state !== 'finished' && <span class="visually-hidden"> ({state})</span>}
      </summary>
      {researchers.length > 0 && (
        <ol class="researchers" aria-label="Sub-researchers">
          {researchers.map((r) => (
            <li key={r.index}>
              <p class="researcher">Sub-researcher {r.index + 1}{r.objective ? `: ${r.objective}` : ''}</p>
              <ul class="sub-calls">
                {r.calls.map((call) => <li key={call.call_id}><ToolLine event={call} /></li>)}
              </ul>
            </li>
          ))}
        </ol>
      )}
      <h3>Input</h3>
      <pre>{JSON.stringify(event.input, null, 2)}</pre>
      {event.output !== undefined && (
        <>
          <h3>Result{event.duration_ms !== null ? ` (${duration(event.duration_ms)})` : ''}</h3>
          <pre>{event.output}</pre>
        </>
      )}
    </details>
  );
}

export function EventLog(props: { events: readonly TaskEvent[]; prompt: string | null | undefined }) {
  const entries = entriesOf(props.events);
  const box = useRef<HTMLOListElement>(null);
  const following = useRef(true);
  const [behind, setBehind] = useState(false);
  /** Changes whenever the log grows: an entry more, or more text in the last one. */
  const last = entries.at(-1);
  const size = `${entries.length}:${last?.kind === 'text' ? last.text.length : last?.kind === 'tool' ? last.event.state : ''}`;
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    if (following.current) el.scrollTop = el.scrollHeight;
    else setBehind(true);
  }, [size]);
  const onScroll = () => {
    const el = box.current!;
    following.current = el.scrollHeight - el.scrollTop - el.clientHeight <= AT_END_PX;
    if (following.current) setBehind(false);
  };
  const toEnd = () => {
    following.current = true;
    setBehind(false);
    box.current!.scrollTop = box.current!.scrollHeight;
  };
  return (
    <div class="log-box">
      <ol class="log" ref={box} onScroll={onScroll} aria-label="Events, oldest first" tabIndex={0}>
        {props.prompt && (
          <li class="log-said">
            <span class="log-time" />
            <div class="log-body">
              <p class="said-who">Prompt</p>
              <p class="log-words">{props.prompt}</p>
            </div>
          </li>
        )}
        {entries.length === 0 && <li class="hint">Nothing has happened yet.</li>}
        {entries.map((entry) => (
          <li key={entry.key} class={`log-${entry.kind}${entry.kind === 'note' ? ` log-${entry.tone}` : ''}`}>
            <span class="log-time"><Time at={entry.at} seconds /></span>
            <div class="log-body">
              {entry.kind === 'said' && (
                <>
                  <p class="said-who">Message{entry.queued ? ', queued behind the running turn' : ''}</p>
                  <p class="log-words">{entry.text}</p>
                </>
              )}
              {entry.kind === 'text' && <p class="log-words">{entry.text}</p>}
              {entry.kind === 'tool' && <ToolLine event={entry.event} researchers={entry.researchers} />}
              {entry.kind === 'note' && entry.text}
            </div>
          </li>
        ))}
      </ol>
      {behind && <button type="button" class="secondary small to-end" onClick={toEnd}>Newer events below: follow</button>}
    </div>
  );
}
