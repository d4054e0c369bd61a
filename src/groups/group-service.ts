/**
 * The group state machine (decisions §15.2): every change to a group, its inputs and its counts
 * happens here, each in one transaction that locks the group's row, stores the group's events
 * and publishes them after commit. A group's runs are ordinary tasks, started and ended by the
 * task service; this module decides when a group starts them and records how they end.
 *
 * Scheduling. An input waits as a row (`pending`) until the group has a free slot: at most
 * `max_parallel` runs of a group are `running` (their turn pending or running) at once. A run
 * is started in the transaction that frees its slot (the previous run's end, a create, added
 * inputs, a retry), as a new turn in the group's line of the one queue every turn waits in.
 * Workers take turns between lines (src/store/sql/turns.ts, decisions §18), so a single task
 * created while a large group runs waits for one turn to end on a busy worker, and groups with
 * waiting runs share the workers equally, each within its max_parallel.
 *
 * Locks. A run's end holds its task's lock and then takes the group's (runEnded is the unit of
 * work's `turn_ended` handler, run inside that transaction). Nothing here takes a task's lock
 * while it holds a group's: starting runs makes new tasks, and stopping a group stops its
 * running runs one by one after the group's own change has committed. One order, so no deadlock.
 */
import { hasCredits, requireCredits } from '../accounts/accounts.js';
import { toMicros } from '../domain/credits.js';
import type { Config } from '../config.js';
import {
  DEFAULT_MAX_PARALLEL, type ChangesQuery, type Group, type GroupBody, type GroupRun, type GroupDetail, type GroupEventPayload, type GroupEventType, type GroupInputsBody,
  type GroupRowChange, type GroupSnapshotReason, type RunStatus, type TaskSpec,
} from '../contract/index.js';
import { QuarryError } from '../errors.js';
import { newId } from '../ids.js';
import type { GroupInputRecord, GroupListFilter, GroupPatch, GroupRecord } from '../domain/records.js';
import type { Repositories, Store } from '../store/store.js';
import { invalid, nextCronRun, normalizeSchedule } from '../domain/spec.js';
import type { Schedule } from '../contract/index.js';
import type { TaskCommands } from '../tasks/task-commands.js';
import type { TaskService } from '../tasks/task-service.js';
import { RecordChange, type ChangeGuard, type ChangeTarget, type TurnEnd, type UnitOfWork, type UnitsOfWork } from '../tasks/unit-of-work.js';
import { changeView } from '../tasks/keyed-rows.js';
import type { Uploads } from '../uploads/uploads.js';
import { checkInlineInputs, inputFileFormat, readInputFile, type CheckedInput } from './group-inputs.js';
import { mergedRow, tableOutput, toGroupDetail, toGroupView, toRunView } from './group-view.js';

/** The ended runs a retry may run again. */
export type RetriedStatus = 'failed' | 'stopped';
import { runMessage } from '../domain/run-message.js';

export interface GroupServiceOptions {
  store: Store;
  units: UnitsOfWork;
  config: Config;
  tasks: TaskService;
  commands: TaskCommands;
  uploads: Uploads;
}

/** Inputs stored per insert while a request's inputs are added. */
const STORE_BATCH = 500;
/** Merged rows read per statement while exporting. */
const EXPORT_BATCH = 1000;
/** Running runs stopped per pass when a group is stopped. */
const STOP_PAGE = 200;

/** Where a request's inputs come from: read once to check them all, then again to store them. */
type InputSource = () => AsyncIterable<CheckedInput> | Iterable<CheckedInput>;

/**
 * One group's changes within a unit of work: its counts and status, and the events they cause
 * (group_id). Event sequence numbers come from the locked group row.
 */
class GroupUnit extends RecordChange<GroupRecord, GroupPatch> {
  /** Whether a run was pending or running before this change: a change that leaves none ends with `done`. */
  private readonly busyBefore: boolean;

  constructor(uow: UnitOfWork, group: GroupRecord, isNew = false) {
    super(uow, group, isNew);
    this.busyBefore = !isNew && group.counts.pending + group.counts.running > 0;
  }

  get group(): GroupRecord {
    return this.record;
  }

  get idle(): boolean {
    return this.group.counts.pending + this.group.counts.running === 0;
  }

  /** Whether this change is the one that left the group without pending or running runs. */
  get becameIdle(): boolean {
    return this.idle && (this.busyBefore || this.isNew);
  }

  /** Moves `n` inputs from one count to another (null: from nowhere, as when inputs arrive). */
  count(from: RunStatus | null, to: RunStatus, n = 1): void {
    const counts = { ...this.group.counts };
    if (from) counts[from] -= n;
    counts[to] += n;
    this.set({ counts });
  }

  event<T extends GroupEventType>(type: T, payload: GroupEventPayload<T>): void {
    this.append(type, null, { group_id: this.group.id }, payload);
  }

  snapshot(reason: GroupSnapshotReason): void {
    this.event('group', { reason, group: toGroupView(this.group) });
  }

  protected async insert(group: GroupRecord): Promise<void> {
    await this.tx.groups.insert(group);
  }

  protected async update(id: string, patch: GroupPatch): Promise<void> {
    await this.tx.groups.update(id, patch);
  }
}

export class GroupService {
  private readonly store: Store;
  private readonly units: UnitsOfWork;
  private readonly config: Config;
  private readonly tasks: TaskService;
  private readonly commands: TaskCommands;
  private readonly uploads: Uploads;

  constructor(opts: GroupServiceOptions) {
    this.store = opts.store;
    this.units = opts.units;
    this.config = opts.config;
    this.tasks = opts.tasks;
    this.commands = opts.commands;
    this.uploads = opts.uploads;
    // Every unit that ends a turn tells the turn's group, in its transaction.
    this.units.on('turn_ended', (uow, ended) => this.runEnded(uow, ended));
  }

  // ---- reads ----------------------------------------------------------------------------------

  /** The group, if this account may see it; else 404 group_not_found. */
  async find(accountId: string, groupId: string): Promise<GroupRecord> {
    const group = await this.store.groups.get(groupId);
    if (!group || group.accountId !== accountId) throw notFound(groupId);
    return group;
  }

  async get(accountId: string, groupId: string): Promise<GroupDetail> {
    return toGroupDetail(await this.find(accountId, groupId));
  }

  /** One page, newest first; `nextCursor` when more remain (the last group's id). */
  async list(accountId: string, limit: number, cursor?: string, filter: GroupListFilter = {}): Promise<{ groups: Group[]; nextCursor?: string }> {
    const rows = await this.store.groups.list(accountId, limit + 1, cursor, filter);
    const groups = rows.slice(0, limit);
    return { groups: groups.map(toGroupView), ...(rows.length > limit ? { nextCursor: groups.at(-1)!.id } : {}) };
  }

  /** A page of the merged table, and how many merged rows there are. */
  async rows(group: GroupRecord, offset: number, limit: number): Promise<{ total: number; rows: string[] }> {
    const { id } = tableOutput(group.spec);
    const [total, rows] = await Promise.all([this.store.groups.rowCount(group.id, id), this.store.groups.rows(group.id, id, limit, { offset })]);
    return { total, rows: rows.map(mergedRow) };
  }

  /** A page of the runs' changes merged, each with its run's input, oldest first; `nextCursor` when more remain. */
  async changes(group: GroupRecord, query: ChangesQuery): Promise<{ changes: GroupRowChange[]; nextCursor?: string }> {
    const limit = query.limit ?? 100;
    const rows = await this.store.rows.groupChanges(group.id, { sinceTurn: query.since, after: query.after, cursor: query.cursor, limit: limit + 1 });
    const page = rows.slice(0, limit);
    return {
      changes: page.map((r) => ({ ...changeView(r), _input: r.inputIndex, input: JSON.parse(r.input) as Record<string, unknown>, task_id: r.taskId })),
      ...(rows.length > limit ? { nextCursor: page.at(-1)!.id } : {}),
    };
  }

  /** Every merged row in order, read in batches (an export of any size is never held at once). */
  async *allRows(group: GroupRecord): AsyncGenerator<string> {
    const { id } = tableOutput(group.spec);
    let after = { index: -1, rowNumber: 0 };
    for (;;) {
      const batch = await this.store.groups.rows(group.id, id, EXPORT_BATCH, { after });
      for (const row of batch) yield mergedRow(row);
      if (batch.length < EXPORT_BATCH) return;
      const last = batch.at(-1)!;
      after = { index: last.index, rowNumber: last.rowNumber };
    }
  }

  // ---- changes --------------------------------------------------------------------------------

  /** Creates a group with its inputs and starts its first runs. Every input is checked before anything is stored. */
  async create(accountId: string, body: GroupBody, guard?: ChangeGuard): Promise<GroupDetail> {
    const spec = await this.groupSpec(accountId, body.task);
    const schedule = body.schedule ? normalizeSchedule(body.schedule, 'schedule') : null;
    const source = await this.inputSource(accountId, spec, body);
    const target: ChangeTarget = { kind: 'group', id: newId('grp') };
    const group = await this.units.run(async (uow) => {
      // First: a second request with this key changes nothing (it replays this one's answer).
      await guard?.claim(uow, target);
      await this.requireCredits(uow.tx, accountId);
      const now = uow.now;
      const group: GroupRecord = {
        id: target.id, accountId, name: body.name ?? spec.name, spec, maxParallel: body.max_parallel ?? DEFAULT_MAX_PARALLEL,
        maxCreditsMicros: body.max_credits === undefined ? null : toMicros(body.max_credits), status: 'running', inputs: 0, duplicates: 0,
        counts: { pending: 0, running: 0, completed: 0, failed: 0, stopped: 0 }, creditsUsedMicros: 0, lastEventSeq: 0,
        createdAt: now, updatedAt: now, finishedAt: null,
        cronExpression: schedule?.cron ?? null, cronTimezone: schedule?.timezone ?? null, cronNextRunAt: schedule ? this.nextRun(schedule) : null,
      };
      const u = new GroupUnit(uow, group, true);
      await this.storeInputs(u, source);
      u.snapshot('created');
      await this.startRuns(u);
      this.settle(u);
      await guard?.made(uow, target, { queued: false });
      return u.group;
    }, 'group.created');
    return toGroupDetail(group);
  }

  /** Adds inputs to a group, also while it runs; a finished or stopped group runs again. */
  async addInputs(accountId: string, groupId: string, body: GroupInputsBody): Promise<GroupDetail> {
    const group = await this.find(accountId, groupId);
    const source = await this.inputSource(accountId, group.spec, body);
    return this.change(accountId, groupId, async (u) => {
      await this.requireCredits(u.tx, accountId);
      await this.storeInputs(u, source);
      if (u.group.counts.pending > 0 && u.group.status !== 'running') u.set({ status: 'running', finishedAt: null });
      u.snapshot('inputs_added');
      await this.startRuns(u);
    });
  }

  /**
   * Stops the group: its pending inputs become stopped at once, then its running runs are
   * stopped one by one (each as POST /task/{id}/stop would). A run that ends meanwhile starts
   * no other, as the group no longer runs. A group with nothing pending or running is left as it is.
   */
  async stop(accountId: string, groupId: string): Promise<GroupDetail> {
    await this.change(accountId, groupId, async (u) => {
      // Nothing pending or running: nothing to stop, and a finished group stays finished.
      if (u.idle) return;
      u.set({ status: 'stopped' });
      const stopped = await u.tx.groups.moveInputs(u.group.id, 'pending', 'stopped');
      u.count('pending', 'stopped', stopped);
      u.snapshot('stopped');
    });
    let after: number | undefined;
    for (;;) {
      const running = await this.store.groups.listInputs(groupId, 'running', STOP_PAGE, after);
      for (const input of running) {
        if (!input.taskId) continue;
        await this.tasks.stop(accountId, input.taskId, true).catch((err: unknown) => {
          // Deleted meanwhile: its run ended with that.
          if (!(err instanceof QuarryError && err.code === 'task_not_found')) throw err;
        });
      }
      if (running.length < STOP_PAGE) break;
      after = running.at(-1)!.index;
    }
    return this.get(accountId, groupId);
  }

  /** Runs the failed inputs again, each as a new run (a new task), within the group's max_parallel. */
  /** A page of the group's runs in input order (of one status when given); `nextCursor` (the last input index) when more remain. */
  async runs(accountId: string, groupId: string, limit: number, opts: { status?: RunStatus; cursor?: string } = {}): Promise<{ runs: GroupRun[]; nextCursor?: string }> {
    const group = await this.find(accountId, groupId);
    const rows = await this.store.groups.listRuns(group.id, limit + 1, { status: opts.status, after: opts.cursor === undefined ? undefined : Number(opts.cursor) });
    const page = rows.slice(0, limit);
    return { runs: page.map(toRunView), ...(rows.length > limit ? { nextCursor: String(page.at(-1)!.index) } : {}) };
  }

  /** Runs the inputs whose runs ended with a status in `include` (default: failed) again, each as a new run. */
  async retry(accountId: string, groupId: string, include: readonly RetriedStatus[] = ['failed'], maxCredits?: number | null): Promise<GroupDetail> {
    return this.change(accountId, groupId, async (u) => {
      if (maxCredits !== undefined) u.set({ maxCreditsMicros: maxCredits === null ? null : toMicros(maxCredits) });
      let retried = 0;
      for (const status of new Set(include)) {
        const moved = await u.tx.groups.moveInputs(u.group.id, status, 'pending');
        if (moved > 0) u.count(status, 'pending', moved);
        retried += moved;
      }
      if (retried === 0) return;
      await this.requireCredits(u.tx, accountId);
      u.set({ status: 'running', finishedAt: null });
      u.snapshot('retried');
      await this.startRuns(u);
    });
  }

  /**
   * The unit of work's `turn_ended` handler, in the transaction that ends a turn (which holds its
   * task's lock): for a group's run, records the outcome and starts the group's next run in the
   * slot it freed. Only the turn the group started counts: later messages to the same task are
   * the task's own.
   */
  private async runEnded(uow: UnitOfWork, ended: TurnEnd): Promise<void> {
    const run = ended.task.group;
    if (!run) return;
    const group = await uow.tx.groups.get(run.id, { lock: true });
    const input = group && (await uow.tx.groups.getInput(run.id, run.inputIndex));
    if (!group || !input || input.status !== 'running' || input.turnId !== ended.turnId) return;
    const u = new GroupUnit(uow, group);
    await uow.tx.groups.setInput(group.id, input.index, { status: ended.outcome });
    u.count('running', ended.outcome);
    // A capped group's spend was added as its runs were charged.
    if (group.maxCreditsMicros === null) u.set({ creditsUsedMicros: group.creditsUsedMicros + ended.creditsUsedMicros });
    u.event('run', { task_id: ended.task.id, input: input.index, status: ended.outcome });
    await this.startRuns(u);
    this.settle(u);
  }

  // ---- schedules ------------------------------------------------------------------------------

  /**
   * The cron scheduler's call: fires every due scheduled group's tick, then starts the runs of
   * scheduled groups that wait for a free slot. At a tick every completed run waits to run
   * again (pending), the group's spend counts from zero (max_credits is per tick), and the next
   * tick is set. A stopped group's ticks start nothing, nor do those of a group whose runs still
   * wait for a slot.
   */
  async runDueCronTicks(limit = 100): Promise<number> {
    let fired = 0;
    for (const candidate of await this.store.groups.listDueCron(this.units.now(), limit)) {
      const ticked = await this.units.run(async (uow) => {
        const group = await uow.tx.groups.get(candidate.id, { lock: true });
        if (!group?.cronExpression || !group.cronNextRunAt || group.cronNextRunAt > uow.now) return false;
        const u = new GroupUnit(uow, group);
        u.set({ cronNextRunAt: this.nextRun({ cron: group.cronExpression, timezone: group.cronTimezone ?? 'UTC' }) });
        // Runs still waiting from the last tick go first: a tick that finds any adds none (as a task's tick is skipped while its turn runs).
        if (group.status === 'stopped' || group.counts.pending > 0) return true;
        const again = await uow.tx.groups.moveInputs(group.id, 'completed', 'pending');
        if (again === 0) return true;
        u.count('completed', 'pending', again);
        u.set({ status: 'running', finishedAt: null, creditsUsedMicros: 0 });
        u.snapshot('scheduled_tick');
        return true;
      });
      if (ticked) fired++;
    }
    for (const group of await this.store.groups.listScheduledWaiting(limit)) await this.runAgain(group.id);
    return fired;
  }

  /**
   * Starts a scheduled group's pending runs that ran before, each as an execute turn of its own
   * task, until its slots are full. Each in its own unit of work, which locks the run's task
   * before the group (the order a run's end takes them). A run whose task is deleted or busy with
   * a message of its own sits this tick out (completed, as it was).
   */
  private async runAgain(groupId: string): Promise<void> {
    for (;;) {
      const [input] = await this.store.groups.listInputs(groupId, 'pending', 1, -1, { started: true });
      if (!input?.taskId) return;
      const taskId = input.taskId;
      const more = await this.units.run(async (uow) => {
        const task = await uow.tx.tasks.get(taskId, { lock: true });
        const group = await uow.tx.groups.get(groupId, { lock: true });
        const current = group && (await uow.tx.groups.getInput(groupId, input.index));
        if (!group || !current) return false;
        // Changed meanwhile (stopped, or started): look again.
        if (current.status !== 'pending' || current.taskId !== taskId) return true;
        const u = new GroupUnit(uow, group);
        let started = false;
        if (await this.mayStartRuns(u)) {
          if (!task || task.deletedAt || task.currentTurnId) {
            await uow.tx.groups.setInput(groupId, current.index, { status: 'completed' });
            u.count('pending', 'completed');
          } else {
            const turnId = await this.tasks.executeRun(uow, task);
            await uow.tx.groups.setInput(groupId, current.index, { status: 'running', turnId });
            u.count('pending', 'running');
            u.event('run', { task_id: taskId, input: current.index, status: 'running' });
          }
          started = true;
        }
        this.settle(u);
        return started;
      });
      if (!more) return;
    }
  }

  private nextRun(schedule: Schedule): string | null {
    return nextCronRun(schedule, this.units.clock())?.toISOString() ?? null;
  }

  // ---- internals ------------------------------------------------------------------------------

  /** Runs `fn` on the locked group of this account in one unit of work; answers with the group. */
  private async change(accountId: string, groupId: string, fn: (u: GroupUnit) => Promise<void>): Promise<GroupDetail> {
    const group = await this.units.run(async (uow) => {
      const locked = await uow.tx.groups.get(groupId, { lock: true });
      if (!locked || locked.accountId !== accountId) throw notFound(groupId);
      const u = new GroupUnit(uow, locked);
      await fn(u);
      this.settle(u);
      return u.group;
    });
    return toGroupDetail(group);
  }

  /**
   * Starts runs in the group's free slots, oldest input first. Once the group's runs have used
   * its max_credits (what they spent, plus what their model calls under way may cost: decisions
   * §18), what is pending is stopped instead; with the account out of credits, it
   * fails (out_of_credits: retry once credits are added).
   */
  private async startRuns(u: GroupUnit): Promise<void> {
    const g = u.group;
    if (!(await this.mayStartRuns(u))) return;
    const output = tableOutput(g.spec);
    // A scheduled group's runs that ran before run again on their own task (runAgain), never as a new one.
    const pending = await u.tx.groups.listInputs(g.id, 'pending', g.maxParallel - g.counts.running, -1, g.cronExpression ? { started: false } : {});
    for (const input of pending) {
      const run = await this.tasks.startRun(u.uow, {
        accountId: g.accountId, groupId: g.id, spec: g.spec, inputIndex: input.index, input: input.data, message: runMessage(input.index, input.data, output.id),
      });
      await u.tx.groups.setInput(g.id, input.index, { status: 'running', taskId: run.taskId, turnId: run.turnId });
      u.count('pending', 'running');
      u.event('run', { task_id: run.taskId, input: input.index, status: 'running' });
    }
  }

  /**
   * Whether a pending run may start now: the group runs, has a free slot and credits left.
   * Once its runs have used its max_credits, what is pending is stopped instead; with the
   * account out of credits, it fails.
   */
  private async mayStartRuns(u: GroupUnit): Promise<boolean> {
    const g = u.group;
    if (g.status !== 'running' || g.counts.pending === 0) return false;
    if (g.maxCreditsMicros !== null && g.creditsUsedMicros + (await u.tx.turns.modelReserves(g.id)) >= g.maxCreditsMicros) {
      u.count('pending', 'stopped', await u.tx.groups.moveInputs(g.id, 'pending', 'stopped'));
      u.snapshot('budget_reached');
      return false;
    }
    if (g.maxParallel - g.counts.running <= 0) return false;
    if (!(await hasCredits(u.tx, g.accountId))) {
      u.count('pending', 'failed', await u.tx.groups.moveInputs(g.id, 'pending', 'failed'));
      u.snapshot('out_of_credits');
      return false;
    }
    return true;
  }

  /** When no run is left pending or running: the group is finished (unless stopped), says `done`, and the unit's `group_finished` handlers run (webhooks). */
  private settle(u: GroupUnit): void {
    if (!u.becameIdle) return;
    u.set({ status: u.group.status === 'stopped' ? 'stopped' : 'finished', finishedAt: u.now });
    const view = toGroupView(u.group);
    u.event('done', { group: view });
    u.uow.signal('group_finished', { accountId: u.group.accountId, groupId: u.group.id, group: view });
  }

  /** Stores a request's inputs, each at the next index; a key the group has already is a duplicate, counted and not run. */
  private async storeInputs(u: GroupUnit, source: InputSource): Promise<void> {
    let batch: GroupInputRecord[] = [];
    const flush = async () => {
      const stored = (await u.tx.groups.insertInputs(batch)).length;
      u.count(null, 'pending', stored);
      u.set({ duplicates: u.group.duplicates + batch.length - stored });
      batch = [];
    };
    for await (const input of source()) {
      batch.push({ groupId: u.group.id, index: u.group.inputs, key: input.key, data: input.data, status: 'pending', taskId: null, turnId: null });
      u.set({ inputs: u.group.inputs + 1 });
      if (batch.length === STORE_BATCH) await flush();
    }
    if (batch.length > 0) await flush();
  }

  /**
   * The inputs of a request, all checked now (a file read through once), so a bad one is a 422
   * before anything is stored. Returns how to read them again to store them.
   */
  private async inputSource(accountId: string, spec: TaskSpec, body: GroupInputsBody): Promise<InputSource> {
    const columns = spec.input_columns ?? [];
    if (body.inputs && body.input_upload_id !== undefined) {
      throw QuarryError.validation('input_upload_id', 'Give inputs or input_upload_id, not both.', [{ type: 'value_error', loc: ['body', 'input_upload_id'], msg: 'not with inputs' }]);
    }
    if (body.inputs) {
      const checked = checkInlineInputs(columns, body.inputs);
      return () => checked;
    }
    if (body.input_upload_id === undefined) {
      throw QuarryError.validation('inputs', 'inputs (up to 1,000 objects) or input_upload_id (a CSV or JSON Lines upload) is required', [{ type: 'missing', loc: ['body', 'inputs'], msg: 'is required' }]);
    }
    const upload = await this.uploads.findCompleted(accountId, body.input_upload_id);
    if (!upload) {
      throw QuarryError.validation('input_upload_id', `input_upload_id "${body.input_upload_id}" is not a finished upload of this account`, [{ type: 'value_error', loc: ['body', 'input_upload_id'], msg: 'is not a finished upload of this account' }]);
    }
    const format = inputFileFormat(upload);
    const file = await this.uploads.localPath(upload);
    let records = 0;
    for await (const input of readInputFile(file, format, columns)) {
      void input;
      records++;
    }
    if (records === 0) throw QuarryError.validation('input_upload_id', `input_upload_id "${upload.id}" holds no records`);
    return () => readInputFile(file, format, columns);
  }

  /** A group's spec: a task spec with input columns and exactly one table output, whose columns the input columns do not repeat. */
  private async groupSpec(accountId: string, input: GroupBody['task']): Promise<TaskSpec> {
    const spec = await this.commands.specOf(accountId, input, { forGroup: true });
    if (!spec.input_columns) throw invalid('task.input_columns', 'is required: the columns every input has');
    const tables = spec.outputs.filter((o) => o.kind === 'table');
    if (spec.outputs.length !== 1 || tables.length !== 1) throw invalid('task.outputs', `must be exactly one table output (the merged table), got ${spec.outputs.length} output(s), ${tables.length} of them tables`);
    if (spec.schedule) throw invalid('task.schedule', 'is not for a group: a group runs each input once');
    const outputColumns = new Set(tables[0]!.columns!.map((c) => c.name));
    const clash = spec.input_columns.findIndex((c) => outputColumns.has(c.name));
    if (clash >= 0) throw invalid(`task.input_columns[${clash}].name`, `"${spec.input_columns[clash]!.name}" is also a column of the table: a merged row holds both, so name them apart`);
    return spec;
  }

  private async requireCredits(tx: Repositories, accountId: string): Promise<void> {
    await requireCredits(tx, accountId, { platformUrl: this.config.platformUrl, notStarted: 'run' });
  }
}

function notFound(groupId: string): QuarryError {
  return new QuarryError('group_not_found', `No task group with group_id "${groupId}".`);
}
