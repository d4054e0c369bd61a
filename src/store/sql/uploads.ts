/**
 * Uploads, and the contents of those kept in the database: processes that share one database
 * store what they receive there in chunks, so every node can read what any node received.
 */
import type { Selectable } from 'kysely';
import type { UploadsTable } from '../database.js';
import type { UploadRecord } from '../../domain/records.js';
import type { StoreUploads } from '../store.js';
import { SqlRepository } from './sql-repository.js';

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

export class SqlUploads extends SqlRepository implements StoreUploads {
  async insert(u: UploadRecord): Promise<void> {
    await this.db.insertInto('uploads').values({
      id: u.id, account_id: u.accountId, filename: u.filename, content_type: u.contentType, declared_bytes: u.declaredBytes,
      size_bytes: u.sizeBytes, sha256: u.sha256, storage_path: u.storagePath, expires_at: u.expiresAt, created_at: u.createdAt, completed_at: u.completedAt,
    }).execute();
  }

  async get(id: string): Promise<UploadRecord | undefined> {
    const r = await this.db.selectFrom('uploads').selectAll().where('id', '=', id).executeTakeFirst();
    return r && toUpload(r);
  }

  async complete(id: string, p: { sizeBytes: number; sha256: string; storagePath: string | null; completedAt: string }): Promise<void> {
    await this.db.updateTable('uploads').set({ size_bytes: p.sizeBytes, sha256: p.sha256, storage_path: p.storagePath, completed_at: p.completedAt }).where('id', '=', id).execute();
  }

  async putChunk(uploadId: string, chunk: number, data: Buffer): Promise<void> {
    await this.db.insertInto('upload_chunks').values({ upload_id: uploadId, chunk, data: data.toString('base64') }).execute();
  }

  async deleteChunks(uploadId: string): Promise<void> {
    await this.db.deleteFrom('upload_chunks').where('upload_id', '=', uploadId).execute();
  }

  async *readChunks(uploadId: string): AsyncIterable<Buffer> {
    // One chunk per query keeps memory flat however large the upload is.
    for (let chunk = 0; ; chunk++) {
      const r = await this.db.selectFrom('upload_chunks').select('data').where('upload_id', '=', uploadId).where('chunk', '=', chunk).executeTakeFirst();
      if (!r) return;
      yield Buffer.from(r.data, 'base64');
    }
  }
}
