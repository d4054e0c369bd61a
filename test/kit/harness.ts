/**
 * Starts a real Quarry in this process with its own SQLite data dir (or PostgreSQL schema), plus
 * (optionally) the fake model server, and gives tests a small HTTP client. By default Quarry
 * does not listen and `request` goes through Fastify's `app.inject()` (the same routes, hooks
 * and serializers, no socket); with `listen` it listens on a random loopback port and every
 * request goes over a real socket, for tests where the transport matters.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { dropSchemas, testStoreEnv } from './postgres.js';
import { httpClient, injectRequest, waitIdle as waitIdleOn, type RequestOptions, type Send, type TestResponse } from './http.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createQuarry, type Quarry } from '../../src/server.js';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai-server.js';

export type { TestResponse } from './http.js';

export const ADMIN_KEY = 'admin-secret-for-tests';

export interface Harness {
  /** The base URL; only a harness started with `listen` has one (reading it otherwise throws). */
  readonly url: string;
  key: string;
  quarry: Quarry;
  model: FakeOpenAI | undefined;
  dataDir: string;
  /** Whether requests go through app.inject() rather than a socket. */
  injected: boolean;
  /** One request as the harness's account (`key: null` sends none, a key given here wins). */
  request(method: string, path: string, opts?: RequestOptions): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** Start the fake model server and point Quarry at it (default true). */
  model?: boolean;
  env?: Record<string, string>;
  config?: Partial<Config>;
  /** Reuse a data dir (restarts; SQLite only: on PostgreSQL every harness gets a fresh schema). */
  dataDir?: string;
  retryDelaysMs?: number[];
  /**
   * Listen on a socket (default: requests go through app.inject()). For streams, uploads' signed
   * URLs, the client and the CLI, the protocol SDKs, /readyz, and anything about the transport
   * (connections, chunking, disconnects).
   */
  listen?: boolean;
  /** The server's logger (default: pino at TEST_LOG_LEVEL, silent unless set). */
  logger?: Logger;
}

/**
 * QUARRY_TEST_STORE=postgres runs every harness on PostgreSQL (a fresh schema per harness,
 * dropped on close) instead of SQLite, so the whole suite checks both stores.
 */

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const model = opts.model === false ? undefined : await startFakeOpenAI();
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-test-'));
  const { env: storeEnv, schema } = testStoreEnv('t_h');
  const env: Record<string, string> = {
    ...storeEnv,
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
  let url: string | undefined;
  let key: string;
  try {
    quarry = await createQuarry(config, { logger: opts.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }), retryDelaysMs: opts.retryDelaysMs ?? [10, 20] });
    if (opts.listen) {
      url = await quarry.listen();
    } else {
      // What listen() does besides listening and the starter account: the workers (the cluster
      // relay serves only other processes' events); /readyz stays 503, as nothing listens.
      await quarry.startWorkers();
    }
    // A restart over an existing store has no starter key: make a fresh account to act as.
    key = quarry.starterKey ?? (await quarry.accounts.createAccount('test', 100)).apiKey;
  } catch (err) {
    // A harness that failed to start leaves nothing running: a leftover server would keep the test file from ever ending.
    await quarry?.close().catch(() => {});
    await model?.close();
    if (schema) await dropSchemas(schema).catch(() => {});
    throw err;
  }
  const app = quarry.app;
  const send: Send = url === undefined ? (method, p, o) => injectRequest(app, method, p, o) : httpClient(url);
  const harness: Harness = {
    get url(): string {
      if (url === undefined) throw new Error('this harness does not listen: start it with `listen: true` to use a socket');
      return url;
    },
    key, quarry, model, dataDir,
    injected: url === undefined,
    request(method, p, o = {}) {
      return send(method, p, { ...o, key: o.key === undefined ? key : o.key });
    },
    async close() {
      await quarry.close();
      await model?.close();
      if (schema) await dropSchemas(schema);
    },
  };
  return harness;
}

/** Long-polls /state until no turn runs (the test's own wait, bounded; a refused poll is tried again). */
export async function waitIdle(h: Harness, taskId: string, timeoutMs = 10_000): Promise<void> {
  await waitIdleOn(h.request, taskId, { timeoutMs, tolerateErrors: true });
}
