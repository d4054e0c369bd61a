/**
 * A PostgreSQL server of a test's own, which the test may stop and start at will (the shared test
 * database at 127.0.0.1:5432 must never be stopped). Made with the distribution's initdb and
 * pg_ctl in a temp dir, on a free loopback port, with fsync off (nothing here needs to survive a
 * power cut). PostgreSQL refuses to run as root, so when the tests run as root the server runs
 * as the `postgres` OS user. Every server started here is stopped (immediate) when this process
 * exits.
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './process.js';
import { skipUnlessAvailable } from './require-tool.js';

const run = promisify(execFile);

/** Where Debian's postgresql-15 package puts its binaries; QUARRY_TEST_PG_BIN overrides. */
const PG_BIN = process.env.QUARRY_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const OS_USER = 'postgres';
const asRoot = process.getuid?.() === 0;

export interface PrivatePostgres {
  readonly port: number;
  readonly url: string;
  /** `pg_ctl stop -m <mode>`: fast ends every session cleanly, immediate drops them without a word. */
  stop(mode: 'fast' | 'immediate' | 'smart'): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and removes its data dir. */
  destroy(): Promise<void>;
}

/** `false` when a private server can be made here, or the reason to skip the test (in CI, a failure instead). */
export function skipWithoutPrivatePostgres(): false | string {
  return skipUnlessAvailable('a PostgreSQL server of its own (initdb, pg_ctl)', privatePostgresMissing());
}

function privatePostgresMissing(): false | string {
  for (const bin of ['initdb', 'pg_ctl', 'postgres']) {
    if (!fs.existsSync(path.join(PG_BIN, bin))) return `no ${bin} in ${PG_BIN} (set QUARRY_TEST_PG_BIN)`;
  }
  if (asRoot) {
    try {
      execFileSync('id', ['-u', OS_USER], { stdio: 'ignore' });
    } catch {
      return `running as root, and there is no "${OS_USER}" OS user to run PostgreSQL as`;
    }
  }
  return false;
}

/** Runs a PostgreSQL binary, as the postgres user when we are root. */
async function pgTool(bin: string, args: string[]): Promise<void> {
  const file = path.join(PG_BIN, bin);
  try {
    if (asRoot) await run('runuser', ['-u', OS_USER, '--', file, ...args], { timeout: 60_000 });
    else await run(file, args, { timeout: 60_000 });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${bin} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

const started = new Set<string>();
process.once('exit', () => {
  for (const dataDir of started) {
    try {
      const ctl = [path.join(PG_BIN, 'pg_ctl'), '-D', dataDir, '-m', 'immediate', 'stop'];
      if (asRoot) execFileSync('runuser', ['-u', OS_USER, '--', ...ctl], { stdio: 'ignore' });
      else execFileSync(ctl[0]!, ctl.slice(1), { stdio: 'ignore' });
    } catch {
      // already stopped
    }
    fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
  }
});

/** initdb, then starts the server; the database `quarry` exists, reachable as `postgres` without a password. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-pg-'));
  // The temp dir is root's 0700: the server's user needs to get in.
  fs.chmodSync(root, 0o755);
  const dataDir = path.join(root, 'data');
  // The socket and the server's log: a dir the server's user may write in.
  const runDir = path.join(root, 'run');
  fs.mkdirSync(dataDir);
  fs.mkdirSync(runDir);
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', OS_USER]).toString());
    const gid = Number(execFileSync('id', ['-g', OS_USER]).toString());
    for (const dir of [dataDir, runDir]) fs.chownSync(dir, uid, gid);
  }
  await pgTool('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const port = await freePort();
  const options = `-c listen_addresses=127.0.0.1 -c port=${port} -c unix_socket_directories=${runDir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
  const logFile = path.join(runDir, 'postgres.log');
  const start = () => pgTool('pg_ctl', ['-D', dataDir, '-o', options, '-l', logFile, '-w', '-t', '30', 'start']);
  started.add(dataDir);
  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/quarry`;
  const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
  await admin.connect();
  await admin.query('create database quarry');
  await admin.end();
  return {
    port,
    url,
    stop: (mode) => pgTool('pg_ctl', ['-D', dataDir, '-m', mode, '-w', '-t', '30', 'stop']),
    start,
    async destroy() {
      await pgTool('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      started.delete(dataDir);
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
