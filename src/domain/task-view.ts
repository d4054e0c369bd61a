/**
 * The Task body that routes, events and the client see (interface §2.1 plus decisions §9),
 * built from a stored task alone so it costs no extra read.
 */
import { fromMicros } from './credits.js';
import type { LastTurnRecord, TaskRecord } from './records.js';
import type { LastTurn, Task } from '../contract/index.js';

const POLL_BUSY_S = 2;
const POLL_IDLE_S = 30;
const POLL_CRON_CAP_S = 300;

function pollAfter(task: TaskRecord, now: number): number {
  if (task.status === 'execute') return POLL_BUSY_S;
  if (task.cronNextRunAt) {
    const seconds = Math.ceil((Date.parse(task.cronNextRunAt) - now) / 1000);
    return Math.min(POLL_CRON_CAP_S, Math.max(1, seconds));
  }
  return POLL_IDLE_S;
}

/** Whether the view changes with time alone (a cron task's poll_after_s counts down to its next run). */
export function viewChangesWithTime(task: TaskRecord): boolean {
  return task.status !== 'execute' && task.cronNextRunAt !== null;
}

export function activeOutputOf(task: TaskRecord): string | null {
  if (task.activeOutput && task.spec.outputs.some((o) => o.id === task.activeOutput)) return task.activeOutput;
  return task.spec.outputs[0]?.id ?? null;
}

function lastTurnView(turn: LastTurnRecord): LastTurn {
  return {
    turn_id: turn.turnId,
    kind: turn.kind,
    outcome: turn.outcome,
    started_at: turn.startedAt,
    ended_at: turn.endedAt,
    credits_used: fromMicros(turn.creditsUsedMicros),
    error: turn.error,
    ...(turn.changes ? { changes: turn.changes } : {}),
  };
}

/** A task's citation accuracy (decisions §17.1): supported / (supported + unsupported) cells, to 4 places, or null with none checked. */
export function citationAccuracy(task: Pick<TaskRecord, 'supportedCells' | 'unsupportedCells'>): number | null {
  const supported = task.supportedCells ?? 0;
  const checked = supported + (task.unsupportedCells ?? 0);
  return checked === 0 ? null : Math.round((supported / checked) * 10_000) / 10_000;
}

export function toTaskView(task: TaskRecord, now = Date.now()): Task {
  const id = encodeURIComponent(task.id);
  return {
    task_id: task.id,
    name: task.name,
    type: task.type,
    status: task.status,
    phase: task.phase,
    activity: task.activity,
    waiting: task.waiting ?? null,
    output_count: task.spec.outputs.length,
    poll_after_s: pollAfter(task, now),
    status_url: `/task/${id}`,
    output_url: `/task/${id}/output`,
    stream_url: `/task/${id}/stream`,
    created_at: task.createdAt,
    updated_at: task.updatedAt,
    pinned: task.pinned,
    cron: task.cronExpression
      ? { expression: task.cronExpression, timezone: task.cronTimezone ?? 'UTC', next_run_at: task.cronNextRunAt }
      : null,
    queued_messages: task.queuedCount,
    credits_used: fromMicros(task.creditsUsedMicros),
    active_output: activeOutputOf(task),
    last_turn: task.lastTurn ? lastTurnView(task.lastTurn) : null,
    citation_accuracy: citationAccuracy(task),
    ...(task.group ? { group_id: task.group.id, input_index: task.group.inputIndex, input: JSON.parse(task.group.input) as Record<string, unknown> } : {}),
  };
}

/** The Task body of a change's answer: a message that was queued shows status `accepted`. */
export function toReplyView(task: TaskRecord, answer: { queued: boolean }): Task {
  const view = toTaskView(task);
  if (answer.queued) view.status = 'accepted';
  return view;
}

/**
 * Which tasks an account sees, decided here once: its own, and a deleted one only where the
 * caller asks for it (GET /task/{task_id}).
 */
export function isVisibleTo<T extends Pick<TaskRecord, 'accountId' | 'status'>>(task: T | undefined, accountId: string, includeDeleted = false): task is T {
  return task !== undefined && task.accountId === accountId && (includeDeleted || task.status !== 'deleted');
}
