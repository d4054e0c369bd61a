/**
 * Migration 000003 (decisions §14): credits stored as doubles by the first schema become
 * integers of micro-credits, each the nearest whole micro-credit, on SQLite and PostgreSQL alike.
 * The store is built up to 000002 as an older Quarry left it, given rows with float noise, then
 * opened by this Quarry, which migrates it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, sql, type Migration, type MigrationProvider } from 'kysely';
import pg from 'pg';
import * as m000001 from '../../src/store/migrations/000001_initial.js';
import * as m000002 from '../../src/store/migrations/000002_cluster.js';
import { OwnSchemaDialect } from '../../src/store/postgres/own-schema-dialect.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { dropSchemas, skipWithoutPostgres, TEST_DATABASE_URL, withClient } from '../kit/postgres.js';

/** The migrations an older Quarry ran. */
class OldMigrations implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return { '000001_initial': m000001, '000002_cluster': m000002 };
  }
}

const AT = '2030-01-01T00:00:00.000Z';

/** Doubles as the first schema stored them: sums and products of credits, with their float noise. */
const OLD = {
  balance: 0.1 + 0.2, // 0.30000000000000004
  accountUsed: 0.1 + 0.7, // 0.7999999999999999
  taskUsed: 3 * 0.1, // 0.30000000000000004
  turnUsed: 12.3456789 + 1e-10, // below half a micro-credit of noise
  dustUsed: 4e-7, // less than half a micro-credit
  bigBalance: 1234567.000001,
};

async function migrateOld(db: Kysely<unknown>, migrationTableSchema?: string): Promise<void> {
  const { error } = await new Migrator({ db, provider: new OldMigrations(), migrationTableSchema }).migrateToLatest();
  if (error) throw error;
  await sql`insert into accounts (id, name, balance, credits_used, created_at) values ('acct_noise', 'noise', ${OLD.balance}, ${OLD.accountUsed}, ${AT})`.execute(db);
  await sql`insert into accounts (id, name, balance, credits_used, created_at) values ('acct_big', 'big', ${OLD.bigBalance}, ${OLD.dustUsed}, ${AT})`.execute(db);
  await sql`insert into tasks (id, account_id, type, status, spec, credits_used, created_at, updated_at) values ('tsk_noise', 'acct_noise', 'research', 'plan', '{}', ${OLD.taskUsed}, ${AT}, ${AT})`.execute(db);
  await sql`insert into turns (id, task_id, account_id, kind, status, credits_used, created_at) values ('turn_noise', 'tsk_noise', 'acct_noise', 'plan', 'completed', ${OLD.turnUsed}, ${AT})`.execute(db);
}

async function assertMigrated(store: Store): Promise<void> {
  await store.migrate();
  const noise = (await store.accounts.get('acct_noise'))!;
  assert.equal(noise.balanceMicros, 300_000, '0.30000000000000004 credits are 300000 micro-credits');
  assert.equal(noise.creditsUsedMicros, 800_000);
  const big = (await store.accounts.get('acct_big'))!;
  assert.equal(big.balanceMicros, 1_234_567_000_001);
  assert.equal(big.creditsUsedMicros, 0);
  assert.equal((await store.tasks.get('tsk_noise'))!.creditsUsedMicros, 300_000);
  assert.equal((await store.turns.get('turn_noise'))!.creditsUsedMicros, 12_345_679);
  // The converted columns take part in the arithmetic at once.
  assert.equal(await store.accounts.charge('acct_noise', 300_000), 0);
  assert.equal((await store.accounts.get('acct_noise'))!.creditsUsedMicros, 1_100_000);
}

const skipPostgres = await skipWithoutPostgres();

describe('migration 000003: credits as micro-credits', () => {
  it('converts the doubles of a SQLite store to the nearest micro-credit', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-migrate-'));
    try {
      const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SQLite(path.join(dataDir, 'quarry.db')) }) });
      try {
        await migrateOld(db);
      } finally {
        await db.destroy();
      }
      const store = openSqliteStore(dataDir);
      try {
        await assertMigrated(store);
      } finally {
        await store.close();
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('converts the doubles of a PostgreSQL store to the nearest micro-credit, in bigint columns', { skip: skipPostgres }, async () => {
    const schema = `t_credit_migration_${process.pid}_${Date.now()}`;
    await withClient((client) => client.query(`create schema "${schema}"`));
    try {
      const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 1, options: `-c search_path="${schema}"` });
      const db = new Kysely<unknown>({ dialect: new OwnSchemaDialect({ pool }, schema) });
      try {
        await migrateOld(db, schema);
      } finally {
        await db.destroy();
      }
      const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema });
      try {
        await assertMigrated(store);
      } finally {
        await store.close();
      }
      const types = await withClient((client) => client.query(
        `select table_name, column_name, data_type from information_schema.columns
         where table_schema = $1 and (column_name like '%credits%' or column_name like 'balance%') order by 1, 2`,
        [schema],
      ));
      assert.deepEqual(types.rows, [
        { table_name: 'accounts', column_name: 'balance_micros', data_type: 'bigint' },
        { table_name: 'accounts', column_name: 'credits_used_micros', data_type: 'bigint' },
        // Credit columns added since (task groups) are micro-credits in bigint columns too.
        { table_name: 'groups', column_name: 'credits_used_micros', data_type: 'bigint' },
        { table_name: 'groups', column_name: 'max_credits_micros', data_type: 'bigint' },
        { table_name: 'tasks', column_name: 'credits_used_micros', data_type: 'bigint' },
        { table_name: 'turns', column_name: 'credits_used_micros', data_type: 'bigint' },
      ]);
    } finally {
      await dropSchemas(schema);
    }
  });
});
