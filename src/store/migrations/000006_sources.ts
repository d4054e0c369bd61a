import type { Kysely } from 'kysely';

/**
 * Source snapshots and verified rows. Every page fetch_url reads, and every input read_input
 * reads, is kept as the text it gave (once per task, URL and text: a page read again unchanged,
 * or a call replayed after a crash, finds the snapshot already there). Citations of rows are
 * checked against these. `outputs.verified_count` counts the rows whose every source checked out;
 * rows written before are unverified.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('source_snapshots')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('final_url', 'text', (c) => c.notNull())
    .addColumn('upload_id', 'text')
    .addColumn('title', 'text')
    .addColumn('fetched_at', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('bytes', 'integer', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('source_snapshots_read').unique().on('source_snapshots').columns(['task_id', 'url', 'sha256']).execute();
  await db.schema.createIndex('source_snapshots_final').on('source_snapshots').columns(['task_id', 'final_url']).execute();
  await db.schema.alterTable('outputs').addColumn('verified_count', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
