/**
 * Turns, the durable work queue: one operation per method, each with why it locks the way it
 * does. Two locks order everything here. A task's row lock (tasks.get with `lock: true`, held by
 * the task service for its whole change) serializes queueing, promoting and cancelling a task's
 * turns. Claims and leases change turns of many tasks without that lock, so each is a single
 * UPDATE guarded by the status and owner it expects: the row lock the UPDATE takes decides
 * between two workers, and the loser's UPDATE matches nothing. SQLite writes one transaction at a
 * time, so there the write itself is the lock.
 */
import { sql, type ExpressionOrFactory, type RawBuilder, type Insertable, type Selectable, type SqlBool, type Updateable } from 'kysely';
import { fromStoredMicros } from '../../domain/credits.js';
import type { Database, TurnsTable } from '../database.js';
import type { ChangeCounts, TurnPatch, TurnRecord, TurnStatus } from '../../domain/records.js';
import type { TurnError } from '../../errors.js';
import type { TurnsRepository, TurnUsage } from '../store.js';
import { SqlRepository } from './sql-repository.js';

function toTurn(r: Selectable<TurnsTable>): TurnRecord {
  return {
    id: r.id,
    taskId: r.task_id,
    accountId: r.account_id,
    line: r.line,
    kind: r.kind as TurnRecord['kind'],
    status: r.status as TurnRecord['status'],
    input: r.input,
    planOnly: Number(r.plan_only) === 1,
    offline: Number(r.offline) === 1,
    createdAt: r.created_at,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    leaseOwner: r.lease_owner,
    leaseExpiresAt: r.lease_expires_at,
    creditsUsedMicros: fromStoredMicros(r.credits_used_micros),
    tokensIn: Number(r.tokens_in),
    tokensInCached: Number(r.tokens_in_cached),
    tokensOut: Number(r.tokens_out),
    toolCalls: Number(r.tool_calls),
    compactions: Number(r.compactions),
    error: r.error ? JSON.parse(r.error) : null,
    rowsWritten: Number(r.rows_written),
    verifiedRows: Number(r.verified_rows),
    changes: { added: Number(r.changes_added), changed: Number(r.changes_changed), unconfirmed: Number(r.changes_unconfirmed) },
  };
}

const TURN_COLUMNS: Record<Exclude<keyof TurnPatch, 'changes'>, keyof TurnsTable> = {
  status: 'status', input: 'input', planOnly: 'plan_only', offline: 'offline', startedAt: 'started_at', endedAt: 'ended_at',
  leaseOwner: 'lease_owner', leaseExpiresAt: 'lease_expires_at', creditsUsedMicros: 'credits_used_micros', tokensIn: 'tokens_in',
  tokensInCached: 'tokens_in_cached', tokensOut: 'tokens_out', toolCalls: 'tool_calls', compactions: 'compactions', error: 'error', rowsWritten: 'rows_written', verifiedRows: 'verified_rows',
};

function turnRow(patch: TurnPatch): Updateable<TurnsTable> {
  const row: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (key === 'changes') {
      const counts = value as ChangeCounts;
      Object.assign(row, { changes_added: counts.added, changes_changed: counts.changed, changes_unconfirmed: counts.unconfirmed });
      continue;
    }
    const column = TURN_COLUMNS[key as Exclude<keyof TurnPatch, 'changes'>];
    if (key === 'error') row[column] = value === null ? null : JSON.stringify(value);
    else if (key === 'planOnly' || key === 'offline') row[column] = value ? 1 : 0;
    else row[column] = value;
  }
  return row as Updateable<TurnsTable>;
}

/**
 * Fair scheduling (decisions §18). Workers claim pending turns by `fair_key`, smallest first, so
 * the order is decided once, when a turn becomes pending, and a claim costs what it cost when
 * turns were taken oldest first: one walk of an index that stops at the claim's limit.
 *
 * The keys are start-time fair queueing over lines (a group's runs are one line, an account's
 * single tasks another). A line's next turn goes one round (FAIR_ROUND) after the line's last
 * waiting turn; a line with nothing waiting starts half a round after the last turn claimed (the
 * largest key running), ahead of every line's next round. So each line with waiting turns gets
 * one turn per round, and a turn of a line that waited for nothing is claimed at the next free
 * slot, behind only other lines that also just began to wait: a single task created behind a
 * group of any size waits for one turn to end on a busy worker. Turns made in the same round tie
 * and go oldest first. A turn whose lease is handed back keeps its key, so it goes first again.
 */
const FAIR_ROUND = 2;

/**
 * The key of a turn of `line` (a value, or the updated row's own column) that becomes pending
 * now: one expression, evaluated inside the statement that makes the turn pending.
 */
function fairKey(line: string | RawBuilder<string>) {
  return sql<number>`(select max(k) from (
    select coalesce((select max(w.fair_key) from turns as w where w.status = 'running'), (select min(w.fair_key) from turns as w where w.status = 'pending') - 1, 0) + ${sql.lit(FAIR_ROUND / 2)} as k
    union all
    select max(w.fair_key) + ${sql.lit(FAIR_ROUND)} from turns as w where w.line = ${line} and w.status = 'pending'
  ) as keys)`;
}

export class SqlTurns extends SqlRepository implements TurnsRepository {
  /** No lock of its own: a new turn is added under its task's row lock (or with a new task); a pending one gets its fair key. */
  async insert(t: TurnRecord): Promise<void> {
    const { id, taskId, accountId, line, kind, createdAt, ...fields } = t;
    const row = { id, task_id: taskId, account_id: accountId, line, kind, created_at: createdAt, ...turnRow(fields) } as Insertable<TurnsTable>;
    const values = Object.values(row);
    if (t.status !== 'pending') {
      await this.runCompiled(`turns.insert:${Object.keys(row)}`, values, () => this.db.insertInto('turns').values(row));
      return;
    }
    await this.runCompiled(`turns.insertPending:${Object.keys(row)}`, [...values, line], () => this.db.insertInto('turns').values({ ...row, fair_key: fairKey(line) }));
  }

  async get(id: string): Promise<TurnRecord | undefined> {
    const [r] = (await this.runCompiled('turns.get', [id], () => this.db.selectFrom('turns').selectAll().where('id', '=', id))).rows;
    return r && toTurn(r);
  }

  /**
   * By id, under the task's row lock: the task service changes a turn only while it holds its
   * task. A turn made pending (a queued message promoted) gets its fair key in its line.
   */
  async update(id: string, patch: TurnPatch): Promise<void> {
    if (patch.status !== 'pending') {
      await this.updateById('turns', id, turnRow(patch));
      return;
    }
    await this.db.updateTable('turns').set({ ...turnRow(patch), fair_key: fairKey(sql.ref<string>('turns.line')) }).where('id', '=', id).execute();
  }

  /** Under the task's row lock, like update. */
  async addUsage(id: string, usage: TurnUsage): Promise<number | undefined> {
    const { creditsMicros, tokensIn, tokensInCached, tokensOut, toolCalls, compactions } = usage;
    const [r] = (await this.runCompiled('turns.addUsage', [creditsMicros, tokensIn, tokensInCached, tokensOut, toolCalls, compactions, id], () => this.db
      .updateTable('turns')
      .set({
        credits_used_micros: sql<number>`credits_used_micros + ${creditsMicros}`,
        tokens_in: sql<number>`tokens_in + ${tokensIn}`,
        tokens_in_cached: sql<number>`tokens_in_cached + ${tokensInCached}`,
        tokens_out: sql<number>`tokens_out + ${tokensOut}`,
        tool_calls: sql<number>`tool_calls + ${toolCalls}`,
        compactions: sql<number>`compactions + ${compactions}`,
      })
      .where('id', '=', id)
      .returning('credits_used_micros'))).rows;
    return r && fromStoredMicros(r.credits_used_micros);
  }

  /** Under the task's row lock, like update. */
  async addRows(id: string, rows: { written: number; verified: number }): Promise<void> {
    await this.runCompiled('turns.addRows', [rows.written, rows.verified, id], () => this.db
      .updateTable('turns')
      .set({ rows_written: sql<number>`rows_written + ${rows.written}`, verified_rows: sql<number>`verified_rows + ${rows.verified}` })
      .where('id', '=', id));
  }

  /** Under the task's row lock, like update. */
  async addChanges(id: string, counts: ChangeCounts): Promise<void> {
    await this.db.updateTable('turns')
      .set({
        changes_added: sql<number>`changes_added + ${counts.added}`,
        changes_changed: sql<number>`changes_changed + ${counts.changed}`,
        changes_unconfirmed: sql<number>`changes_unconfirmed + ${counts.unconfirmed}`,
      })
      .where('id', '=', id)
      .execute();
  }

  /** Under the task's row lock, like update. */
  async end(id: string, end: { status: 'completed' | 'failed' | 'stopped'; endedAt: string; error: TurnError | null }): Promise<number | undefined> {
    const row = turnRow({ ...end, leaseOwner: null, leaseExpiresAt: null });
    const [r] = (await this.runCompiled('turns.end', [...Object.values(row), id], () => this.db
      .updateTable('turns')
      .set(row)
      .where('id', '=', id)
      .returning('credits_used_micros'))).rows;
    return r && fromStoredMicros(r.credits_used_micros);
  }

  /** No row lock: only a holder of the task's row lock queues or promotes its turns, and the caller holds it. */
  async nextQueued(taskId: string): Promise<TurnRecord | undefined> {
    const r = await this.db.selectFrom('turns').selectAll().where('task_id', '=', taskId).where('status', '=', 'queued').orderBy('id').limit(1).executeTakeFirst();
    return r && toTurn(r);
  }

  /** Under the task's row lock, like every change to its queue; queued turns are never claimed, so no worker competes. */
  async cancelQueued(taskId: string, at: string): Promise<number> {
    const r = await this.db.updateTable('turns').set({ status: 'cancelled', ended_at: at }).where('task_id', '=', taskId).where('status', '=', 'queued').executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /** No lock: a count of one moment, which the capacity check takes as the estimate it is (task-service.ts). */
  async countPending(): Promise<number> {
    const r = await this.db.selectFrom('turns').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async countRunning(): Promise<number> {
    const r = await this.db.selectFrom('turns').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'running').executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async claim(owner: string, limit: number, now: string, leaseUntil: string, opts: { takeOverExpired?: boolean } = {}): Promise<TurnRecord[]> {
    // Turns whose owner stopped renewing come first (they are the oldest), then pending turns
    // in their fair order (fairKey). Two statements rather than one with OR: each walks the (status, id) index in
    // order and stops at `limit`, where an OR would sort the whole backlog on every claim.
    const expired = opts.takeOverExpired === false
      ? []
      : await this.take(owner, limit, leaseUntil, (eb) => eb.and([eb('status', '=', 'running'), eb('lease_expires_at', '<', now)]), 'id');
    if (expired.length === limit) return expired;
    const pending = await this.take(owner, limit - expired.length, leaseUntil, (eb) => eb('status', '=', 'pending'), 'fair_key');
    return [...expired, ...pending];
  }

  /** `order`: expired leases oldest first (index turns_status), pending turns by their fair key (index turns_fair). */
  private async take(owner: string, limit: number, leaseUntil: string, which: ExpressionOrFactory<Database, 'turns', SqlBool>, order: 'id' | 'fair_key'): Promise<TurnRecord[]> {
    let ready = this.db.selectFrom('turns').select('id').where(which);
    ready = (order === 'id' ? ready.orderBy('id') : ready.orderBy('fair_key').orderBy('id')).limit(limit);
    // SKIP LOCKED lets several workers claim at once without queueing behind each other's locks.
    if (this.profile.skipLocked) ready = ready.forUpdate().skipLocked();
    // The selection as a CTE, run once: inside `IN (…)` PostgreSQL may plan the locking sub-select
    // as a semi join re-run per row, each run skipping the rows already updated, so that LIMIT
    // would not bound the claim.
    const rows = await this.db
      .with('ready', () => ready)
      .updateTable('turns')
      .set({ status: 'running', lease_owner: owner, lease_expires_at: leaseUntil })
      .where('id', 'in', (eb) => eb.selectFrom('ready').select('id'))
      .returningAll()
      .execute();
    return rows.map(toTurn).sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  /**
   * One UPDATE guarded by owner and status: a turn another worker took over, or that ended, has
   * neither any more, so a late renewal matches nothing and the worker learns it lost the turn.
   */
  async renewLease(turnId: string, owner: string, leaseUntil: string): Promise<boolean> {
    const r = await this.db.updateTable('turns').set({ lease_expires_at: leaseUntil }).where('id', '=', turnId).where('lease_owner', '=', owner).where('status', '=', 'running').executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /**
   * One UPDATE of the running turns: with an owner, only that worker's (a turn taken over
   * meanwhile has another owner and is left alone); without, every one, which only an embedded
   * store's start asks for, when no other process can be running a turn.
   */
  async releaseLeases(owner?: string): Promise<number> {
    let q = this.db.updateTable('turns').set({ status: 'pending', lease_owner: null, lease_expires_at: null }).where('status', '=', 'running');
    if (owner !== undefined) q = q.where('lease_owner', '=', owner);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  async listByAccount(accountId: string, limit: number): Promise<TurnRecord[]> {
    const rows = await this.db.selectFrom('turns').selectAll().where('account_id', '=', accountId).where('started_at', 'is not', null).orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toTurn);
  }

  async lastOutcome(taskId: string): Promise<'completed' | 'failed' | 'stopped' | undefined> {
    const r = await this.db.selectFrom('turns').select('status').where('task_id', '=', taskId).where('status', 'in', ['completed', 'failed', 'stopped'])
      .orderBy('ended_at', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst();
    return r?.status as 'completed' | 'failed' | 'stopped' | undefined;
  }

  async listRecent(taskId: string, limit: number): Promise<Pick<TurnRecord, 'id' | 'input' | 'status'>[]> {
    const rows = await this.db.selectFrom('turns').select(['id', 'input', 'status']).where('task_id', '=', taskId).where('status', '!=', 'cancelled')
      .orderBy('id', 'desc').limit(limit).execute();
    return rows.reverse().map((r) => ({ id: r.id, input: r.input, status: r.status as TurnStatus }));
  }

  async listInputs(taskId: string, upToTurnId: string): Promise<string[]> {
    const { rows } = await this.runCompiled('turns.listInputs', [taskId, upToTurnId, 'queued', 'cancelled'], () =>
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
}
