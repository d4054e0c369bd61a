import type { Kysely } from 'kysely';

/**
 * Cell support (decisions §17.1), counted as rows are appended and set again by a recheck, so
 * that output listings and the Task body read them without reading rows:
 * `outputs.supported_cells`, `unsupported_cells`, `unchecked_cells` per output, and the task's
 * totals `tasks.supported_cells`, `unsupported_cells` (its citation accuracy). Rows written
 * before count 0 until the task is rechecked.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const column of ['supported_cells', 'unsupported_cells', 'unchecked_cells']) {
    await db.schema.alterTable('outputs').addColumn(column, 'integer', (c) => c.notNull().defaultTo(0)).execute();
  }
  for (const column of ['supported_cells', 'unsupported_cells']) {
    await db.schema.alterTable('tasks').addColumn(column, 'integer', (c) => c.notNull().defaultTo(0)).execute();
  }
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
