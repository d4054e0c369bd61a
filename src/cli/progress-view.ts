/**
 * Shows a task's event stream as it arrives. On a terminal: a live status line (activity, tool
 * calls, rows written, credits, elapsed time) redrawn in place, with finished tool calls, errors
 * and the model's text printed above it. Elsewhere: one plain line per event. With `--json`: each
 * event as one JSON line. A group's stream is shown the same three ways, its status line a
 * progress bar over its runs (GroupProgressView).
 */
import { ModelText, startsModelReply, type DoneEvent, type Group, type GroupCounts, type GroupEvent, type GroupRunStatus, type TaskEvent } from '../../packages/client/src/index.js';
import { credits, eventLine, groupCounts, groupEventLine, textLine } from './format.js';

/** How many rows a write_rows call carried (its input is whatever the model sent). */
function rowsIn(input: unknown): number {
  const rows = typeof input === 'object' && input !== null ? (input as { rows?: unknown }).rows : undefined;
  return Array.isArray(rows) ? rows.length : 0;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** `4.2 s`, `3 min 7 s`. */
function duration(seconds: number): string {
  return seconds < 60 ? `${seconds.toFixed(1)} s` : `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
}

/** Counts kept while following a stream. */
export class ProgressTracker {
  taskId: string | undefined;
  activity: string | null = null;
  /** Finished or failed tool calls. */
  toolCalls = 0;
  readonly running = new Map<string, string>();
  rowsWritten = 0;
  /** The task's credits_used, from its latest snapshot. */
  taskCredits: number | undefined;
  lastDone: DoneEvent | undefined;
  readonly startedAt = Date.now();

  apply(event: TaskEvent): void {
    if (event.task_id) this.taskId ??= event.task_id;
    switch (event.type) {
      case 'task':
        this.activity = event.task.activity;
        this.taskCredits = event.task.credits_used;
        break;
      case 'tool':
        if (event.state === 'started') {
          this.running.set(event.call_id, event.name);
        } else {
          this.running.delete(event.call_id);
          this.toolCalls += 1;
          if (event.name === 'write_rows' && event.state === 'finished') this.rowsWritten += rowsIn(event.input);
        }
        break;
      case 'done':
        this.lastDone = event;
        break;
    }
  }

  elapsed(): string {
    return duration((Date.now() - this.startedAt) / 1000);
  }

  summary(): string {
    const parts = [
      `done: ${this.lastDone?.outcome ?? 'stream ended'}`,
      `${plural(this.rowsWritten, 'row')} written`,
      plural(this.toolCalls, 'tool call'),
      `${credits(this.lastDone?.credits_used ?? 0)} credits`,
      this.elapsed(),
    ];
    if (this.taskId) parts.push(this.taskId);
    return parts.join(' · ');
  }
}

/** How following ended: the stream ended, the user interrupted it, or an error will be reported. */
export type ViewEnd = 'ended' | 'interrupted' | 'failed';

export interface ProgressView {
  readonly tracker: ProgressTracker;
  event(event: TaskEvent): void;
  close(how: ViewEnd): void;
}

const INTERRUPTED = 'stopped following (the task keeps running)';

type Write = (text: string) => void;

/** One JSON object per line, exactly as the event arrived. */
export class JsonLinesView implements ProgressView {
  readonly tracker = new ProgressTracker();
  constructor(private readonly write: Write) {}

  event(event: TaskEvent): void {
    this.tracker.apply(event);
    this.write(`${JSON.stringify(event)}\n`);
  }

  close(): void {}
}

/**
 * One plain line per event, then a summary: for pipes, files and CI logs. A model reply's text is
 * one line, written when the reply is over, so a reply cut off and asked for again is written once.
 */
export class PlainView implements ProgressView {
  readonly tracker = new ProgressTracker();
  private readonly text = new ModelText();
  /** How much of the text has been written. */
  private written = 0;
  constructor(private readonly write: Write) {}

  private writeText(): void {
    const text = this.text.value.slice(this.written);
    this.written = this.text.value.length;
    if (text.trim()) this.write(`${textLine(text)}\n`);
  }

  event(event: TaskEvent): void {
    this.tracker.apply(event);
    this.text.add(event);
    if (event.type === 'text') return;
    if (startsModelReply(event) || event.type === 'error' || event.type === 'done') this.writeText();
    this.write(`${eventLine(event)}\n`);
  }

  close(how: ViewEnd): void {
    this.writeText();
    if (how !== 'failed') this.write(`${how === 'interrupted' ? INTERRUPTED : this.tracker.summary()}\n`);
  }
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const CLEAR_LINE = '\r\x1b[2K';

/** The terminal half of a live view: a status line redrawn in place, with lines logged above it. */
class StatusLine {
  private frame = 0;
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly color: boolean;
  private readonly columns: number;

  constructor(private readonly write: Write, private readonly render: () => string, opts: { color: boolean; columns?: number }) {
    this.color = opts.color;
    // Some pseudo-terminals report 0 columns.
    this.columns = opts.columns || 100;
    this.timer = setInterval(() => this.redraw(), 120);
    this.timer.unref?.();
    this.redraw();
  }

  paint(code: string, text: string): string {
    return this.color ? `\x1b[${code}m${text}\x1b[0m` : text;
  }

  /** Prints a line above the status line; returns how many rows of the terminal it took. */
  log(line: string, width = line.length): number {
    this.write(`${CLEAR_LINE}${line}\n`);
    this.redraw();
    return Math.max(1, Math.ceil(width / this.columns));
  }

  /** Takes back the last `rows` rows printed above the status line (as far as the screen still shows them). */
  erase(rows: number): void {
    this.write(`${CLEAR_LINE}${'\x1b[1A\x1b[2K'.repeat(rows)}`);
    this.redraw();
  }

  redraw(): void {
    this.frame = (this.frame + 1) % SPINNER.length;
    const line = `${SPINNER[this.frame]} ${this.render()}`;
    this.write(`${CLEAR_LINE}${line.length > this.columns - 1 ? `${line.slice(0, this.columns - 2)}…` : line}`);
  }

  /** Stops redrawing and clears the line. */
  close(): void {
    clearInterval(this.timer);
    this.write(CLEAR_LINE);
  }
}

/** The live view for a terminal: a redrawn status line under a log of what happened. */
export class LiveView implements ProgressView {
  readonly tracker = new ProgressTracker();
  private text = '';
  /** Terminal rows the model reply under way has printed: a restart takes them back. */
  private replyRows = 0;
  private readonly status: StatusLine;

  constructor(private readonly write: Write, opts: { color: boolean; columns?: number }) {
    this.status = new StatusLine(write, () => this.statusText(), opts);
  }

  private paint(code: string, text: string): string {
    return this.status.paint(code, text);
  }

  private log(line: string): void {
    this.status.log(line);
  }

  private logText(line: string): void {
    const shown = `│ ${line}`;
    this.replyRows += this.status.log(this.paint('2', shown), shown.length);
  }

  private flushText(): void {
    const text = this.text.trim();
    this.text = '';
    if (text) for (const line of text.split('\n')) this.logText(line);
  }

  event(event: TaskEvent): void {
    this.tracker.apply(event);
    if (event.type === 'text') {
      if (event.restart) {
        // The reply was cut off and is asked for again: what it printed goes, as a reader of the
        // events drops its text.
        this.status.erase(this.replyRows);
        this.replyRows = 0;
        this.text = '';
      }
      this.text += event.text;
      // Whole lines are printed as they complete; the rest waits for more text.
      const nl = this.text.lastIndexOf('\n');
      if (nl >= 0) {
        const complete = this.text.slice(0, nl);
        this.text = this.text.slice(nl + 1);
        for (const line of complete.split('\n')) if (line.trim()) this.logText(line);
      }
      return;
    }
    this.flushText();
    if (startsModelReply(event)) this.replyRows = 0;
    switch (event.type) {
      case 'task':
        if (event.reason === 'created') this.log(`task ${event.task_id} created`);
        else if (event.reason === 'phase_changed') this.log(this.paint('36', `→ phase ${event.task.phase}`));
        break;
      case 'tool':
        if (event.state === 'finished') this.log(`${this.paint('32', '✓')} ${event.name}  ${event.summary ?? ''}${event.duration_ms !== null ? this.paint('2', `  ${event.duration_ms} ms`) : ''}`);
        if (event.state === 'failed') this.log(`${this.paint('31', '✗')} ${event.name}  ${event.summary ?? ''}`);
        break;
      case 'error':
        this.log(this.paint('31', `! ${event.error}: ${event.message}`));
        break;
      case 'done':
        break;
    }
    this.status.redraw();
  }

  private statusText(): string {
    const t = this.tracker;
    const running = [...t.running.values()];
    return [
      t.activity ?? 'starting',
      `${plural(t.toolCalls, 'tool call')}${running.length ? ` (running: ${running.join(', ')})` : ''}`,
      plural(t.rowsWritten, 'row'),
      `${credits(t.taskCredits ?? 0)} credits`,
      t.elapsed(),
    ].join(' · ');
  }

  close(how: ViewEnd): void {
    this.flushText();
    this.status.close();
    if (how !== 'failed') this.write(`${how === 'interrupted' ? INTERRUPTED : this.tracker.summary()}\n`);
  }
}

// ---- groups ------------------------------------------------------------------------------------

const ENDED: readonly GroupRunStatus[] = ['completed', 'failed', 'stopped'];

/** A run event's move between counts: `running` leaves pending, an end leaves running. */
function moved(counts: GroupCounts, status: GroupRunStatus): GroupCounts {
  const next = { ...counts };
  const from = status === 'running' ? 'pending' : 'running';
  next[from] = Math.max(0, next[from] - 1);
  next[status] += 1;
  return next;
}

/**
 * What following a group has learnt: the group as of its latest event (its counts moved by each
 * `run` event since the last snapshot), and the pace of its runs. The pace is measured on the
 * events' own times, so a replayed history counts at the speed it happened; it restarts when the
 * group runs again after a `done` (more inputs, a retry).
 */
export class GroupProgress {
  groupId: string | undefined;
  group: Group | undefined;
  /** When the group's current busy spell began (ms) and how many runs had ended by then. */
  private basis: { at: number; ended: number } | undefined;
  private latestAt = 0;
  private restart = false;

  apply(event: GroupEvent): void {
    this.groupId ??= event.group_id;
    if (event.type === 'run') {
      if (this.group) this.group = { ...this.group, counts: moved(this.group.counts, event.status) };
    } else {
      this.group = event.group;
    }
    this.observe(Date.parse(event.at), event.type === 'done');
  }

  /** The group as a poll of GET /group/{id} found it. */
  applyPolled(group: Group): void {
    this.groupId ??= group.group_id;
    this.group = group;
    this.observe(Date.parse(group.updated_at), this.idle());
  }

  /** No run is pending or running (as far as known). */
  idle(): boolean {
    const c = this.group?.counts;
    return c !== undefined && c.pending + c.running === 0;
  }

  /** Runs that have ended (completed, failed or stopped). */
  ended(): number {
    const c = this.group?.counts;
    return c ? ENDED.reduce((n, s) => n + c[s], 0) : 0;
  }

  /** Every input that runs (duplicates are not counted). */
  total(): number {
    const c = this.group?.counts;
    return c ? this.ended() + c.pending + c.running : 0;
  }

  private observe(at: number, idle: boolean): void {
    if (!Number.isFinite(at)) return;
    if (!this.basis || this.restart) this.basis = { at, ended: this.ended() };
    this.latestAt = Math.max(this.latestAt, at);
    this.restart = idle;
  }

  /** Seconds of the current busy spell, and the runs that ended in it. */
  private spell(): { seconds: number; runs: number } {
    return this.basis ? { seconds: (this.latestAt - this.basis.at) / 1000, runs: this.ended() - this.basis.ended } : { seconds: 0, runs: 0 };
  }

  /** Runs ended per second in the current busy spell; undefined before one has ended. */
  rate(): number | undefined {
    const { seconds, runs } = this.spell();
    return seconds > 0 && runs > 0 ? runs / seconds : undefined;
  }

  /**
   * `37/300 · 4.1 runs/s · ETA 1 min 4 s · 35 completed · 2 failed · 8 running · 255 pending`:
   * the pace before the counts, so a narrow terminal cuts the counts, which the bar also shows.
   */
  line(): string {
    if (!this.group) return 'waiting for the group';
    const parts = [`${this.ended()}/${this.total()}`];
    const rate = this.rate();
    if (rate !== undefined) {
      parts.push(`${rate.toFixed(1)} runs/s`);
      const eta = (this.group.counts.pending + this.group.counts.running) / rate;
      if (eta > 0) parts.push(`ETA ${eta < 1 ? 'under 1 s' : duration(eta)}`);
    }
    return [...parts, groupCounts(this.group.counts)].join(' · ');
  }

  /** `[██████░░░░░░░░░░░░░░]`: the share of runs that have ended. */
  bar(width = 20): string {
    const total = this.total();
    const filled = total ? Math.round((this.ended() / total) * width) : 0;
    return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}]`;
  }

  summary(): string {
    const g = this.group;
    if (!g) return 'done: the stream ended before the group was seen';
    const { seconds, runs } = this.spell();
    const c = g.counts;
    return [
      `done: ${g.status}`, `${c.completed} completed`, `${c.failed} failed`, `${c.stopped} stopped`,
      `${plural(runs, 'run')} in ${duration(seconds)}`, `${credits(g.credits_used)} credits`, g.group_id,
    ].join(' · ');
  }
}

/** `json`: each event as a JSON line · `plain`: notes and progress lines · `live`: a progress bar redrawn in place. */
export type GroupViewMode = 'json' | 'plain' | 'live';

/** Plain progress lines: a line once this long has passed since the last, or another tenth of the runs has ended. */
const PLAIN_INTERVAL_MS = 5000;

/**
 * Shows a group's stream as it arrives. On a terminal: a progress bar with the counts, runs per
 * second and ETA, redrawn in place, with failed runs and changes to many runs (stopped, budget
 * reached…) printed above it. Elsewhere: those notes and a `progress:` line whenever the counts
 * changed and either a few seconds have passed or another tenth of the runs has ended, then a
 * summary. With `--json`: each event as one JSON line.
 */
export class GroupProgressView {
  readonly progress = new GroupProgress();
  private readonly status: StatusLine | undefined;
  private printed: { at: number; line: string; tenth: number } | undefined;
  private readonly intervalMs: number;
  private readonly quietBefore: string | undefined;

  /**
   * `quietBefore` (an event time): events before it only update the progress, unshown; they are
   * the history a stream replays before the change being followed (inputs added, a retry).
   */
  constructor(
    private readonly write: Write,
    private readonly mode: GroupViewMode,
    opts: { color?: boolean; columns?: number; intervalMs?: number; quietBefore?: string } = {},
  ) {
    this.intervalMs = opts.intervalMs ?? PLAIN_INTERVAL_MS;
    this.quietBefore = opts.quietBefore;
    if (mode === 'live') this.status = new StatusLine(write, () => `${this.progress.bar()} ${this.progress.line()}`, { color: opts.color ?? false, columns: opts.columns });
  }

  event(event: GroupEvent): void {
    this.progress.apply(event);
    // Event times are the server's ISO timestamps, which compare as strings.
    if (this.quietBefore !== undefined && event.at < this.quietBefore) return;
    if (this.mode === 'json') return this.write(`${JSON.stringify(event)}\n`);
    const note = groupEventLine(event);
    if (note) {
      const failed = event.type === 'run' || (event.type === 'group' && event.reason === 'out_of_credits');
      if (this.status) this.status.log(failed ? this.status.paint('31', `✗ ${note}`) : note);
      else this.write(`${note}\n`);
    }
    this.changed();
  }

  /** The group as a poll found it (when the stream could not be followed). */
  polled(group: Group): void {
    this.progress.applyPolled(group);
    if (this.mode === 'json') return this.write(`${JSON.stringify(group)}\n`);
    this.changed();
  }

  private changed(): void {
    if (this.status) return this.status.redraw();
    const p = this.progress;
    if (!p.group) return;
    // Compared without the pace, which moves with every event.
    const line = `${p.ended()}/${p.total()} · ${groupCounts(p.group.counts)}`;
    const tenth = p.total() ? Math.floor((p.ended() * 10) / p.total()) : 0;
    const now = Date.now();
    const last = this.printed;
    if (last && (line === last.line || (now - last.at < this.intervalMs && tenth === last.tenth))) return;
    this.printed = { at: now, line, tenth };
    this.write(`progress: ${p.line()}\n`);
  }

  close(how: ViewEnd): void {
    this.status?.close();
    if (this.mode === 'json' || how === 'failed') return;
    this.write(`${how === 'interrupted' ? 'stopped following (the group keeps running)' : this.progress.summary()}\n`);
  }
}

/** The counts an eval run shows as it goes: items ended, by verdict. */
export interface EvalCounts {
  total: number;
  correct: number;
  incorrect: number;
  notAttempted: number;
  running: number;
}

/**
 * `quarry eval`'s progress. On a terminal: a bar over the items with the verdicts so far, redrawn
 * in place. Elsewhere: one line per item as it ends. With `--json`: nothing (stdout holds the
 * summary alone).
 */
export class EvalProgressView {
  private readonly status: StatusLine | undefined;
  private counts: EvalCounts;
  private readonly startedAt = Date.now();

  constructor(private readonly write: Write, private readonly mode: GroupViewMode, total: number, opts: { color?: boolean; columns?: number } = {}) {
    this.counts = { total, correct: 0, incorrect: 0, notAttempted: 0, running: 0 };
    if (mode === 'live') this.status = new StatusLine(write, () => this.line(), { color: opts.color ?? false, columns: opts.columns });
  }

  private ended(): number {
    return this.counts.correct + this.counts.incorrect + this.counts.notAttempted;
  }

  private line(): string {
    const c = this.counts;
    const filled = c.total ? Math.round((this.ended() / c.total) * 20) : 0;
    return [
      `[${'█'.repeat(filled)}${'░'.repeat(20 - filled)}] ${this.ended()}/${c.total}`,
      `${c.correct} correct`, `${c.incorrect} incorrect`, `${c.notAttempted} not attempted`, `${c.running} running`,
      duration((Date.now() - this.startedAt) / 1000),
    ].join(' · ');
  }

  started(): void {
    this.counts.running += 1;
    this.status?.redraw();
  }

  /** An item ended with its verdict; `note` (its id, verdict, time) is logged above the bar or printed. */
  finished(verdict: 'correct' | 'incorrect' | 'not_attempted', note: string): void {
    const c = this.counts;
    c.running -= 1;
    if (verdict === 'correct') c.correct += 1;
    else if (verdict === 'incorrect') c.incorrect += 1;
    else c.notAttempted += 1;
    if (this.mode === 'json') return;
    if (this.status) this.status.log(verdict === 'correct' ? note : this.status.paint(verdict === 'incorrect' ? '31' : '33', note));
    else this.write(`[${this.ended()}/${c.total}] ${note}\n`);
  }

  close(): void {
    this.status?.close();
  }
}
