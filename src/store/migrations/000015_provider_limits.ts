import type { Kysely } from 'kysely';

/**
 * The model and search providers' limits, shared by every process of a cluster (decisions §18,
 * src/agent/providers/provider-gate.ts):
 *
 * - `provider_limits`: per provider, when the next request and the next token may go (times in
 *   ms since the epoch: each call reserves its place by moving them on), a block until a time the
 *   provider named (a 429's Retry-After, a rate-limit reset), and the limits its headers stated.
 * - `provider_calls`: the calls in flight for QUARRY_MODEL_CONCURRENCY, each under a lease so
 *   that a process that died frees its places.
 * - `tasks.waiting`: what a running turn waits on (`model_rate_limit`), shown in the Task body and
 *   its state; null otherwise.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('provider_limits')
    .addColumn('provider', 'text', (c) => c.primaryKey())
    .addColumn('next_request_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('next_token_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('blocked_until', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('learned_rpm', 'integer')
    .addColumn('learned_tpm', 'integer')
    .execute();
  await db.schema.createTable('provider_calls')
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('call_id', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('provider_calls_pk', ['provider', 'call_id'])
    .execute();
  await db.schema.alterTable('tasks').addColumn('waiting', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
