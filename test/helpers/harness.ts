/**
 * Starts a real Quarry on a random loopback port with its own SQLite data dir, plus (optionally)
 * the fake model server, and gives tests a small HTTP client. Everything goes over real sockets.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { dropSchemas, TEST_DATABASE_URL } from './postgres.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createQuarry, type Quarry } from '../../src/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fake-model/fake-openai-server.js';

export const ADMIN_KEY = 'admin-secret-for-tests';

export interface Harness {
  url: string;
  key: string;
  quarry: Quarry;
  model: FakeOpenAI | undefined;
  dataDir: string;
  request(method: string, path: string, opts?: { body?: unknown; rawBody?: string; headers?: Record<string, string>; key?: string | null }): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

export interface HarnessOptions {
  /** Start the fake model server and point Quarry at it (default true). */
  model?: boolean;
  env?: Record<string, string>;
  config?: Partial<Config>;
  /** Reuse a data dir (restarts; SQLite only: on PostgreSQL every harness gets a fresh schema). */
  dataDir?: string;
  retryDelaysMs?: number[];
}

/**
 * QUARRY_TEST_STORE=postgres runs every harness on PostgreSQL (a fresh schema per harness,
 * dropped on close) instead of SQLite, so the whole suite checks both stores.
 */
const onPostgres = process.env.QUARRY_TEST_STORE === 'postgres';
let schemas = 0;

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const model = opts.model === false ? undefined : await startFakeOpenAI();
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-test-'));
  const schema = onPostgres ? `t_h_${process.pid}_${Date.now()}_${schemas++}` : undefined;
  const env: Record<string, string> = {
    ...(schema ? { QUARRY_DATABASE_URL: TEST_DATABASE_URL, QUARRY_DATABASE_SCHEMA: schema } : {}),
    QUARRY_PORT: '0',
    QUARRY_DATA_DIR: dataDir,
    // The sandbox's start-up probe costs a moment; tests of run_code turn it on.
    QUARRY_SANDBOX: 'off',
    QUARRY_ADMIN_KEY: ADMIN_KEY,
    ...(model ? { QUARRY_MODEL_BASE_URL: model.url, QUARRY_MODEL: 'fake-model' } : {}),
    ...opts.env,
  };
  const config = loadConfig(env, opts.config);
  let quarry: Quarry | undefined;
  let url: string;
  let key: string;
  try {
    quarry = await createQuarry(config, { logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }), retryDelaysMs: opts.retryDelaysMs ?? [10, 20] });
    url = await quarry.listen();
    // A restart over an existing store has no starter key: make a fresh account to act as.
    key = quarry.starterKey ?? (await quarry.accounts.createAccount('test', 100)).apiKey;
  } catch (err) {
    // A harness that failed to start leaves nothing running: a leftover server would keep the test file from ever ending.
    await quarry?.close().catch(() => {});
    await model?.close();
    if (schema) await dropSchemas(schema).catch(() => {});
    throw err;
  }
  const harness: Harness = {
    url, key, quarry, model, dataDir,
    async request(method, p, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      const useKey = o.key === undefined ? key : o.key;
      if (useKey !== null && headers['x-api-key'] === undefined && headers.authorization === undefined) headers['x-api-key'] = useKey!;
      let body: string | undefined = o.rawBody;
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(url + p, { method, headers, body });
      const text = await res.text();
      let parsed: unknown = undefined;
      try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    async close() {
      await quarry.close();
      await model?.close();
      if (schema) await dropSchemas(schema);
    },
  };
  return harness;
}

/** Polls /state until no turn runs (the test's own wait, bounded). */
export async function waitIdle(h: Harness, taskId: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const res = await h.request('GET', `/task/${encodeURIComponent(taskId)}/state?wait=5`);
    if (res.status === 200 && res.body.active === false) return;
  }
  throw new Error(`task ${taskId} did not become idle within ${timeoutMs} ms`);
}
