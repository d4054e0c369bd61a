import type { Kysely } from 'kysely';

/**
 * What several Quarry processes on one database share: per-key request counters (rate limits
 * hold across nodes) and upload contents (any node can serve a file another node received).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('rate_windows')
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('window_start', 'text', (c) => c.notNull())
    .addColumn('hits', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('rate_windows_pk', ['key_id', 'window_start'])
    .execute();

  await db.schema
    .createTable('upload_chunks')
    .addColumn('upload_id', 'text', (c) => c.notNull())
    .addColumn('chunk', 'integer', (c) => c.notNull())
    // Base64 text: one portable column type for both databases, at a third more space.
    .addColumn('data', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('upload_chunks_pk', ['upload_id', 'chunk'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
