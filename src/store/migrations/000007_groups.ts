import type { Kysely } from 'kysely';

/**
 * Task groups (decisions §15.2). A group holds one spec and its inputs; each input becomes a run
 * (an ordinary task with `group_id`) when the group has a free slot, so a group of any size
 * costs one small row per input until its turn comes. The group row keeps the counts of its
 * inputs by run status, changed in the same transaction as the inputs, and the last seq of the
 * group's own events (stored in `events` under the group's id, like a task's).
 *
 * The task list gains `group_id` in its index: single tasks are listed with `group_id is null`,
 * a group's runs with `group_id = ?`, each a range of the index however many runs there are.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('groups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('spec', 'text', (c) => c.notNull())
    .addColumn('max_parallel', 'integer', (c) => c.notNull())
    .addColumn('max_credits_micros', 'bigint')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('inputs', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('duplicates', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('pending', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('running', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('completed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('stopped', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('credits_used_micros', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('last_event_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .execute();
  await db.schema.createIndex('groups_account').on('groups').columns(['account_id', 'id']).execute();

  await db.schema
    .createTable('group_inputs')
    .addColumn('group_id', 'text', (c) => c.notNull())
    .addColumn('idx', 'integer', (c) => c.notNull())
    .addColumn('key', 'text')
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text')
    .addColumn('turn_id', 'text')
    .addPrimaryKeyConstraint('group_inputs_pk', ['group_id', 'idx'])
    .execute();
  // Inputs without a key are NULL here, and NULLs never collide: only keyed inputs are deduplicated.
  await db.schema.createIndex('group_inputs_key').unique().on('group_inputs').columns(['group_id', 'key']).execute();
  await db.schema.createIndex('group_inputs_status').on('group_inputs').columns(['group_id', 'status', 'idx']).execute();
  await db.schema.createIndex('group_inputs_task').on('group_inputs').columns(['task_id']).execute();

  await db.schema.alterTable('tasks').addColumn('group_id', 'text').execute();
  await db.schema.alterTable('tasks').addColumn('group_input_idx', 'integer').execute();
  await db.schema.alterTable('tasks').addColumn('group_input', 'text').execute();
  await db.schema.dropIndex('tasks_list').execute();
  await db.schema.createIndex('tasks_list').on('tasks').columns(['account_id', 'group_id', 'pinned desc', 'updated_at desc', 'id desc']).execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
