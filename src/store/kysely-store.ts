/**
 * The SQL behind the Store contract, written once with Kysely for every database. The adapters
 * (sqlite/, postgres/) only open the connection, set the DialectProfile and run migrations.
 */
import { isDeepStrictEqual } from 'node:util';
import { Kysely, Migrator, sql, type Compilable, type CompiledQuery, type ExpressionOrFactory, type QueryResult, type SqlBool, type Insertable, type Migration, type MigrationProvider, type Selectable, type Transaction, type Updateable } from 'kysely';
import { fromStoredMicros } from '../accounts/credits.js';
import { GroupCommit } from './group-commit.js';
import type { Database, TasksTable, TurnsTable, UploadsTable } from './database.js';
import type {
  AccountRecord, ApiKeyRecord, EventRecord, HeldLock, IdempotencyRecord, OutputStatsRecord, Store, StoreOps, TaskListCursor,
  TaskPatch, TaskRecord, TaskStateRecord, TurnKind, TurnPatch, TurnRecord, UploadRecord,
} from './store.js';
import * as m000001 from './migrations/000001_initial.js';
import * as m000002 from './migrations/000002_cluster.js';
import * as m000003 from './migrations/000003_credit_micros.js';

/** What differs between the databases, declared in one place. */
export interface DialectProfile {
  kind: 'sqlite' | 'postgres';
  /** `SELECT … FOR UPDATE` exists (PostgreSQL). SQLite serializes every write transaction anyway. */
  rowLocks: boolean;
  /** `FOR UPDATE SKIP LOCKED` exists, so concurrent workers claim different turns without waiting. */
  skipLocked: boolean;
  /** Other processes may use the same database, so notifications and shared locks matter. */
  shared: boolean;
  /**
   * Transactions that queue up behind each other share one commit (group-commit.ts). For a
   * database that writes one transaction at a time anyway; PostgreSQL runs them side by side.
   */
  groupCommit: boolean;
}

/**
 * Cross-process signals of a shared database (LISTEN/NOTIFY and session locks on PostgreSQL).
 * An embedded database has one process, which already knows everything: it uses LOCAL_LINK.
 */
export interface ClusterLink {
  listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>>;
  tryLock(name: string): Promise<HeldLock | null>;
  close(): Promise<void>;
}

const LOCAL_LINK: ClusterLink = {
  listen: async () => async () => {},
  tryLock: async () => ({ held: true, release: async () => {} }),
  close: async () => {},
};

const MIGRATIONS: Record<string, Migration> = {
  '000001_initial': m000001,
  '000002_cluster': m000002,
  '000003_credit_micros': m000003,
};

class StaticMigrations implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return MIGRATIONS;
  }
}

const ROW_BATCH = 2_000;

/** A micro-credit amount bound into SQL: whole, so no fraction of a micro-credit reaches a column. */
function wholeMicros(micros: number): number {
  if (!Number.isSafeInteger(micros)) throw new RangeError(`micro-credits must be a safe integer, got ${micros}`);
  return micros;
}

export interface StateRow {
  id: string;
  account_id: string;
  status: string;
  phase: string | null;
  activity: string | null;
  queued_count: number;
  last_event_seq: number;
  current_turn_id: string | null;
  updated_at: string;
  turn_kind: string | null;
  turn_started_at: string | null;
}

export function toTaskState(r: StateRow): TaskStateRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    status: r.status as TaskStateRecord['status'],
    phase: r.phase as TaskStateRecord['phase'],
    activity: r.activity as TaskStateRecord['activity'],
    queuedCount: Number(r.queued_count),
    lastEventSeq: Number(r.last_event_seq),
    currentTurnId: r.current_turn_id,
    updatedAt: r.updated_at,
    turn: r.current_turn_id && r.turn_kind ? { id: r.current_turn_id, kind: r.turn_kind as TurnKind, startedAt: r.turn_started_at } : null,
  };
}

const COMPILED_SHAPES_MAX = 256;
/** The statements of KyselyOps.runCompiled, by dialect and shape. */
const compiledByDialect: Partial<Record<DialectProfile['kind'], Map<string, CompiledQuery>>> = {};

function toTask(r: Selectable<TasksTable>): TaskRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    type: r.type,
    status: r.status as TaskRecord['status'],
    phase: r.phase as TaskRecord['phase'],
    activity: r.activity as TaskRecord['activity'],
    spec: JSON.parse(r.spec),
    pinned: Number(r.pinned) === 1,
    cronExpression: r.cron_expression,
    cronTimezone: r.cron_timezone,
    cronNextRunAt: r.cron_next_run_at,
    activeOutput: r.active_output,
    creditsUsedMicros: fromStoredMicros(r.credits_used_micros),
    lastEventSeq: Number(r.last_event_seq),
    currentTurnId: r.current_turn_id,
    queuedCount: Number(r.queued_count),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    deletedAt: r.deleted_at,
  };
}

const TASK_COLUMNS: Record<keyof TaskPatch, keyof TasksTable> = {
  name: 'name', type: 'type', status: 'status', phase: 'phase', activity: 'activity', spec: 'spec', pinned: 'pinned',
  cronExpression: 'cron_expression', cronTimezone: 'cron_timezone', cronNextRunAt: 'cron_next_run_at',
  activeOutput: 'active_output', creditsUsedMicros: 'credits_used_micros', lastEventSeq: 'last_event_seq',
  currentTurnId: 'current_turn_id', queuedCount: 'queued_count', updatedAt: 'updated_at', deletedAt: 'deleted_at',
};

function taskRow(patch: TaskPatch): Updateable<TasksTable> {
  const row: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    const column = TASK_COLUMNS[key as keyof TaskPatch];
    if (key === 'spec') row[column] = JSON.stringify(value);
    else if (key === 'pinned') row[column] = value ? 1 : 0;
    else row[column] = value;
  }
  return row as Updateable<TasksTable>;
}

function toTurn(r: Selectable<TurnsTable>): TurnRecord {
  return {
    id: r.id,
    taskId: r.task_id,
    accountId: r.account_id,
    kind: r.kind as TurnRecord['kind'],
    status: r.status as TurnRecord['status'],
    input: r.input,
    planOnly: Number(r.plan_only) === 1,
    createdAt: r.created_at,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    leaseOwner: r.lease_owner,
    leaseExpiresAt: r.lease_expires_at,
    creditsUsedMicros: fromStoredMicros(r.credits_used_micros),
    tokensIn: Number(r.tokens_in),
    tokensOut: Number(r.tokens_out),
    toolCalls: Number(r.tool_calls),
    error: r.error ? JSON.parse(r.error) : null,
  };
}

const TURN_COLUMNS: Record<keyof TurnPatch, keyof TurnsTable> = {
  status: 'status', input: 'input', planOnly: 'plan_only', startedAt: 'started_at', endedAt: 'ended_at',
  leaseOwner: 'lease_owner', leaseExpiresAt: 'lease_expires_at', creditsUsedMicros: 'credits_used_micros', tokensIn: 'tokens_in',
  tokensOut: 'tokens_out', toolCalls: 'tool_calls', error: 'error',
};

function turnRow(patch: TurnPatch): Updateable<TurnsTable> {
  const row: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    const column = TURN_COLUMNS[key as keyof TurnPatch];
    if (key === 'error') row[column] = value === null ? null : JSON.stringify(value);
    else if (key === 'planOnly') row[column] = value ? 1 : 0;
    else row[column] = value;
  }
  return row as Updateable<TurnsTable>;
}

function toUpload(r: Selectable<UploadsTable>): UploadRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    filename: r.filename,
    contentType: r.content_type,
    declaredBytes: Number(r.declared_bytes),
    sizeBytes: r.size_bytes === null ? null : Number(r.size_bytes),
    sha256: r.sha256,
    storagePath: r.storage_path,
    expiresAt: r.expires_at,
    createdAt: r.created_at,
    completedAt: r.completed_at,
  };
}

export class KyselyOps implements StoreOps {
  constructor(
    protected readonly db: Kysely<Database> | Transaction<Database>,
    protected readonly profile: DialectProfile,
  ) {}

  async insertAccount(a: AccountRecord): Promise<void> {
    await this.db.insertInto('accounts').values({ id: a.id, name: a.name, balance_micros: a.balanceMicros, credits_used_micros: a.creditsUsedMicros, created_at: a.createdAt }).execute();
  }

  async getAccount(id: string): Promise<AccountRecord | undefined> {
    const [r] = (await this.runCompiled('getAccount', [id], () => this.db.selectFrom('accounts').selectAll().where('id', '=', id))).rows;
    return r && { id: r.id, name: r.name, balanceMicros: fromStoredMicros(r.balance_micros), creditsUsedMicros: fromStoredMicros(r.credits_used_micros), createdAt: r.created_at };
  }

  async countAccounts(): Promise<number> {
    const r = await this.db.selectFrom('accounts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async adjustBalanceMicros(accountId: string, deltaMicros: number): Promise<number> {
    const delta = wholeMicros(deltaMicros);
    const r = await this.db
      .updateTable('accounts')
      .set({ balance_micros: sql<number>`case when balance_micros + ${delta} < 0 then 0 else balance_micros + ${delta} end` })
      .where('id', '=', accountId)
      .returning('balance_micros')
      .executeTakeFirst();
    return r ? fromStoredMicros(r.balance_micros) : 0;
  }

  async chargeAccountMicros(accountId: string, amountMicros: number): Promise<number> {
    const amount = wholeMicros(amountMicros);
    const r = await this.db
      .updateTable('accounts')
      .set({
        balance_micros: sql<number>`case when balance_micros - ${amount} < 0 then 0 else balance_micros - ${amount} end`,
        credits_used_micros: sql<number>`credits_used_micros + ${amount}`,
      })
      .where('id', '=', accountId)
      .returning('balance_micros')
      .executeTakeFirst();
    return r ? fromStoredMicros(r.balance_micros) : 0;
  }

  async insertApiKey(k: ApiKeyRecord & { keyHash: string }): Promise<void> {
    await this.db.insertInto('api_keys').values({ id: k.id, account_id: k.accountId, key_hash: k.keyHash, created_at: k.createdAt, revoked_at: k.revokedAt }).execute();
  }

  async findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const r = await this.db.selectFrom('api_keys').select(['id', 'account_id', 'created_at', 'revoked_at']).where('key_hash', '=', keyHash).executeTakeFirst();
    return r && { id: r.id, accountId: r.account_id, createdAt: r.created_at, revokedAt: r.revoked_at };
  }

  async listApiKeys(accountId: string): Promise<ApiKeyRecord[]> {
    const rows = await this.db.selectFrom('api_keys').select(['id', 'account_id', 'created_at', 'revoked_at']).where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
    return rows.map((r) => ({ id: r.id, accountId: r.account_id, createdAt: r.created_at, revokedAt: r.revoked_at }));
  }

  async revokeApiKey(accountId: string, keyId: string, at: string): Promise<ApiKeyRecord | undefined> {
    await this.db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', keyId).where('account_id', '=', accountId).where('revoked_at', 'is', null).execute();
    const r = await this.db.selectFrom('api_keys').select(['id', 'account_id', 'created_at', 'revoked_at']).where('id', '=', keyId).where('account_id', '=', accountId).executeTakeFirst();
    return r && { id: r.id, accountId: r.account_id, createdAt: r.created_at, revokedAt: r.revoked_at };
  }

  async insertTask(t: TaskRecord): Promise<void> {
    const { id, accountId, createdAt, ...fields } = t;
    const row = { id, account_id: accountId, created_at: createdAt, ...taskRow(fields) } as Insertable<TasksTable>;
    await this.runCompiled(`insertTask:${Object.keys(row)}`, Object.values(row), () => this.db.insertInto('tasks').values(row));
  }

  async getTask(id: string, opts: { lock?: boolean } = {}): Promise<TaskRecord | undefined> {
    const lock = opts.lock === true && this.profile.rowLocks;
    const [r] = (await this.runCompiled(lock ? 'getTask:lock' : 'getTask', [id], () => {
      const q = this.db.selectFrom('tasks').selectAll().where('id', '=', id);
      return lock ? q.forUpdate() : q;
    })).rows;
    return r && toTask(r);
  }

  async getTaskState(id: string): Promise<TaskStateRecord | undefined> {
    const [r] = (await this.runCompiled('getTaskState', [id], () => this.stateQuery(id))).rows;
    return r && toTaskState(r);
  }

  /** The /state poll: the task's state and its current turn. */
  protected stateQuery(taskId: string): Compilable<StateRow> {
    return this.db
      .selectFrom('tasks')
      .leftJoin('turns', 'turns.id', 'tasks.current_turn_id')
      .select([
        'tasks.id', 'tasks.account_id', 'tasks.status', 'tasks.phase', 'tasks.activity', 'tasks.queued_count', 'tasks.last_event_seq',
        'tasks.current_turn_id', 'tasks.updated_at', 'turns.kind as turn_kind', 'turns.started_at as turn_started_at',
      ])
      .where('tasks.id', '=', taskId);
  }

  /**
   * An output's rows after `afterRow` up to and including `upToRow`, as stored. Row numbers are
   * dense from 1, so a page is a range scan on the primary key, not an OFFSET.
   */
  protected rowsQuery(taskId: string, outputId: string, afterRow: number, upToRow: number): Compilable<{ data: string | Buffer }> {
    // better-sqlite3 returns TEXT as a JS string (a decoded copy) but a BLOB as bytes: with the
    // cast, an output page is the stored bytes spliced together, never decoded and re-encoded.
    // pg returns text either way.
    return this.db
      .selectFrom('rows')
      .select(this.profile.kind === 'sqlite' ? sql<Buffer>`cast(data as blob)`.as('data') : 'data')
      .where('task_id', '=', taskId)
      .where('output_id', '=', outputId)
      .where('row_num', '>', afterRow)
      .where('row_num', '<=', upToRow)
      .orderBy('row_num');
  }

  /**
   * Runs a hot statement (the /state poll, output pages, the create-and-turn path). Kysely
   * builds and compiles it once per `shape` (a name plus whatever changes its SQL, such as the
   * columns set); later calls reuse that SQL with their own `parameters`: the values `build`
   * binds, in the order it binds them. For one-row statements, building costs as much CPU as the
   * database's own work. The first build of each shape checks the order, so a mismatch fails the
   * first test that runs it.
   */
  private async runCompiled<R>(shape: string, parameters: readonly unknown[], build: () => Compilable<R>): Promise<QueryResult<R>> {
    const compiledByShape = (compiledByDialect[this.profile.kind] ??= new Map());
    let compiled = compiledByShape.get(shape) as CompiledQuery<R> | undefined;
    if (!compiled) {
      compiled = build().compile();
      if (!isDeepStrictEqual(compiled.parameters, parameters)) throw new Error(`statement "${shape}": its parameters are not the values it binds`);
      // Shapes are few (column sets the code uses, small event batches); the cap bounds the rest.
      if (compiledByShape.size < COMPILED_SHAPES_MAX) compiledByShape.set(shape, compiled);
    }
    return this.db.executeQuery<R>({ ...compiled, parameters });
  }

  async updateTask(id: string, patch: TaskPatch): Promise<void> {
    const row = taskRow(patch);
    const columns = Object.keys(row);
    if (columns.length === 0) return;
    await this.runCompiled(`updateTask:${columns}`, [...Object.values(row), id], () => this.db.updateTable('tasks').set(row).where('id', '=', id));
  }

  async listTasks(accountId: string, limit: number, after?: TaskListCursor): Promise<TaskRecord[]> {
    let q = this.db.selectFrom('tasks').selectAll().where('account_id', '=', accountId).where('deleted_at', 'is', null);
    if (after) {
      const pinned = after.pinned ? 1 : 0;
      // Keyset pagination over (pinned desc, updated_at desc, id desc): rows strictly after the cursor.
      q = q.where((eb) =>
        eb.or([
          eb('pinned', '<', pinned),
          eb.and([eb('pinned', '=', pinned), eb('updated_at', '<', after.updatedAt)]),
          eb.and([eb('pinned', '=', pinned), eb('updated_at', '=', after.updatedAt), eb('id', '<', after.id)]),
        ]),
      );
    }
    const rows = await q.orderBy('pinned', 'desc').orderBy('updated_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toTask);
  }

  async listDueCronTasks(now: string, limit: number): Promise<TaskRecord[]> {
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

  async insertTurn(t: TurnRecord): Promise<void> {
    const { id, taskId, accountId, kind, createdAt, ...fields } = t;
    const row = { id, task_id: taskId, account_id: accountId, kind, created_at: createdAt, ...turnRow(fields) } as Insertable<TurnsTable>;
    await this.runCompiled(`insertTurn:${Object.keys(row)}`, Object.values(row), () => this.db.insertInto('turns').values(row));
  }

  async getTurn(id: string): Promise<TurnRecord | undefined> {
    const [r] = (await this.runCompiled('getTurn', [id], () => this.db.selectFrom('turns').selectAll().where('id', '=', id))).rows;
    return r && toTurn(r);
  }

  async updateTurn(id: string, patch: TurnPatch): Promise<void> {
    const row = turnRow(patch);
    const columns = Object.keys(row);
    if (columns.length === 0) return;
    await this.runCompiled(`updateTurn:${columns}`, [...Object.values(row), id], () => this.db.updateTable('turns').set(row).where('id', '=', id));
  }

  async nextQueuedTurn(taskId: string): Promise<TurnRecord | undefined> {
    const r = await this.db.selectFrom('turns').selectAll().where('task_id', '=', taskId).where('status', '=', 'queued').orderBy('id').limit(1).executeTakeFirst();
    return r && toTurn(r);
  }

  async cancelQueuedTurns(taskId: string, at: string): Promise<number> {
    const r = await this.db.updateTable('turns').set({ status: 'cancelled', ended_at: at }).where('task_id', '=', taskId).where('status', '=', 'queued').executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  async countPendingTurns(): Promise<number> {
    const r = await this.db.selectFrom('turns').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async claimTurns(owner: string, limit: number, now: string, leaseUntil: string, opts: { takeOverExpired?: boolean } = {}): Promise<TurnRecord[]> {
    // Turns whose owner stopped renewing come first (they are the oldest), then pending turns
    // oldest first. Two statements rather than one with OR: each walks the (status, id) index in
    // order and stops at `limit`, where an OR would sort the whole backlog on every claim.
    const expired = opts.takeOverExpired === false
      ? []
      : await this.takeTurns(owner, limit, leaseUntil, (eb) => eb.and([eb('status', '=', 'running'), eb('lease_expires_at', '<', now)]));
    if (expired.length === limit) return expired;
    const pending = await this.takeTurns(owner, limit - expired.length, leaseUntil, (eb) => eb('status', '=', 'pending'));
    return [...expired, ...pending];
  }

  private async takeTurns(owner: string, limit: number, leaseUntil: string, which: ExpressionOrFactory<Database, 'turns', SqlBool>): Promise<TurnRecord[]> {
    let ready = this.db.selectFrom('turns').select('id').where(which).orderBy('id').limit(limit);
    // SKIP LOCKED lets several workers claim at once without queueing behind each other's locks.
    if (this.profile.skipLocked) ready = ready.forUpdate().skipLocked();
    const rows = await this.db
      .updateTable('turns')
      .set({ status: 'running', lease_owner: owner, lease_expires_at: leaseUntil })
      .where('id', 'in', ready)
      .returningAll()
      .execute();
    return rows.map(toTurn).sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  async renewLease(turnId: string, owner: string, leaseUntil: string): Promise<boolean> {
    const r = await this.db.updateTable('turns').set({ lease_expires_at: leaseUntil }).where('id', '=', turnId).where('lease_owner', '=', owner).where('status', '=', 'running').executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async releaseLeases(owner?: string): Promise<number> {
    let q = this.db.updateTable('turns').set({ status: 'pending', lease_owner: null, lease_expires_at: null }).where('status', '=', 'running');
    if (owner !== undefined) q = q.where('lease_owner', '=', owner);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  async listTurnsByAccount(accountId: string, limit: number): Promise<TurnRecord[]> {
    const rows = await this.db.selectFrom('turns').selectAll().where('account_id', '=', accountId).where('started_at', 'is not', null).orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toTurn);
  }

  async listTurnInputs(taskId: string, upToTurnId: string): Promise<string[]> {
    const { rows } = await this.runCompiled('listTurnInputs', [taskId, upToTurnId, 'queued', 'cancelled'], () =>
      this.db
        .selectFrom('turns')
        .select('input')
        .where('task_id', '=', taskId)
        .where('id', '<=', upToTurnId)
        .where('input', 'is not', null)
        .where('status', 'not in', ['queued', 'cancelled'])
        .orderBy('id'),
    );
    return rows.map((r) => r.input!);
  }

  async insertStep(turnId: string, step: number, data: string, at: string): Promise<boolean> {
    // The primary key (turn_id, step) decides: one index probe, however many steps the turn has.
    const inserted = await this.db
      .insertInto('turn_steps')
      .values({ turn_id: turnId, step, data, created_at: at })
      .onConflict((oc) => oc.columns(['turn_id', 'step']).doNothing())
      .returning('step')
      .executeTakeFirst();
    return inserted !== undefined;
  }

  async listSteps(turnId: string): Promise<{ step: number; data: string }[]> {
    const rows = await this.db.selectFrom('turn_steps').select(['step', 'data']).where('turn_id', '=', turnId).orderBy('step').execute();
    return rows.map((r) => ({ step: Number(r.step), data: r.data }));
  }

  async insertEvents(events: EventRecord[]): Promise<void> {
    if (events.length === 0) return;
    const rows = events.map((e) => ({ task_id: e.taskId, seq: e.seq, type: e.type, turn_id: e.turnId, data: e.data }));
    await this.runCompiled(`insertEvents:${rows.length}`, rows.flatMap(Object.values), () => this.db.insertInto('events').values(rows));
  }

  async listEvents(taskId: string, afterSeq: number, limit: number): Promise<EventRecord[]> {
    const rows = await this.db.selectFrom('events').selectAll().where('task_id', '=', taskId).where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute();
    return rows.map((r) => ({ taskId: r.task_id, seq: Number(r.seq), type: r.type, turnId: r.turn_id, data: r.data }));
  }

  async lastEvents(taskId: string, count: number): Promise<EventRecord[]> {
    const rows = await this.db.selectFrom('events').selectAll().where('task_id', '=', taskId).orderBy('seq', 'desc').limit(count).execute();
    return rows.reverse().map((r) => ({ taskId: r.task_id, seq: Number(r.seq), type: r.type, turnId: r.turn_id, data: r.data }));
  }

  async listOutputStats(taskId: string): Promise<OutputStatsRecord[]> {
    const rows = await this.db.selectFrom('outputs').selectAll().where('task_id', '=', taskId).execute();
    return rows.map((r) => ({ outputId: r.output_id, rowCount: Number(r.row_count), updatedAt: r.updated_at }));
  }

  async appendRows(taskId: string, outputId: string, writeKey: string, rows: ((rowNumber: number) => string)[], at: string) {
    const done = await this.db.selectFrom('row_batches').selectAll().where('task_id', '=', taskId).where('write_key', '=', writeKey).executeTakeFirst();
    if (done) return { firstRow: Number(done.first_row), count: Number(done.row_count), replayed: true };
    let statsQuery = this.db.selectFrom('outputs').select('row_count').where('task_id', '=', taskId).where('output_id', '=', outputId);
    if (this.profile.rowLocks) statsQuery = statsQuery.forUpdate();
    const stats = await statsQuery.executeTakeFirst();
    const before = Number(stats?.row_count ?? 0);
    for (let i = 0; i < rows.length; i += ROW_BATCH) {
      const values = rows.slice(i, i + ROW_BATCH).map((make, j) => {
        const n = before + i + j + 1;
        return { task_id: taskId, output_id: outputId, row_num: n, data: make(n) };
      });
      await this.db.insertInto('rows').values(values).execute();
    }
    const after = before + rows.length;
    if (stats) await this.db.updateTable('outputs').set({ row_count: after, updated_at: at }).where('task_id', '=', taskId).where('output_id', '=', outputId).execute();
    else await this.db.insertInto('outputs').values({ task_id: taskId, output_id: outputId, row_count: after, updated_at: at }).execute();
    await this.db.insertInto('row_batches').values({ task_id: taskId, write_key: writeKey, output_id: outputId, first_row: before + 1, row_count: rows.length }).execute();
    return { firstRow: before + 1, count: rows.length, replayed: false };
  }

  async readRows(taskId: string, outputId: string, offset: number, limit: number): Promise<Buffer[]> {
    const upTo = offset + limit;
    const { rows } = await this.runCompiled('readRows', [taskId, outputId, offset, upTo], () => this.rowsQuery(taskId, outputId, offset, upTo));
    return rows.map((row) => (typeof row.data === 'string' ? Buffer.from(row.data) : row.data));
  }

  async insertUpload(u: UploadRecord): Promise<void> {
    await this.db.insertInto('uploads').values({
      id: u.id, account_id: u.accountId, filename: u.filename, content_type: u.contentType, declared_bytes: u.declaredBytes,
      size_bytes: u.sizeBytes, sha256: u.sha256, storage_path: u.storagePath, expires_at: u.expiresAt, created_at: u.createdAt, completed_at: u.completedAt,
    }).execute();
  }

  async getUpload(id: string): Promise<UploadRecord | undefined> {
    const r = await this.db.selectFrom('uploads').selectAll().where('id', '=', id).executeTakeFirst();
    return r && toUpload(r);
  }

  async completeUpload(id: string, p: { sizeBytes: number; sha256: string; storagePath: string | null; completedAt: string }): Promise<void> {
    await this.db.updateTable('uploads').set({ size_bytes: p.sizeBytes, sha256: p.sha256, storage_path: p.storagePath, completed_at: p.completedAt }).where('id', '=', id).execute();
  }

  async getIdempotency(accountId: string, key: string, since: string): Promise<IdempotencyRecord | undefined> {
    const r = await this.db.selectFrom('idempotency').selectAll().where('account_id', '=', accountId).where('key', '=', key).where('created_at', '>=', since).executeTakeFirst();
    return r && { requestHash: r.request_hash, status: Number(r.status), body: r.body, createdAt: r.created_at };
  }

  async claimIdempotency(accountId: string, key: string, rec: IdempotencyRecord, expiredBefore: string): Promise<boolean> {
    // One statement on the primary key (account_id, key), so the database decides between
    // concurrent claims: PostgreSQL makes a second insert of the key wait on the first one's
    // uncommitted row, then does nothing if that committed; SQLite writes one transaction at a
    // time. A record past its window is taken over as if the key were new.
    const claimed = await this.db
      .insertInto('idempotency')
      .values({ account_id: accountId, key, request_hash: rec.requestHash, status: rec.status, body: rec.body, created_at: rec.createdAt })
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'key'])
          .doUpdateSet({ request_hash: rec.requestHash, status: rec.status, body: rec.body, created_at: rec.createdAt })
          .where('idempotency.created_at', '<', expiredBefore),
      )
      .returning('key')
      .executeTakeFirst();
    return claimed !== undefined;
  }

  async putIdempotency(accountId: string, key: string, rec: IdempotencyRecord): Promise<void> {
    await this.db
      .insertInto('idempotency')
      .values({ account_id: accountId, key, request_hash: rec.requestHash, status: rec.status, body: rec.body, created_at: rec.createdAt })
      .onConflict((oc) => oc.columns(['account_id', 'key']).doUpdateSet({ request_hash: rec.requestHash, status: rec.status, body: rec.body, created_at: rec.createdAt }))
      .execute();
  }

  async getSetting(key: string): Promise<string | undefined> {
    const r = await this.db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
    return r?.value;
  }

  async setSetting(key: string, value: string): Promise<void> {
    await this.db.insertInto('settings').values({ key, value }).onConflict((oc) => oc.column('key').doUpdateSet({ value })).execute();
  }

  async notify(channel: string, payload: string): Promise<void> {
    if (!this.profile.shared) return;
    // pg_notify inside the transaction is delivered on commit and dropped on rollback.
    await sql`select pg_notify(${channel}, ${payload})`.execute(this.db);
  }

  async hitRateWindow(keyId: string, windowStart: string): Promise<number> {
    const r = await this.db
      .insertInto('rate_windows')
      .values({ key_id: keyId, window_start: windowStart, hits: 1 })
      .onConflict((oc) => oc.columns(['key_id', 'window_start']).doUpdateSet({ hits: sql<number>`rate_windows.hits + 1` }))
      .returning('hits')
      .executeTakeFirstOrThrow();
    return Number(r.hits);
  }

  async putUploadChunk(uploadId: string, chunk: number, data: Buffer): Promise<void> {
    await this.db.insertInto('upload_chunks').values({ upload_id: uploadId, chunk, data: data.toString('base64') }).execute();
  }

  async deleteUploadChunks(uploadId: string): Promise<void> {
    await this.db.deleteFrom('upload_chunks').where('upload_id', '=', uploadId).execute();
  }
}

export class KyselyStore extends KyselyOps implements Store {
  readonly kind: 'sqlite' | 'postgres';

  readonly shared: boolean;

  private readonly commits: GroupCommit | undefined;

  constructor(
    protected readonly root: Kysely<Database>,
    profile: DialectProfile,
    private readonly opts: {
      /** Where the migration bookkeeping tables live (PostgreSQL schema); the database default when unset. */
      migrationSchema?: string;
      link?: ClusterLink;
    } = {},
  ) {
    super(root, profile);
    this.kind = profile.kind;
    this.shared = profile.shared;
    this.commits = profile.groupCommit ? new GroupCommit(root) : undefined;
  }

  listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>> {
    return (this.opts.link ?? LOCAL_LINK).listen(channel, handler);
  }

  tryLock(name: string): Promise<HeldLock | null> {
    return (this.opts.link ?? LOCAL_LINK).tryLock(name);
  }

  async *readUploadChunks(uploadId: string): AsyncIterable<Buffer> {
    // One chunk per query keeps memory flat however large the upload is.
    for (let chunk = 0; ; chunk++) {
      const r = await this.root.selectFrom('upload_chunks').select('data').where('upload_id', '=', uploadId).where('chunk', '=', chunk).executeTakeFirst();
      if (!r) return;
      yield Buffer.from(r.data, 'base64');
    }
  }

  async migrate(): Promise<void> {
    const migrator = new Migrator({ db: this.root, provider: new StaticMigrations(), migrationTableSchema: this.opts.migrationSchema });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  }

  async transaction<T>(fn: (tx: StoreOps) => Promise<T>): Promise<T> {
    const body = (trx: Transaction<Database>) => fn(new KyselyOps(trx, this.profile));
    return this.commits ? this.commits.run(body) : this.root.transaction().execute(body);
  }

  async *iterateRows(taskId: string, outputId: string): AsyncIterable<string> {
    let offset = 0;
    while (true) {
      const batch = await this.readRows(taskId, outputId, offset, ROW_BATCH);
      for (const row of batch) yield row.toString();
      if (batch.length < ROW_BATCH) return;
      offset += batch.length;
    }
  }

  async close(): Promise<void> {
    await this.opts.link?.close();
    await this.root.destroy();
  }
}
