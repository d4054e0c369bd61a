import type { Kysely } from 'kysely';

/**
 * What a turn's context cost beyond its token counts (decisions §16.3): `tokens_in_cached`, the
 * input tokens (of `tokens_in`, which counts all of them) that the provider read from its prompt
 * cache, and `compactions`, how often the turn's conversation was compacted. Earlier turns read
 * 0 for both: their providers' cache reads were not kept.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('turns').addColumn('tokens_in_cached', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('turns').addColumn('compactions', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
