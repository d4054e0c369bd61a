/**
 * The outputs' rows. Each row is stored as the exact JSON the API returns, numbered densely from
 * 1 per output, so a page is a range of the primary key and is sent without being parsed.
 */
import { sql, type Compilable } from 'kysely';
import type { CellCounts, OutputStatsRecord, RowChangeRecord, RowTally } from '../../domain/records.js';
import type { ChangeQuery, KeyedRowRecord, KeyedWrite, StoreRows } from '../store.js';
import type { DialectProfile } from './dialect-profile.js';
import { SqlRepository, type SqlHandle } from './sql-repository.js';

/** Rows per insert statement, and per batch when an output is streamed. */
const ROW_BATCH = 2_000;
/** Keys per `in (...)` list: well under both databases' bound parameters. */
const KEY_BATCH = 500;

const NO_TALLY: RowTally = { verified: 0, cells: { supported: 0, unsupported: 0, unchecked: 0 } };

function cellColumns(verified: number, cells: CellCounts) {
  return { verified_count: verified, supported_cells: cells.supported, unsupported_cells: cells.unsupported, unchecked_cells: cells.unchecked };
}

/**
 * An output's rows after `afterRow` up to and including `upToRow`, as stored. Row numbers are
 * dense from 1, so a page is a range scan on the primary key, not an OFFSET. SQLite also runs it
 * on its read connection (sqlite/sqlite-reads.ts).
 */
export function rowsQuery(db: SqlHandle, profile: DialectProfile, taskId: string, outputId: string, afterRow: number, upToRow: number): Compilable<{ data: string | Buffer }> {
  // better-sqlite3 returns TEXT as a JS string (a decoded copy) but a BLOB as bytes: with the
  // cast, an output page is the stored bytes spliced together, never decoded and re-encoded.
  // pg returns text either way.
  return db
    .selectFrom('rows')
    .select(profile.kind === 'sqlite' ? sql<Buffer>`cast(data as blob)`.as('data') : 'data')
    .where('task_id', '=', taskId)
    .where('output_id', '=', outputId)
    .where('row_num', '>', afterRow)
    .where('row_num', '<=', upToRow)
    .orderBy('row_num');
}

function toChange(r: { id: string; task_id: string; turn_id: string; output_id: string; change: string; at: string; data: string }): RowChangeRecord {
  return { id: r.id, taskId: r.task_id, turnId: r.turn_id, outputId: r.output_id, change: r.change as RowChangeRecord['change'], at: r.at, data: r.data };
}

export class SqlRows extends SqlRepository implements StoreRows {
  async stats(taskId: string): Promise<OutputStatsRecord[]> {
    const rows = await this.db.selectFrom('outputs').selectAll().where('task_id', '=', taskId).execute();
    return rows.map((r) => ({
      outputId: r.output_id, rowCount: Number(r.row_count), verifiedCount: Number(r.verified_count),
      cells: { supported: Number(r.supported_cells), unsupported: Number(r.unsupported_cells), unchecked: Number(r.unchecked_cells) },
      updatedAt: r.updated_at,
    }));
  }

  async append(taskId: string, outputId: string, writeKey: string, rows: ((rowNumber: number) => string)[], at: string, tally: RowTally = NO_TALLY) {
    const done = await this.batch(taskId, writeKey);
    if (done) return { ...done, replayed: true };
    const written = await this.appendNumbered(taskId, outputId, writeKey, rows.map((make) => ({ key: null, make })), null, at, tally, 0);
    return { ...written, replayed: false };
  }

  async batch(taskId: string, writeKey: string): Promise<{ firstRow: number; count: number } | undefined> {
    const done = await this.db.selectFrom('row_batches').select(['first_row', 'row_count']).where('task_id', '=', taskId).where('write_key', '=', writeKey).executeTakeFirst();
    return done && { firstRow: Number(done.first_row), count: Number(done.row_count) };
  }

  async keyed(taskId: string, outputId: string, keys: string[]): Promise<KeyedRowRecord[]> {
    const found: KeyedRowRecord[] = [];
    for (let i = 0; i < keys.length; i += KEY_BATCH) {
      const rows = await this.db.selectFrom('rows').select(['row_key', 'row_num', 'data'])
        .where('task_id', '=', taskId).where('output_id', '=', outputId).where('row_key', 'in', keys.slice(i, i + KEY_BATCH))
        .execute();
      for (const r of rows) found.push({ key: r.row_key!, rowNumber: Number(r.row_num), data: r.data });
    }
    return found;
  }

  async writeKeyed(taskId: string, outputId: string, writeKey: string, turnId: string, write: KeyedWrite, at: string): Promise<{ firstRow: number; count: number }> {
    const changed = write.updates.filter((u) => u.data !== null);
    for (const u of changed) {
      await this.db.updateTable('rows').set({ data: u.data!, turn_id: turnId })
        .where('task_id', '=', taskId).where('output_id', '=', outputId).where('row_num', '=', u.rowNumber)
        .execute();
    }
    // Rows written again unchanged keep their bytes: only the turn that confirmed them is noted.
    const unchanged = write.updates.filter((u) => u.data === null).map((u) => u.key);
    for (let i = 0; i < unchanged.length; i += KEY_BATCH) {
      await this.db.updateTable('rows').set({ turn_id: turnId })
        .where('task_id', '=', taskId).where('output_id', '=', outputId).where('row_key', 'in', unchanged.slice(i, i + KEY_BATCH))
        .execute();
    }
    return this.appendNumbered(taskId, outputId, writeKey, write.inserts, turnId, at, write.tally, write.updates.length);
  }

  async keyedNotWrittenBy(taskId: string, outputId: string, turnId: string): Promise<{ key: string; rowNumber: number }[]> {
    const rows = await this.db.selectFrom('rows').select(['row_key', 'row_num'])
      .where('task_id', '=', taskId).where('output_id', '=', outputId).where('row_key', 'is not', null)
      .where((eb) => eb.or([eb('turn_id', 'is', null), eb('turn_id', '!=', turnId)]))
      .orderBy('row_num')
      .execute();
    return rows.map((r) => ({ key: r.row_key!, rowNumber: Number(r.row_num) }));
  }

  async insertChanges(changes: RowChangeRecord[]): Promise<void> {
    for (let i = 0; i < changes.length; i += ROW_BATCH) {
      await this.db.insertInto('row_changes').values(changes.slice(i, i + ROW_BATCH).map((c) => ({
        id: c.id, task_id: c.taskId, turn_id: c.turnId, output_id: c.outputId, change: c.change, at: c.at, data: c.data,
      }))).execute();
    }
  }

  async changes(taskId: string, query: ChangeQuery): Promise<RowChangeRecord[]> {
    let q = this.db.selectFrom('row_changes').selectAll().where('task_id', '=', taskId);
    if (query.turnId !== undefined) q = q.where('turn_id', '=', query.turnId);
    if (query.sinceTurn !== undefined) q = q.where('turn_id', '>', query.sinceTurn);
    if (query.after !== undefined) q = q.where('at', '>', query.after);
    if (query.cursor !== undefined) q = q.where('id', '>', query.cursor);
    const rows = await q.orderBy('id').limit(query.limit).execute();
    return rows.map(toChange);
  }

  async groupChanges(groupId: string, query: ChangeQuery): Promise<(RowChangeRecord & { inputIndex: number; input: string })[]> {
    let q = this.db.selectFrom('row_changes')
      .innerJoin('group_inputs', 'group_inputs.task_id', 'row_changes.task_id')
      .selectAll('row_changes')
      .select(['group_inputs.idx', 'group_inputs.data as input'])
      .where('group_inputs.group_id', '=', groupId);
    if (query.sinceTurn !== undefined) q = q.where('row_changes.turn_id', '>', query.sinceTurn);
    if (query.after !== undefined) q = q.where('row_changes.at', '>', query.after);
    if (query.cursor !== undefined) q = q.where('row_changes.id', '>', query.cursor);
    const rows = await q.orderBy('row_changes.id').limit(query.limit).execute();
    return rows.map((r) => ({ ...toChange(r), inputIndex: Number(r.idx), input: r.input }));
  }

  /** Appends rows after the output's last one, numbered densely, and records the call under `writeKey`. */
  private async appendNumbered(
    taskId: string, outputId: string, writeKey: string, rows: { key: string | null; make: (rowNumber: number) => string }[],
    turnId: string | null, at: string, tally: RowTally, updated: number,
  ): Promise<{ firstRow: number; count: number }> {
    let statsQuery = this.db.selectFrom('outputs').select(['row_count', 'verified_count', 'supported_cells', 'unsupported_cells', 'unchecked_cells']).where('task_id', '=', taskId).where('output_id', '=', outputId);
    if (this.profile.rowLocks) statsQuery = statsQuery.forUpdate();
    const stats = await statsQuery.executeTakeFirst();
    const before = Number(stats?.row_count ?? 0);
    for (let i = 0; i < rows.length; i += ROW_BATCH) {
      const values = rows.slice(i, i + ROW_BATCH).map(({ key, make }, j) => {
        const n = before + i + j + 1;
        return { task_id: taskId, output_id: outputId, row_num: n, data: make(n), ...(key === null ? {} : { row_key: key, turn_id: turnId }) };
      });
      await this.db.insertInto('rows').values(values).execute();
    }
    const after = before + rows.length;
    const counts = {
      row_count: after,
      ...cellColumns(Number(stats?.verified_count ?? 0) + tally.verified, {
        supported: Number(stats?.supported_cells ?? 0) + tally.cells.supported,
        unsupported: Number(stats?.unsupported_cells ?? 0) + tally.cells.unsupported,
        unchecked: Number(stats?.unchecked_cells ?? 0) + tally.cells.unchecked,
      }),
    };
    if (stats) await this.db.updateTable('outputs').set({ ...counts, updated_at: at }).where('task_id', '=', taskId).where('output_id', '=', outputId).execute();
    else await this.db.insertInto('outputs').values({ task_id: taskId, output_id: outputId, ...counts, updated_at: at }).execute();
    // A keyed call's batch counts every row it wrote, updated in place or appended.
    const firstRow = rows.length > 0 ? before + 1 : 0;
    await this.db.insertInto('row_batches').values({ task_id: taskId, write_key: writeKey, output_id: outputId, first_row: firstRow, row_count: rows.length + updated }).execute();
    return { firstRow, count: rows.length + updated };
  }

  async rewrite(taskId: string, outputId: string, rows: { rowNumber: number; data: string }[], counts: RowTally): Promise<void> {
    for (const row of rows) {
      await this.db.updateTable('rows').set({ data: row.data }).where('task_id', '=', taskId).where('output_id', '=', outputId).where('row_num', '=', row.rowNumber).execute();
    }
    await this.db.updateTable('outputs').set(cellColumns(counts.verified, counts.cells)).where('task_id', '=', taskId).where('output_id', '=', outputId).execute();
  }

  async read(taskId: string, outputId: string, offset: number, limit: number): Promise<Buffer[]> {
    const upTo = offset + limit;
    const { rows } = await this.runCompiled('rows.read', [taskId, outputId, offset, upTo], () => rowsQuery(this.db, this.profile, taskId, outputId, offset, upTo));
    return rows.map((row) => (typeof row.data === 'string' ? Buffer.from(row.data) : row.data));
  }

  async *iterate(taskId: string, outputId: string): AsyncIterable<string> {
    let offset = 0;
    while (true) {
      const batch = await this.read(taskId, outputId, offset, ROW_BATCH);
      for (const row of batch) yield row.toString();
      if (batch.length < ROW_BATCH) return;
      offset += batch.length;
    }
  }
}
