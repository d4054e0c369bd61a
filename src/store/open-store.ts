/**
 * Opens the store a configuration names: PostgreSQL at QUARRY_DATABASE_URL, else SQLite in
 * QUARRY_DATA_DIR. The server and `quarry keys create` (run on the server's host) open it the
 * same way, so both reach the same data.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { openPostgresStore } from './postgres/postgres-store.js';
import { openSqliteStore, SQLITE_FILE } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

export async function openStore(config: Pick<Config, 'databaseUrl' | 'databaseSchema' | 'dataDir' | 'workerId'>, opts: { applicationName?: string } = {}): Promise<Store> {
  return config.databaseUrl
    ? openPostgresStore({ connectionString: config.databaseUrl, schema: config.databaseSchema, applicationName: opts.applicationName ?? `quarry ${config.workerId}` })
    : openSqliteStore(config.dataDir);
}

/** Where the configured store lives, for messages: the SQLite file, or the PostgreSQL URL without its password. */
export function storeLocation(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  if (!config.databaseUrl) return path.join(config.dataDir, SQLITE_FILE);
  try {
    const url = new URL(config.databaseUrl);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return 'QUARRY_DATABASE_URL';
  }
}

/** Whether the configured SQLite store exists (a PostgreSQL store is taken to: connecting tells). */
export function storeExists(config: Pick<Config, 'databaseUrl' | 'dataDir'>): boolean {
  return config.databaseUrl !== undefined || fs.existsSync(path.join(config.dataDir, SQLITE_FILE));
}
