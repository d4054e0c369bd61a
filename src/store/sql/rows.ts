/**
 * The outputs' rows. Each row is stored as the exact JSON the API returns, numbered densely from
 * 1 per output, so a page is a range of the primary key and is sent without being parsed.
 */
import { sql, type Compilable } from 'kysely';
import type { CellCounts, OutputStatsRecord, RowTally } from '../../domain/records.js';
import type { StoreRows } from '../store.js';
import type { DialectProfile } from './dialect-profile.js';
import { SqlRepository, type SqlHandle } from './sql-repository.js';

/** Rows per insert statement, and per batch when an output is streamed. */
const ROW_BATCH = 2_000;

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
    const done = await this.db.selectFrom('row_batches').selectAll().where('task_id', '=', taskId).where('write_key', '=', writeKey).executeTakeFirst();
    if (done) return { firstRow: Number(done.first_row), count: Number(done.row_count), replayed: true };
    let statsQuery = this.db.selectFrom('outputs').select(['row_count', 'verified_count', 'supported_cells', 'unsupported_cells', 'unchecked_cells']).where('task_id', '=', taskId).where('output_id', '=', outputId);
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
    await this.db.insertInto('row_batches').values({ task_id: taskId, write_key: writeKey, output_id: outputId, first_row: before + 1, row_count: rows.length }).execute();
    return { firstRow: before + 1, count: rows.length, replayed: false };
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
