import { sql, type Kysely } from 'kysely';

/**
 * What the pruner (src/pruner.ts) needs to find expired data without reading what has not
 * expired: each of its deletes walks an index from its oldest entry and stops at the first one
 * still kept, so a pass costs what it deletes, however much is kept.
 *
 * - `tasks.purged_at`: when a deleted task's data was purged; a deleted task waits in the
 *   partial index `tasks_deleted` until then, so a pass never looks at tasks purged before.
 * - `tasks.events_pruned_seq`: the task's events up to this seq were dropped by the event
 *   retention (QUARRY_EVENT_RETENTION_DAYS); the next pass reads on from there.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('tasks').addColumn('purged_at', 'text').execute();
  await db.schema.alterTable('tasks').addColumn('events_pruned_seq', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.createIndex('tasks_deleted').on('tasks').columns(['deleted_at', 'id'])
    .where(sql.ref('deleted_at'), 'is not', null).where(sql.ref('purged_at'), 'is', null)
    .execute();
  await db.schema.createIndex('rate_windows_start').on('rate_windows').columns(['window_start']).execute();
  // Delivered and dead deliveries by the start of their last round of retries (creation or redelivery).
  await db.schema.createIndex('webhook_deliveries_ended').on('webhook_deliveries').columns(['status', 'retry_since']).execute();
  await db.schema.createIndex('uploads_unfinished').on('uploads').columns(['expires_at'])
    .where(sql.ref('completed_at'), 'is', null)
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
