/**
 * Shows a task's event stream as it arrives. On a terminal: a live status line (activity, tool
 * calls, rows written, credits, elapsed time) redrawn in place, with finished tool calls, errors
 * and the model's text printed above it. Elsewhere: one plain line per event. With `--json`: each
 * event as one JSON line.
 */
import type { DoneEvent, TaskEvent } from '../../packages/client/src/index.js';
import { credits, eventLine } from './format.js';

/** How many rows a write_rows call carried (its input is whatever the model sent). */
function rowsIn(input: unknown): number {
  const rows = typeof input === 'object' && input !== null ? (input as { rows?: unknown }).rows : undefined;
  return Array.isArray(rows) ? rows.length : 0;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
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
    const s = (Date.now() - this.startedAt) / 1000;
    return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
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

/** One plain line per event, then a summary: for pipes, files and CI logs. */
export class PlainView implements ProgressView {
  readonly tracker = new ProgressTracker();
  constructor(private readonly write: Write) {}

  event(event: TaskEvent): void {
    this.tracker.apply(event);
    if (event.type === 'text' && !event.text.trim()) return;
    this.write(`${eventLine(event)}\n`);
  }

  close(how: ViewEnd): void {
    if (how !== 'failed') this.write(`${how === 'interrupted' ? INTERRUPTED : this.tracker.summary()}\n`);
  }
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const CLEAR_LINE = '\r\x1b[2K';

/** The live view for a terminal: a redrawn status line under a log of what happened. */
export class LiveView implements ProgressView {
  readonly tracker = new ProgressTracker();
  private frame = 0;
  private text = '';
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly color: boolean;
  private readonly columns: number;

  constructor(private readonly write: Write, opts: { color: boolean; columns?: number }) {
    this.color = opts.color;
    // Some pseudo-terminals report 0 columns.
    this.columns = opts.columns || 100;
    this.timer = setInterval(() => this.redraw(), 120);
    this.timer.unref?.();
    this.redraw();
  }

  private paint(code: string, text: string): string {
    return this.color ? `\x1b[${code}m${text}\x1b[0m` : text;
  }

  /** Prints lines above the status line. */
  private log(line: string): void {
    this.write(`${CLEAR_LINE}${line}\n`);
    this.redraw();
  }

  private flushText(): void {
    const text = this.text.trim();
    this.text = '';
    if (text) for (const line of text.split('\n')) this.log(this.paint('2', `│ ${line}`));
  }

  event(event: TaskEvent): void {
    this.tracker.apply(event);
    if (event.type === 'text') {
      this.text += event.text;
      // Whole lines are printed as they complete; the rest waits for more text.
      const nl = this.text.lastIndexOf('\n');
      if (nl >= 0) {
        const complete = this.text.slice(0, nl);
        this.text = this.text.slice(nl + 1);
        for (const line of complete.split('\n')) if (line.trim()) this.log(this.paint('2', `│ ${line}`));
      }
      return;
    }
    this.flushText();
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
    this.redraw();
  }

  private redraw(): void {
    const t = this.tracker;
    const running = [...t.running.values()];
    const parts = [
      t.activity ?? 'starting',
      `${plural(t.toolCalls, 'tool call')}${running.length ? ` (running: ${running.join(', ')})` : ''}`,
      plural(t.rowsWritten, 'row'),
      `${credits(t.taskCredits ?? 0)} credits`,
      t.elapsed(),
    ];
    this.frame = (this.frame + 1) % SPINNER.length;
    const line = `${SPINNER[this.frame]} ${parts.join(' · ')}`;
    this.write(`${CLEAR_LINE}${line.length > this.columns - 1 ? `${line.slice(0, this.columns - 2)}…` : line}`);
  }

  close(how: ViewEnd): void {
    clearInterval(this.timer);
    this.flushText();
    this.write(CLEAR_LINE);
    if (how !== 'failed') this.write(`${how === 'interrupted' ? INTERRUPTED : this.tracker.summary()}\n`);
  }
}
