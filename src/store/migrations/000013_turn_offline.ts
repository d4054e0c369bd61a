import type { Kysely } from 'kysely';

/**
 * `turns.offline`: the turn was asked to run offline (decisions §17.2), kept with the turn so a
 * turn taken up again after a crash still offers no web_search and still fetches nothing.
 * Turns stored before were online.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('turns').addColumn('offline', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
