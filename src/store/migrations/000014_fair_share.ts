import type { Kysely } from 'kysely';

/**
 * Fair scheduling of waiting turns (decisions §18, src/store/sql/turns.ts):
 *
 * - `turns.line`: the line a turn waits in, its group's id for a group's run, its account's id
 *   for a single task; set when the turn is made.
 * - `turns.fair_key`: the turn's place among waiting turns, given when it becomes pending; workers
 *   claim the smallest first (index `turns_fair`), and a line's next turn is placed after its last
 *   waiting one (index `turns_line`). Turns made before wait in one line, in the order they had.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('turns').addColumn('line', 'text', (c) => c.notNull().defaultTo('')).execute();
  await db.schema.alterTable('turns').addColumn('fair_key', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.createIndex('turns_fair').on('turns').columns(['status', 'fair_key', 'id']).execute();
  await db.schema.createIndex('turns_line').on('turns').columns(['line', 'status', 'fair_key']).execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
