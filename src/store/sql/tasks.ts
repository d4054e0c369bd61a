/** Tasks: the rows the task service locks, changes and reads, and the /state poll. */
import type { Compilable, Insertable, Selectable, Updateable } from 'kysely';
import { containsPattern, containsText } from './contains-text.js';
import { fromStoredMicros } from '../../domain/credits.js';
import { storedSpec } from '../../domain/spec.js';
import type { TasksTable } from '../database.js';
import type { LastTurnRecord, TaskListFilter, TaskPatch, TaskRecord, TaskStateRecord } from '../../domain/records.js';
import type { DialectProfile } from './dialect-profile.js';
import type { TurnKind } from '../../contract/index.js';
import type { TurnError } from '../../errors.js';
import type { TaskListCursor, TaskListPage, TasksRepository } from '../store.js';
import { SqlRepository, type SqlHandle } from './sql-repository.js';

function toTask(r: Selectable<TasksTable>): TaskRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    type: r.type,
    status: r.status as TaskRecord['status'],
    phase: r.phase as TaskRecord['phase'],
    activity: r.activity as TaskRecord['activity'],
    waiting: r.waiting as TaskRecord['waiting'],
    spec: storedSpec(JSON.parse(r.spec)),
    pinned: Number(r.pinned) === 1,
    cronExpression: r.cron_expression,
    cronTimezone: r.cron_timezone,
    cronNextRunAt: r.cron_next_run_at,
    activeOutput: r.active_output,
    creditsUsedMicros: fromStoredMicros(r.credits_used_micros),
    lastEventSeq: Number(r.last_event_seq),
    lastErrorSeq: r.last_error_seq === null ? null : Number(r.last_error_seq),
    currentTurnId: r.current_turn_id,
    queuedCount: Number(r.queued_count),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    deletedAt: r.deleted_at,
    supportedCells: Number(r.supported_cells ?? 0),
    unsupportedCells: Number(r.unsupported_cells ?? 0),
    group: r.group_id === null ? null : { id: r.group_id, inputIndex: Number(r.group_input_idx), input: r.group_input ?? '{}' },
    lastTurn: r.last_turn === null ? null : JSON.parse(r.last_turn) as LastTurnRecord,
  };
}

const TASK_COLUMNS: Record<keyof TaskPatch, keyof TasksTable> = {
  name: 'name', type: 'type', status: 'status', phase: 'phase', activity: 'activity', waiting: 'waiting', spec: 'spec', pinned: 'pinned',
  cronExpression: 'cron_expression', cronTimezone: 'cron_timezone', cronNextRunAt: 'cron_next_run_at',
  activeOutput: 'active_output', creditsUsedMicros: 'credits_used_micros', lastEventSeq: 'last_event_seq', lastErrorSeq: 'last_error_seq',
  currentTurnId: 'current_turn_id', queuedCount: 'queued_count', updatedAt: 'updated_at', deletedAt: 'deleted_at', lastTurn: 'last_turn',
  supportedCells: 'supported_cells', unsupportedCells: 'unsupported_cells',
};

function taskRow(patch: TaskPatch): Updateable<TasksTable> {
  const row: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    const column = TASK_COLUMNS[key as keyof TaskPatch];
    if (key === 'spec') {
      row[column] = JSON.stringify(value);
      row.prompt = (value as TaskRecord['spec']).prompt ?? null;
    } else if (key === 'lastTurn') {
      const lastTurn = value as LastTurnRecord | null;
      row[column] = lastTurn === null ? null : JSON.stringify(lastTurn);
      row.last_outcome = lastTurn?.outcome ?? null;
    } else if (key === 'pinned') row[column] = value ? 1 : 0;
    else row[column] = value;
  }
  return row as Updateable<TasksTable>;
}

/** A row of taskStateQuery, as either connection returns it. */
export interface StateRow {
  id: string;
  account_id: string;
  status: string;
  phase: string | null;
  activity: string | null;
  waiting: string | null;
  queued_count: number;
  last_event_seq: number;
  current_turn_id: string | null;
  updated_at: string;
  turn_kind: string | null;
  turn_started_at: string | null;
  /** The stored `error` event of tasks.last_error_seq, as its JSON text. */
  last_error_event: string | null;
}

/** The error of a stored `error` event's JSON text. */
function turnErrorOf(eventData: string): TurnError {
  const { error, message, retryable } = JSON.parse(eventData) as TurnError;
  return { error, message, retryable };
}

export function toTaskState(r: StateRow): TaskStateRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    status: r.status as TaskStateRecord['status'],
    phase: r.phase as TaskStateRecord['phase'],
    activity: r.activity as TaskStateRecord['activity'],
    waiting: r.waiting as TaskStateRecord['waiting'],
    queuedCount: Number(r.queued_count),
    lastEventSeq: Number(r.last_event_seq),
    currentTurnId: r.current_turn_id,
    updatedAt: r.updated_at,
    turn: r.current_turn_id && r.turn_kind ? { id: r.current_turn_id, kind: r.turn_kind as TurnKind, startedAt: r.turn_started_at } : null,
    // Kept until the next turn ends, but only shown while none runs: a running turn has no error yet.
    lastError: r.current_turn_id === null && r.last_error_event !== null ? turnErrorOf(r.last_error_event) : null,
  };
}

/**
 * The /state poll: the task's state, its current turn and its last turn's error event, each by
 * primary key. SQLite also runs it on its read connection (sqlite/sqlite-reads.ts).
 */
export function taskStateQuery(db: SqlHandle, taskId: string): Compilable<StateRow> {
  return db
    .selectFrom('tasks')
    .leftJoin('turns', 'turns.id', 'tasks.current_turn_id')
    .leftJoin('events as last_error', (join) => join.onRef('last_error.task_id', '=', 'tasks.id').onRef('last_error.seq', '=', 'tasks.last_error_seq'))
    .select([
      'tasks.id', 'tasks.account_id', 'tasks.status', 'tasks.phase', 'tasks.activity', 'tasks.waiting', 'tasks.queued_count', 'tasks.last_event_seq',
      'tasks.current_turn_id', 'tasks.updated_at', 'turns.kind as turn_kind', 'turns.started_at as turn_started_at',
      'last_error.data as last_error_event',
    ])
    .where('tasks.id', '=', taskId);
}

/** A row of taskListQuery. */
interface TaskListRow {
  id: string;
  version: number;
  pinned: number;
  updated_at: string;
}

/** A page from the `limit + 1` rows read for it: the extra row only says that more remain. */
function toTaskListPage(rows: TaskListRow[], limit: number): TaskListPage {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    tasks: page.map((r) => ({ id: r.id, version: Number(r.version) })),
    ...(rows.length > limit && last ? { next: { pinned: Number(last.pinned) === 1, updatedAt: last.updated_at, id: last.id } } : {}),
  };
}

/**
 * The list's rows: pinned first, then newest update, ties by id, all descending, so "after the
 * cursor" is one row comparison, which both databases turn into a range of the list index
 * (inside an OR neither would start the scan at the cursor).
 */
export function taskListQuery(db: SqlHandle, profile: DialectProfile, accountId: string, limit: number, after?: TaskListCursor, filter: TaskListFilter = {}) {
  let q = filteredTasks(listedTasks(db, accountId, filter.groupId), profile, filter);
  if (after) q = q.where((eb) => eb(eb.refTuple('pinned', 'updated_at', 'id'), '<', eb.tuple(after.pinned ? 1 : 0, after.updatedAt, after.id)));
  return q.orderBy('pinned', 'desc').orderBy('updated_at', 'desc').orderBy('id', 'desc').limit(limit);
}

/** The tasks of the list: the account's, not deleted, a group's runs only when it is named. */
function listedTasks(db: SqlHandle, accountId: string, groupId?: string) {
  return db.selectFrom('tasks')
    .where('account_id', '=', accountId)
    .where('group_id', groupId === undefined ? 'is' : '=', groupId ?? null)
    .where('deleted_at', 'is', null);
}

/**
 * The list's filters, each a condition the list indexes hold (state, outcome, creation time:
 * tasks_list_single, _state, _outcome of migration 000017), but the text: it reads the name and
 * prompt of the rows the index walk reaches, in list order, until the page is full.
 */
function filteredTasks<Q extends ReturnType<typeof listedTasks>>(q: Q, profile: DialectProfile, filter: TaskListFilter): Q {
  let filtered = q as ReturnType<typeof listedTasks>;
  if (filter.state) filtered = filtered.where('status', '=', filter.state === 'running' ? 'execute' : 'plan');
  if (filter.outcome) filtered = filtered.where('last_outcome', '=', filter.outcome);
  if (filter.createdAfter) filtered = filtered.where('created_at', '>', filter.createdAfter);
  if (filter.createdBefore) filtered = filtered.where('created_at', '<', filter.createdBefore);
  if (filter.q) filtered = filtered.where(containsText(profile, TEXT_COLUMNS, filter.q));
  return filtered as Q;
}

/** What `q` searches: the task's name and its spec's prompt. */
const TEXT_COLUMNS = ['name', 'prompt'];

/** taskListQuery's statement name and the values it binds, in their order. */
export function taskListShape(accountId: string, limit: number, after?: TaskListCursor, filter: TaskListFilter = {}): { shape: string; parameters: unknown[] } {
  const { groupId, state, outcome, createdAfter, createdBefore, q } = filter;
  const filters = [state && 'state', outcome && 'outcome', createdAfter && 'after', createdBefore && 'before', q && 'q'].filter(Boolean).join(',');
  return {
    shape: `tasks.list:${groupId === undefined ? 'single' : 'group'}:${after ? 'after' : 'first'}:${filters}`,
    parameters: [
      accountId, ...(groupId === undefined ? [] : [groupId]),
      ...(state ? [state === 'running' ? 'execute' : 'plan'] : []), ...(outcome ? [outcome] : []),
      ...(createdAfter ? [createdAfter] : []), ...(createdBefore ? [createdBefore] : []),
      ...(q ? TEXT_COLUMNS.map(() => containsPattern(q)) : []),
      ...(after ? [after.pinned ? 1 : 0, after.updatedAt, after.id] : []), limit,
    ],
  };
}

export class SqlTasks extends SqlRepository implements TasksRepository {
  async insert(t: TaskRecord): Promise<void> {
    const { id, accountId, createdAt, group, ...fields } = t;
    const row = {
      id, account_id: accountId, created_at: createdAt, ...taskRow(fields),
      ...(group ? { group_id: group.id, group_input_idx: group.inputIndex, group_input: group.input } : {}),
    } as Insertable<TasksTable>;
    await this.runCompiled(`tasks.insert:${Object.keys(row)}`, Object.values(row), () => this.db.insertInto('tasks').values(row));
  }

  async get(id: string, opts: { lock?: boolean } = {}): Promise<TaskRecord | undefined> {
    const lock = opts.lock === true && this.profile.rowLocks;
    const [r] = (await this.runCompiled(lock ? 'tasks.get:lock' : 'tasks.get', [id], () => {
      const q = this.db.selectFrom('tasks').selectAll().where('id', '=', id);
      return lock ? q.forUpdate() : q;
    })).rows;
    return r && toTask(r);
  }

  async getForLeasedTurn(id: string, turnId: string, owner: string): Promise<{ task: TaskRecord; leased: boolean } | undefined> {
    const lock = this.profile.rowLocks;
    // One statement, not a second read per write of a running turn: that read cost the cluster
    // benchmark about an eighth of its turns a second on PostgreSQL.
    const [r] = (await this.runCompiled(lock ? 'tasks.getForLeasedTurn:lock' : 'tasks.getForLeasedTurn', [turnId, owner, 'running', id], () => {
      let turn = this.db.selectFrom('turns').select('turns.id').where('turns.id', '=', turnId).where('turns.lease_owner', '=', owner).where('turns.status', '=', 'running');
      // NO KEY: a claim's UPDATE conflicts with it all the same, and no key of the row changes.
      if (lock) turn = turn.forNoKeyUpdate();
      const q = this.db.selectFrom('tasks').selectAll('tasks').select((eb) => eb.exists(turn).as('leased')).where('tasks.id', '=', id);
      return lock ? q.forUpdate('tasks') : q;
    })).rows;
    return r && { task: toTask(r), leased: Boolean(Number(r.leased)) };
  }

  async update(id: string, patch: TaskPatch): Promise<void> {
    await this.updateById('tasks', id, taskRow(patch), 'version');
  }

  getState(id: string): TaskStateRecord | undefined | Promise<TaskStateRecord | undefined> {
    return this.runCompiled('tasks.getState', [id], () => taskStateQuery(this.db, id)).then(({ rows: [r] }) => r && toTaskState(r));
  }

  async listPage(accountId: string, limit: number, after?: TaskListCursor, filter: TaskListFilter = {}): Promise<TaskListPage> {
    const { shape, parameters } = taskListShape(accountId, limit + 1, after, filter);
    const { rows } = await this.runCompiled(shape, parameters, () =>
      taskListQuery(this.db, this.profile, accountId, limit + 1, after, filter).select(['id', 'version', 'pinned', 'updated_at']));
    return toTaskListPage(rows, limit);
  }

  async countListed(accountId: string, updatedSince?: string): Promise<number> {
    // One range of the list index (account, no group); timestamps are ISO strings of one format, so they compare as text.
    let q = listedTasks(this.db, accountId);
    if (updatedSince !== undefined) q = q.where('updated_at', '>=', updatedSince);
    const row = await q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async getMany(ids: readonly string[]): Promise<TaskRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.selectFrom('tasks').selectAll().where('id', 'in', ids).execute();
    return rows.map(toTask);
  }

  async listDueCron(now: string, limit: number): Promise<TaskRecord[]> {
    const rows = await this.db
      .selectFrom('tasks')
      .selectAll()
      .where('cron_next_run_at', 'is not', null)
      .where('cron_next_run_at', '<=', now)
      .where('deleted_at', 'is', null)
      .orderBy('cron_next_run_at')
      .limit(limit)
      .execute();
    return rows.map(toTask);
  }
}
