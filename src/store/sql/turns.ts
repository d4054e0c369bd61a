/**
 * Turns, the durable work queue: one operation per method, each with why it locks the way it
 * does. Two locks order everything here. A task's row lock (tasks.get with `lock: true`, held by
 * the task service for its whole change) serializes queueing, promoting and cancelling a task's
 * turns. Claims and leases change turns of many tasks without that lock, so each is a single
 * UPDATE guarded by the status and owner it expects: the row lock the UPDATE takes decides
 * between two workers, and the loser's UPDATE matches nothing. A running turn's writes take the
 * task's lock, then the turn's (tasks.getForLeasedTurn), never the other way round. SQLite writes
 * one transaction at a time, so there the write itself is the lock.
 */
import { sql, type ExpressionOrFactory, type Insertable, type Selectable, type SqlBool, type Updateable } from 'kysely';
import { fromStoredMicros } from '../../domain/credits.js';
import type { Database, TurnsTable } from '../database.js';
import type { ChangeCounts, TurnPatch, TurnRecord, TurnStatus } from '../../domain/records.js';
import type { TurnError } from '../../errors.js';
import type { TurnsRepository, TurnUsage } from '../store.js';
import { PLANNED_EACH_RUN, SqlRepository, type SqlHandle } from './sql-repository.js';

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
    replyTextStored: Number(r.reply_text_stored) === 1,
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
  replyTextStored: 'reply_text_stored',
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
    else if (key === 'planOnly' || key === 'offline' || key === 'replyTextStored') row[column] = value ? 1 : 0;
    else row[column] = value;
  }
  return row as Updateable<TurnsTable>;
}

/**
 * Fair scheduling (decisions §18). Workers claim pending turns by `fair_key`, smallest first, so
 * the order is decided when a turn becomes pending, and a claim costs what it cost when turns
 * were taken oldest first: one walk of an index that stops at the claim's limit.
 *
 * The keys are start-time fair queueing over accounts, and within an account over its lines (a
 * group's runs are one line, the account's single tasks another). Rounds are FAIR_ROUND apart.
 * An account with n lines waiting spaces each line's turns n rounds apart, so its lines take
 * turns within one turn per round, and every account with turns waiting gets one per round:
 *
 * - A line with nothing waiting starts half a round after the last turn claimed (the largest key
 *   running), ahead of every line's next round: a single task created behind groups of any size,
 *   or another account's first turn, waits for one turn to end on a busy worker.
 * - A line's next turn goes n rounds after its last waiting one, n counted as it becomes pending
 *   (the lines of its account with turns waiting, its own included).
 * - When a line begins to wait, its account's other waiting turns that are closer than the new
 *   count asks move later (respace): each line keeps its first key, the rest follow at least n
 *   rounds apart. Keys were given for the count before, and the order between two accounts'
 *   turns has to change when one account's count does; without the move, a group started beside
 *   another would leave that group's waiting turns (up to max_parallel) at the old share.
 *
 * A respace reads the account's waiting turns (at most max_parallel of each group, and its
 * single tasks waiting) and writes only those it moves. It never moves a turn closer: then an
 * account whose lines begin and stop waiting by turns would move its whole backlog each time,
 * whereas stretching moves a turn only when the count grows past what it was spaced for. The
 * price: no claim writes keys either, so a line that stops waiting leaves its account's other
 * turns spaced for the count before, and while other accounts wait too, the account gets less
 * than one turn per round until those turns have run; its new turns are spaced for the count of
 * then. Turns made in the same round tie and go oldest first. A turn whose lease is handed back
 * keeps its key, so it goes first again.
 */
const FAIR_ROUND = 2;

/** The turn's line and account, from the CTE `me` of withLines. */
const myLine = sql<string>`(select line from me)`;
const myAccount = sql<string>`(select account from me)`;

/** Whose line a statement of withLines is about: a turn's about to be made (its values), or a stored turn's (read in the statement). */
type LineOf = { line: string; accountId: string } | { turnId: string };

/** What LineOf binds, in order, and the runCompiled shape's suffix that tells the two apart. */
function lineBinding(of: LineOf): { shape: string; parameters: string[] } {
  return 'turnId' in of ? { shape: 'turn', parameters: [of.turnId] } : { shape: 'line', parameters: [of.line, of.accountId] };
}

/**
 * The CTEs fairKey and respace read: `me`, the turn's line and account (bound once, or read from
 * the stored turn, and read as myLine and myAccount: scalar subqueries, which both databases take
 * as constants for an index look-up); `other_lines`, the account's other lines that may have turns waiting (its single
 * tasks' line, its running groups), found through the index of accounts' groups rather than a
 * walk of the account's turns. A run of a finished group continued by a message waits in its
 * group's line, which its account's other lines do not count then: one line fewer, for a while.
 */
function withLines(db: SqlHandle, of: LineOf) {
  return db
    .with('me(line, account)', () => ('turnId' in of
      ? sql`(select line, account_id from turns where id = ${of.turnId})`
      : sql`(select cast(${of.line} as text), cast(${of.accountId} as text))`))
    .with('other_lines(id)', () => sql`(select ${myAccount} where ${myAccount} <> ${myLine}
      union all
      select g.id from groups as g where g.account_id = ${myAccount} and g.status = 'running' and g.id <> ${myLine})`);
}
/**
 * How many of the account's other lines have turns waiting (on withLines): one look-up of index
 * turns_line per line, as a scalar subquery, which PostgreSQL cannot turn into a join over every
 * waiting turn as it may an EXISTS.
 */
const otherLinesWaiting = sql<number>`(select count(*) from other_lines as l where (select 1 from turns as p where p.line = l.id and p.status = 'pending' limit 1) is not null)`;

/** The key of a turn of `me` that becomes pending now, inside the statement that makes it pending (on withLines). */
const fairKey = sql<number>`(select max(k) from (
    select coalesce((select max(w.fair_key) from turns as w where w.status = 'running'), (select min(w.fair_key) from turns as w where w.status = 'pending') - 1, 0) + ${sql.lit(FAIR_ROUND / 2)} as k
    union all
    select max(w.fair_key) + ${sql.lit(FAIR_ROUND)} * (1 + ${otherLinesWaiting}) from turns as w where w.line = ${myLine} and w.status = 'pending'
  ) as keys)`;

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
    await this.respace({ line, accountId });
    await this.runCompiled(`turns.insertPending:${Object.keys(row)}`, [line, accountId, ...values], () => withLines(this.db, { line, accountId }).insertInto('turns').values({ ...row, fair_key: fairKey }));
  }

  /**
   * When the line has no turn waiting (it is about to begin), moves its account's other waiting
   * turns that are closer than the account's new count of waiting lines asks (fairKey). Under the
   * turn's task row lock, in the transaction that makes the turn pending. It moves turns of other
   * tasks, and on PostgreSQL it moves only those no other transaction holds (SKIP LOCKED): it
   * never waits on a lock while it holds its task's (and perhaps its group's), so it adds no
   * deadlock, and a turn held meanwhile (a claim taking it, a stop) keeps its key, a best effort
   * like the rest of the spacing. A claim passes over the turns it moves until it commits.
   */
  private async respace(of: LineOf): Promise<void> {
    const { shape, parameters } = lineBinding(of);
    await this.runCompiled(`turns.respace:${shape}`, parameters, () => withLines(this.db, of)
      // `begins` first (CROSS JOIN keeps that order on SQLite): while the line has turns waiting, as it mostly has, nothing else is read.
      .with('waiting(id, line, fair_key)', () => sql`(select w.id, w.line, w.fair_key
        from (select 1 as yes where not exists (select 1 from turns as p where p.line = ${myLine} and p.status = 'pending')) as begins
        cross join turns as w where w.status = 'pending' and w.line in (select id from other_lines))`)
      .with('numbered(id, line, fair_key, j, step)', () => sql`(select id, line, fair_key, row_number() over (partition by line order by fair_key, id) - 1,
        ${sql.lit(FAIR_ROUND)} * (1 + ${otherLinesWaiting}) from waiting)`)
      // The j-th waiting turn of a line goes at least `step` after the one before it, and never earlier than it is:
      // k_j = max(key_j, k_(j-1) + step) = j * step + the largest (key_i - i * step) for i <= j.
      // Materialized: inlined, PostgreSQL may compute the windows again for each turn it joins them with.
      .with((cte) => cte('spaced(id, fair_key, k)').materialized(), () => sql`(select id, fair_key,
        j * step + max(fair_key - j * step) over (partition by line order by j rows between unbounded preceding and current row)
        from numbered)`)
      // Only the turns closer than the spacing asks move, later; from `spaced` to each turn by its id (CROSS JOIN keeps that order on SQLite).
      .with('moved(id, k)', () => sql`(select s.id, s.k from spaced as s cross join turns as t
        where t.id = s.id and s.k > s.fair_key and t.status = 'pending'${this.profile.skipLocked ? sql` for update of t skip locked` : sql``})`)
      .updateTable('turns')
      .set({ fair_key: sql<number>`moved.k` })
      .from('moved')
      .whereRef('turns.id', '=', 'moved.id')
      .modifyEnd(sql.raw(PLANNED_EACH_RUN)));
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
    // Both statements read the turn's line and account from its row.
    await this.respace({ turnId: id });
    await withLines(this.db, { turnId: id }).updateTable('turns').set({ ...turnRow(patch), fair_key: fairKey }).where('id', '=', id).execute();
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

  /**
   * One UPDATE of the running turn, guarded by the group's spend: runs of a group call the model
   * without its lock, so two may see the same spend and both begin; each running run then goes
   * over by its one call at most, which is what the cap promises (decisions §18).
   */
  async reserveModelCall(turnId: string, groupId: string, micros: number): Promise<boolean> {
    const r = await this.db.updateTable('turns').set({ model_reserve_micros: sql<number>`model_reserve_micros + ${micros}` })
      .where('id', '=', turnId).where('status', '=', 'running')
      .where(sql<SqlBool>`exists (select 1 from groups as g where g.id = ${groupId} and g.max_credits_micros is not null
        and g.credits_used_micros + (select coalesce(sum(r.model_reserve_micros), 0) from turns as r where r.line = ${groupId} and r.status = 'running') < g.max_credits_micros)`)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** No lock: one UPDATE of the turn's own reserve (a turn's lead and sub-researchers each reserve and release their calls). */
  async releaseModelReserve(turnId: string, micros: number): Promise<void> {
    await this.db.updateTable('turns').set({ model_reserve_micros: sql<number>`model_reserve_micros - ${micros}` }).where('id', '=', turnId).execute();
  }

  /** No lock: a sum of one moment, under the group's lock, where no run of the group starts meanwhile. */
  async modelReserves(groupId: string): Promise<number> {
    const r = await this.db.selectFrom('turns').select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('model_reserve_micros'), sql<number>`0`).as('micros'))
      .where('line', '=', groupId).where('status', '=', 'running').executeTakeFirstOrThrow();
    return Number(r.micros);
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
