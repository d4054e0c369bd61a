import pg from 'pg';
import { openPostgresStore } from '../src/store/postgres/postgres-store.js';
import { runStoreCases } from './store/store-cases.js';

const url = process.env.QUARRY_TEST_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schema = `t_store_${process.pid}_${Date.now()}`;

runStoreCases('postgres', async () => openPostgresStore({ connectionString: url, schema }), async () => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`drop schema if exists "${schema}" cascade`);
  await client.end();
});
