/**
 * Human-readable output: aligned tables and one-line summaries. Scripts should use `--json`;
 * these formats may change between releases.
 */
import type { Group, GroupCounts, GroupDetail, GroupEvent, GroupRowChange, GroupRun, OutputInfo, RowChange, Task, TaskEvent, Webhook, WebhookDelivery, WebhookDeliveryAttempt } from '../../packages/client/src/index.js';

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

/** `name  value` lines, the values lined up two spaces after the longest name (or `width`). */
export function fields(pairs: [string, string][], width = Math.max(...pairs.map(([name]) => name.length))): string {
  return pairs.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n');
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

/** A webhook endpoint as `fields` pairs; `previous` while a rotated-out secret still signs. */
export function webhookFields(hook: Webhook): [string, string][] {
  const pairs: [string, string][] = [
    ['webhook', hook.webhook_id],
    ['url', hook.url],
    ['events', hook.events.join(', ')],
    ['description', hook.description ?? '-'],
    ['created', shortTime(hook.created_at)],
  ];
  if (hook.previous_secret_expires_at) pairs.push(['previous', `the previous secret signs too until ${shortTime(hook.previous_secret_expires_at)}`]);
  return pairs;
}

export function webhooksTable(hooks: Webhook[]): string {
  return table(
    ['WEBHOOK', 'EVENTS', 'CREATED', 'URL', 'DESCRIPTION'],
    hooks.map((h) => [h.webhook_id, h.events.join(','), shortTime(h.created_at), h.url, h.description ?? '']),
  );
}

/** Deliveries, newest first as listed: the last attempt's HTTP status and error, and when the next one is due. */
export function deliveriesTable(deliveries: WebhookDelivery[]): string {
  return table(
    ['DELIVERY', 'EVENT', 'STATUS', 'ATTEMPTS', 'HTTP', 'CREATED', 'NEXT ATTEMPT', 'LAST ERROR'],
    deliveries.map((d) => [
      d.delivery_id, d.event, d.status, String(d.attempts), d.last_status_code === null ? '-' : String(d.last_status_code),
      shortTime(d.created_at), shortTime(d.next_attempt_at), cell(d.last_error),
    ]),
  );
}

export function runsTable(runs: GroupRun[]): string {
  return table(
    ['INPUT', 'STATUS', 'TASK', 'CREDITS', 'UPDATED', 'ERROR'],
    runs.map((r) => [String(r.input_index), r.status, r.task_id ?? '-', credits(r.credits_used), shortTime(r.updated_at), cell(r.error?.message)]),
  );
}

export function attemptsTable(attempts: WebhookDeliveryAttempt[]): string {
  return table(
    ['AT', 'HTTP', 'MS', 'ERROR', 'ANSWER'],
    attempts.map((a) => [shortTime(a.at), a.status_code === null ? '-' : String(a.status_code), String(a.duration_ms), cell(a.error), cell(a.response_excerpt)]),
  );
}

/** Changes of keyed outputs, oldest first: each field that changed as `name: before → after`; a group's with its input's index. */
export function changesTable(changes: (RowChange | GroupRowChange)[]): string {
  const grouped = changes.some((c) => '_input' in c);
  return table(
    [...(grouped ? ['INPUT'] : []), 'TURN', 'AT', 'OUTPUT', 'KEY', 'CHANGE', 'FIELDS'],
    changes.map((c) => [
      ...(grouped ? [String((c as GroupRowChange)._input)] : []),
      c.turn_id, shortTime(c.at), c.output, cell(Object.values(c.key).map((v) => cell(v, 30)).join(' / '), 40), c.change,
      cell(Object.entries(c.fields).map(([name, f]) => `${name}: ${cell(f.before, 20) || '-'} → ${cell(f.after, 20) || '-'}`).join('; '), 80),
    ]),
  );
}

/** A cell as text: strings as they are, everything else as JSON, cut to `max` characters. */
export function cell(value: unknown, max = 60): string {
  const text = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * Rows as a table: their index (a task's `_row`, or a group's `_input`), the value columns in
 * first-seen order, then the number of sources.
 */
export function rowsTable(rows: Record<string, unknown>[], index: { key: string; header: string } = { key: '_row', header: '#' }): string {
  const columns: string[] = [];
  for (const row of rows) for (const key of Object.keys(row)) if (!key.startsWith('_') && !columns.includes(key)) columns.push(key);
  return table(
    [index.header, ...columns, 'SOURCES'],
    rows.map((r) => [String(r[index.key]), ...columns.map((c) => cell(r[c])), String(Array.isArray(r._sources) ? r._sources.length : 0)]),
  );
}

/** Model text as one line. */
export function textLine(text: string): string {
  return `text: ${text.replace(/\s*\n\s*/g, ' ').trim()}`;
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
      if (!event.restart) return textLine(event.text);
      // A restart carries again the text of earlier answers that the drop would take with it.
      return `text: (the reply was cut off: its text above is dropped, and the model is asked again)${event.text ? `\n${textLine(event.text)}` : ''}`;
    case 'error':
      return `error: ${event.error} - ${event.message}`;
    case 'done':
      return `done: ${event.outcome} (credits ${credits(event.credits_used)})`;
  }
}

// ---- groups ------------------------------------------------------------------------------------

/** `35 completed · 2 failed · 8 running · 255 pending`, with `N stopped` when some are. */
export function groupCounts(c: GroupCounts): string {
  return [`${c.completed} completed`, `${c.failed} failed`, ...(c.stopped ? [`${c.stopped} stopped`] : []), `${c.running} running`, `${c.pending} pending`].join(' · ');
}

/** `300 inputs` or `300 inputs (2 duplicates)`. */
export function inputCount(g: Pick<Group, 'inputs' | 'duplicates'>): string {
  return `${g.inputs} input${g.inputs === 1 ? '' : 's'}${g.duplicates ? ` (${g.duplicates} duplicate${g.duplicates === 1 ? '' : 's'})` : ''}`;
}

/** A group as `fields` pairs: its state, then what its runs do (the prompt and the merged columns). */
export function groupFields(g: GroupDetail): [string, string][] {
  const pairs: [string, string][] = [
    ['group', g.group_id],
    ['name', g.name ?? '-'],
    ['status', g.status],
    ['inputs', inputCount(g)],
    ['runs', groupCounts(g.counts)],
    ['credits', `${credits(g.credits_used)}${g.max_credits !== null ? ` of at most ${credits(g.max_credits)}` : ''}`],
    ['parallel', `at most ${g.max_parallel} runs at once`],
    ['created', shortTime(g.created_at)],
    ['updated', shortTime(g.updated_at)],
    ['finished', shortTime(g.finished_at)],
  ];
  if (g.spec.prompt) pairs.push(['prompt', cell(g.spec.prompt, 200)]);
  const output = g.spec.outputs.find((o) => o.kind === 'table');
  const inputs = (g.spec.input_columns ?? []).map((c) => c.name).join(', ');
  if (output) pairs.push(['columns', `${inputs} → ${(output.columns ?? []).map((c) => c.name).join(', ')} (output ${output.id})`]);
  return pairs;
}

export function groupsTable(groups: Group[]): string {
  return table(
    ['GROUP', 'STATUS', 'INPUTS', 'COMPLETED', 'FAILED', 'LEFT', 'CREDITS', 'CREATED', 'NAME'],
    groups.map((g) => [
      g.group_id, g.status, String(g.inputs - g.duplicates), String(g.counts.completed), String(g.counts.failed),
      String(g.counts.pending + g.counts.running), credits(g.credits_used), shortTime(g.created_at), g.name ?? '',
    ]),
  );
}

/**
 * One line for a group event worth a line of its own: the group created, a change to many runs
 * (inputs added, stopped, retried, max_credits reached, out of credits, a scheduled tick), a failed run with the
 * command that shows why. Null for the rest, which a progress line sums up.
 */
export function groupEventLine(event: GroupEvent): string | null {
  if (event.type === 'run') return event.status === 'failed' ? `input ${event.input} failed: see quarry task show ${event.task_id}` : null;
  if (event.type === 'done') return null;
  const g = event.group;
  switch (event.reason) {
    case 'created': return `group ${g.group_id} created: ${inputCount(g)}, at most ${g.max_parallel} running at once`;
    case 'inputs_added': return `inputs added: ${inputCount(g)} in all`;
    case 'stopped': return 'group stopped: pending inputs will not run';
    case 'retried': return `retrying the failed runs: ${g.counts.pending} pending`;
    case 'budget_reached': return `max_credits reached (${credits(g.credits_used)} credits used): the pending inputs were stopped`;
    case 'out_of_credits': return `the account is out of credits: the pending inputs failed (add credits, then quarry group retry ${g.group_id})`;
    case 'scheduled_tick': return `scheduled tick: ${g.counts.pending} completed runs run again`;
  }
}
