/**
 * Human-readable output: aligned tables and one-line summaries. Scripts should use `--json`;
 * these formats may change between releases.
 */
import type { OutputInfo, Row, Task, TaskEvent } from '../../packages/client/src/index.js';

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

/** `2025-03-01T07:00:12.417Z` → `2025-03-01 07:00:12`. */
export function shortTime(iso: string | null | undefined): string {
  return iso ? iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '') : '-';
}

export function credits(n: number): string {
  return String(Math.round(n * 10_000) / 10_000);
}

/** `execute/thinking`, `plan/idle`, `deleted`. */
export function taskStatus(task: Pick<Task, 'status' | 'activity'>): string {
  return task.activity ? `${task.status}/${task.activity}` : task.status;
}

export function tasksTable(tasks: Task[]): string {
  return table(
    ['TASK', 'STATUS', 'OUTPUTS', 'CREDITS', 'UPDATED', 'NAME'],
    tasks.map((t) => [t.task_id, taskStatus(t) + (t.pinned ? ' (pinned)' : ''), String(t.output_count), credits(t.credits_used), shortTime(t.updated_at), t.name ?? '']),
  );
}

export function outputsTable(outputs: OutputInfo[]): string {
  return table(
    ['OUTPUT', 'KIND', 'ROWS', 'UPDATED', 'PATH'],
    outputs.map((o) => [o.id, o.kind, String(o.row_count), shortTime(o.updated_at), o.path]),
  );
}

/** A cell as text: strings as they are, everything else as JSON, cut to `max` characters. */
export function cell(value: unknown, max = 60): string {
  const text = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Rows as a table: `_row`, the value columns in first-seen order, then the number of sources. */
export function rowsTable(rows: Row[]): string {
  const columns: string[] = [];
  for (const row of rows) for (const key of Object.keys(row)) if (!key.startsWith('_') && !columns.includes(key)) columns.push(key);
  return table(
    ['#', ...columns, 'SOURCES'],
    rows.map((r) => [String(r._row), ...columns.map((c) => cell(r[c])), String(r._sources?.length ?? 0)]),
  );
}

/** One line describing an event, for `task show` and plain progress output. */
export function eventLine(event: TaskEvent): string {
  switch (event.type) {
    case 'task':
      return `task: ${event.reason}${event.reason === 'activity_changed' || event.reason === 'turn_started' ? ` ${event.task.activity}` : event.reason === 'phase_changed' ? ` ${event.task.phase}` : ''}`;
    case 'tool': {
      const tail = event.state === 'started' ? '' : ` - ${event.summary ?? ''}${event.duration_ms !== null ? ` (${event.duration_ms} ms)` : ''}`;
      return `tool: ${event.name} ${event.state}${tail}`;
    }
    case 'text':
      return `text: ${event.text.replace(/\s*\n\s*/g, ' ').trim()}`;
    case 'error':
      return `error: ${event.error} - ${event.message}`;
    case 'done':
      return `done: ${event.outcome} (credits ${credits(event.credits_used)})`;
  }
}
