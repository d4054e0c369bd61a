import type { Kysely } from 'kysely';

/**
 * `turns.reply_text_stored`: text of the turn's model reply under way is stored as `text` events
 * but no checkpoint holds the reply yet. Set with the reply's first stored text, cleared by the
 * step's checkpoint or the `restart` event that withdraws the text. A turn taken up again after
 * a crash asks for that reply again, so it withdraws the text first instead of showing it twice.
 * Turns stored before had no such text.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('turns').addColumn('reply_text_stored', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
