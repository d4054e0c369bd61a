/**
 * Where the PostgreSQL tests find their database. In CI it must be there; on a developer's
 * machine without one, those tests are skipped and say why (test/kit/require-tool.ts).
 */
import pg from 'pg';
import { startServer, type ServerOptions, type ServerProcess } from './process.js';
import { skipUnlessAvailable } from './require-tool.js';

export const TEST_DATABASE_URL = process.env.QUARRY_TEST_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';

async function reachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/** `false` to run PostgreSQL tests, or the reason to skip them (in CI, a failure instead). */
export async function skipWithoutPostgres(): Promise<false | string> {
  return skipUnlessAvailable('PostgreSQL', (await reachable()) ? false : `nothing answers at ${TEST_DATABASE_URL} (set QUARRY_TEST_DATABASE_URL)`);
}

/** A connection of its own to the test database; the caller ends it. */
export async function connectClient(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  return client;
}

/** Runs `fn` on a connection of its own, ended afterwards. */
export async function withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = await connectClient();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Drops the named schemas and everything in them (tests' own schemas). */
let testSchemas = 0;

/**
 * Where a server under test keeps its data: with QUARRY_TEST_STORE=postgres (npm run
 * test:postgres) a schema of its own in the test database, named from `prefix`; else nothing
 * (SQLite in its data dir). `schema` is what to drop at the end.
 */
export function testStoreEnv(prefix: string): { env: Record<string, string>; schema: string | undefined } {
  if (process.env.QUARRY_TEST_STORE !== 'postgres') return { env: {}, schema: undefined };
  const schema = `${prefix}_${process.pid}_${Date.now()}_${testSchemas++}`;
  return { env: { QUARRY_DATABASE_URL: TEST_DATABASE_URL, QUARRY_DATABASE_SCHEMA: schema }, schema };
}

export async function dropSchemas(...names: string[]): Promise<void> {
  await withClient(async (client) => {
    for (const name of names) await client.query(`drop schema if exists "${name}" cascade`);
  });
}

/**
 * One node of a cluster on PostgreSQL: `quarry serve --role <role>` from the build, on the
 * cluster's `schema` of the test database, with `name` as its worker id; `env` adds the node's own
 * settings (the admin key, the model, limits).
 */
export function startClusterNode(opts: Omit<ServerOptions, 'env' | 'name' | 'role'> & { name: string; role: 'api' | 'worker'; schema: string; env?: Record<string, string> }): Promise<ServerProcess> {
  const { schema, env, ...server } = opts;
  return startServer({
    ...server,
    env: { QUARRY_DATABASE_URL: TEST_DATABASE_URL, QUARRY_DATABASE_SCHEMA: schema, QUARRY_WORKER_ID: opts.name, ...env },
  });
}
