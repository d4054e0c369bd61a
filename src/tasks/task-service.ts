/**
 * The task state machine as the API drives it (interface §3, decisions §2, §4, §6): create,
 * message, execute, stop, PATCH, delete, cron ticks and a group's runs. Every change is one unit
 * of work (unit-of-work.ts) that locks the task row, stores its events and publishes them after
 * commit; the transitions changes share are in task-transitions.ts; the writes of a running turn are
 * TurnWrites' (turn-writes.ts). Routes, the group service and the cron scheduler call these
 * methods and never write task state themselves.
 */
import { hasCredits } from '../accounts/accounts.js';
import type { Schedule, Task, TaskSpec } from '../contract/index.js';
import type { RowTally, TaskPatch, TaskRecord } from '../domain/records.js';
import { nextCronRun, normalizeSchedule } from '../domain/spec.js';
import { isVisibleTo, toReplyView, toTaskView } from '../domain/task-view.js';
import type { Config } from '../config.js';
import { QuarryError, turnError } from '../errors.js';
import { newId } from '../ids.js';
import type { Store } from '../store/store.js';
import { domainPolicy } from '../net/domain-policy.js';
import { CitationChecker, rowVerified, urlKey, type CheckedSource } from '../outputs/citations.js';
import { columnTypes, countCells, emptyCounts, recheckRow, storedRow } from '../outputs/cell-support.js';
import { Admission } from './admission.js';
import { beginTurn, endTurn, insertTask, newTurn } from './task-transitions.js';
import { TaskUnit } from './task-unit.js';
import type { ChangeGuard, ChangeTarget, UnitOfWork, UnitsOfWork } from './unit-of-work.js';

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

/** What a change to a task answers with. */
export interface TaskReply {
  /** The task as the change left it; a queued message shows status `accepted`. */
  task: Task;
  /** The change is a message waiting behind a running turn: nothing started yet. */
  queued: boolean;
  /** The turn this request started or queued, so a stream can follow it. */
  turnId: string | null;
  /** The task's last event sequence number before this change: a stream of the change starts after it. */
  fromSeq: number;
}

export interface TaskServiceOptions {
  store: Store;
  units: UnitsOfWork;
  config: Config;
}

export class TaskService {
  private readonly store: Store;
  private readonly units: UnitsOfWork;
  private readonly config: Config;
  private readonly admission: Admission;

  constructor(opts: TaskServiceOptions) {
    this.store = opts.store;
    this.units = opts.units;
    this.config = opts.config;
    this.admission = new Admission(opts.config);
  }

  // ---- creates and messages -------------------------------------------------------------------

  /** Creates a task and its first turn (a plan turn from a prompt, an execute turn from a spec). */
  async create(accountId: string, input: { taskId?: string; spec: TaskSpec; kind: 'plan' | 'execute'; planOnly?: boolean }, guard?: ChangeGuard): Promise<TaskReply> {
    const taskId = input.taskId ?? newId('tsk');
    const target: ChangeTarget = { kind: 'task', id: taskId };
    return this.units.run(async (uow) => {
      // Before anything else: a second request with this key changes nothing, and is not told
      // task_exists about the task the first one made.
      await guard?.claim(uow, target);
      // A new ULID cannot be taken already; only a client-chosen id needs the look.
      if (input.taskId !== undefined && (await uow.tx.tasks.get(taskId, { lock: true }))) {
        throw new QuarryError('task_exists', `A task with task_id "${taskId}" already exists: continue it instead.`, { task_id: taskId });
      }
      await this.admission.requireCredits(uow.tx, accountId, { task_created: false });
      await this.admission.requireCapacity(uow.tx);
      // The prompt lives in the spec; the first turn carries no message of its own.
      const turn = newTurn({ id: taskId, accountId }, input.kind, null, uow.now, 'pending', { planOnly: input.planOnly });
      const unit = await insertTask(uow, { id: taskId, accountId, spec: input.spec, group: null, cronNextRunAt: this.nextRun(input.spec.schedule) }, turn);
      await guard?.made(uow, target, { queued: false });
      return { task: toTaskView(unit.task), queued: false, turnId: turn.id, fromSeq: 0 };
    }, 'create.committed');
  }

  /**
   * Starts a group run in the group scheduler's unit of work (which holds the group's lock): a
   * new task of the group's spec with one pending execute turn carrying the input. No credit or
   * capacity check: the scheduler decides when a group may start runs, and a group holds at most
   * its max_parallel runs at once.
   */
  async startRun(uow: UnitOfWork, run: NewRun): Promise<{ taskId: string; turnId: string }> {
    const taskId = newId('tsk');
    const group = { id: run.groupId, inputIndex: run.inputIndex, input: run.input };
    const turn = newTurn({ id: taskId, accountId: run.accountId, group }, 'execute', run.message, uow.now, 'pending');
    await insertTask(uow, { id: taskId, accountId: run.accountId, spec: run.spec, group, cronNextRunAt: this.nextRun(run.spec.schedule) }, turn);
    return { taskId, turnId: turn.id };
  }

  /**
   * Runs a group's run again at a scheduled group's tick: an execute turn of its task, in the
   * group scheduler's unit of work, which locked the task (`task`) before the group.
   */
  async executeRun(uow: UnitOfWork, task: TaskRecord): Promise<string> {
    return beginTurn(new TaskUnit(uow, task), this.admission, 'execute', null);
  }

  /**
   * A message to an existing task (continue, or a prompt sent with a task_id): starts a turn
   * when the task is idle, queues it while a turn runs.
   */
  async message(accountId: string, taskId: string, text: string, opts: { viaPrompt?: boolean; offline?: boolean; guard?: ChangeGuard } = {}): Promise<TaskReply> {
    return this.changeTask(accountId, taskId, { notFoundExtras: opts.viaPrompt ? { task_created: false } : {}, guard: opts.guard }, async (unit) => {
      this.refuseCron(unit.task);
      if (unit.task.currentTurnId) {
        if (unit.task.queuedCount >= this.config.maxQueuedMessages) {
          throw new QuarryError('task_executing', `A turn is running and ${unit.task.queuedCount} messages are already queued (the most a task holds): poll /state until active is false, then resend.`, { task_id: taskId });
        }
        const turn = newTurn(unit.task, 'continue', text, unit.now, 'queued', { offline: opts.offline });
        await unit.tx.turns.insert(turn);
        unit.set({ queuedCount: unit.task.queuedCount + 1 });
        unit.taskEvent('message_queued', turn.id, text);
        return { queued: true, turnId: turn.id };
      }
      return { queued: false, turnId: await beginTurn(unit, this.admission, 'continue', text, { offline: opts.offline }) };
    });
  }

  /** Runs the current spec again. Never queued: refused while a turn runs. */
  async execute(accountId: string, taskId: string, instruction: string | null, opts: { offline?: boolean; guard?: ChangeGuard } = {}): Promise<TaskReply> {
    return this.changeTask(accountId, taskId, { guard: opts.guard }, async (unit) => {
      this.refuseCron(unit.task);
      if (unit.task.currentTurnId) {
        throw new QuarryError('task_executing', 'A turn is running and execute is never queued: poll /state until active is false, then resend.', { task_id: taskId });
      }
      return { queued: false, turnId: await beginTurn(unit, this.admission, 'execute', instruction, { offline: opts.offline }) };
    });
  }

  /** Ends the running turn at once, keeping its rows; the next queued message then starts unless the queue is cleared. */
  async stop(accountId: string, taskId: string, clearQueue: boolean): Promise<TaskReply> {
    return this.changeTask(accountId, taskId, {}, async (unit) => {
      if (clearQueue && unit.task.queuedCount > 0) {
        await unit.tx.turns.cancelQueued(taskId, unit.now);
        unit.set({ queuedCount: 0 });
      }
      const turnId = unit.task.currentTurnId;
      if (!turnId) return { queued: false, turnId: null };
      unit.uow.turnCancelled(turnId);
      return { queued: false, turnId: await endTurn(unit, turnId, 'stopped', null) };
    });
  }

  /**
   * Checks every row of every output again against the task's stored snapshots (decisions
   * §17.1): sources, cells, and the counts of both. Nothing is fetched; a row is stored again
   * only when a verdict changed, so a second recheck changes nothing. The task is locked
   * throughout, so no row is appended meanwhile.
   */
  async recheck(accountId: string, taskId: string): Promise<{ rows: number; changed: number }> {
    return this.units.run(async (uow) => {
      const task = await uow.tx.tasks.get(taskId, { lock: true });
      if (!isVisibleTo(task, accountId)) throw QuarryError.taskNotFound(taskId);
      const stats = await uow.tx.rows.stats(taskId);
      const stored = new Map<string, string[]>();
      const urls = new Set<string>();
      const uploads = new Set<string>();
      for (const s of stats) {
        if (!task.spec.outputs.some((o) => o.id === s.outputId)) continue;
        const rows = (await uow.tx.rows.read(taskId, s.outputId, 0, s.rowCount)).map((b) => b.toString());
        stored.set(s.outputId, rows);
        for (const data of rows) {
          for (const source of storedRow(data).row.sources) {
            if (source.url !== undefined) urls.add(urlKey(source.url));
            if (source.upload_id !== undefined) uploads.add(source.upload_id);
          }
        }
      }
      const checker = new CitationChecker(await uow.tx.sources.cited(taskId, [...urls], [...uploads]), domainPolicy(task.spec.sources));
      const total = { rows: 0, changed: 0 };
      const cells = emptyCounts();
      for (const [outputId, rows] of stored) {
        const typeOf = columnTypes(task.spec.outputs.find((o) => o.id === outputId)!);
        const counts: RowTally = { verified: 0, cells: emptyCounts() };
        const changed: { rowNumber: number; data: string }[] = [];
        for (const data of rows) {
          const again = recheckRow(data, checker, typeOf);
          if (rowVerified(again.row.sources as CheckedSource[])) counts.verified++;
          countCells(counts.cells, again.row.support ?? {});
          if (again.data !== data) changed.push({ rowNumber: again.rowNumber, data: again.data });
        }
        await uow.tx.rows.rewrite(taskId, outputId, changed, counts);
        total.rows += rows.length;
        total.changed += changed.length;
        cells.supported += counts.cells.supported;
        cells.unsupported += counts.cells.unsupported;
      }
      if (cells.supported !== (task.supportedCells ?? 0) || cells.unsupported !== (task.unsupportedCells ?? 0)) {
        new TaskUnit(uow, task).set({ supportedCells: cells.supported, unsupportedCells: cells.unsupported });
      }
      return total;
    });
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
        change.cronNextRunAt = this.nextRun(schedule);
      }
      if (change.name !== undefined) change.spec = { ...(change.spec ?? unit.task.spec), name: change.name };
      unit.set(change);
      unit.taskEvent('updated', unit.task.currentTurnId);
      return { queued: false, turnId: null };
    });
  }

  /** Marks the task deleted, stops its turn and drops its queue. */
  async delete(accountId: string, taskId: string): Promise<TaskReply> {
    return this.changeTask(accountId, taskId, {}, async (unit) => {
      if (unit.task.queuedCount > 0) await unit.tx.turns.cancelQueued(taskId, unit.now);
      const turnId = unit.task.currentTurnId;
      if (turnId) {
        unit.uow.turnCancelled(turnId);
        await endTurn(unit, turnId, 'stopped', null, { promote: false });
      }
      unit.set({ status: 'deleted', phase: null, activity: null, deletedAt: unit.now, queuedCount: 0, currentTurnId: null, cronExpression: null, cronTimezone: null, cronNextRunAt: null });
      unit.taskEvent('deleted', turnId);
      return { queued: false, turnId: null };
    });
  }

  // ---- cron -----------------------------------------------------------------------------------

  /** Fires every due cron task once: an execute turn, or a recorded skip while a turn still runs. */
  async runDueCronTicks(limit = 100): Promise<number> {
    const due = await this.store.tasks.listDueCron(this.units.now(), limit);
    let fired = 0;
    for (const candidate of due) {
      const tick = await this.units.run(async (uow) => {
        const task = await uow.tx.tasks.get(candidate.id, { lock: true });
        if (!task || task.deletedAt || !task.cronNextRunAt || task.cronNextRunAt > uow.now || !task.cronExpression) return false;
        const unit = new TaskUnit(uow, task);
        unit.set({ cronNextRunAt: this.nextRun({ cron: task.cronExpression, timezone: task.cronTimezone ?? 'UTC' }) });
        if (task.currentTurnId) {
          unit.taskEvent('cron_tick_skipped', task.currentTurnId);
        } else if (!(await hasCredits(uow.tx, task.accountId))) {
          unit.event('error', null, turnError('out_of_credits', 'A scheduled run was skipped: the account has no credits left.'));
          unit.taskEvent('cron_tick_skipped', null);
        } else {
          await beginTurn(unit, this.admission, 'execute', null);
        }
        return true;
      }, 'cron.fired');
      if (tick) fired++;
    }
    return fired;
  }

  // ---- internals ------------------------------------------------------------------------------

  private nextRun(schedule: Schedule | null | undefined): string | null {
    return schedule ? (nextCronRun(schedule, this.units.clock())?.toISOString() ?? null) : null;
  }

  /** Runs `fn` on a locked task of this account in one unit of work, and answers with the task. */
  private async changeTask(
    accountId: string,
    taskId: string,
    opts: { notFoundExtras?: { task_created?: false }; guard?: ChangeGuard },
    fn: (unit: TaskUnit) => Promise<{ queued: boolean; turnId: string | null }>,
  ): Promise<TaskReply> {
    const { notFoundExtras = {}, guard } = opts;
    const target: ChangeTarget = { kind: 'task', id: taskId };
    return this.units.run(async (uow) => {
      // Before the task's lock: a second request with this key waits on the first one's claim,
      // never on the task, and changes nothing.
      await guard?.claim(uow, target);
      const task = await uow.tx.tasks.get(taskId, { lock: true });
      if (!isVisibleTo(task, accountId)) throw QuarryError.taskNotFound(taskId, notFoundExtras);
      const fromSeq = task.lastEventSeq;
      const unit = new TaskUnit(uow, task);
      const answer = await fn(unit);
      await guard?.made(uow, target, { queued: answer.queued });
      return { task: toReplyView(unit.task, answer), queued: answer.queued, turnId: answer.turnId, fromSeq };
    }, 'message.committed');
  }

  private refuseCron(task: TaskRecord): void {
    if (task.cronExpression) {
      throw new QuarryError('task_in_cron_mode', 'The task runs on a schedule and takes no messages: PATCH it with {"schedule": null} to leave cron mode.', { task_id: task.id });
    }
  }
}
