/**
 * The transitions of the task state machine (interface §3, decisions §4; the table clients read
 * is tasks/workflow.ts) that more than one change shares: a new task, a turn that starts, a turn
 * that ends and hands the task to its next queued message. Each works on a TaskUnit, so its
 * writes and events join the change that made it.
 */
import type { TaskActivity, TaskPhase, TurnKind } from '../contract/index.js';
import { fromMicros } from '../domain/credits.js';
import type { LastTurnRecord, TaskRecord, TurnRecord } from '../domain/records.js';
import { citationAccuracy } from '../domain/task-view.js';
import type { TurnError } from '../errors.js';
import { newId } from '../ids.js';
import type { Admission } from './admission.js';
import { TaskUnit } from './task-unit.js';
import type { TurnOutcome, UnitOfWork } from './unit-of-work.js';

/** Where a turn of each kind starts: a plan turn plans first, the others execute. */
export function startingState(kind: TurnKind): { phase: TaskPhase; activity: TaskActivity } {
  return kind === 'plan' ? { phase: 'plan', activity: 'planning' } : { phase: 'execute', activity: 'executing' };
}

/** How a turn was asked to run: plan only (a prompt's plan_only), offline (decisions §17.2). */
export interface TurnFlags {
  planOnly?: boolean;
  offline?: boolean;
}

/**
 * A new turn of `task`. It waits in its group's line for a group's run, else in its account's
 * line of single tasks (decisions §18: workers take turns between accounts, and within an
 * account between its lines).
 */
export function newTurn(task: Pick<TaskRecord, 'id' | 'accountId' | 'group'>, kind: TurnKind, input: string | null, now: string, status: 'pending' | 'queued', flags: TurnFlags = {}): TurnRecord {
  return {
    id: newId('turn'), taskId: task.id, accountId: task.accountId, line: task.group?.id ?? task.accountId, kind, status, input, planOnly: flags.planOnly ?? false, offline: flags.offline ?? false, replyTextStored: false, createdAt: now, startedAt: null, endedAt: null,
    leaseOwner: null, leaseExpiresAt: null, creditsUsedMicros: 0, tokensIn: 0, tokensInCached: 0, tokensOut: 0, toolCalls: 0, compactions: 0, error: null, rowsWritten: 0, verifiedRows: 0,
    changes: { added: 0, changed: 0, unconfirmed: 0 },
  };
}

/**
 * Stores a new task whose first turn is `turn` (pending, already made), with its `created`
 * event, and wakes the workers once it commits: what a create and a group's run share.
 */
export async function insertTask(
  uow: UnitOfWork,
  fields: Pick<TaskRecord, 'id' | 'accountId' | 'spec' | 'group' | 'cronNextRunAt'>,
  turn: TurnRecord,
): Promise<TaskUnit> {
  const schedule = fields.spec.schedule;
  const task: TaskRecord = {
    ...fields,
    name: fields.spec.name,
    type: fields.spec.type,
    status: 'execute',
    ...startingState(turn.kind),
    pinned: false,
    cronExpression: schedule?.cron ?? null,
    cronTimezone: schedule?.timezone ?? null,
    activeOutput: null,
    creditsUsedMicros: 0,
    lastEventSeq: 0,
    currentTurnId: turn.id,
    queuedCount: 0,
    createdAt: uow.now,
    updatedAt: uow.now,
    deletedAt: null,
  };
  const unit = new TaskUnit(uow, task, { isNew: true });
  uow.turnReady();
  unit.taskEvent('created', turn.id);
  await uow.tx.turns.insert(turn);
  return unit;
}

/** Starts a turn on an idle task: credits and capacity checked, the turn pending for a worker. */
export async function beginTurn(unit: TaskUnit, admission: Admission, kind: TurnKind, input: string | null, flags: TurnFlags = {}): Promise<string> {
  await admission.requireCredits(unit.tx, unit.task.accountId, { task_id: unit.task.id });
  await admission.requireCapacity(unit.tx);
  const turn = newTurn(unit.task, kind, input, unit.now, 'pending', flags);
  await unit.tx.turns.insert(turn);
  unit.set({ status: 'execute', ...startingState(kind), currentTurnId: turn.id });
  unit.uow.turnReady();
  return turn.id;
}

/** The turn that just ended, as its task keeps it (the Task body's `last_turn`). */
function lastTurnOf(task: TaskRecord, turnId: string, turn: TurnRecord | undefined, outcome: TurnOutcome, error: TurnError | null, now: string, creditsUsedMicros: number): LastTurnRecord {
  return {
    ...(task.spec.outputs.some((o) => o.key) ? { changes: turn?.changes ?? { added: 0, changed: 0, unconfirmed: 0 } } : {}),
    turnId,
    kind: turn?.kind ?? 'execute',
    outcome,
    startedAt: turn?.startedAt ?? null,
    endedAt: turn?.endedAt ?? now,
    creditsUsedMicros,
    error: error && { error: error.error, message: error.message },
  };
}

/**
 * Ends the task's current turn with `outcome`, records error/task/done events, and hands the
 * task to the next queued message (as any turn's end does); the unit's `turn_ended` handlers
 * (webhooks, the task's group) run at flush. Returns the next turn's id.
 */
export async function endTurn(unit: TaskUnit, turnId: string, outcome: TurnOutcome, error: TurnError | null, opts: { promote?: boolean } = {}): Promise<string | null> {
  const creditsUsedMicros = (await unit.tx.turns.end(turnId, { status: outcome, endedAt: unit.now, error })) ?? 0;
  if (error) unit.event('error', turnId, { ...error });
  // The /state poll and an idle task's stream show this turn's error until the next turn ends.
  if (error || unit.task.lastErrorSeq != null) unit.set({ lastErrorSeq: error ? unit.task.lastEventSeq : null });
  const usage = await unit.tx.turns.get(turnId);
  unit.set({ lastTurn: lastTurnOf(unit.task, turnId, usage, outcome, error, unit.now, creditsUsedMicros) });
  let next: TurnRecord | undefined;
  if (opts.promote !== false && unit.task.queuedCount > 0) next = await unit.tx.turns.nextQueued(unit.task.id);
  if (next) {
    await unit.tx.turns.update(next.id, { status: 'pending' });
    unit.uow.turnReady();
    unit.set({ status: 'execute', ...startingState(next.kind), currentTurnId: next.id, queuedCount: Math.max(0, unit.task.queuedCount - 1) });
  } else {
    unit.set({ status: 'plan', phase: 'plan', activity: 'idle', waiting: null, currentTurnId: null });
  }
  unit.taskEvent('turn_ended', turnId);
  const outputCount = unit.task.spec.outputs.length;
  const changes = usage?.changes ?? { added: 0, changed: 0, unconfirmed: 0 };
  unit.event('done', turnId, {
    outcome,
    output_count: outputCount,
    credits_used: fromMicros(creditsUsedMicros),
    tokens_in: usage?.tokensIn ?? 0,
    tokens_in_cached: usage?.tokensInCached ?? 0,
    tokens_out: usage?.tokensOut ?? 0,
    compactions: usage?.compactions ?? 0,
    rows_written: usage?.rowsWritten ?? 0,
    verified_rows: usage?.verifiedRows ?? 0,
    unverified_rows: (usage?.rowsWritten ?? 0) - (usage?.verifiedRows ?? 0),
    citation_accuracy: citationAccuracy(unit.task),
    // The queued message that starts now, or null: the task is idle (streams of the task end here).
    next_turn_id: next?.id ?? null,
    ...(unit.task.spec.outputs.some((o) => o.key) ? { changes } : {}),
  });
  unit.uow.signal('turn_ended', { task: unit.task, turnId, outcome, outputCount, creditsUsedMicros, changes });
  return next?.id ?? null;
}
