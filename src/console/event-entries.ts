/**
 * A task's events as the console's log lists them: the caller's words where they were said, the
 * model's text run together as it arrives (less the text of replies cut off and asked for again),
 * each tool call as one entry that follows the call from started to finished (a `research` call
 * with its sub-researchers' calls inside it), and where turns start and end, with how long they
 * took. Every entry keeps the time of its first event. Plain TypeScript, so that tests run it
 * without a browser.
 */
import { startsModelReply, type TaskEvent, type ToolEvent } from '../../packages/client/src/index.js';
import { credits } from './credits.js';
import { duration } from './duration.js';

type TextEntry = { kind: 'text'; key: string; at: string; turn: string | null; text: string };

/** A sub-researcher of a `research` call: its objective and its own tool calls, in order. */
export interface SubResearcher {
  index: number;
  objective: string | undefined;
  calls: ToolEvent[];
}

export type Entry =
  | TextEntry
  | { kind: 'said'; key: string; at: string; text: string; queued: boolean }
  | { kind: 'tool'; key: string; at: string; event: ToolEvent; researchers: SubResearcher[] }
  | { kind: 'note'; key: string; at: string; text: string; tone: 'info' | 'error' | 'completed' | 'failed' | 'stopped' };

const DONE_LABELS: Record<string, string> = { completed: 'Turn completed', stopped: 'Turn stopped', failed: 'Turn failed', refused: 'Refused' };

/** The objective of the `index`th task of a research call's input, when the input says it. */
function objectiveOf(research: ToolEvent, index: number): string | undefined {
  const tasks = (research.input as { tasks?: { objective?: unknown }[] } | null)?.tasks;
  const objective = Array.isArray(tasks) ? tasks[index]?.objective : undefined;
  return typeof objective === 'string' ? objective : undefined;
}

export function entriesOf(events: readonly TaskEvent[]): Entry[] {
  const entries: Entry[] = [];
  /** Where each call's line is, so its later states replace it. */
  const calls = new Map<string, number>();
  /** Where each sub-researcher's call is inside its research call. */
  const subCalls = new Map<string, { researcher: SubResearcher; at: number }>();
  /** When each turn started, for its duration at its end. */
  const started = new Map<string, string>();
  /** Turns whose caller's words are shown already (queued, then started). */
  const said = new Set<string>();
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
          last = { kind: 'text', key, at: event.at, turn: event.turn_id, text: '' };
          entries.push(last);
        }
        if (reply.at(-1)?.entry !== last) reply.push({ entry: last, start: last.text.length });
        last.text += event.text;
        break;
      }
      case 'tool': {
        if (event.agent) {
          addSubCall(event);
          break;
        }
        const call = `${event.turn_id}/${event.call_id}`;
        const at = calls.get(call);
        if (at === undefined) {
          calls.set(call, entries.length);
          entries.push({ kind: 'tool', key, at: event.at, event, researchers: [] });
        } else {
          const entry = entries[at] as Extract<Entry, { kind: 'tool' }>;
          entries[at] = { ...entry, event };
        }
        break;
      }
      case 'task':
        if (event.reason === 'created') entries.push({ kind: 'note', key, at: event.at, text: 'Task created', tone: 'info' });
        else if (event.reason === 'deleted') entries.push({ kind: 'note', key, at: event.at, text: 'Task deleted', tone: 'stopped' });
        else if (event.reason === 'message_queued') {
          if (event.turn_id) said.add(event.turn_id);
          entries.push({ kind: 'said', key, at: event.at, text: event.message ?? '', queued: true });
        } else if (event.reason === 'turn_started') {
          if (event.turn_id) started.set(event.turn_id, event.at);
          if (event.message !== undefined && !(event.turn_id && said.has(event.turn_id))) entries.push({ kind: 'said', key: `${key}-said`, at: event.at, text: event.message, queued: false });
          entries.push({ kind: 'note', key, at: event.at, text: event.message !== undefined && event.turn_id && said.has(event.turn_id) ? 'Turn started on the queued message' : 'Turn started', tone: 'info' });
        }
        break;
      case 'error':
        entries.push({ kind: 'note', key, at: event.at, text: event.message, tone: 'error' });
        break;
      case 'done': {
        if (event.outcome === 'idle') break;
        const from = event.turn_id ? started.get(event.turn_id) : undefined;
        const took = from ? ` in ${duration(Date.parse(event.at) - Date.parse(from))}` : '';
        // A stop ends the running turn only: a message queued behind it starts at once, and says so.
        const next = event.next_turn_id ? ' · the queued message starts the next turn' : '';
        const tone = event.outcome === 'completed' || event.outcome === 'failed' || event.outcome === 'stopped' ? event.outcome : 'info';
        entries.push({ kind: 'note', key, at: event.at, text: `${DONE_LABELS[event.outcome] ?? event.outcome}${took} · ${credits(event.credits_used)} credits${next}`, tone });
        break;
      }
    }
  }
  // A reply withdrawn whole leaves its entries empty.
  return entries.filter((entry) => entry.kind !== 'text' || entry.text !== '');

  /** A sub-researcher's call, under the research call that started it (or on its own when that call is not in the page read). */
  function addSubCall(event: ToolEvent): void {
    const [researchCall, indexText] = event.agent!.split('/');
    const index = Number(indexText);
    const home = calls.get(`${event.turn_id}/${researchCall}`);
    const parent = home === undefined ? undefined : (entries[home] as Extract<Entry, { kind: 'tool' }>);
    if (!parent) {
      entries.push({ kind: 'tool', key: `${event.seq ?? event.at}-sub`, at: event.at, event, researchers: [] });
      return;
    }
    let researcher = parent.researchers.find((r) => r.index === index);
    if (!researcher) {
      researcher = { index, objective: objectiveOf(parent.event, index), calls: [] };
      parent.researchers.push(researcher);
      parent.researchers.sort((a, b) => a.index - b.index);
    }
    const id = `${event.turn_id}/${event.agent}/${event.call_id}`;
    const known = subCalls.get(id);
    if (known) known.researcher.calls[known.at] = event;
    else {
      subCalls.set(id, { researcher, at: researcher.calls.length });
      researcher.calls.push(event);
    }
  }
}
