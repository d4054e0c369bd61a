import type { Kysely } from 'kysely';

/**
 * Webhooks: endpoints per account, and the outbox of deliveries. A delivery row is written in
 * the transaction of the event that causes it, then sent (and retried) from here, so nothing is
 * lost to a crash between the two.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    // A JSON array of event names.
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    // Kept as given: signing needs the secret itself, not a hash of it.
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_expires_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_endpoints_account').on('webhook_endpoints').columns(['account_id', 'id']).execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    // The JSON body, fixed when the event happens: every attempt sends (and signs) the same bytes.
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    // When a pending delivery is due; while one is being sent, when its claim runs out.
    .addColumn('next_attempt_at', 'text')
    // Retries stop (dead) once this is 24 h (QUARRY_WEBHOOK_GIVE_UP_S) behind: the creation, or the last redelivery.
    .addColumn('retry_since', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('delivered_at', 'text')
    .execute();
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
  await db.schema.createIndex('webhook_deliveries_endpoint').on('webhook_deliveries').columns(['endpoint_id', 'id']).execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
