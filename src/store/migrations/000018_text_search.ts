import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * The list's text search (`q`, decisions §20) by trigram index on PostgreSQL.
 *
 * `q` is `name ILIKE '%text%' OR prompt ILIKE '%text%'`. Without an index, text that few tasks
 * hold is found by folding the case of every name and prompt of the account (1 to 2 s at
 * 100,000 tasks). A GIN trigram index on each column (`pg_trgm`) lets the planner seek the
 * tasks that hold the text instead, and still walk the list index in order when many do (its
 * statistics tell which). The statement does not change.
 *
 * `pg_trgm` ships with PostgreSQL's contrib package and is trusted (a database owner may create
 * it). Quarry creates it in `public`, where every schema of the database can use it, when it is
 * available and may be created; otherwise the indexes are left out and `q` reads the rows as
 * before (docs/deploy.md). An extension created later is used by no index until one is made by
 * hand (the statements are in docs/deploy.md).
 *
 * SQLite keeps its scan: it folds ASCII case in the row it reads, about 0.1 s for a rare text
 * in 100,000 tasks (docs/performance.md), and an FTS5 index keyed by rowid would not survive
 * the VACUUM the operator docs allow.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  const schema = await trigramSchema(db);
  if (schema === null) return;
  for (const column of ['name', 'prompt']) {
    await sql`create index ${sql.id(`tasks_${column}_trgm`)} on tasks using gin (${sql.id(column)} ${sql.id(schema, 'gin_trgm_ops')}) where deleted_at is null`.execute(db);
  }
}

/** The schema holding pg_trgm, after creating it where it is missing and may be; null when it cannot be had. */
async function trigramSchema(db: Kysely<unknown>): Promise<string | null> {
  const installed = async () => (await sql<{ schema: string }>`
    select n.nspname as schema from pg_extension e join pg_namespace n on n.oid = e.extnamespace where e.extname = 'pg_trgm'`.execute(db)).rows[0]?.schema ?? null;
  const found = await installed();
  if (found !== null) return found;
  const available = await sql`select 1 from pg_available_extensions where name = 'pg_trgm'`.execute(db);
  if (available.rows.length === 0) return null;
  // The migration's transaction outlives a refusal (no privilege, or another process creating it
  // at the same moment): the attempt runs in a savepoint.
  await sql`savepoint quarry_pg_trgm`.execute(db);
  try {
    await sql`create extension if not exists pg_trgm schema public`.execute(db);
    await sql`release savepoint quarry_pg_trgm`.execute(db);
  } catch {
    await sql`rollback to savepoint quarry_pg_trgm`.execute(db);
  }
  return installed();
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
