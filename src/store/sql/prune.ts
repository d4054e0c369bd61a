/**
 * The pruner's statements (src/pruner.ts). Each delete picks at most `limit` rows by their
 * address (DialectProfile.rowAddress) in a subquery that walks an index from its oldest entry,
 * then deletes those rows: one short statement that holds its locks only for the rows it
 * deletes. A row another process deleted meanwhile is simply not there: passes on several
 * processes at once delete nothing twice and need no lock.
 */
import { sql, type Expression, type Kysely } from 'kysely';
import type { Database } from '../database.js';
import type { PruneRepository, RetentionCandidate } from '../store.js';
import { SqlRepository } from './sql-repository.js';

const ENDED: readonly string[] = ['completed', 'failed', 'stopped', 'cancelled'];

type PrunedTable = 'idempotency' | 'rate_windows' | 'webhook_deliveries' | 'upload_chunks' | 'uploads' | 'turn_steps' | 'turns' | 'events' | 'source_snapshots' | 'row_batches' | 'row_changes' | 'rows' | 'outputs';

export class SqlPrune extends SqlRepository implements PruneRepository {
  /** The address column of `table` as a picking subquery selects it. */
  private address(table: PrunedTable) {
    return sql.ref(`${table}.${this.profile.rowAddress}`).as('address');
  }

  /** Deletes the rows of `table` whose addresses `pick` selects (a bounded subquery). */
  private async deletePicked(table: PrunedTable, pick: Expression<unknown>): Promise<number> {
    // PostgreSQL plans `ctid = any(array(…))` as a TID scan; `ctid in (…)` would be a join.
    const statement = this.profile.rowAddress === 'ctid'
      ? sql`delete from ${sql.table(table)} where ctid = any(array(${pick}))`
      : sql`delete from ${sql.table(table)} where rowid in (${pick})`;
    const r = await statement.execute(this.db);
    return Number(r.numAffectedRows ?? 0);
  }

  private get root(): Kysely<Database> {
    return this.db as Kysely<Database>;
  }

  idempotency(before: string, limit: number): Promise<number> {
    return this.deletePicked('idempotency', this.root.selectFrom('idempotency').select(this.address('idempotency')).where('created_at', '<', before).limit(limit));
  }

  rateWindows(before: string, limit: number): Promise<number> {
    return this.deletePicked('rate_windows', this.root.selectFrom('rate_windows').select(this.address('rate_windows')).where('window_start', '<', before).limit(limit));
  }

  async deliveries(before: string, limit: number): Promise<number> {
    const ended = await this.root.selectFrom('webhook_deliveries').select('id')
      .where('status', 'in', ['delivered', 'dead']).where('retry_since', '<', before).limit(limit).execute();
    if (ended.length === 0) return 0;
    const ids = ended.map((d) => d.id);
    // A delivery's attempts go with it (at most ATTEMPTS_KEPT each), by their primary key's prefix.
    await this.root.deleteFrom('webhook_attempts').where('delivery_id', 'in', ids).execute();
    const r = await this.root.deleteFrom('webhook_deliveries').where('id', 'in', ids).where('status', 'in', ['delivered', 'dead']).executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  async uploads(before: string, limit: number): Promise<number> {
    const expired = await this.root.selectFrom('uploads').select('id').where('completed_at', 'is', null).where('expires_at', '<', before).limit(limit).execute();
    if (expired.length === 0) return 0;
    const ids = expired.map((u) => u.id);
    // An unfinished upload holds at most the chunks of one body (QUARRY_MAX_UPLOAD_BYTES).
    await this.root.deleteFrom('upload_chunks').where('upload_id', 'in', ids).execute();
    const r = await this.root.deleteFrom('uploads').where('id', 'in', ids).where('completed_at', 'is', null).executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  async deletedTasks(before: string, limit: number): Promise<{ id: string; groupRun: boolean }[]> {
    const rows = await this.root.selectFrom('tasks').select(['id', 'group_id'])
      .where('deleted_at', 'is not', null).where('purged_at', 'is', null).where('deleted_at', '<', before)
      .orderBy('deleted_at').orderBy('id').limit(limit).execute();
    return rows.map((r) => ({ id: r.id, groupRun: r.group_id !== null }));
  }

  async purgeTask(taskId: string, opts: { keepEvents: number; keepRows: boolean; limit: number; now: string }): Promise<number> {
    const { limit } = opts;
    const db = this.root;
    const task = await db.selectFrom('tasks').select('last_event_seq').where('id', '=', taskId).executeTakeFirst();
    if (!task) return 0;
    // Steps go before their turns: they are found through them.
    const steps: [PrunedTable, Expression<unknown>][] = [
      ['turn_steps', db.selectFrom('turn_steps').select(this.address('turn_steps'))
        .where('turn_id', 'in', db.selectFrom('turns').select('id').where('task_id', '=', taskId)).limit(limit)],
      ['turns', db.selectFrom('turns').select(this.address('turns')).where('task_id', '=', taskId).limit(limit)],
      // GET /task/{task_id} shows a deleted task with its last events: `keepEvents` of them stay.
      ['events', db.selectFrom('events').select(this.address('events')).where('task_id', '=', taskId).where('seq', '<=', Number(task.last_event_seq) - opts.keepEvents).limit(limit)],
      ['source_snapshots', db.selectFrom('source_snapshots').select(this.address('source_snapshots')).where('task_id', '=', taskId).limit(limit)],
      ['row_batches', db.selectFrom('row_batches').select(this.address('row_batches')).where('task_id', '=', taskId).limit(limit)],
    ];
    if (!opts.keepRows) {
      steps.push(
        ['rows', db.selectFrom('rows').select(this.address('rows')).where('task_id', '=', taskId).limit(limit)],
        // A deleted group run keeps its changes with its rows: the group still lists both.
        ['row_changes', db.selectFrom('row_changes').select(this.address('row_changes')).where('task_id', '=', taskId).limit(limit)],
        ['outputs', db.selectFrom('outputs').select(this.address('outputs')).where('task_id', '=', taskId).limit(limit)],
      );
    }
    for (const [table, pick] of steps) {
      const deleted = await this.deletePicked(table, pick);
      if (deleted > 0) return deleted;
    }
    await db.updateTable('tasks').set({ purged_at: opts.now }).where('id', '=', taskId).execute();
    return 0;
  }

  async retentionCandidates(afterId: string | null, keepEvents: number, limit: number): Promise<RetentionCandidate[]> {
    let q = this.root.selectFrom('tasks').select(['id', 'last_event_seq', 'last_error_seq', 'events_pruned_seq'])
      .where('deleted_at', 'is', null)
      .where((eb) => eb(eb('last_event_seq', '-', eb.ref('events_pruned_seq')), '>', keepEvents));
    if (afterId !== null) q = q.where('id', '>', afterId);
    const rows = await q.orderBy('id').limit(limit).execute();
    return rows.map((r) => ({ id: r.id, lastEventSeq: Number(r.last_event_seq), lastErrorSeq: r.last_error_seq === null ? null : Number(r.last_error_seq), prunedSeq: Number(r.events_pruned_seq) }));
  }

  async eventTurns(taskId: string, afterSeq: number, limit: number): Promise<{ seq: number; turnId: string | null }[]> {
    const rows = await this.root.selectFrom('events').select(['seq', 'turn_id']).where('task_id', '=', taskId).where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute();
    return rows.map((r) => ({ seq: Number(r.seq), turnId: r.turn_id }));
  }

  async turnsEndedBefore(turnIds: readonly string[], before: string): Promise<Set<string>> {
    if (turnIds.length === 0) return new Set();
    const rows = await this.root.selectFrom('turns').select('id').where('id', 'in', turnIds).where('status', 'in', ENDED).where('ended_at', '<', before).execute();
    return new Set(rows.map((r) => r.id));
  }

  async dropEvents(taskId: string, afterSeq: number, throughSeq: number, keepSeq: number | null): Promise<number> {
    let q = this.root.deleteFrom('events').where('task_id', '=', taskId).where('seq', '>', afterSeq).where('seq', '<=', throughSeq);
    if (keepSeq !== null) q = q.where('seq', '<>', keepSeq);
    const r = await q.executeTakeFirst();
    // Never backwards: a pass on another process may have dropped further meanwhile.
    await this.root.updateTable('tasks').set({ events_pruned_seq: throughSeq }).where('id', '=', taskId).where('events_pruned_seq', '<', throughSeq).execute();
    return Number(r.numDeletedRows);
  }
}
