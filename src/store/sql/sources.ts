/**
 * Source snapshots: the text of every page and input a task read, once per (task, URL, text).
 * Rows' citations are checked against them (outputs/citations.ts).
 */
import type { Selectable } from 'kysely';
import type { SourceSnapshotsTable } from '../database.js';
import type { SourceSnapshotInfo, SourceSnapshotRecord } from '../../domain/records.js';
import type { SourcesRepository } from '../store.js';
import { SqlRepository } from './sql-repository.js';

/** URLs (each bound twice) and uploads looked up per statement. */
const CITED_PER_QUERY = 1000;

const INFO_COLUMNS = ['id', 'task_id', 'url', 'final_url', 'upload_id', 'title', 'fetched_at', 'sha256', 'bytes'] as const;

function toInfo(r: Omit<Selectable<SourceSnapshotsTable>, 'text'>): SourceSnapshotInfo {
  return {
    id: r.id, taskId: r.task_id, url: r.url, finalUrl: r.final_url, uploadId: r.upload_id, title: r.title, fetchedAt: r.fetched_at, sha256: r.sha256, bytes: Number(r.bytes),
  };
}

function toSnapshot(r: Selectable<SourceSnapshotsTable>): SourceSnapshotRecord {
  return { ...toInfo(r), text: r.text };
}

export class SqlSources extends SqlRepository implements SourcesRepository {
  async record(s: SourceSnapshotRecord): Promise<string> {
    // The same page read again unchanged, or a fetch replayed after a crash, keeps the first
    // snapshot; looked for first, so a large text read again is not sent to the database again.
    const existing = await this.db.selectFrom('source_snapshots').select('id').where('task_id', '=', s.taskId).where('url', '=', s.url).where('sha256', '=', s.sha256).executeTakeFirst();
    if (existing) return existing.id;
    await this.db.insertInto('source_snapshots').values({
      id: s.id, task_id: s.taskId, url: s.url, final_url: s.finalUrl, upload_id: s.uploadId, title: s.title, fetched_at: s.fetchedAt, sha256: s.sha256, bytes: s.bytes, text: s.text,
    }).onConflict((oc) => oc.columns(['task_id', 'url', 'sha256']).doNothing()).execute();
    const kept = await this.db.selectFrom('source_snapshots').select('id').where('task_id', '=', s.taskId).where('url', '=', s.url).where('sha256', '=', s.sha256).executeTakeFirstOrThrow();
    return kept.id;
  }

  async list(taskId: string, limit: number, offset: number): Promise<{ total: number; sources: SourceSnapshotInfo[] }> {
    const count = await this.db.selectFrom('source_snapshots').select((eb) => eb.fn.countAll<number>().as('n')).where('task_id', '=', taskId).executeTakeFirstOrThrow();
    // Ids are ULIDs: their order is the order of reading.
    const rows = await this.db.selectFrom('source_snapshots').select(INFO_COLUMNS).where('task_id', '=', taskId).orderBy('id').limit(limit).offset(offset).execute();
    return { total: Number(count.n), sources: rows.map(toInfo) };
  }

  async get(taskId: string, id: string): Promise<SourceSnapshotRecord | undefined> {
    const r = await this.db.selectFrom('source_snapshots').selectAll().where('task_id', '=', taskId).where('id', '=', id).executeTakeFirst();
    return r && toSnapshot(r);
  }

  async cited(taskId: string, urls: string[], uploadIds: string[]): Promise<SourceSnapshotRecord[]> {
    // A call may cite tens of thousands of URLs: looked up a slice at a time, within every
    // database's limit on bound parameters.
    const found = new Map<string, SourceSnapshotRecord>();
    for (let i = 0; i < Math.max(urls.length, uploadIds.length); i += CITED_PER_QUERY) {
      const someUrls = urls.slice(i, i + CITED_PER_QUERY);
      const someUploads = uploadIds.slice(i, i + CITED_PER_QUERY);
      const rows = await this.db.selectFrom('source_snapshots').selectAll().where('task_id', '=', taskId)
        .where((eb) => eb.or([
          ...(someUrls.length > 0 ? [eb('url', 'in', someUrls), eb('final_url', 'in', someUrls)] : []),
          ...(someUploads.length > 0 ? [eb('upload_id', 'in', someUploads)] : []),
        ]))
        .execute();
      for (const r of rows) found.set(r.id, toSnapshot(r));
    }
    // Ids are ULIDs: in the order they were read.
    return [...found.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
  }
}
