/**
 * Child processes for the tests and the benchmarks, started one way: `quarry` from the build
 * (`node dist/src/cli/quarry.js`, what `npm start` runs) as a server or as a CLI command, and
 * other Node scripts (TypeScript ones through tsx). A server can be started with a crash point
 * (QUARRY_CRASH_AT: it SIGKILLs itself there), a role, Node flags (--cpu-prof) and a raised
 * open-files limit; any process can be waited on line by line, kill -9ed or stopped with SIGTERM.
 *
 * Quarry runs from the build because a start through tsx compiles the TypeScript again in every
 * process (1-1.5 s of CPU each); the build is checked against src/ first, so a test never runs
 * stale code: `npm test` builds before it runs the tests.
 *
 * Every process started here is remembered and SIGKILLed (by its own pid) when this process
 * exits, so a failed test or an interrupted benchmark leaves nothing running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { QUARRY_BUILD, ROOT, staleBuild } from '../../scripts/build-state.js';
import { httpClient, waitIdle, type TestResponse } from './http.js';

export { ROOT } from '../../scripts/build-state.js';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A finished process: how it exited and everything it printed. */
export interface Run extends Exit {
  stdout: string;
  stderr: string;
}

export interface NodeProcess {
  readonly name: string;
  readonly proc: ChildProcess;
  /** Every complete stdout line so far. */
  readonly lines: readonly string[];
  /** Resolves when the process has exited and its output has been read (however it ended). */
  readonly exited: Promise<Exit>;
  alive(): boolean;
  /** Its exit code or signal once it has exited; null while it runs. */
  exitStatus(): number | NodeJS.Signals | null;
  stdout(): string;
  stderr(): string;
  /** stdout and stderr as they arrived (for failure messages). */
  output(): string;
  /** The first stdout line (already printed or still to come) that matches; rejects on timeout or when the process exits first. */
  waitForLine(re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Resolves with its exit and output once it has exited; rejects when `timeoutMs` ended it. */
  result(): Promise<Run>;
  /** kill -9; resolves once it is gone. */
  kill9(): Promise<Exit>;
  /**
   * Sends `signal` (SIGTERM by default) and resolves with how it exited and how long that took;
   * one still running after `timeoutMs` is SIGKILLed (and then shows signal SIGKILL).
   */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<Exit & { ms: number }>;
}

export interface SpawnOptions {
  /** Names it in failure messages. */
  name?: string;
  /**
   * Environment over this process's own, from which every QUARRY_* variable is removed first:
   * the caller decides the configuration. An undefined value removes the variable.
   */
  env?: Record<string, string | undefined>;
  /** Node flags before the script (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** Raise the soft open-files limit as far as allowed first (benchmarks open thousands of sockets). */
  raiseFdLimit?: boolean;
  /** SIGKILLs it after this long (a hung command then fails its test instead of stalling the run). */
  timeoutMs?: number;
  /**
   * When it exits on its own (no signal sent from here) with a failure, print the tail of its
   * output to our stderr: a server that dies in the middle of a test then says why, in the run's log.
   */
  reportDeath?: boolean;
}

const live = new Set<NodeProcess>();
process.once('exit', () => {
  for (const p of live) if (p.alive() && p.proc.pid) p.proc.kill('SIGKILL');
});

/** Output kept per process for failure messages (the tail). */
const MAX_OUTPUT = 1_000_000;

/** Raise the soft open-files limit (65535, else the hard limit), then run the command. */
const RAISE_FD_LIMIT = 'ulimit -n 65535 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$@"';

/** The environment a child starts from: ours without QUARRY_* (a developer's settings must not leak in). */
function childEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('QUARRY_')));
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/**
 * Starts `node <script> ...args` in ROOT: a .ts script through tsx, compiled JavaScript as is.
 * With `raiseFdLimit` it runs under a shell that `exec`s node, so the pid held is node's own and
 * a signal reaches it.
 */
export function spawnNode(script: string, args: string[] = [], opts: SpawnOptions = {}): NodeProcess {
  const name = opts.name ?? path.basename(script);
  const nodeArgs = [...(script.endsWith('.ts') ? ['--import', 'tsx'] : []), ...(opts.nodeArgs ?? []), script, ...args];
  const env = childEnv(opts.env);
  const proc = opts.raiseFdLimit
    ? spawn('bash', ['-c', RAISE_FD_LIMIT, name, process.execPath, ...nodeArgs], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, nodeArgs, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });

  const lines: string[] = [];
  let stdout = '';
  let stderr = '';
  let output = '';
  let partial = '';
  const keep = (s: string) => (s.length > MAX_OUTPUT ? s.slice(-MAX_OUTPUT / 2) : s);
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const l of [...listeners]) l();
  };
  const addLine = (line: string) => {
    lines.push(line);
    notify();
  };
  proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout = keep(stdout + chunk);
    output = keep(output + chunk);
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      addLine(line);
    }
  });
  proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = keep(stderr + chunk);
    output = keep(output + chunk);
  });
  // A process that cannot be started still ends in 'close'; what went wrong goes into its output.
  proc.on('error', (err) => {
    output += `\n[${name}: ${err.message}]\n`;
  });

  let killTimer: NodeJS.Timeout | undefined;
  let timedOut = false;
  let exit: Exit | undefined;
  const exited = new Promise<Exit>((resolve) => {
    // 'close' (not 'exit'): by then everything it printed has been read.
    proc.once('close', (code, signal) => {
      clearTimeout(killTimer);
      if (partial) addLine(partial);
      partial = '';
      exit = { code, signal };
      live.delete(child);
      if (opts.reportDeath && !signalled && (code !== 0 || signal !== null)) {
        process.stderr.write(`[${name} exited on its own (${code ?? signal}); its last output:]\n${output.slice(-4000)}\n`);
      }
      notify();
      resolve(exit);
    });
  });
  const alive = () => proc.exitCode === null && proc.signalCode === null;
  let signalled = false;
  const signal = (s: NodeJS.Signals) => {
    if (!alive()) return;
    signalled = true;
    try {
      proc.kill(s);
    } catch {
      // already gone
    }
  };

  const child: NodeProcess = {
    name,
    proc,
    lines,
    exited,
    alive,
    exitStatus: () => proc.exitCode ?? proc.signalCode,
    stdout: () => stdout,
    stderr: () => stderr,
    output: () => output,
    waitForLine(re, timeoutMs = 20_000) {
      return new Promise<RegExpExecArray>((resolve, reject) => {
        let seen = 0;
        const check = () => {
          for (; seen < lines.length; seen++) {
            const m = re.exec(lines[seen]!);
            if (m) return done(() => resolve(m));
          }
          if (exit) done(() => reject(new Error(`${name} exited (${exit!.code ?? exit!.signal}) before printing a line matching ${re}:\n${output.slice(-4000)}`)));
        };
        const timer = setTimeout(() => done(() => reject(new Error(`${name}: no line matching ${re} within ${timeoutMs} ms:\n${output.slice(-4000)}`))), timeoutMs);
        const done = (settle: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        check();
      });
    },
    async result() {
      const e = await exited;
      if (timedOut) throw new Error(`${name} did not exit within ${opts.timeoutMs} ms (SIGKILLed):\n${output.slice(-4000)}`);
      return { ...e, stdout, stderr };
    },
    async kill9() {
      signal('SIGKILL');
      return exited;
    },
    async stop(s = 'SIGTERM', timeoutMs = 10_000) {
      const started = Date.now();
      signal(s);
      const timer = setTimeout(() => signal('SIGKILL'), timeoutMs);
      const e = await exited.finally(() => clearTimeout(timer));
      return { ...e, ms: Date.now() - started };
    },
  };
  live.add(child);
  if (opts.timeoutMs !== undefined) {
    killTimer = setTimeout(() => {
      timedOut = true;
      signal('SIGKILL');
    }, opts.timeoutMs);
  }
  return child;
}

// ---- the build ----------------------------------------------------------------------------------

let buildChecked = false;

/**
 * The built CLI, after checking that it is there and newer than every file under src/ and
 * packages/client/src (checked once per process: a run tests the build it started with).
 */
export function quarryBuild(): string {
  if (buildChecked) return QUARRY_BUILD;
  const stale = staleBuild();
  if (stale) throw new Error(`${stale}: run npm run build first (npm test builds before it runs the tests)`);
  buildChecked = true;
  return QUARRY_BUILD;
}

/** Starts `quarry <args>` (a CLI command) from the build, SIGKILLed after 60 s unless `timeoutMs` says otherwise. */
export function startQuarryCli(args: string[], opts: SpawnOptions = {}): NodeProcess {
  return spawnNode(quarryBuild(), args, { name: `quarry ${args.join(' ')}`.slice(0, 80), timeoutMs: 60_000, ...opts });
}

/** Runs `quarry <args>` from the build to its end. */
export function runQuarryCli(args: string[], opts: SpawnOptions = {}): Promise<Run> {
  return startQuarryCli(args, opts).result();
}

/**
 * A CLI test's three moves against a started server, as its starter account: run the CLI
 * (`quarry`), call the API (`api`), and wait until a task runs nothing (`idle`). `server` is read
 * at each call, so the helpers can be made before a `before` hook starts it.
 */
export function starterCli(server: () => ServerProcess): {
  quarry: (args: string[]) => Promise<Run>;
  api: (method: string, path: string, body?: unknown) => Promise<TestResponse>;
  idle: (taskId: string) => Promise<void>;
} {
  const send = () => httpClient(server().url, server().starterKey!);
  return {
    quarry: (args) => runQuarryCli(args, { env: { NO_COLOR: '1', QUARRY_URL: server().url, QUARRY_API_KEY: server().starterKey! } }),
    api: (method, path, body) => send()(method, path, body === undefined ? {} : { body }),
    idle: (taskId) => waitIdle(send(), taskId, { timeoutMs: 15_000 }),
  };
}

// ---- servers ------------------------------------------------------------------------------------

export interface ServerProcess extends NodeProcess {
  /** Base URL, or '' when the process died at its crash point before it said where it listens. */
  readonly url: string;
  readonly dataDir: string;
  /** The key printed on the first start over an empty store (with `waitForStarterKey`). */
  readonly starterKey: string | undefined;
  /** The QUARRY_CRASH_AT this process was started with, if any. */
  readonly crashAt: string | undefined;
}

export interface ServerOptions {
  dataDir: string;
  /** Configuration over the defaults (loopback, any free port, log level warn, sandbox off). */
  env?: Record<string, string>;
  /** `<name>[:<n>]`: the process SIGKILLs itself the n-th time it reaches that crash point. */
  crashAt?: string;
  /** `quarry serve --role <role>`. */
  role?: 'all' | 'api' | 'worker';
  name?: string;
  nodeArgs?: string[];
  raiseFdLimit?: boolean;
  /** How long to wait for the `listening` line (default 30 s). */
  startTimeoutMs?: number;
  /** Wait for the starter key too (printed on the first start over an empty store). */
  waitForStarterKey?: boolean;
}

/**
 * Starts `quarry serve` from the build over `dataDir` on a free loopback port and resolves once
 * it prints `quarry listening on <url>`. With `crashAt` the process may die before that (a turn
 * it resumes reaches the point first): it then resolves with url '' instead of failing; without
 * `crashAt` an early exit rejects.
 */
export async function startServer(opts: ServerOptions): Promise<ServerProcess> {
  const args = ['serve', ...(opts.role ? ['--role', opts.role] : [])];
  const p = spawnNode(quarryBuild(), args, {
    name: opts.name ?? `quarry ${args.join(' ')}${opts.crashAt ? ` (QUARRY_CRASH_AT=${opts.crashAt})` : ''}`,
    nodeArgs: opts.nodeArgs,
    raiseFdLimit: opts.raiseFdLimit,
    reportDeath: !opts.crashAt,
    env: {
      QUARRY_PORT: '0',
      QUARRY_HOST: '127.0.0.1',
      QUARRY_DATA_DIR: opts.dataDir,
      QUARRY_LOG_LEVEL: 'warn',
      // The sandbox's start-up probe costs a moment (a bubblewrap run); a test of run_code turns it on.
      QUARRY_SANDBOX: 'off',
      ...opts.env,
      ...(opts.crashAt ? { QUARRY_CRASH_AT: opts.crashAt } : {}),
    },
  });
  let url = '';
  let starterKey: string | undefined;
  try {
    url = (await p.waitForLine(/^quarry listening on (\S+)/, opts.startTimeoutMs ?? 30_000))[1]!;
    if (opts.waitForStarterKey) starterKey = (await p.waitForLine(/^starter api key: (\S+)/, 10_000))[1]!;
  } catch (err) {
    const exit = p.alive() ? undefined : await p.exited;
    if (!(opts.crashAt && exit?.signal === 'SIGKILL' && !url)) {
      await p.kill9();
      throw err;
    }
  }
  return Object.assign(p, { url, dataDir: opts.dataDir, starterKey, crashAt: opts.crashAt });
}

/** A loopback port free right now, for a process that must be told its port before it starts. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The processes started here that still run (a benchmark counts their CPU). */
export function liveProcesses(): NodeProcess[] {
  return [...live];
}

/** kill -9 every process started here that still runs (test clean-up). */
export async function killAll(): Promise<void> {
  await Promise.all([...live].map((p) => p.kill9()));
}

/** A fresh, empty data dir under the OS temp dir. */
export function makeDataDir(prefix = 'quarry-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function removeDataDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

const tempDirs: string[] = [];
let keepTempDirs = false;
process.on('exit', () => {
  if (!keepTempDirs) for (const dir of tempDirs) removeDataDir(dir);
});

/**
 * A fresh data dir that is removed when this process exits (its servers are killed by then), for
 * tests and benchmarks that make many and need none of them afterwards. `keep` leaves them all.
 */
export function tempDataDir(prefix = 'quarry-test-', opts: { keep?: boolean } = {}): string {
  keepTempDirs ||= opts.keep === true;
  const dir = makeDataDir(prefix);
  tempDirs.push(dir);
  return dir;
}

/**
 * The pids of this host's processes whose command line, its arguments joined with spaces, holds
 * `marker` (a sandbox's processes included).
 */
export function hostProcessesWith(marker: string): number[] {
  const found: number[] = [];
  for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(marker)) found.push(Number(pid));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}
