/**
 * The PostgreSQL store. Several Quarry processes may share one database: task rows are locked per
 * change (SELECT … FOR UPDATE), workers claim turns with SKIP LOCKED, and the processes signal
 * each other and hold named locks through the cluster link (postgres-link.ts).
 */
import { DIALECT_PROFILES } from '../sql/dialect-profile.js';
import { SqlStore } from '../sql/sql-store.js';
import type { Store } from '../store.js';
import { openPostgresConnections, type PostgresStoreOptions } from './postgres-connection.js';
import { PostgresLink } from './postgres-link.js';

export async function openPostgresStore(opts: PostgresStoreOptions): Promise<Store> {
  const { db, schema, clientConfig } = await openPostgresConnections(opts);
  return new SqlStore(db, {
    profile: DIALECT_PROFILES.postgres,
    link: new PostgresLink(clientConfig, schema),
    // The schema is named for the migration tables too: otherwise a same-named table in another schema would be taken for ours.
    migrationSchema: schema,
  });
}
