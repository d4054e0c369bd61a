/**
 * The first hour, played as a newcomer: a fresh copy of the repository (its tracked and
 * unignored files, nothing built, no node_modules), the README's install-and-start command run as
 * written while the port is busy, then the README's way out (another QUARRY_PORT), then a plain
 * restart. The starter key must appear exactly once, work, and survive the failed first start;
 * a restart must not compile again. Runs once (it is not about the store): skipped on the
 * PostgreSQL pass. It installs the packages for real (npm's cache makes that local). The one
 * native addon, better-sqlite3, is what a newcomer's `npm ci` downloads prebuilt for their Node.js;
 * with no network here it would compile SQLite from source (about a minute of one core), so the
 * addon this checkout already built is offered as that download (`prebuiltSqlite`): the install
 * still runs better-sqlite3's own install script, which unpacks it.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fetchJson } from '../kit/http.js';
import { within } from '../kit/bounded-waits.js';
import { freePort, ROOT, tempDataDir } from '../kit/process.js';

const onPostgres = process.env.QUARRY_TEST_STORE === 'postgres';
const started: ChildProcess[] = [];
let prebuilds = '';
after(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
});

const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
/** The first shell block under "## Run it": the install-and-start command. */
const installAndStart = /## Run it[\s\S]*?```sh\n([^\n]+)\n```/.exec(readme)?.[1];
/** What the README says to run when the port is taken, e.g. `QUARRY_PORT=8081 npm start`. */
const otherPort = /`QUARRY_PORT=(\d+) (npm start)`/.exec(readme);

/** Copies what a clone holds: tracked files and untracked ones git does not ignore. */
function freshCopy(): string {
  const dir = tempDataDir('quarry-newcomer-');
  const files = spawnSync('git', ['ls-files', '-z', '-co', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).stdout.split('\0').filter(Boolean);
  for (const file of files) {
    const from = path.join(ROOT, file);
    if (!fs.existsSync(from)) continue; // deleted in the working tree, not yet in the index
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.copyFileSync(from, path.join(dir, file));
  }
  return dir;
}

/**
 * A directory holding better-sqlite3's prebuilt binary for the running Node.js, named as its
 * install script (prebuild-install) looks for a download: `<name>-v<version>-node-v<abi>-<platform>-<arch>.tar.gz`
 * with `build/Release/better_sqlite3.node` inside. Made from the addon this checkout built.
 */
function prebuiltSqlite(): string {
  const addon = path.join(ROOT, 'node_modules', 'better-sqlite3');
  const { version } = JSON.parse(fs.readFileSync(path.join(addon, 'package.json'), 'utf8')) as { version: string };
  const dir = tempDataDir('quarry-prebuilds-');
  const file = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  const tar = spawnSync('tar', ['-czf', path.join(dir, file), '-C', addon, 'build/Release/better_sqlite3.node'], { encoding: 'utf8' });
  assert.equal(tar.status, 0, tar.stderr);
  return dir;
}

interface Shell {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Runs a README command line in `cwd` as a newcomer's shell would, with none of our QUARRY_* settings. */
function shell(command: string, cwd: string, env: Record<string, string>): Shell {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('QUARRY_')));
  const child = spawn('bash', ['-c', command], { cwd, detached: true, env: { ...base, npm_config_prefer_offline: 'true', npm_config_better_sqlite3_local_prebuilds: prebuilds, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** The first match of `pattern` in the shell's output, checked as each chunk arrives; fails when the shell exits first. */
async function waitFor(sh: Shell, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  let check!: () => void;
  let exited!: () => void;
  const found = new Promise<RegExpExecArray>((resolve, reject) => {
    check = () => {
      const match = pattern.exec(sh.output());
      if (match) resolve(match);
    };
    exited = () => reject(new Error(`exited ${sh.child.exitCode} before ${pattern}:\n${sh.output()}`));
  });
  sh.child.stdout!.on('data', check);
  sh.child.stderr!.on('data', check);
  sh.child.once('exit', exited);
  try {
    check();
    if (sh.child.exitCode !== null) exited();
    return await within(found, timeoutMs, `${pattern} in:\n${sh.output()}`);
  } finally {
    sh.child.stdout!.off('data', check);
    sh.child.stderr!.off('data', check);
    sh.child.off('exit', exited);
  }
}

async function stop(sh: Shell): Promise<void> {
  process.kill(-sh.child.pid!, 'SIGTERM');
  await sh.exited;
}

describe('a newcomer following the README', { skip: onPostgres && 'runs on the SQLite pass only' }, () => {
  it('busy port first, then the README\'s way out: one working starter key, and no compile on restart', { timeout: 600_000 }, async () => {
    assert.ok(installAndStart, 'README: a shell block under "## Run it"');
    assert.ok(otherPort, 'README: a `QUARRY_PORT=… npm start` way out of a busy port');
    const repo = freshCopy();
    prebuilds = prebuiltSqlite();

    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const busyPort = (busy.address() as net.AddressInfo).port;
    try {
      const first = shell(installAndStart, repo, { QUARRY_PORT: String(busyPort) });
      const code = await first.exited;
      assert.notEqual(code, 0, first.output());
      assert.match(first.output(), new RegExp(`cannot listen on 127\\.0\\.0\\.1:${busyPort}.*set QUARRY_PORT`));
      assert.doesNotMatch(first.output(), /starter api key/);
      assert.doesNotMatch(first.output(), /\n\s+at \S+ \(/, 'no stack trace');
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }

    const port = await freePort();
    const second = shell(`${otherPort[0].slice(1, -1).replace(`QUARRY_PORT=${otherPort[1]}`, `QUARRY_PORT=${port}`)}`, repo, {});
    const key = (await waitFor(second, /^starter api key: (qry_\S+)/m, 60_000))[1]!;
    await waitFor(second, /^quarry listening on /m, 60_000);
    assert.equal(second.output().match(/starter api key/g)?.length, 1, second.output());
    assert.doesNotMatch(second.output(), /: building/, 'the install built Quarry; a start does not build again');
    const tasks = await fetchJson('GET', `http://127.0.0.1:${port}/task`, { key });
    assert.equal(tasks.status, 200, tasks.text);
    await stop(second);

    const third = shell('npm start', repo, { QUARRY_PORT: String(port) });
    await waitFor(third, /^quarry listening on /m, 60_000);
    assert.doesNotMatch(third.output(), /starter api key/, 'the key is shown once');
    await stop(third);
  });
});
