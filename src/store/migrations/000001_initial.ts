import type { Kysely } from 'kysely';

/**
 * The first schema. Written with Kysely's schema builder and portable types only, so the same
 * migration runs on SQLite and PostgreSQL.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('balance', 'double precision', (c) => c.notNull())
    .addColumn('credits_used', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema.createIndex('api_keys_account').on('api_keys').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('phase', 'text')
    .addColumn('activity', 'text')
    .addColumn('spec', 'text', (c) => c.notNull())
    .addColumn('pinned', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cron_expression', 'text')
    .addColumn('cron_timezone', 'text')
    .addColumn('cron_next_run_at', 'text')
    .addColumn('active_output', 'text')
    .addColumn('credits_used', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('last_event_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('current_turn_id', 'text')
    .addColumn('queued_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  // The list order of GET /task: pinned first, then most recently updated.
  await db.schema.createIndex('tasks_list').on('tasks').columns(['account_id', 'pinned desc', 'updated_at desc', 'id desc']).execute();
  await db.schema.createIndex('tasks_cron_due').on('tasks').columns(['cron_next_run_at']).execute();

  await db.schema
    .createTable('turns')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('input', 'text')
    .addColumn('plan_only', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('ended_at', 'text')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'text')
    .addColumn('credits_used', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('tokens_in', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('tokens_out', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('tool_calls', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .execute();
  await db.schema.createIndex('turns_task_status').on('turns').columns(['task_id', 'status', 'id']).execute();
  // Workers claim pending turns oldest first and look for running turns whose lease ran out.
  await db.schema.createIndex('turns_status').on('turns').columns(['status', 'id']).execute();
  await db.schema.createIndex('turns_account').on('turns').columns(['account_id', 'id']).execute();

  await db.schema
    .createTable('turn_steps')
    .addColumn('turn_id', 'text', (c) => c.notNull())
    .addColumn('step', 'integer', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('turn_steps_pk', ['turn_id', 'step'])
    .execute();

  await db.schema
    .createTable('events')
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('turn_id', 'text')
    .addColumn('data', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('events_pk', ['task_id', 'seq'])
    .execute();

  await db.schema
    .createTable('outputs')
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('output_id', 'text', (c) => c.notNull())
    .addColumn('row_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('outputs_pk', ['task_id', 'output_id'])
    .execute();

  await db.schema
    .createTable('rows')
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('output_id', 'text', (c) => c.notNull())
    .addColumn('row_num', 'integer', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('rows_pk', ['task_id', 'output_id', 'row_num'])
    .execute();

  await db.schema
    .createTable('row_batches')
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('write_key', 'text', (c) => c.notNull())
    .addColumn('output_id', 'text', (c) => c.notNull())
    .addColumn('first_row', 'integer', (c) => c.notNull())
    .addColumn('row_count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('row_batches_pk', ['task_id', 'write_key'])
    .execute();

  await db.schema
    .createTable('uploads')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('declared_bytes', 'integer', (c) => c.notNull())
    .addColumn('size_bytes', 'integer')
    .addColumn('sha256', 'text')
    .addColumn('storage_path', 'text')
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('completed_at', 'text')
    .execute();

  await db.schema
    .createTable('idempotency')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_pk', ['account_id', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_created').on('idempotency').column('created_at').execute();

  await db.schema
    .createTable('settings')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
