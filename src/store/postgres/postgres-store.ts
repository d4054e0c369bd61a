import pg from 'pg';
import { Kysely } from 'kysely';
import type { Database } from '../database.js';
import { KyselyStore, type DialectProfile } from '../kysely-store.js';
import { OwnSchemaDialect } from './own-schema-dialect.js';
import { PostgresLink } from './postgres-link.js';

const POSTGRES_PROFILE: DialectProfile = { kind: 'postgres', rowLocks: true, skipLocked: true, shared: true, groupCommit: false };

export interface PostgresStoreOptions {
  connectionString: string;
  /** Schema to work in (created if missing); isolates test runs and side-by-side installs. */
  schema?: string;
  maxConnections?: number;
  /** Shown as application_name in pg_stat_activity: which process holds which connection and lock. */
  applicationName?: string;
}

/**
 * Opens a PostgreSQL store. Several Quarry processes may share one database: task rows are
 * locked per change (SELECT … FOR UPDATE) and workers claim turns with SKIP LOCKED.
 */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<KyselyStore> {
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
  const connection = {
    connectionString: opts.connectionString,
    application_name: opts.applicationName ?? 'quarry',
    ...(schema ? { options: `-c search_path="${schema}"` } : {}),
  };
  const pool = new pg.Pool({ ...connection, max: opts.maxConnections ?? 10 });
  // The schema is named for the migration tables too: otherwise a same-named table in another schema would be taken for ours.
  return new KyselyStore(new Kysely<Database>({ dialect: new OwnSchemaDialect({ pool }, schema ?? 'public') }), POSTGRES_PROFILE, {
    migrationSchema: schema ?? 'public',
    link: new PostgresLink(connection, schema ?? 'public'),
  });
}
