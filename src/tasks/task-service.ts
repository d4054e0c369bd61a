/**
 * The task state machine (interface §3, decisions §2, §4, §6): every change to a task, its turns
 * and its queue happens here, each in one transaction that locks the task row, stores its events
 * and publishes them after commit. Routes and the turn runner call these methods and never write
 * task state themselves.
 */
import { hasCredits, requireCredits } from '../accounts/accounts.js';
import { fromMicros, pricesInMicros, stepCostMicros, type MicroPrices } from '../domain/credits.js';
import type { Config } from '../config.js';
import { QuarryError, turnError } from '../errors.js';
import type { EventBus } from '../events/event-bus.js';
import { CONTROL_CHANNEL, type ControlMessage } from '../events/cluster-messages.js';
import { storeEvents } from '../events/store-events.js';
import { crashPoint } from '../crash-points.js';
import { newId } from '../ids.js';
import type { EventRecord, IdempotencyRecord, TaskPatch, TaskRecord, TurnRecord } from '../domain/records.js';
import type { TaskActivity, TaskPhase, TurnKind } from '../contract/index.js';
import type { TurnError } from '../errors.js';
import type { Repositories, Store } from '../store/store.js';
import { nextCronRun, normalizeSchedule } from '../domain/spec.js';
import type { Charge, RowWriter, StepUsage } from '../agent/turn-port.js';
import type { EventPayload, EventType, Schedule, Task, TaskEventReason, TaskSpec } from '../contract/index.js';
import { isVisibleTo, toReplyView, toTaskView } from '../domain/task-view.js';
import { queueTurnWebhooks, type TurnEnded } from '../webhooks/webhooks.js';

export type TurnOutcome = 'completed' | 'stopped' | 'failed';

/**
 * What the task service tells the group scheduler (groups/group-service.ts), inside the
 * transaction that ends a group run's turn: the scheduler records the run's outcome and may start
 * the group's next runs in the same transaction. It returns what to do once that commits.
 */
export interface GroupRunHooks {
  runEnded(tx: Repositories, run: EndedRun, now: string): Promise<(() => void) | null>;
}

export interface EndedRun {
  groupId: string;
  inputIndex: number;
  taskId: string;
  turnId: string;
  outcome: TurnOutcome;
  creditsUsedMicros: number;
}

/** A group run to start: a task of the group's spec whose one turn is given the input. */
export interface NewRun {
  accountId: string;
  groupId: string;
  spec: TaskSpec;
  inputIndex: number;
  /** The input's values as JSON. */
  input: string;
  /** What the run's turn is told (the input, framed as data). */
  message: string;
}

export interface TaskServiceOptions {
  store: Store;
  bus: EventBus;
  config: Config;
  clock?: () => Date;
}

/**
 * An Idempotency-Key to claim for a change, first thing in the change's own transaction: two
 * requests with one key cannot both make the change, and a crash between commit and answer
 * cannot let a retry under the key make it twice. A change that is refused or fails rolls back
 * and takes its claim with it, so the key can be used again.
 */
export interface IdempotencyMark {
  key: string;
  requestHash: string;
}

/** How long a key's answer is remembered (decisions §2). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * The change was not made: another request holds the key, and its change committed (or, on
 * SQLite, is about to commit with this one's group). The caller answers with that request's
 * record instead (src/http/idempotency.ts).
 */
export class IdempotencyKeyClaimed extends Error {
  constructor(readonly key: string) {
    super(`Idempotency-Key "${key}" was claimed by another request`);
    this.name = 'IdempotencyKeyClaimed';
  }
}

/** What a route answers with after a change: 200 with the task, or 202 when a message was queued. */
export interface TaskReply {
  statusCode: 200 | 202;
  task: Task;
  /** The turn this request started or queued, so a stream can follow it. */
  turnId: string | null;
  /** The task's last event sequence number before this change: a stream of the change starts after it. */
  fromSeq: number;
}

const PENDING_RECOUNT_MS = 1000;

/** What an idempotency record says while its answer is not stored yet: the change committed, and what it made or changed. */
export interface CommittedTarget {
  kind: 'task' | 'group';
  id: string;
}

const COMMITTED_MARKS: Record<CommittedTarget['kind'], string> = { task: '@committed-task:', group: '@committed-group:' };

/** The target of a record whose change committed but whose answer was not stored yet; null for a stored answer. */
export function committedTarget(body: string): CommittedTarget | null {
  for (const [kind, mark] of Object.entries(COMMITTED_MARKS)) {
    if (body.startsWith(mark)) return { kind: kind as CommittedTarget['kind'], id: body.slice(mark.length) };
  }
  return null;
}

/**
 * Claims the key for this change, or throws IdempotencyKeyClaimed. The record says the change
 * committed (it is visible to other requests only once it has) and what it changed; the
 * answer itself is stored once it is sent.
 */
export async function claimKey(tx: Repositories, accountId: string, mark: IdempotencyMark, status: number, target: CommittedTarget, at: string): Promise<void> {
  const expiredBefore = new Date(Date.parse(at) - IDEMPOTENCY_WINDOW_MS).toISOString();
  if (!(await tx.idempotency.claim(accountId, mark.key, committedRecord(mark, status, target, at), expiredBefore))) throw new IdempotencyKeyClaimed(mark.key);
}

function committedRecord(mark: IdempotencyMark, status: number, target: CommittedTarget, at: string): IdempotencyRecord {
  return { requestHash: mark.requestHash, status, body: `${COMMITTED_MARKS[target.kind]}${target.id}`, createdAt: at };
}

/** Where a turn of each kind starts: a plan turn plans first, the others execute. */
function startingState(kind: TurnKind): { phase: TaskPhase; activity: TaskActivity } {
  return kind === 'plan' ? { phase: 'plan', activity: 'planning' } : { phase: 'execute', activity: 'executing' };
}

/**
 * One task's changes inside one transaction: field updates and the events they cause, written
 * together at flush. Event sequence numbers come from the locked task row, so they are gap-free
 * per task.
 */
class TaskUnit {
  readonly events: EventRecord[] = [];
  /** Turns this unit ended: their webhooks are queued at flush, with the task as it is committed. */
  readonly turnsEnded: Omit<TurnEnded, 'task' | 'at'>[] = [];
  /** Webhook deliveries queued at flush (the dispatcher is woken once the unit commits). */
  deliveriesQueued = 0;
  /** What to do once this unit commits besides publishing its events (a group's next runs). */
  readonly afterCommit: (() => void)[] = [];
  private readonly patch: TaskPatch = {};
  private readonly controls: ControlMessage[] = [];

  constructor(
    readonly tx: Repositories,
    readonly task: TaskRecord,
    readonly now: string,
    /** This process, named in notices so it can skip its own. */
    private readonly origin: string,
    /** The task is not stored yet: flush inserts it whole instead of updating it. */
    private readonly isNew = false,
  ) {}

  /** Tells the other processes on a shared store something once this unit commits. */
  control(message: ControlMessage): void {
    this.controls.push(message);
  }

  set(patch: TaskPatch): void {
    Object.assign(this.task, patch, { updatedAt: this.now });
    Object.assign(this.patch, patch, { updatedAt: this.now });
  }

  event<T extends EventType>(type: T, turnId: string | null, payload: EventPayload<T>): void {
    const seq = this.task.lastEventSeq + 1;
    this.task.lastEventSeq = seq;
    this.patch.lastEventSeq = seq;
    const data = JSON.stringify({ seq, type, task_id: this.task.id, turn_id: turnId, at: this.now, ...payload });
    this.events.push({ taskId: this.task.id, seq, type, turnId, data });
  }

  taskEvent(reason: TaskEventReason, turnId: string | null): void {
    this.event('task', turnId, { reason, task: toTaskView(this.task, Date.parse(this.now)) });
  }

  async flush(): Promise<void> {
    if (this.isNew) await this.tx.tasks.insert(this.task);
    else await this.tx.tasks.update(this.task.id, this.patch);
    await storeEvents(this.tx, this.origin, this.events);
    for (const message of this.controls) await this.tx.cluster.notify(CONTROL_CHANNEL, JSON.stringify(message));
    // In this transaction: a turn's end and its webhooks are stored together or not at all.
    for (const ended of this.turnsEnded) {
      this.deliveriesQueued += await queueTurnWebhooks(this.tx, { ...ended, task: this.task, at: this.now });
    }
  }
}

export class TaskService {
  private readonly store: Store;
  private readonly bus: EventBus;
  private readonly config: Config;
  private readonly clock: () => Date;
  private readonly prices: MicroPrices;
  private pendingCount = { value: 0, at: 0 };
  /** Called after a commit that made a turn ready to run. */
  onTurnReady: () => void = () => {};
  /** Called after a commit that ended a turn some worker may be running (stop, delete). */
  onTurnCancelled: (turnId: string) => void = () => {};
  /** Called after a commit that queued webhook deliveries. */
  onDeliveriesQueued: () => void = () => {};
  /** The group scheduler, told of every group run's end. */
  groupRuns: GroupRunHooks | null = null;

  constructor(opts: TaskServiceOptions) {
    this.store = opts.store;
    this.bus = opts.bus;
    this.config = opts.config;
    this.clock = opts.clock ?? (() => new Date());
    this.prices = pricesInMicros(opts.config.prices);
  }

  now(): string {
    return this.clock().toISOString();
  }

  // ---- creates and messages -------------------------------------------------------------------

  /** Creates a task and its first turn (a plan turn from a prompt, an execute turn from a spec). */
  async create(accountId: string, input: { taskId?: string; spec: TaskSpec; kind: 'plan' | 'execute'; planOnly?: boolean }, idempotency?: IdempotencyMark): Promise<TaskReply> {
    const taskId = input.taskId ?? newId('tsk');
    const result = await this.store.transaction(async (tx) => {
      const now = this.now();
      // Before anything else: a second request with this key changes nothing, and is not told
      // task_exists about the task the first one made.
      if (idempotency) await claimKey(tx, accountId, idempotency, 200, { kind: 'task', id: taskId }, now);
      // A new ULID cannot be taken already; only a client-chosen id needs the look.
      if (input.taskId !== undefined && (await tx.tasks.get(taskId, { lock: true }))) {
        throw new QuarryError('task_exists', `A task with task_id "${taskId}" already exists: continue it instead.`, { task_id: taskId });
      }
      await this.requireCredits(tx, accountId, { task_created: false });
      await this.requireCapacity(tx);
      // The prompt lives in the spec; the first turn carries no message of its own.
      const turn = this.newTurn(taskId, accountId, input.kind, null, now, 'pending', input.planOnly ?? false);
      const unit = await this.insertTask(tx, { id: taskId, accountId, spec: input.spec, group: null }, turn, now);
      return { unit, turn };
    });
    crashPoint('create.committed');
    this.committed(result.unit);
    this.onTurnReady();
    return { statusCode: 200, task: toTaskView(result.unit.task), turnId: result.turn.id, fromSeq: 0 };
  }

  /**
   * Starts a group run inside the caller's transaction (the group scheduler's, which holds the
   * group's lock): a new task of the group's spec with one pending execute turn carrying the
   * input. No credit or capacity check: the scheduler decides when a group may start runs, and
   * a group holds at most its max_parallel runs at once. Returns the task and turn ids, and what
   * to do once the transaction commits.
   */
  async startRun(tx: Repositories, run: NewRun, now: string): Promise<{ taskId: string; turnId: string; committed: () => void }> {
    const taskId = newId('tsk');
    const turn = this.newTurn(taskId, run.accountId, 'execute', run.message, now, 'pending', false);
    const group = { id: run.groupId, inputIndex: run.inputIndex, input: run.input };
    const unit = await this.insertTask(tx, { id: taskId, accountId: run.accountId, spec: run.spec, group }, turn, now);
    return {
      taskId, turnId: turn.id,
      committed: () => {
        this.committed(unit);
        this.onTurnReady();
      },
    };
  }

  /**
   * A message to an existing task (continue, or a prompt sent with a task_id): starts a turn
   * when the task is idle, queues it (202) while a turn runs.
   */
  async message(accountId: string, taskId: string, text: string, opts: { viaPrompt?: boolean; idempotency?: IdempotencyMark } = {}): Promise<TaskReply> {
    return this.changeTask(accountId, taskId, { notFoundExtras: opts.viaPrompt ? { task_created: false } : {}, idempotency: opts.idempotency }, async (unit) => {
      this.refuseCron(unit.task);
      const now = unit.now;
      if (unit.task.currentTurnId) {
        if (unit.task.queuedCount >= this.config.maxQueuedMessages) {
          throw new QuarryError('task_executing', `A turn is running and ${unit.task.queuedCount} messages are already queued (the most a task holds): poll /state until active is false, then resend.`, { task_id: taskId });
        }
        const turn = this.newTurn(taskId, accountId, 'continue', text, now, 'queued', false);
        await unit.tx.turns.insert(turn);
        unit.set({ queuedCount: unit.task.queuedCount + 1 });
        unit.taskEvent('message_queued', turn.id);
        return { statusCode: 202, turnId: turn.id };
      }
      return { statusCode: 200, turnId: await this.beginTurn(unit, 'continue', text) };
    });
  }

  /** Runs the current spec again. Never queued: refused while a turn runs. */
  async execute(accountId: string, taskId: string, instruction: string | null, idempotency?: IdempotencyMark): Promise<TaskReply> {
    return this.changeTask(accountId, taskId, { idempotency }, async (unit) => {
      this.refuseCron(unit.task);
      if (unit.task.currentTurnId) {
        throw new QuarryError('task_executing', 'A turn is running and execute is never queued: poll /state until active is false, then resend.', { task_id: taskId });
      }
      return { statusCode: 200, turnId: await this.beginTurn(unit, 'execute', instruction) };
    });
  }

  /** Ends the running turn at once, keeping its rows; the next queued message then starts unless the queue is cleared. */
  async stop(accountId: string, taskId: string, clearQueue: boolean): Promise<TaskReply> {
    let stopped: string | null = null;
    const reply = await this.changeTask(accountId, taskId, {}, async (unit) => {
      if (clearQueue && unit.task.queuedCount > 0) {
        await unit.tx.turns.cancelQueued(taskId, unit.now);
        unit.set({ queuedCount: 0 });
      }
      const turnId = unit.task.currentTurnId;
      if (!turnId) return { statusCode: 200, turnId: null };
      stopped = turnId;
      unit.control({ type: 'cancel', turnId });
      const next = await this.endTurn(unit, turnId, 'stopped', null);
      return { statusCode: 200, turnId: next };
    });
    if (stopped) this.onTurnCancelled(stopped);
    return reply;
  }

  /** PATCH: name, pinned, and entering or leaving cron mode. */
  async patch(accountId: string, taskId: string, patch: { name?: string | null; pinned?: boolean; schedule?: { cron: string; timezone?: string } | null }): Promise<TaskReply> {
    // Validate before taking the lock so a bad schedule never half-applies.
    const schedule = patch.schedule ? normalizeSchedule(patch.schedule, 'schedule') : patch.schedule;
    return this.changeTask(accountId, taskId, {}, async (unit) => {
      const change: TaskPatch = {};
      if (patch.name !== undefined) change.name = patch.name;
      if (patch.pinned !== undefined) change.pinned = patch.pinned;
      if (schedule !== undefined) {
        change.spec = { ...unit.task.spec, schedule };
        change.cronExpression = schedule?.cron ?? null;
        change.cronTimezone = schedule?.timezone ?? null;
        change.cronNextRunAt = schedule ? this.nextRun(schedule) : null;
      }
      if (change.name !== undefined) change.spec = { ...(change.spec ?? unit.task.spec), name: change.name };
      unit.set(change);
      unit.taskEvent('updated', unit.task.currentTurnId);
      return { statusCode: 200, turnId: null };
    });
  }

  /** Marks the task deleted, stops its turn and drops its queue. */
  async delete(accountId: string, taskId: string): Promise<TaskReply> {
    let stopped: string | null = null;
    const reply = await this.changeTask(accountId, taskId, {}, async (unit) => {
      if (unit.task.queuedCount > 0) await unit.tx.turns.cancelQueued(taskId, unit.now);
      const turnId = unit.task.currentTurnId;
      if (turnId) {
        stopped = turnId;
        unit.control({ type: 'cancel', turnId });
        await this.endTurn(unit, turnId, 'stopped', null, { promote: false });
      }
      unit.set({ status: 'deleted', phase: null, activity: null, deletedAt: unit.now, queuedCount: 0, currentTurnId: null, cronExpression: null, cronTimezone: null, cronNextRunAt: null });
      unit.taskEvent('deleted', turnId);
      return { statusCode: 200, turnId: null };
    });
    if (stopped) this.onTurnCancelled(stopped);
    return reply;
  }

  // ---- cron -----------------------------------------------------------------------------------

  /** Fires every due cron task once: an execute turn, or a recorded skip while a turn still runs. */
  async runDueCronTicks(limit = 100): Promise<number> {
    const due = await this.store.tasks.listDueCron(this.now(), limit);
    let fired = 0;
    for (const candidate of due) {
      const result = await this.store.transaction(async (tx) => {
        const task = await tx.tasks.get(candidate.id, { lock: true });
        const now = this.now();
        if (!task || task.deletedAt || !task.cronNextRunAt || task.cronNextRunAt > now || !task.cronExpression) return null;
        const unit = new TaskUnit(tx, task, now, this.config.workerId);
        unit.set({ cronNextRunAt: this.nextRun({ cron: task.cronExpression, timezone: task.cronTimezone ?? 'UTC' }) });
        let started = false;
        if (task.currentTurnId) {
          unit.taskEvent('cron_tick_skipped', task.currentTurnId);
        } else if (!(await hasCredits(tx, task.accountId))) {
          unit.event('error', null, turnError('out_of_credits', 'A scheduled run was skipped: the account has no credits left.'));
          unit.taskEvent('cron_tick_skipped', null);
        } else {
          await this.beginTurn(unit, 'execute', null);
          started = true;
        }
        await unit.flush();
        return { unit, started };
      });
      if (!result) continue;
      crashPoint('cron.fired');
      fired++;
      this.committed(result.unit);
      if (result.started) this.onTurnReady();
    }
    return fired;
  }

  private nextRun(schedule: Schedule): string | null {
    return nextCronRun(schedule, this.clock())?.toISOString() ?? null;
  }

  // ---- the turn lifecycle (called by the turn runner) -------------------------------------------

  /**
   * A worker took the turn: set the task's activity and say so. Returns the task as the turn
   * starts, or null when the turn must not run (it was stopped or its task deleted between being
   * queued and claimed).
   */
  async turnStarted(turn: TurnRecord, resumed: boolean): Promise<TaskRecord | null> {
    const result = await this.store.transaction(async (tx) => {
      const task = await tx.tasks.get(turn.taskId, { lock: true });
      // Stopped or deleted between being claimed and starting: whoever did that ended the turn.
      if (!task || task.currentTurnId !== turn.id) return null;
      const unit = new TaskUnit(tx, task, this.now(), this.config.workerId);
      // A resumed turn's turn_started was recorded when it first started.
      if (resumed) return { unit, start: true };
      if (!(await hasCredits(tx, turn.accountId))) {
        // A message queued while credits remained reaches the front after they ran out: it does not start.
        await this.endTurn(unit, turn.id, 'failed', turnError('out_of_credits', 'The account has no credits left, so this turn did not start: add credits, then send the message again.'));
        await unit.flush();
        return { unit, start: false };
      }
      await tx.turns.update(turn.id, { startedAt: unit.now });
      unit.set(startingState(turn.kind));
      unit.taskEvent('turn_started', turn.id);
      await unit.flush();
      return { unit, start: true };
    });
    if (!result) return null;
    this.committed(result.unit);
    if (!result.start && result.unit.task.currentTurnId) this.onTurnReady();
    return result.start ? result.unit.task : null;
  }

  /** Moves the task's phase or activity while its turn runs; an event is stored only on change. */
  async setTurnState(turnId: string, taskId: string, state: { phase?: TaskPhase; activity?: TaskActivity }): Promise<void> {
    await this.changeRunningTurn(turnId, taskId, async (unit) => {
      const phaseChanged = state.phase !== undefined && state.phase !== unit.task.phase;
      const activityChanged = state.activity !== undefined && state.activity !== unit.task.activity;
      if (!phaseChanged && !activityChanged) return;
      unit.set({ ...(phaseChanged ? { phase: state.phase } : {}), ...(activityChanged ? { activity: state.activity } : {}) });
      unit.taskEvent(phaseChanged ? 'phase_changed' : 'activity_changed', turnId);
    });
  }

  /** Stores a turn's event (text, tool) while the turn still runs. */
  async turnEvent<T extends 'text' | 'tool'>(turnId: string, taskId: string, type: T, payload: EventPayload<T>): Promise<boolean> {
    return this.changeRunningTurn(turnId, taskId, async (unit) => unit.event(type, turnId, payload));
  }

  /** Replaces the spec during a turn (update_spec). */
  async updateSpec(turnId: string, taskId: string, spec: TaskSpec): Promise<boolean> {
    return this.changeRunningTurn(turnId, taskId, async (unit) => {
      unit.set({ spec, name: spec.name });
      unit.taskEvent('updated', turnId);
    });
  }

  /** Appends validated rows once per write key; false when the turn no longer runs. */
  async appendRows(turnId: string, taskId: string, outputId: string, writeKey: string, rows: RowWriter[], verifiedRows = 0): Promise<{ firstRow: number; count: number } | null> {
    let written: { firstRow: number; count: number } | null = null;
    await this.changeRunningTurn(turnId, taskId, async (unit) => {
      const r = await unit.tx.rows.append(taskId, outputId, writeKey, rows, unit.now, verifiedRows);
      written = { firstRow: r.firstRow, count: r.count };
      if (!r.replayed) unit.set({ activeOutput: outputId });
    });
    if (written) crashPoint('rows.appended');
    return written;
  }

  /**
   * Stores a completed agent step and charges what it used, atomically, with `text` (what the
   * model streamed since the last text event) as a text event: a step is charged once,
   * however often the turn is replayed. Returns the account balance after the charge and what
   * the turn has used, in credits: the exact micro-credit amounts as the API shows them, so
   * `balance <= 0` holds exactly when the balance reads 0. The same step stored already (its
   * commit went through but its answer was lost, and the write was sent again) gets the balance
   * and turn total as they stand, charging nothing more. Null when the turn no longer runs or
   * another step of that number was stored (another worker got there first).
   */
  async checkpointStep(turn: TurnRecord, step: number, data: string, usage: StepUsage, text = ''): Promise<Charge | null> {
    const costMicros = stepCostMicros(this.prices, usage);
    let result: Charge | null = null;
    await this.changeRunningTurn(turn.id, turn.taskId, async (unit) => {
      if (!(await unit.tx.steps.insert(turn.id, step, data, unit.now))) {
        if ((await unit.tx.steps.get(turn.id, step)) !== data) return;
        const turnMicros = (await unit.tx.turns.get(turn.id))?.creditsUsedMicros ?? 0;
        const balanceMicros = (await unit.tx.accounts.get(turn.accountId))?.balanceMicros ?? 0;
        result = { balance: fromMicros(balanceMicros), turnCredits: fromMicros(turnMicros) };
        return;
      }
      if (text) unit.event('text', turn.id, { text });
      const turnMicros = (await unit.tx.turns.addUsage(turn.id, { creditsMicros: costMicros, ...usage }))!;
      const balanceMicros = costMicros > 0
        ? await unit.tx.accounts.charge(turn.accountId, costMicros)
        : ((await unit.tx.accounts.get(turn.accountId))?.balanceMicros ?? 0);
      if (costMicros > 0) unit.set({ creditsUsedMicros: unit.task.creditsUsedMicros + costMicros });
      result = { balance: fromMicros(balanceMicros), turnCredits: fromMicros(turnMicros) };
    });
    return result;
  }

  /** The turn ended by itself (completed or failed). No-op when it was already stopped. */
  async finishTurn(turnId: string, taskId: string, outcome: 'completed' | 'failed', error: TurnError | null): Promise<void> {
    const result = await this.store.transaction(async (tx) => {
      const task = await tx.tasks.get(taskId, { lock: true });
      if (!task || task.currentTurnId !== turnId) return null;
      const unit = new TaskUnit(tx, task, this.now(), this.config.workerId);
      await this.endTurn(unit, turnId, outcome, error);
      await unit.flush();
      return unit;
    });
    if (!result) return;
    crashPoint('turn.finished');
    this.committed(result);
    if (result.task.currentTurnId) this.onTurnReady();
  }

  // ---- internals ------------------------------------------------------------------------------

  /** After a unit's commit: its events go to live listeners, its deliveries to the dispatcher. */
  private committed(unit: TaskUnit): void {
    this.bus.publish(unit.events);
    if (unit.deliveriesQueued > 0) this.onDeliveriesQueued();
    for (const after of unit.afterCommit) after();
  }

  /**
   * Stores a new task whose first turn is `turn` (pending, already made), with its `created`
   * event, and wakes the workers once it commits: what a create and a group's run share.
   */
  private async insertTask(tx: Repositories, fields: Pick<TaskRecord, 'id' | 'accountId' | 'spec' | 'group'>, turn: TurnRecord, now: string): Promise<TaskUnit> {
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
      cronNextRunAt: schedule ? this.nextRun(schedule) : null,
      activeOutput: null,
      creditsUsedMicros: 0,
      lastEventSeq: 0,
      currentTurnId: turn.id,
      queuedCount: 0,
      createdAt: now,
      updatedAt: now,
      deletedAt: null,
    };
    const unit = new TaskUnit(tx, task, now, this.config.workerId, true);
    unit.control({ type: 'wake' });
    unit.taskEvent('created', turn.id);
    await unit.flush();
    await tx.turns.insert(turn);
    return unit;
  }

  private newTurn(taskId: string, accountId: string, kind: TurnKind, input: string | null, now: string, status: 'pending' | 'queued', planOnly: boolean): TurnRecord {
    return {
      id: newId('turn'), taskId, accountId, kind, status, input, planOnly, createdAt: now, startedAt: null, endedAt: null,
      leaseOwner: null, leaseExpiresAt: null, creditsUsedMicros: 0, tokensIn: 0, tokensOut: 0, toolCalls: 0, error: null,
    };
  }

  /** Starts a turn on an idle task: credits and capacity checked, the turn pending for a worker. */
  private async beginTurn(unit: TaskUnit, kind: TurnKind, input: string | null): Promise<string> {
    await this.requireCredits(unit.tx, unit.task.accountId, { task_id: unit.task.id });
    await this.requireCapacity(unit.tx);
    const turn = this.newTurn(unit.task.id, unit.task.accountId, kind, input, unit.now, 'pending', false);
    await unit.tx.turns.insert(turn);
    unit.set({ status: 'execute', ...startingState(kind), currentTurnId: turn.id });
    unit.control({ type: 'wake' });
    return turn.id;
  }

  /**
   * Ends the task's current turn with `outcome`, records error/task/done events, and hands the
   * task to the next queued message (as any turn's end does). Returns the next turn's id.
   */
  private async endTurn(unit: TaskUnit, turnId: string, outcome: TurnOutcome, error: TurnError | null, opts: { promote?: boolean } = {}): Promise<string | null> {
    const creditsUsedMicros = (await unit.tx.turns.end(turnId, { status: outcome, endedAt: unit.now, error })) ?? 0;
    if (error) unit.event('error', turnId, { ...error });
    // The /state poll and an idle task's stream show this turn's error until the next turn ends.
    if (error || unit.task.lastErrorSeq != null) unit.set({ lastErrorSeq: error ? unit.task.lastEventSeq : null });
    let next: TurnRecord | undefined;
    if (opts.promote !== false && unit.task.queuedCount > 0) next = await unit.tx.turns.nextQueued(unit.task.id);
    if (next) {
      await unit.tx.turns.update(next.id, { status: 'pending' });
      unit.control({ type: 'wake' });
      unit.set({ status: 'execute', ...startingState(next.kind), currentTurnId: next.id, queuedCount: Math.max(0, unit.task.queuedCount - 1) });
    } else {
      unit.set({ status: 'plan', phase: 'plan', activity: 'idle', currentTurnId: null });
    }
    unit.taskEvent('turn_ended', turnId);
    const creditsUsed = fromMicros(creditsUsedMicros);
    const outputCount = unit.task.spec.outputs.length;
    unit.event('done', turnId, {
      outcome,
      output_count: outputCount,
      credits_used: creditsUsed,
      // The queued message that starts now, or null: the task is idle (streams of the task end here).
      next_turn_id: next?.id ?? null,
    });
    unit.turnsEnded.push({ turnId, outcome, outputCount, creditsUsed });
    const { group } = unit.task;
    if (group && this.groupRuns) {
      const run = { groupId: group.id, inputIndex: group.inputIndex, taskId: unit.task.id, turnId, outcome, creditsUsedMicros };
      const after = await this.groupRuns.runEnded(unit.tx, run, unit.now);
      if (after) unit.afterCommit.push(after);
    }
    return next?.id ?? null;
  }

  /** Runs `fn` on a locked task of this account, then stores, publishes and answers with the task. */
  private async changeTask(
    accountId: string,
    taskId: string,
    opts: { notFoundExtras?: { task_created?: false }; idempotency?: IdempotencyMark },
    fn: (unit: TaskUnit) => Promise<{ statusCode: 200 | 202; turnId: string | null }>,
  ): Promise<TaskReply> {
    const { notFoundExtras = {}, idempotency } = opts;
    const result = await this.store.transaction(async (tx) => {
      const now = this.now();
      // Before the task's lock: a second request with this key waits on the first one's claim,
      // never on the task, and changes nothing.
      if (idempotency) await claimKey(tx, accountId, idempotency, 200, { kind: 'task', id: taskId }, now);
      const task = await tx.tasks.get(taskId, { lock: true });
      if (!isVisibleTo(task, accountId)) throw QuarryError.taskNotFound(taskId, notFoundExtras);
      const fromSeq = task.lastEventSeq;
      const unit = new TaskUnit(tx, task, now, this.config.workerId);
      const answer = await fn(unit);
      await unit.flush();
      // The claim said 200; a queued message is answered 202.
      if (idempotency && answer.statusCode !== 200) await tx.idempotency.put(accountId, idempotency.key, committedRecord(idempotency, answer.statusCode, { kind: 'task', id: taskId }, now));
      return { unit, answer, fromSeq };
    });
    crashPoint('message.committed');
    this.committed(result.unit);
    const { task } = result.unit;
    if (task.currentTurnId) this.onTurnReady();
    return { statusCode: result.answer.statusCode, task: toReplyView(task, result.answer.statusCode), turnId: result.answer.turnId, fromSeq: result.fromSeq };
  }

  /** Runs `fn` only while `turnId` is still the task's running turn; returns whether it ran. */
  private async changeRunningTurn(turnId: string, taskId: string, fn: (unit: TaskUnit) => Promise<void>): Promise<boolean> {
    const result = await this.store.transaction(async (tx) => {
      const task = await tx.tasks.get(taskId, { lock: true });
      if (!task || task.currentTurnId !== turnId) return null;
      const unit = new TaskUnit(tx, task, this.now(), this.config.workerId);
      await fn(unit);
      await unit.flush();
      return unit;
    });
    if (!result) return false;
    this.committed(result);
    return true;
  }

  private refuseCron(task: TaskRecord): void {
    if (task.cronExpression) {
      throw new QuarryError('task_in_cron_mode', 'The task runs on a schedule and takes no messages: PATCH it with {"schedule": null} to leave cron mode.', { task_id: task.id });
    }
  }

  private async requireCredits(tx: Repositories, accountId: string, extras: { task_id?: string; task_created?: false }): Promise<void> {
    await requireCredits(tx, accountId, { platformUrl: this.config.platformUrl, notStarted: 'turn', extras });
  }

  /**
   * Counting pending turns costs a scan that grows with the backlog, so the count is taken at most
   * every PENDING_RECOUNT_MS and kept in between by adding the turns made pending here. Turns
   * claimed meanwhile make that estimate high, and it is checked against an exact count before
   * anything is refused; queued messages promoted to pending, and turns made by other
   * processes, make it low, so the limit can be passed by what arrives within one recount
   * interval.
   */
  private async requireCapacity(tx: Repositories): Promise<void> {
    const now = Date.now();
    const stale = now - this.pendingCount.at >= PENDING_RECOUNT_MS;
    if (stale || this.pendingCount.value >= this.config.maxPendingTurns) this.pendingCount = { value: await tx.turns.countPending(), at: now };
    if (this.pendingCount.value >= this.config.maxPendingTurns) {
      throw new QuarryError('at_capacity', 'Too many turns are waiting to run: wait retry_after seconds, then resend.', { retry_after: 5 });
    }
    this.pendingCount.value++;
  }
}

