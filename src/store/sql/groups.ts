/**
 * Groups and their inputs. A group's row is locked (get with `lock: true`) by every change to
 * its inputs and counts, so those are serialized per group; inputs are changed only under it.
 */
import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import { fromStoredMicros } from '../../domain/credits.js';
import { storedSpec } from '../../domain/spec.js';
import type { GroupInputsTable, GroupsTable } from '../database.js';
import type { GroupInputRecord, GroupListFilter, GroupPatch, GroupRecord, GroupRowRecord, GroupRunRecord, LastTurnRecord } from '../../domain/records.js';
import { containsText } from './contains-text.js';
import type { RunStatus } from '../../contract/index.js';
import type { GroupsRepository } from '../store.js';
import { SqlRepository } from './sql-repository.js';

function toGroup(r: Selectable<GroupsTable>): GroupRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    spec: storedSpec(JSON.parse(r.spec)),
    maxParallel: Number(r.max_parallel),
    maxCreditsMicros: r.max_credits_micros === null ? null : fromStoredMicros(r.max_credits_micros),
    status: r.status as GroupRecord['status'],
    inputs: Number(r.inputs),
    duplicates: Number(r.duplicates),
    counts: { pending: Number(r.pending), running: Number(r.running), completed: Number(r.completed), failed: Number(r.failed), stopped: Number(r.stopped) },
    creditsUsedMicros: fromStoredMicros(r.credits_used_micros),
    lastEventSeq: Number(r.last_event_seq),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
    cronExpression: r.cron_expression,
    cronTimezone: r.cron_timezone,
    cronNextRunAt: r.cron_next_run_at,
  };
}

function groupRow(patch: GroupPatch): Updateable<GroupsTable> {
  const { counts, creditsUsedMicros, maxCreditsMicros, lastEventSeq, updatedAt, finishedAt, cronNextRunAt, ...same } = patch;
  return {
    ...same,
    ...(counts ?? {}),
    ...(creditsUsedMicros === undefined ? {} : { credits_used_micros: creditsUsedMicros }),
    ...(maxCreditsMicros === undefined ? {} : { max_credits_micros: maxCreditsMicros }),
    ...(lastEventSeq === undefined ? {} : { last_event_seq: lastEventSeq }),
    ...(updatedAt === undefined ? {} : { updated_at: updatedAt }),
    ...(finishedAt === undefined ? {} : { finished_at: finishedAt }),
    ...(cronNextRunAt === undefined ? {} : { cron_next_run_at: cronNextRunAt }),
  };
}

function toInput(r: Selectable<GroupInputsTable>): GroupInputRecord {
  return { groupId: r.group_id, index: Number(r.idx), key: r.key, data: r.data, status: r.status as RunStatus, taskId: r.task_id, turnId: r.turn_id };
}

/** Inputs per insert statement (a large file arrives in many). */
const INPUT_BATCH = 500;

export class SqlGroups extends SqlRepository implements GroupsRepository {
  async insert(g: GroupRecord): Promise<void> {
    const row: Insertable<GroupsTable> = {
      id: g.id, account_id: g.accountId, name: g.name, spec: JSON.stringify(g.spec), max_parallel: g.maxParallel, max_credits_micros: g.maxCreditsMicros,
      status: g.status, inputs: g.inputs, duplicates: g.duplicates, ...g.counts, credits_used_micros: g.creditsUsedMicros,
      last_event_seq: g.lastEventSeq, created_at: g.createdAt, updated_at: g.updatedAt, finished_at: g.finishedAt,
      cron_expression: g.cronExpression, cron_timezone: g.cronTimezone, cron_next_run_at: g.cronNextRunAt,
    };
    await this.db.insertInto('groups').values(row).execute();
  }

  async get(id: string, opts: { lock?: boolean } = {}): Promise<GroupRecord | undefined> {
    let q = this.db.selectFrom('groups').selectAll().where('id', '=', id);
    if (opts.lock && this.profile.rowLocks) q = q.forUpdate();
    const r = await q.executeTakeFirst();
    return r && toGroup(r);
  }

  async update(id: string, patch: GroupPatch): Promise<void> {
    const row = groupRow(patch);
    if (Object.keys(row).length > 0) await this.db.updateTable('groups').set(row).where('id', '=', id).execute();
  }

  /** One UPDATE: the row lock it takes orders it with the group's own changes, which never set credits used of a capped group. */
  async addCreditsUsed(groupId: string, micros: number): Promise<void> {
    await this.db.updateTable('groups').set({ credits_used_micros: sql<number>`credits_used_micros + ${micros}` }).where('id', '=', groupId).execute();
  }

  async list(accountId: string, limit: number, before?: string, filter: GroupListFilter = {}): Promise<GroupRecord[]> {
    let q = this.db.selectFrom('groups').selectAll().where('account_id', '=', accountId);
    if (filter.status) q = q.where('status', '=', filter.status);
    if (filter.q) q = q.where(containsText(this.profile, ['name'], filter.q));
    if (before !== undefined) q = q.where('id', '<', before);
    const rows = await q.orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toGroup);
  }

  async insertInputs(inputs: GroupInputRecord[]): Promise<number[]> {
    const stored: number[] = [];
    for (let i = 0; i < inputs.length; i += INPUT_BATCH) {
      const values = inputs.slice(i, i + INPUT_BATCH).map((input) => ({
        group_id: input.groupId, idx: input.index, key: input.key, data: input.data, status: input.status, task_id: input.taskId, turn_id: input.turnId,
      }));
      // A key the group has already (from this batch or an earlier one) is a duplicate: not stored.
      const rows = await this.db.insertInto('group_inputs').values(values).onConflict((oc) => oc.columns(['group_id', 'key']).doNothing()).returning('idx').execute();
      for (const r of rows) stored.push(Number(r.idx));
    }
    return stored;
  }

  async getInput(groupId: string, index: number): Promise<GroupInputRecord | undefined> {
    const r = await this.db.selectFrom('group_inputs').selectAll().where('group_id', '=', groupId).where('idx', '=', index).executeTakeFirst();
    return r && toInput(r);
  }

  async listInputs(groupId: string, status: RunStatus, limit: number, after = -1, opts: { started?: boolean } = {}): Promise<GroupInputRecord[]> {
    let q = this.db.selectFrom('group_inputs').selectAll()
      .where('group_id', '=', groupId).where('status', '=', status).where('idx', '>', after);
    if (opts.started !== undefined) q = q.where('task_id', opts.started ? 'is not' : 'is', null);
    const rows = await q.orderBy('idx').limit(limit).execute();
    return rows.map(toInput);
  }

  async listDueCron(now: string, limit: number): Promise<GroupRecord[]> {
    const rows = await this.db.selectFrom('groups').selectAll()
      .where('cron_next_run_at', 'is not', null).where('cron_next_run_at', '<=', now)
      .orderBy('cron_next_run_at').limit(limit).execute();
    return rows.map(toGroup);
  }

  async listScheduledWaiting(limit: number): Promise<GroupRecord[]> {
    const rows = await this.db.selectFrom('groups').selectAll()
      .where('cron_expression', 'is not', null).where('status', '=', 'running').where('pending', '>', 0)
      .whereRef('running', '<', 'max_parallel')
      .orderBy('id').limit(limit).execute();
    return rows.map(toGroup);
  }

  async setInput(groupId: string, index: number, patch: { status: RunStatus; taskId?: string; turnId?: string }): Promise<void> {
    await this.db.updateTable('group_inputs')
      .set({ status: patch.status, ...(patch.taskId === undefined ? {} : { task_id: patch.taskId }), ...(patch.turnId === undefined ? {} : { turn_id: patch.turnId }) })
      .where('group_id', '=', groupId).where('idx', '=', index).execute();
  }

  async listRuns(groupId: string, limit: number, opts: { status?: RunStatus; after?: number } = {}): Promise<GroupRunRecord[]> {
    // group_inputs' primary key, or group_inputs_status with a status: a range in index order either way.
    let q = this.db.selectFrom('group_inputs')
      .leftJoin('tasks', 'tasks.id', 'group_inputs.task_id')
      .select(['group_inputs.idx', 'group_inputs.data', 'group_inputs.status', 'tasks.id as task_id', 'tasks.credits_used_micros', 'tasks.updated_at', 'tasks.last_turn'])
      .where('group_inputs.group_id', '=', groupId);
    if (opts.status) q = q.where('group_inputs.status', '=', opts.status);
    if (opts.after !== undefined) q = q.where('group_inputs.idx', '>', opts.after);
    const rows = await q.orderBy('group_inputs.idx').limit(limit).execute();
    return rows.map((r) => ({
      index: Number(r.idx),
      data: r.data,
      status: r.status as RunStatus,
      task: r.task_id === null ? null : {
        id: r.task_id,
        creditsUsedMicros: fromStoredMicros(r.credits_used_micros ?? 0),
        updatedAt: r.updated_at ?? '',
        lastTurn: r.last_turn ? JSON.parse(r.last_turn) as LastTurnRecord : null,
      },
    }));
  }

  async moveInputs(groupId: string, from: RunStatus, to: RunStatus): Promise<number> {
    const r = await this.db.updateTable('group_inputs').set({ status: to }).where('group_id', '=', groupId).where('status', '=', from).executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  async rowCount(groupId: string, outputId: string): Promise<number> {
    const r = await this.db.selectFrom('group_inputs')
      .innerJoin('outputs', (join) => join.onRef('outputs.task_id', '=', 'group_inputs.task_id').on('outputs.output_id', '=', outputId))
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('outputs.row_count'), eb.lit(0)).as('n'))
      .where('group_inputs.group_id', '=', groupId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async rows(groupId: string, outputId: string, limit: number, from: { offset: number } | { after: { index: number; rowNumber: number } }): Promise<GroupRowRecord[]> {
    let q = this.db.selectFrom('group_inputs')
      .innerJoin('rows', (join) => join.onRef('rows.task_id', '=', 'group_inputs.task_id').on('rows.output_id', '=', outputId))
      .select(['group_inputs.idx', 'group_inputs.data as input', 'group_inputs.task_id', 'group_inputs.status', 'rows.row_num', 'rows.data as row'])
      .where('group_inputs.group_id', '=', groupId);
    if ('after' in from) {
      const { index, rowNumber } = from.after;
      // `idx >= i` alone bounds the index scan from where the last batch ended; inside an OR
      // neither database starts the scan there, and every batch would read the group from its start.
      q = q.where('group_inputs.idx', '>=', index).where((eb) => eb.or([eb('group_inputs.idx', '>', index), eb('rows.row_num', '>', rowNumber)]));
    }
    q = q.orderBy('group_inputs.idx').orderBy('rows.row_num').limit(limit);
    if ('offset' in from && from.offset > 0) q = q.offset(from.offset);
    const rows = await q.execute();
    return rows.map((r) => ({ index: Number(r.idx), input: r.input, taskId: r.task_id!, status: r.status as RunStatus, rowNumber: Number(r.row_num), row: r.row }));
  }
}
