/**
 * Real `quarry serve` processes over one data dir, for the crash suite: start one (optionally
 * with QUARRY_CRASH_AT so it SIGKILLs itself at a named crash point), kill -9 it, SIGTERM it,
 * and start the next one over the same data dir. Every process started here is remembered, so
 * a test can kill whatever it left running (each by its own handle, never by name).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..', '..');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  /** Base URL, or '' when the process died before it said where it listens. */
  readonly url: string;
  readonly dataDir: string;
  readonly proc: ChildProcess;
  /** The key printed on the first start over an empty data dir. */
  readonly starterKey: string | undefined;
  /** The QUARRY_CRASH_AT this process was started with, if any. */
  readonly crashAt: string | undefined;
  /** Resolves when the process has exited (however). */
  readonly exited: Promise<Exit>;
  alive(): boolean;
  /** Everything it wrote to stdout and stderr so far (for failure messages). */
  output(): string;
  /** kill -9; resolves once it is gone. */
  kill9(): Promise<Exit>;
  /** SIGTERM; resolves with how it exited and how long that took. Rejects after timeoutMs. */
  terminate(timeoutMs?: number): Promise<Exit & { ms: number }>;
}

export interface StartOptions {
  dataDir: string;
  /** Extra environment (QUARRY_MODEL_BASE_URL, prices, …). */
  env?: Record<string, string>;
  /** `<name>[:<n>]`: the process SIGKILLs itself the n-th time it reaches that crash point. */
  crashAt?: string;
  startTimeoutMs?: number;
}

const live = new Set<ServerProcess>();

/** A fresh, empty data dir under the OS temp dir. */
export function makeDataDir(prefix = 'quarry-crash-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function removeDataDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * Starts `node --import tsx src/cli/quarry.ts serve` over `dataDir` (SQLite) on a free port and
 * resolves once it prints `quarry listening on <url>`. With `crashAt` the process may die before
 * that (a turn it resumes reaches the point first): it then resolves with url '' instead of
 * failing; without `crashAt` an early exit rejects.
 */
export async function startServer(opts: StartOptions): Promise<ServerProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // The suite decides these; an inherited value must not leak in.
  delete env.QUARRY_CRASH_AT;
  delete env.QUARRY_DATABASE_URL;
  delete env.QUARRY_DATABASE_SCHEMA;
  Object.assign(env, {
    QUARRY_PORT: '0',
    QUARRY_HOST: '127.0.0.1',
    QUARRY_DATA_DIR: opts.dataDir,
    QUARRY_LOG_LEVEL: 'warn',
    ...opts.env,
  });
  if (opts.crashAt) env.QUARRY_CRASH_AT = opts.crashAt;
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/cli/quarry.ts', 'serve'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: string[] = [];
  proc.stdout!.on('data', (c: Buffer) => chunks.push(c.toString()));
  proc.stderr!.on('data', (c: Buffer) => chunks.push(c.toString()));
  const exited = new Promise<Exit>((resolve) => {
    // 'close' (not 'exit'): by then everything it printed has been read.
    proc.once('close', (code, signal) => resolve({ code, signal }));
  });
  const output = () => chunks.join('');

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`quarry did not start within ${opts.startTimeoutMs ?? 60_000} ms:\n${output()}`));
    }, opts.startTimeoutMs ?? 60_000);
    const check = () => {
      const m = /quarry listening on (\S+)/.exec(output());
      if (m) {
        clearTimeout(timer);
        proc.stdout!.off('data', check);
        resolve(m[1]!);
      }
    };
    proc.stdout!.on('data', check);
    void exited.then((exit) => {
      clearTimeout(timer);
      if (/quarry listening on/.test(output())) return;
      if (opts.crashAt && exit.signal === 'SIGKILL') resolve('');
      else reject(new Error(`quarry exited (${exit.code ?? exit.signal}) before listening:\n${output()}`));
    });
  });

  const alive = () => proc.exitCode === null && proc.signalCode === null;
  const server: ServerProcess = {
    url,
    dataDir: opts.dataDir,
    proc,
    starterKey: /starter api key: (\S+)/.exec(output())?.[1],
    crashAt: opts.crashAt,
    exited,
    alive,
    output,
    async kill9() {
      if (alive()) proc.kill('SIGKILL');
      return exited;
    },
    async terminate(timeoutMs = 10_000) {
      const started = Date.now();
      if (alive()) proc.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const exit = await Promise.race([
        exited,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`quarry did not exit within ${timeoutMs} ms of SIGTERM:\n${output()}`)), timeoutMs);
        }),
      ]).finally(() => clearTimeout(timer));
      return { ...exit, ms: Date.now() - started };
    },
  };
  live.add(server);
  void exited.then(() => live.delete(server));
  return server;
}

/** kill -9 every process started here that still runs (test clean-up). */
export async function killAllServers(): Promise<void> {
  await Promise.all([...live].map((s) => s.kill9()));
}
