/**
 * The snapshots of what a task read (a page fetched, an input read): kept so that each row's
 * citations can be checked against the text as it was read, and shown at
 * `GET /task/{task_id}/sources`.
 */
import crypto from 'node:crypto';
import type { SourceSnapshotRecord } from '../domain/records.js';
import { newId } from '../ids.js';
import type { Store } from '../store/store.js';

/** What was read: the URL asked for (an input's is `upload:<upload_id>`), where it led, and its text. */
export type SourceRead = Pick<SourceSnapshotRecord, 'url' | 'finalUrl' | 'uploadId' | 'title' | 'text'>;

export class SourceSnapshots {
  constructor(private readonly store: Store) {}

  /** Keeps what the task read; returns its source_id (the same URL and text read again keep the first). */
  record(taskId: string, read: SourceRead): Promise<string> {
    // PostgreSQL's text cannot hold NUL (see NO_NUL_PATTERN): kept as U+FFFD, on both databases alike.
    const text = read.text.includes('\u0000') ? read.text.replaceAll('\u0000', '\ufffd') : read.text;
    const bytes = Buffer.from(text);
    return this.store.sources.record({
      id: newId('src'), taskId, url: read.url, finalUrl: read.finalUrl, uploadId: read.uploadId, title: read.title,
      fetchedAt: new Date().toISOString(), sha256: crypto.createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length, text,
    });
  }

  /** One snapshot of the task, with its text. */
  get(taskId: string, sourceId: string): Promise<SourceSnapshotRecord | undefined> {
    return this.store.sources.get(taskId, sourceId);
  }

  /** The task's snapshots, with their text, that these URLs (asked for or arrived at) or uploads name. */
  cited(taskId: string, urls: string[], uploadIds: string[]): Promise<SourceSnapshotRecord[]> {
    return this.store.sources.cited(taskId, urls, uploadIds);
  }
}
