/**
 * Quarry's tasks, rows and stored events in A2A's shapes (the SDK's ts-proto types). A Quarry
 * task is one A2A task (contextId = id); each output of its spec is an artifact whose parts are
 * its rows; each stored event becomes at most one stream frame (a `write_rows` that wrote many
 * rows may take a few), tagged with the event's seq so a client can resume after it.
 */
import { Role, TaskState, type Artifact, type Message, type Part, type StreamResponse, type Task as A2ATask } from '@a2a-js/sdk';
import type { DoneEvent, ErrorEvent, OutputDecl, TaskChangedEvent, TaskEvent, ToolEvent } from '../../contract/index.js';
import type { EventRecord, TaskRecord } from '../../domain/records.js';
import type { TaskQueries, TurnSaid, TurnText } from '../../tasks/task-queries.js';
import { toTaskView } from '../../domain/task-view.js';
import { leavesTaskIdle } from '../../http/sse.js';

/** Metadata key of every task, status and artifact update: the seq of the stored event it reflects (the SSE `id:`). */
export const SEQ_KEY = 'quarry/seq';
/** Rows per output a Task carries (GetTask, the first frame of a stream); the rest are read over REST. */
export const MAX_ARTIFACT_ROWS = 1000;
/** And at most this much row JSON in one Task, so a stream's first frame stays well inside what clients take (4 MiB an event). */
const MAX_TASK_ROW_BYTES = 2 * 1024 * 1024;
/** One artifact update carries at most this many rows / bytes; a larger write goes out in several frames. */
const ROWS_PER_UPDATE = 500;
const BYTES_PER_UPDATE = 1024 * 1024;

/** One SSE frame of `/a2a`: `id` is the seq of the stored event it comes from (null: not the last frame of that event). */
export interface Frame {
  id: number | null;
  response: StreamResponse;
}

export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

export function dataPart(value: unknown): Part {
  return { content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' };
}

function textMessage(taskId: string, messageId: string, role: Role, text: string): Message {
  return { messageId, contextId: taskId, taskId, role, parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [] };
}

function agentMessage(taskId: string, messageId: string, text: string): Message {
  return textMessage(taskId, messageId, Role.ROLE_AGENT, text);
}

// ---- a task's conversation ----------------------------------------------------------------------

/** Messages a Task's history holds at most, and how many when the caller does not say (GetTask, SendMessage, CancelTask). */
export const MAX_HISTORY = 100;
export const DEFAULT_HISTORY = 20;

const ENDED_TURNS = new Set(['completed', 'failed', 'stopped']);

/**
 * The task's conversation as A2A Messages, oldest first, at most `limit` of the latest: the
 * prompt, then for each turn the message it ran (or waits to run) and, once it ended, the
 * agent's reply (its closing text). Read from the last `limit` turns, which hold them all.
 */
export async function readHistory(queries: TaskQueries, task: TaskRecord, limit: number): Promise<Message[]> {
  if (limit === 0) return [];
  const turns = await queries.recentTurns(task, limit);
  const replies = closingTexts(await queries.turnTexts(task, turns.filter((t) => ENDED_TURNS.has(t.status)).map((t) => t.id)));
  const messages: Message[] = [];
  // Fewer turns than asked for: the first turn is among them, and the prompt came before it.
  if (turns.length < limit && task.spec.prompt) messages.push(textMessage(task.id, `${task.id}-prompt`, Role.ROLE_USER, task.spec.prompt));
  for (const turn of turns) {
    if (turn.input) messages.push(textMessage(task.id, `${turn.id}-user`, Role.ROLE_USER, turn.input));
    const reply = replies.get(turn.id);
    if (reply) messages.push(agentMessage(task.id, `${turn.id}-agent`, reply));
  }
  return messages.slice(-limit);
}

/** Per turn, its closing text (closingText), for the turns that have one. */
function closingTexts(events: readonly TurnText[]): Map<string, string> {
  const byTurn = new Map<string, TurnText[]>();
  for (const event of events) {
    let said = byTurn.get(event.turnId);
    if (!said) byTurn.set(event.turnId, (said = []));
    said.push(event);
  }
  const texts = new Map<string, string>();
  for (const [turnId, said] of byTurn) {
    const text = closingText(said);
    if (text) texts.set(turnId, text);
  }
  return texts;
}

/**
 * A turn's text after its last tool call, from its text events, tool calls and phase change in
 * order. A restart drops the text since the last tool call or phase change, and carries what of
 * it stands (docs/api.md, a reply cut off): an answer before the move to execute stays.
 */
function closingText(said: readonly TurnSaid[]): string | null {
  let settled: string[] = [];
  let reply: string[] = [];
  for (const event of said) {
    if (event.kind === 'tool') {
      settled = [];
      reply = [];
    } else if (event.kind === 'phase_changed') {
      settled.push(...reply);
      reply = [];
    } else {
      if (event.restart) reply = [];
      reply.push(event.text);
    }
  }
  return [...settled, ...reply].join('').trim() || null;
}

// ---- a task's state -----------------------------------------------------------------------------

/** What the task's last ended turn left, from its recent events. */
export interface TurnRecap {
  outcome: DoneEvent['outcome'] | null;
  error: { error: string; message: string } | null;
  /** The agent's closing text of that turn: its text after its last tool call. */
  text: string | null;
}

/** Reads the recap from a task's last events (oldest first); a turn older than they reach leaves it empty. */
export function recapOf(recent: readonly EventRecord[]): TurnRecap {
  const recap: TurnRecap = { outcome: null, error: null, text: null };
  let i = recent.length - 1;
  while (i >= 0 && recent[i]!.type !== 'done') i--;
  if (i < 0) return recap;
  const done = JSON.parse(recent[i]!.data) as DoneEvent;
  recap.outcome = done.outcome;
  const said: TurnSaid[] = [];
  for (let j = i - 1; j >= 0; j--) {
    const event = recent[j]!;
    if (event.turnId !== done.turn_id) break;
    if (event.type === 'error' && !recap.error) {
      const e = JSON.parse(event.data) as ErrorEvent;
      recap.error = { error: e.error, message: e.message };
    } else if (event.type === 'tool') {
      said.unshift({ kind: 'tool' });
    } else if (event.type === 'text') {
      said.unshift({ kind: 'text', ...(JSON.parse(event.data) as { text: string; restart?: true }) });
    } else if (event.type === 'task' && (JSON.parse(event.data) as TaskChangedEvent).reason === 'phase_changed') {
      said.unshift({ kind: 'phase_changed' });
    }
  }
  recap.text = closingText(said);
  return recap;
}

/**
 * A turn running or messages queued: WORKING; idle: what the last turn ended with (completed,
 * failed, stopped); a deleted task: CANCELED.
 */
export function stateOf(task: TaskRecord, recap: TurnRecap): TaskState {
  if (task.status === 'deleted') return TaskState.TASK_STATE_CANCELED;
  if (task.currentTurnId || task.queuedCount > 0) return TaskState.TASK_STATE_WORKING;
  if (recap.outcome === 'failed' || task.lastErrorSeq != null) return TaskState.TASK_STATE_FAILED;
  if (recap.outcome === 'stopped') return TaskState.TASK_STATE_CANCELED;
  return TaskState.TASK_STATE_COMPLETED;
}

function stateText(task: TaskRecord, state: TaskState, recap: TurnRecap): string {
  switch (state) {
    case TaskState.TASK_STATE_WORKING: {
      const queued = task.queuedCount > 0 ? `; ${task.queuedCount} message${task.queuedCount === 1 ? '' : 's'} queued` : '';
      return `Working (${task.phase ?? 'plan'}, ${task.activity ?? 'planning'})${queued}.`;
    }
    case TaskState.TASK_STATE_FAILED:
      return recap.error ? `The last turn failed: ${recap.error.error}: ${recap.error.message}` : 'The last turn failed.';
    case TaskState.TASK_STATE_CANCELED:
      return task.status === 'deleted' ? 'The task was deleted.' : 'The last turn was stopped.';
    default:
      return recap.text ?? 'The last turn completed.';
  }
}

/** A Quarry task as an A2A Task, at `seq` (the last stored event it reflects). */
export function toA2ATask(task: TaskRecord, opts: { recap: TurnRecap; artifacts: Artifact[]; history?: Message[]; seq?: number; state?: TaskState }): A2ATask {
  const state = opts.state ?? stateOf(task, opts.recap);
  const seq = opts.seq ?? task.lastEventSeq;
  return {
    id: task.id,
    contextId: task.id,
    status: { state, message: agentMessage(task.id, `${task.id}-status-${seq}`, stateText(task, state, opts.recap)), timestamp: task.updatedAt },
    artifacts: opts.artifacts,
    history: opts.history ?? [],
    metadata: { [SEQ_KEY]: seq, 'quarry/task': toTaskView(task) },
  };
}

// ---- outputs as artifacts -----------------------------------------------------------------------

export interface TaskArtifacts {
  artifacts: Artifact[];
  /** Per output, how many rows it had when read: a stream that sent these sends only later rows. */
  rowCounts: Map<string, number>;
}

function outputsUrl(baseUrl: string, taskId: string, outputId: string): string {
  return `${baseUrl}/task/${encodeURIComponent(taskId)}/outputs/${encodeURIComponent(outputId)}`;
}

/** Bytes of rows an answer may still carry; one budget spans every task of a list. */
export interface RowBudget {
  bytes: number;
}

export const taskRowBudget = (): RowBudget => ({ bytes: MAX_TASK_ROW_BYTES });

/** One artifact per output of the spec, with its first rows (MAX_ARTIFACT_ROWS per output, within `budget`). */
export async function readArtifacts(queries: TaskQueries, task: TaskRecord, baseUrl: string, budget: RowBudget = taskRowBudget()): Promise<TaskArtifacts> {
  const stats = await queries.outputStats(task);
  const rowCounts = new Map(stats.map((s) => [s.outputId, s.rowCount]));
  const artifacts: Artifact[] = [];
  for (const output of task.spec.outputs) {
    const total = rowCounts.get(output.id) ?? 0;
    const stored = total > 0 && budget.bytes > 0 ? await queries.rowRange(task, output.id, 0, Math.min(total, MAX_ARTIFACT_ROWS)) : [];
    const parts: Part[] = [];
    for (const row of stored) {
      if (row.length > budget.bytes) {
        budget.bytes = 0;
        break;
      }
      budget.bytes -= row.length;
      parts.push(dataPart(JSON.parse(row.toString('utf8'))));
    }
    artifacts.push(outputArtifact(output, parts, {
      'quarry/kind': output.kind,
      'quarry/row_count': total,
      'quarry/rows_included': parts.length,
      'quarry/truncated': parts.length < total,
      'quarry/rows_url': outputsUrl(baseUrl, task.id, output.id),
    }));
  }
  return { artifacts, rowCounts };
}

function outputArtifact(output: Pick<OutputDecl, 'id'> & Partial<OutputDecl>, parts: Part[], metadata: Record<string, unknown>): Artifact {
  return {
    artifactId: output.id,
    name: output.id,
    description: output.description ?? (output.kind ? `The ${output.kind} output "${output.id}": one data part per row.` : ''),
    parts,
    metadata,
    extensions: [],
  };
}

// ---- stored events as stream frames -------------------------------------------------------------

/**
 * Maps one task's stored events, in order, to frames. Holds what a stream needs across events:
 * the rows the client already has (from the stream's first Task frame) and the last turn error.
 */
export class EventFrames {
  private lastError: string | null = null;
  private readonly taskId: string;

  constructor(
    private readonly queries: TaskQueries,
    private readonly task: TaskRecord,
    /** Per output, rows up to this number the client has already. */
    private readonly rowsHeld: Map<string, number> = new Map(),
  ) {
    this.taskId = task.id;
  }

  /** The frames of one event, and whether the stream ends with it (the task is idle, or deleted). */
  async map(record: EventRecord): Promise<{ frames: Frame[]; last: boolean }> {
    const event = JSON.parse(record.data) as TaskEvent;
    const seq = record.seq;
    switch (event.type) {
      case 'task':
        return this.taskEvent(event, seq);
      case 'text':
        // A restart withdraws the reply's text so far (docs/api.md, a reply cut off): marked so a client drops it.
        return { frames: [this.status(seq, event.at, TaskState.TASK_STATE_WORKING, event.text, { 'quarry/event': 'text', ...(event.restart ? { 'quarry/restart': true } : {}) })], last: false };
      case 'tool':
        return { frames: await this.toolEvent(event, seq), last: false };
      case 'error':
        this.lastError = `${event.error}: ${event.message}`;
        return {
          frames: [this.status(seq, event.at, TaskState.TASK_STATE_WORKING, `The turn is failing: ${this.lastError}`, { 'quarry/event': 'error', 'quarry/error': event.error, 'quarry/retryable': event.retryable })],
          last: false,
        };
      case 'done':
        return { frames: [this.doneEvent(event, seq)], last: leavesTaskIdle(record) };
    }
  }

  private status(seq: number, at: string, state: TaskState, text: string, metadata: Record<string, unknown>): Frame {
    return {
      id: seq,
      response: {
        payload: {
          $case: 'statusUpdate',
          value: { taskId: this.taskId, contextId: this.taskId, status: { state, message: agentMessage(this.taskId, `${this.taskId}-${seq}`, text), timestamp: at }, metadata: { [SEQ_KEY]: seq, ...metadata } },
        },
      },
    };
  }

  private taskEvent(event: TaskChangedEvent, seq: number): { frames: Frame[]; last: boolean } {
    const meta = { 'quarry/event': 'task', 'quarry/reason': event.reason };
    const view = event.task;
    const working = (text: string) => ({ frames: [this.status(seq, event.at, TaskState.TASK_STATE_WORKING, text, meta)], last: false });
    switch (event.reason) {
      case 'created':
        return working('Task created: the first turn starts shortly.');
      case 'turn_started':
        return working(`Turn started (${view.phase ?? 'plan'}).`);
      case 'phase_changed':
        return working(`Phase: ${view.phase ?? 'plan'}.`);
      case 'activity_changed':
        return working(`Activity: ${view.activity ?? 'idle'}.`);
      case 'message_queued':
        return working(`Message queued behind the running turn (${view.queued_messages} waiting).`);
      case 'updated':
        // An idle task's change (a PATCH) is not part of any turn the stream follows.
        return event.turn_id ? working(`Spec updated (${view.output_count} output${view.output_count === 1 ? '' : 's'}).`) : { frames: [], last: false };
      case 'deleted':
        return { frames: [this.status(seq, event.at, TaskState.TASK_STATE_CANCELED, 'The task was deleted.', meta)], last: true };
      default:
        // turn_ended (its `done` follows), cron_tick_skipped, snapshot: nothing to tell.
        return { frames: [], last: false };
    }
  }

  private doneEvent(event: DoneEvent, seq: number): Frame {
    const meta = { 'quarry/event': 'done', 'quarry/outcome': event.outcome, 'quarry/credits_used': event.credits_used };
    if (event.next_turn_id) {
      return this.status(seq, event.at, TaskState.TASK_STATE_WORKING, `The turn ended (${event.outcome}); the next queued message runs now.`, meta);
    }
    switch (event.outcome) {
      case 'failed':
        return this.status(seq, event.at, TaskState.TASK_STATE_FAILED, this.lastError ? `The turn failed: ${this.lastError}` : 'The turn failed.', meta);
      case 'stopped':
        return this.status(seq, event.at, TaskState.TASK_STATE_CANCELED, 'The turn was stopped.', meta);
      default:
        return this.status(seq, event.at, TaskState.TASK_STATE_COMPLETED, `The turn completed (${event.credits_used} credits used).`, meta);
    }
  }

  private async toolEvent(event: ToolEvent, seq: number): Promise<Frame[]> {
    if (event.state === 'started') return [];
    const meta = { 'quarry/event': 'tool', 'quarry/tool': event.name, 'quarry/tool_state': event.state };
    if (event.name === 'write_rows' && event.state === 'finished') {
      const frames = await this.rowFrames(event, seq);
      if (frames) return frames;
    }
    const summary = event.summary ?? event.name;
    return [this.status(seq, event.at, TaskState.TASK_STATE_WORKING, event.state === 'failed' ? `${event.name} failed: ${summary}` : `${event.name}: ${summary}`, meta)];
  }

  /** The rows a `write_rows` call wrote (its event's `rows`), read back by row number; null when it wrote none. */
  private async rowFrames(event: ToolEvent, seq: number): Promise<Frame[] | null> {
    if (!event.rows) return null;
    const outputId = event.rows.output;
    const held = this.rowsHeld.get(outputId) ?? 0;
    const first = Math.max(event.rows.first_row, held + 1);
    const last = event.rows.first_row + event.rows.count - 1;
    if (first > last) return [];
    const rows = await this.queries.rowRange(this.task, outputId, first - 1, last - first + 1);
    this.rowsHeld.set(outputId, Math.max(held, last));
    if (rows.length === 0) return [];
    const chunks: { from: number; parts: Part[] }[] = [];
    let chunk: { from: number; parts: Part[] } | undefined;
    let bytes = 0;
    rows.forEach((row, i) => {
      if (!chunk || chunk.parts.length >= ROWS_PER_UPDATE || bytes + row.length > BYTES_PER_UPDATE) {
        chunk = { from: first + i, parts: [] };
        chunks.push(chunk);
        bytes = 0;
      }
      bytes += row.length;
      chunk.parts.push(dataPart(JSON.parse(row.toString('utf8'))));
    });
    // Only the last frame of the event carries its id: a client that stops after an earlier one
    // resumes before the event and gets all of its rows again rather than losing the rest.
    return chunks.map(({ from, parts }, i) => {
      const final = i === chunks.length - 1;
      return {
        id: final ? seq : null,
        response: {
          payload: {
            $case: 'artifactUpdate',
            value: {
              taskId: this.taskId,
              contextId: this.taskId,
              artifact: outputArtifact({ id: outputId }, parts, { 'quarry/first_row': from, 'quarry/rows': parts.length }),
              append: from > 1,
              lastChunk: false,
              metadata: final ? { [SEQ_KEY]: seq, 'quarry/event': 'tool', 'quarry/tool': 'write_rows' } : { 'quarry/event': 'tool', 'quarry/tool': 'write_rows', 'quarry/partial_of': seq },
            },
          },
        },
      };
    });
  }
}
