/**
 * The connections to a PostgreSQL database: the schema this install works in (created if
 * missing), a pool for Kysely, and the settings the cluster link opens its own connections with.
 */
import pg from 'pg';
import { Kysely } from 'kysely';
import type { Database } from '../database.js';
import { OwnSchemaDialect } from './own-schema-dialect.js';
import { PreparingClient } from './prepared-statements.js';

export interface PostgresStoreOptions {
  connectionString: string;
  /** Schema to work in (created if missing); isolates test runs and side-by-side installs. */
  schema?: string;
  maxConnections?: number;
  /** Shown as application_name in pg_stat_activity: which process holds which connection and lock. */
  applicationName?: string;
}

export async function openPostgresConnections(opts: PostgresStoreOptions): Promise<{ db: Kysely<Database>; schema: string; clientConfig: pg.ClientConfig }> {
  const schema = opts.schema;
  if (schema && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`invalid PostgreSQL schema name "${schema}"`);
  if (schema) {
    const admin = new pg.Client({ connectionString: opts.connectionString });
    await admin.connect();
    try {
      await admin.query(`create schema if not exists "${schema}"`);
    } finally {
      await admin.end();
    }
  }
  const clientConfig = {
    connectionString: opts.connectionString,
    application_name: opts.applicationName ?? 'quarry',
    ...(schema ? { options: `-c search_path="${schema}"` } : {}),
  };
  const pool = new pg.Pool({ ...clientConfig, max: opts.maxConnections ?? 10, Client: PreparingClient });
  // A lost connection (the server restarted, the network dropped) is emitted as 'error' by the
  // pool when the client was idle, and by the client itself when it was checked out; without a
  // listener either one ends the process. The pool drops a broken client on its own and the query
  // it ran fails with an error isStoreUnavailable recognizes (503), so there is nothing to do but
  // not crash: the next query opens a fresh connection once the server is back.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  return { db: new Kysely<Database>({ dialect: new OwnSchemaDialect({ pool }, schema ?? 'public') }), schema: schema ?? 'public', clientConfig };
}
