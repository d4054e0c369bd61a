import pg from 'pg';
import { openPostgresStore } from '../src/store/postgres/postgres-store.js';
import { skipWithoutPostgres, TEST_DATABASE_URL } from './helpers/postgres.js';
import { runStoreCases } from './store/store-cases.js';

const schema = `t_store_${process.pid}_${Date.now()}`;

runStoreCases('postgres', async () => openPostgresStore({ connectionString: TEST_DATABASE_URL, schema }), async () => {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  await client.query(`drop schema if exists "${schema}" cascade`);
  await client.end();
}, { skip: await skipWithoutPostgres() });
