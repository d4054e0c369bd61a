import { sql, type Kysely } from 'kysely';

/** The credit columns of the first schema, each replaced by `<column>_micros`. */
const CREDIT_COLUMNS = [
  ['accounts', 'balance'],
  ['accounts', 'credits_used'],
  ['tasks', 'credits_used'],
  ['turns', 'credits_used'],
] as const;

/**
 * Credits as integers of micro-credits (decisions §14) instead of binary floating point, where
 * an account that reads 0 could be a hair above it and still start turns. Each double becomes
 * the nearest whole micro-credit (0.30000000000000004 → 300000), then the double column goes.
 * `bigint` is int8 on PostgreSQL and an INTEGER column on SQLite; `round` answers a double on
 * both, which each stores into the integer column exactly (it is a whole number).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [table, column] of CREDIT_COLUMNS) {
    const micros = `${column}_micros`;
    await db.schema.alterTable(table).addColumn(micros, 'bigint', (c) => c.notNull().defaultTo(0)).execute();
    await sql`update ${sql.table(table)} set ${sql.ref(micros)} = round(${sql.ref(column)} * 1000000)`.execute(db);
    await db.schema.alterTable(table).dropColumn(column).execute();
  }
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
