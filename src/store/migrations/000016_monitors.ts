import type { Kysely } from 'kysely';

/**
 * Monitors (decisions §19).
 *
 * - `rows.row_key`: a keyed table row's identity (the JSON array of its key columns' values),
 *   unique per output; NULL for rows of outputs without a key, and NULLs never collide.
 *   `rows.turn_id`: the turn that last wrote the row, so an execute turn's end finds the keys it
 *   did not write again without keeping a list of them.
 * - `row_changes`: what each turn changed in keyed outputs, one entry per key: only the changed
 *   fields' values before and after (and the sources), so what is kept grows with the changes,
 *   not with the table. Ordered by `id`, a ULID.
 * - `turns.changes_*`: the turn's counts, for its `done` event.
 * - `groups.cron_*`: a scheduled group's schedule and next tick.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('rows').addColumn('row_key', 'text').execute();
  await db.schema.alterTable('rows').addColumn('turn_id', 'text').execute();
  await db.schema.createIndex('rows_key').unique().on('rows').columns(['task_id', 'output_id', 'row_key']).execute();

  await db.schema
    .createTable('row_changes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('turn_id', 'text', (c) => c.notNull())
    .addColumn('output_id', 'text', (c) => c.notNull())
    .addColumn('change', 'text', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('row_changes_task').on('row_changes').columns(['task_id', 'id']).execute();

  await db.schema.alterTable('turns').addColumn('changes_added', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('turns').addColumn('changes_changed', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('turns').addColumn('changes_unconfirmed', 'integer', (c) => c.notNull().defaultTo(0)).execute();

  await db.schema.alterTable('groups').addColumn('cron_expression', 'text').execute();
  await db.schema.alterTable('groups').addColumn('cron_timezone', 'text').execute();
  await db.schema.alterTable('groups').addColumn('cron_next_run_at', 'text').execute();
  await db.schema.createIndex('groups_cron_due').on('groups').columns(['cron_next_run_at']).execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
