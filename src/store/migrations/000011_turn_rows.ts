import type { Kysely } from 'kysely';

/**
 * `turns.rows_written`, `turns.verified_rows`: the rows a turn wrote, and how many of them had
 * every source verified, counted as they are appended (a replayed write counts nothing), for the
 * turn's `done` event and usage. Turns that ended before count 0.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('turns').addColumn('rows_written', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('turns').addColumn('verified_rows', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
