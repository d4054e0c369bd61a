/**
 * The bubblewrap sandbox. Every run is a fresh bwrap with every namespace unshared (no network
 * but its own loopback, its own pid namespace, no host /proc), an unprivileged uid, no
 * capabilities, a seccomp filter, a clean environment, and a filesystem made only of: the host's
 * system directories and interpreters read-only, a few generated /etc files, size-capped tmpfs
 * for /tmp, /dev/shm and /workspace, and the task's inputs read-only. The task's workspace is
 * copied into /workspace at the start and read back out as a tar stream at the end (see
 * workspace.ts and tar-extract.ts), so the code never holds a writable handle on any host path.
 *
 * Process tree, outside in:
 *   launcher sh (writes its pid into the run's cgroups, sets the rlimits, then execs:)
 *   └ bwrap (sets up the namespaces and mounts)
 *     └ bwrap's pid-1 reaper in the new pid namespace
 *       └ supervisor sh, pid 2 (copies the workspace in, runs the code under `timeout`,
 *         kills whatever the code left running, streams /workspace out)
 *         └ timeout └ python / node / bash: the code
 * Killing bwrap kills the pid namespace and with it everything in the run.
 */
import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { constants as osConstants } from 'node:os';
import { noCgroups, probeCgroups, type CgroupRun, type CgroupSupport } from './cgroups.js';
import { seccompProgram } from './seccomp.js';
import { extractTar, SnapshotError, type ExtractSummary } from './tar-extract.js';
import {
  SANDBOX_INTERFACE_VERSION,
  SandboxError,
  type LimitHit,
  type RunRequest,
  type RunResult,
  type Sandbox,
  type SandboxLanguage,
  type SandboxLimits,
  type SandboxLog,
  type SandboxOptions,
} from './types.js';
import { UnavailableSandbox } from './unavailable.js';
import { commitSnapshot, discardSnapshot, ensureWorkspace, inputNames, INPUTS_DIR, newSnapshotDir, OUTPUTS_DIR, workspaceIsEmpty } from './workspace.js';

export type BwrapOptions = Omit<SandboxOptions, 'mode' | 'limits' | 'log'> & { limits: SandboxLimits; log: SandboxLog };

/** The uid and gid of the code inside (nobody). */
const SANDBOX_ID = 65534;
/** Longest program text accepted. */
export const MAX_CODE_BYTES = 1024 * 1024;
/** Directories searched for the tools the supervisor needs; all lie in what the sandbox shows. */
const SYSTEM_BIN = ['/usr/local/bin', '/usr/bin', '/bin'];
/** Top-level system paths shown read-only (or recreated as the same symlink). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/** Host /etc entries the interpreters need; everything else of /etc (shadow, ssh, …) stays out. */
const ETC_FILES = ['ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'alternatives', 'localtime', 'timezone', 'mime.types'];
/** Kernel files that a root euid could write without a capability check. */
const PROC_READ_ONLY = ['/proc/sys', '/proc/sysrq-trigger', '/proc/mtrr', '/proc/pressure', '/proc/fs', '/proc/irq', '/proc/bus'];
/** Kernel files that describe the host's state or keys; replaced by an empty file. */
const PROC_HIDDEN = ['/proc/keys', '/proc/key-users', '/proc/kcore', '/proc/kallsyms', '/proc/timer_list', '/proc/sched_debug', '/proc/latency_stats', '/proc/modules'];
const BINFMT_MISC = '/proc/sys/fs/binfmt_misc';
/** Longest stdout line the supervisor's control channel carries. */
const CONTROL_CAP = 4096;
/** What the sandbox may use besides the code's timeout: copying the workspace in and out. */
const GRACE_MS = 10_000;

interface Interpreter {
  /** Command inside the sandbox (before the program file). */
  argv: string[];
  /** Program file name inside the sandbox. */
  file: (code: string) => string;
}

interface Tools {
  sh: string;
  timeout: string;
  tar: string;
  cp: string;
}

function findIn(dirs: string[], name: string): string | null {
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here.
    }
  }
  return null;
}

function onPath(name: string): string | null {
  if (name.includes('/')) return findIn([path.dirname(name)], path.basename(name));
  return findIn((process.env.PATH ?? '').split(':').filter(Boolean), name);
}

function execText(cmd: string, args: string[], timeoutMs = 10_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as NodeJS.ErrnoException & { code?: unknown }).code === 'number' ? ((err as unknown as { code: number }).code) : null) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) || (err && code === null ? err.message : '') });
    });
  });
}

/** Mount points of the service's mount namespace (mountinfo field 5, octal escapes decoded). */
function hostMountPoints(): string[] {
  try {
    return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean).map((line) => line.split(' ')[4]!.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
  } catch {
    return [];
  }
}

function within(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);
}

function realOrResolved(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** Single-quotes a string for sh. */
function q(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The supervisor (pid 2 in the sandbox). Arguments: copy-in flag, timeout seconds, then the
 * command. Reports on fd 3 (`c` copy-in status, `s` start, `e` exit status, `t` tar status) and
 * streams the workspace on fd 4; the code gets neither. `kill -9 -1` from inside a fresh pid
 * namespace ends every process of the run but the reaper and the supervisor; the pid check
 * makes sure the script can never do that anywhere else.
 */
function supervisorScript(tools: Tools): string {
  return [
    'exec 5<&- 6<&-',
    '[ "$$" = 2 ] || { echo "quarry: not in a fresh pid namespace" >&2; exit 126; }',
    'c=0',
    `if [ "$1" = 1 ]; then ${q(tools.cp)} -a /.quarry/ws/. /workspace/ 2>/dev/null || c=1; fi`,
    'echo "c $c" >&3',
    't=$2; shift 2',
    'echo s >&3',
    `${q(tools.timeout)} -s KILL "$t" "$@" </dev/null 3>&- 4>&-`,
    'st=$?',
    'echo "e $st" >&3',
    'n=0',
    'while kill -9 -1 2>/dev/null && [ "$n" -lt 5000 ]; do n=$((n+1)); done',
    `cd /workspace && ${q(tools.tar)} --exclude=./${INPUTS_DIR} -cf - . >&4 2>/dev/null`,
    'echo "t $?" >&3',
  ].join('\n');
}

/**
 * The launcher: writes its pid into each cgroup.procs given, sets the rlimits (the shell's ulimit
 * is setrlimit; POSIX sh counts -f in 512-byte blocks, -v in KiB), then execs bwrap. Nothing of
 * the run executes outside its cgroup or without its limits. Exit 125: either failed.
 */
function launcherScript(limits: { cpuSeconds: number; fileBytes: number; openFiles: number; addressSpaceBytes: number | null }): string {
  const set = [
    `ulimit -S -t ${limits.cpuSeconds}`,
    `ulimit -H -t ${limits.cpuSeconds + 1}`,
    `ulimit -f ${Math.floor(limits.fileBytes / 512)}`,
    `ulimit -n ${limits.openFiles}`,
    'ulimit -c 0',
    ...(limits.addressSpaceBytes ? [`ulimit -v ${Math.floor(limits.addressSpaceBytes / 1024)}`] : []),
  ];
  return `n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; ${set.join(' && ')} || exit 125; exec "$@"`;
}

/** Keeps the first and last bytes of a stream up to a cap; counts (and drops) the middle. */
class CappedOutput {
  private readonly headCap: number;
  private readonly tailCap: number;
  private head: Buffer[] = [];
  private headLength = 0;
  private tail: Buffer[] = [];
  private tailLength = 0;
  total = 0;

  constructor(cap: number) {
    this.tailCap = Math.min(8192, Math.floor(cap / 4));
    this.headCap = cap - this.tailCap;
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.headLength < this.headCap) {
      const part = chunk.subarray(0, this.headCap - this.headLength);
      this.head.push(part);
      this.headLength += part.length;
      chunk = chunk.subarray(part.length);
    }
    if (chunk.length === 0) return;
    this.tail.push(chunk);
    this.tailLength += chunk.length;
    if (this.tailLength > 2 * this.tailCap) {
      const joined = Buffer.concat(this.tail);
      this.tail = [joined.subarray(joined.length - this.tailCap)];
      this.tailLength = this.tailCap;
    }
  }

  get truncated(): boolean {
    return this.total > this.headCap + this.tailCap;
  }

  text(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    const tailAll = Buffer.concat(this.tail);
    if (!this.truncated) return head + tailAll.toString('utf8');
    const tail = tailAll.subarray(tailAll.length - this.tailCap);
    const dropped = this.total - this.headLength - tail.length;
    return `${head}\n… [${dropped} bytes omitted] …\n${tail.toString('utf8')}`;
  }
}

/** A counting semaphore whose waiters can give up. */
class Slots {
  private used = 0;
  private readonly waiters: (() => void)[] = [];
  constructor(private readonly size: number) {}

  async take(signal?: AbortSignal): Promise<() => void> {
    if (this.used >= this.size) {
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          const at = this.waiters.indexOf(wake);
          if (at >= 0) this.waiters.splice(at, 1);
          reject(signal!.reason);
        };
        if (signal?.aborted) return reject(signal.reason);
        signal?.addEventListener('abort', onAbort, { once: true });
        this.waiters.push(wake);
      });
    } else {
      this.used++;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.used--;
    };
  }
}

interface HostSetup {
  bwrap: string;
  tools: Tools;
  interpreters: Partial<Record<SandboxLanguage, Interpreter>>;
  /** bwrap arguments shared by every run (namespaces, env, system mounts). */
  baseArgs: string[];
  etcDir: string;
  seccomp: Buffer | null;
  /** bwrap has --size (0.7+). */
  hasSize: boolean;
}

export class BwrapSandbox implements Sandbox {
  readonly version = SANDBOX_INTERFACE_VERSION;
  readonly available = true;
  readonly reason = undefined;
  readonly languages: readonly SandboxLanguage[];
  readonly cgroupControllers: readonly ('pids' | 'memory' | 'cpu')[];
  private readonly slots: Slots;
  private readonly locks = new Map<string, Promise<unknown>>();
  private closed = false;

  private constructor(
    private readonly setup: HostSetup,
    private readonly cgroups: CgroupSupport,
    readonly limits: SandboxLimits,
    readonly warnings: string[],
  ) {
    this.languages = (['python', 'javascript', 'shell'] as const).filter((l) => setup.interpreters[l]);
    this.cgroupControllers = (['pids', 'memory', 'cpu'] as const).filter((c) => cgroups.controllers.has(c));
    this.slots = new Slots(Math.max(1, limits.concurrentRuns));
  }

  /** Probes the host; an unusable one yields an UnavailableSandbox with the reason. */
  static async create(opts: BwrapOptions): Promise<Sandbox> {
    const unavailable = (reason: string, warnings: string[] = []) => new UnavailableSandbox(reason, opts.limits, warnings);
    const bwrap = onPath(opts.bwrapPath ?? 'bwrap');
    if (!bwrap) return unavailable(`bubblewrap is not installed (no ${opts.bwrapPath ?? 'bwrap'} on PATH): install the bubblewrap package, or set QUARRY_SANDBOX=off`);

    // Options newer than the bubblewrap of some LTS distributions (Ubuntu 22.04 has 0.6).
    const help = (await execText(bwrap, ['--help'])).stdout;
    const hasSize = help.includes('--size');
    const hasDisableUserns = help.includes('--disable-userns');

    const find = (name: string) => findIn(SYSTEM_BIN, name);
    const sh = find('sh');
    const timeout = find('timeout');
    const tar = find('tar');
    const cp = find('cp');
    if (!sh || !timeout || !tar || !cp) {
      const missing = Object.entries({ sh, timeout, tar, cp }).filter(([, v]) => !v).map(([k]) => k);
      return unavailable(`the sandbox needs ${missing.join(', ')} in /usr/bin or /bin`);
    }
    const tools: Tools = { sh, timeout, tar, cp };
    const warnings: string[] = [];
    if (!hasSize) warnings.push('bubblewrap is older than 0.7 (no --size): /workspace, /tmp and /dev/shm are bounded by the memory cgroup, not by their own size (the saved workspace is still capped)');
    if (!hasDisableUserns) warnings.push('bubblewrap is older than 0.8 (no --disable-userns): new user namespaces are refused by the seccomp filter alone');

    const binds = new Set<string>();
    const interpreters: Partial<Record<SandboxLanguage, Interpreter>> = {};
    const bash = find('bash');
    interpreters.shell = { argv: [bash ?? sh], file: () => '/.quarry/main.sh' };

    // Python: whatever python3 is on PATH (a pyenv shim resolves to the real interpreter), with
    // its installation prefix shown read-only at the same path.
    const pythonCmd = opts.pythonPath ?? 'python3';
    const py = onPath(pythonCmd) ? await execText(pythonCmd, ['-c', 'import sys, json; print(json.dumps([sys.executable, sys.base_prefix, sys.prefix, sys.version_info[0]]))']) : null;
    if (py && py.code === 0) {
      try {
        const [exe, basePrefix, prefix, major] = JSON.parse(py.stdout.trim().split('\n').pop()!) as [string, string, string, number];
        if (major !== 3) throw new Error(`python ${major}`);
        const real = fs.realpathSync(exe);
        for (const dir of [basePrefix, prefix, path.dirname(real)]) binds.add(realOrResolved(dir));
        interpreters.python = { argv: [real], file: () => '/.quarry/main.py' };
      } catch (err) {
        warnings.push(`python3 is unusable (${(err as Error).message}): run_code cannot run python`);
      }
    } else {
      warnings.push(`no python3 found (${pythonCmd}): run_code cannot run python`);
    }

    // JavaScript: the node running Quarry unless told otherwise.
    const nodeReal = realOrResolved(opts.nodePath ? (onPath(opts.nodePath) ?? opts.nodePath) : process.execPath);
    binds.add(path.dirname(path.dirname(nodeReal)));
    const detect = await execText(nodeReal, ['--experimental-detect-module', '-e', '0']);
    interpreters.javascript = detect.code === 0
      ? { argv: [nodeReal, '--experimental-detect-module'], file: () => '/.quarry/main.js' }
      : { argv: [nodeReal], file: (code) => (/^\s*(import|export)\s/m.test(code) ? '/.quarry/main.mjs' : '/.quarry/main.cjs') };

    // Nothing Quarry must hide (the data dir) may lie inside what the sandbox shows.
    const protectedPaths = (opts.protectedPaths ?? []).map(realOrResolved);
    const shown = [...SYSTEM_DIRS.filter((d) => fs.existsSync(d)).map(realOrResolved), ...[...binds].filter((b) => !within(b, '/usr'))];
    for (const p of protectedPaths) {
      const exposing = shown.find((s) => within(p, s));
      if (exposing) return unavailable(`${p} (which must stay hidden) lies inside ${exposing}, which the sandbox shows read-only: move the data directory or the interpreter elsewhere`);
    }

    const etcDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-sandbox-etc-'));
    fs.writeFileSync(path.join(etcDir, 'passwd'), `root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nnobody:x:${SANDBOX_ID}:${SANDBOX_ID}:nobody:/workspace:/bin/sh\n`);
    fs.writeFileSync(path.join(etcDir, 'group'), `root:x:0:\nnogroup:x:${SANDBOX_ID}:\n`);
    fs.writeFileSync(path.join(etcDir, 'hosts'), '127.0.0.1 localhost quarry\n::1 localhost ip6-localhost\n');
    fs.writeFileSync(path.join(etcDir, 'nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files\n');
    fs.writeFileSync(path.join(etcDir, 'resolv.conf'), '# no network in the sandbox\n');

    const pathDirs = [...new Set([...(interpreters.python ? [path.dirname(interpreters.python.argv[0]!)] : []), '/usr/local/bin', '/usr/bin', '/bin'])];
    const baseArgs = [
      '--unshare-all', '--unshare-user', ...(hasDisableUserns ? ['--disable-userns'] : []),
      '--uid', String(SANDBOX_ID), '--gid', String(SANDBOX_ID), '--hostname', 'quarry',
      '--die-with-parent', '--new-session', '--cap-drop', 'ALL',
      '--clearenv',
      '--setenv', 'PATH', pathDirs.join(':'),
      '--setenv', 'HOME', '/workspace',
      '--setenv', 'LANG', 'C.UTF-8',
      '--setenv', 'TMPDIR', '/tmp',
      '--setenv', 'PYTHONUNBUFFERED', '1',
    ];
    for (const dir of SYSTEM_DIRS) {
      let stat: fs.Stats;
      try {
        stat = fs.lstatSync(dir);
      } catch {
        continue;
      }
      if (stat.isSymbolicLink()) baseArgs.push('--symlink', fs.readlinkSync(dir), dir);
      else if (stat.isDirectory()) baseArgs.push('--ro-bind', dir, dir);
    }
    // Each interpreter directory once, and not when a directory already shown contains it.
    const extra = [...binds].filter((dir) => !within(dir, '/usr') && fs.existsSync(dir)).sort();
    for (const dir of extra.filter((d, i) => !extra.slice(0, i).some((other) => within(d, other)))) baseArgs.push('--ro-bind', dir, dir);
    for (const name of ETC_FILES) baseArgs.push('--ro-bind-try', path.join('/etc', name), path.join('/etc', name));
    for (const name of fs.readdirSync(etcDir)) baseArgs.push('--ro-bind', path.join(etcDir, name), path.join('/etc', name));
    // The code's uid maps to the service's outside, root when Quarry runs as root, and the kernel
    // lets a root euid write root-owned sysctls without any capability (core_pattern alone would
    // run a program as host root). So /proc/sys and the few other writable kernel files are
    // covered read-only, and files that tell about the host are hidden, as container runtimes do.
    baseArgs.push('--proc', '/proc');
    // (The sandbox's procfs is of the same kernel, so it has the entries the host's has.)
    for (const p of PROC_READ_ONLY.filter((f) => fs.existsSync(f))) baseArgs.push('--ro-bind', p, p);
    for (const p of PROC_HIDDEN.filter((f) => fs.existsSync(f))) baseArgs.push('--ro-bind', '/dev/null', p);
    // Those binds are of the host's /proc and bring its mounts below them along (binfmt_misc,
    // often an automount whose register file would be writable): each is covered by an empty,
    // read-only tmpfs, and binfmt_misc's directory always is, should the host mount it later.
    const covers = new Set(hostMountPoints().filter((mp) => PROC_READ_ONLY.some((p) => mp !== p && within(mp, p))));
    if (fs.existsSync(BINFMT_MISC)) covers.add(BINFMT_MISC);
    for (const mp of covers) baseArgs.push('--tmpfs', mp, '--remount-ro', mp);
    baseArgs.push('--dev', '/dev');
    const sized = (bytes: number) => (hasSize ? ['--size', String(bytes)] : []);
    baseArgs.push(...sized(opts.limits.tmpBytes), '--tmpfs', '/dev/shm', '--remount-ro', '/dev');
    baseArgs.push(...sized(opts.limits.tmpBytes), '--tmpfs', '/tmp');

    let seccomp: Buffer | null = null;
    if (opts.seccomp !== false) {
      seccomp = seccompProgram();
      if (!seccomp) warnings.push(`no seccomp filter for architecture ${process.arch}: the code may use every system call the kernel allows an unprivileged user`);
    }

    const cgroups = probeCgroups(opts.cgroupParent ?? 'quarry', (m) => opts.log('warn', `sandbox: ${m}`), opts.cgroupRoot);
    warnings.push(...cgroups.warnings);
    if (!hasSize && !cgroups.controllers.has('memory')) {
      await cgroups.close();
      fs.rmSync(etcDir, { recursive: true, force: true });
      return unavailable('this bubblewrap is older than 0.7 (no --size) and there is no writable memory cgroup, so nothing would bound what code writes to /tmp and /workspace (host memory): upgrade bubblewrap or run with cgroups', warnings);
    }

    const setup: HostSetup = { bwrap, tools, interpreters, baseArgs, etcDir, seccomp, hasSize };
    let sandbox = new BwrapSandbox(setup, cgroups, opts.limits, warnings);
    let problem = await sandbox.probe();
    if (problem && cgroups.version !== null) {
      // Perhaps only the cgroups are at fault (e.g. a controller that refuses the limits): try without.
      const without = new BwrapSandbox(setup, noCgroups([]), opts.limits, warnings);
      if (!(await without.probe())) {
        await cgroups.close();
        warnings.push(`running the probe in a cgroup failed (${problem}): runs go without cgroup limits`);
        sandbox = without;
        problem = null;
      }
    }
    if (problem) {
      await sandbox.close();
      return unavailable(`bubblewrap cannot create the sandbox here: ${problem}`, warnings);
    }
    for (const w of warnings) opts.log('warn', `sandbox: ${w}`);
    opts.log('info', `sandbox: bubblewrap ready (${sandbox.languages.join(', ')}; cgroup ${cgroups.version ? `v${cgroups.version} ${[...cgroups.controllers].join('/')}` : 'none'}; seccomp ${seccomp ? 'on' : 'off'})`);
    return sandbox;
  }

  /** Runs a trivial program; null when it worked, else why not (one line). */
  private async probe(): Promise<string | null> {
    const probeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-sandbox-probe-'));
    try {
      const result = await this.run({ language: 'shell', code: 'exit 0', timeoutS: 10, workspaceDir: path.join(probeDir, 'ws') });
      if (result.exitCode !== 0) return firstLine(result.stderr) || `the probe exited with ${result.exitCode ?? result.signal}`;
      if (!result.workspaceSaved) return result.notes[0] ?? 'the probe could not save its workspace';
      return null;
    } catch (err) {
      return (err as Error).message;
    } finally {
      fs.rmSync(probeDir, { recursive: true, force: true });
    }
  }

  private readonly background = new Set<Promise<unknown>>();
  private track(work: Promise<unknown>): void {
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.background);
    await this.cgroups.close();
    fs.rmSync(this.setup.etcDir, { recursive: true, force: true });
  }

  async run(req: RunRequest): Promise<RunResult> {
    if (this.closed) throw new SandboxError('the sandbox has been shut down');
    const interpreter = this.setup.interpreters[req.language];
    if (!interpreter) throw new SandboxError(`${req.language} is not available in this sandbox (available: ${this.languages.join(', ')})`);
    if (Buffer.byteLength(req.code) > MAX_CODE_BYTES) throw new SandboxError(`the code is larger than ${MAX_CODE_BYTES} bytes`);
    if (!(req.timeoutS > 0) || req.timeoutS > this.limits.maxTimeoutS) throw new SandboxError(`timeout must be between 1 and ${this.limits.maxTimeoutS} seconds`);
    if (!path.isAbsolute(req.workspaceDir)) throw new SandboxError('workspaceDir must be an absolute path');
    if (req.signal?.aborted) throw req.signal.reason;

    // One run at a time per workspace, and at most limits.concurrentRuns in all.
    const key = path.resolve(req.workspaceDir);
    const before = this.locks.get(key) ?? Promise.resolve();
    let unlock!: () => void;
    const mine = new Promise<void>((r) => (unlock = r));
    const chained = before.then(() => mine);
    this.locks.set(key, chained);
    try {
      await before;
      const release = await this.slots.take(req.signal);
      try {
        return await this.runLocked(req, interpreter);
      } finally {
        release();
      }
    } finally {
      unlock();
      if (this.locks.get(key) === chained) this.locks.delete(key);
    }
  }

  private async runLocked(req: RunRequest, interpreter: Interpreter): Promise<RunResult> {
    const started = Date.now();
    const limits = this.limits;
    const { tools, seccomp } = this.setup;
    ensureWorkspace(req.workspaceDir);
    const copyIn = !workspaceIsEmpty(req.workspaceDir);
    const snapshot = newSnapshotDir(req.workspaceDir);
    const file = interpreter.file(req.code);

    // tmpfs pages are charged to the memory cgroup, so the cap covers them on top of the code's own.
    const memoryCap = limits.memoryBytes + limits.workspaceBytes + 2 * limits.tmpBytes;
    const cgroup: CgroupRun | null = await this.cgroups.create({ pids: limits.pids, memoryBytes: memoryCap, cpus: limits.cpus });

    const args = [...this.setup.baseArgs];
    if (this.setup.hasSize) args.push('--size', String(limits.workspaceBytes));
    args.push('--tmpfs', '/workspace');
    args.push('--dir', `/workspace/${OUTPUTS_DIR}`);
    if (req.inputsDir) {
      args.push('--ro-bind', req.inputsDir, `/workspace/${INPUTS_DIR}`);
    } else {
      args.push('--dir', `/workspace/${INPUTS_DIR}`);
      const inputs = req.inputs ?? [];
      const names = inputNames(inputs.map((i) => ({ name: i.name, fallback: path.basename(i.path) })));
      inputs.forEach((input, i) => args.push('--ro-bind', input.path, `/workspace/${INPUTS_DIR}/${names[i]}`));
    }
    if (copyIn) args.push('--ro-bind', req.workspaceDir, '/.quarry/ws');
    args.push('--ro-bind-data', '5', file);
    if (seccomp) args.push('--seccomp', '6');
    args.push('--chdir', '/workspace', '--remount-ro', '/');
    const timeoutS = Math.ceil(req.timeoutS);
    args.push('--', tools.sh, '-c', supervisorScript(tools), 'quarry', copyIn ? '1' : '0', String(timeoutS), ...interpreter.argv, file);

    // rlimits, per process. CPU seconds can only exceed the timeout with more than one CPU. The
    // address space is capped only without a memory cgroup (runtimes reserve far more than they use).
    const hasMemoryCgroup = cgroup !== null && this.cgroups.controllers.has('memory');
    const launcher = launcherScript({
      cpuSeconds: Math.ceil(timeoutS * Math.max(1, limits.cpus)) + 1,
      fileBytes: limits.workspaceBytes,
      openFiles: limits.openFiles,
      addressSpaceBytes: hasMemoryCgroup ? null : limits.memoryBytes,
    });
    const procs = cgroup?.procsFiles ?? [];
    const child = spawn(tools.sh, ['-c', launcher, 'launcher', String(procs.length), ...procs, this.setup.bwrap, ...args], {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
      detached: true,
      env: {},
    });

    const stdout = new CappedOutput(limits.outputBytes);
    const stderr = new CappedOutput(limits.outputBytes);
    const control: { c?: number; s?: number; e?: { status: number; at: number }; t?: number } = {};
    let controlBuffer = '';
    child.stdout!.on('data', (c: Buffer) => stdout.push(c));
    child.stderr!.on('data', (c: Buffer) => stderr.push(c));
    const controlStream = child.stdio[3] as Readable;
    controlStream.on('data', (chunk: Buffer) => {
      controlBuffer += chunk.toString('utf8');
      if (controlBuffer.length > CONTROL_CAP) controlBuffer = controlBuffer.slice(-CONTROL_CAP);
      let nl: number;
      while ((nl = controlBuffer.indexOf('\n')) >= 0) {
        const line = controlBuffer.slice(0, nl).trim();
        controlBuffer = controlBuffer.slice(nl + 1);
        const [kind, value] = line.split(' ');
        const n = Number(value);
        if (kind === 'c' && control.c === undefined) control.c = n;
        else if (kind === 's' && control.s === undefined) control.s = Date.now();
        else if (kind === 'e' && control.e === undefined && Number.isInteger(n)) control.e = { status: n, at: Date.now() };
        else if (kind === 't' && control.t === undefined) control.t = n;
      }
    });
    for (const [fd, data] of [[5, Buffer.from(req.code)], [6, seccomp ?? Buffer.alloc(0)]] as const) {
      const stream = (child.stdio as unknown as (Readable | Writable)[])[fd] as Writable;
      stream.on('error', () => {});
      stream.end(data);
    }
    const tarStream = child.stdio[4] as Readable;
    const extraction: Promise<ExtractSummary | SnapshotError> = extractTar(tarStream, snapshot, { maxBytes: limits.workspaceBytes, maxEntries: limits.workspaceEntries }, new Set([INPUTS_DIR])).catch((err: unknown) =>
      err instanceof SnapshotError ? err : new SnapshotError((err as Error).message),
    );

    // Kill paths: the hard deadline (a supervisor that never finishes), and the caller's abort.
    let killedBy: 'deadline' | 'abort' | null = null;
    const killAll = (why: 'deadline' | 'abort') => {
      killedBy ??= why;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
      void cgroup?.kill();
    };
    const graceMs = GRACE_MS + Math.ceil(limits.workspaceBytes / (32 * 1024 * 1024)) * 1000;
    const deadline = setTimeout(() => killAll('deadline'), timeoutS * 1000 + graceMs);
    const onAbort = () => killAll('abort');
    req.signal?.addEventListener('abort', onAbort, { once: true });
    // An abort while the cgroup was being made fired no listener.
    if (req.signal?.aborted) onAbort();

    let spawnError: Error | null = null;
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.on('error', (err) => {
        spawnError = err;
        resolve({ code: null, signal: null });
      });
      child.on('close', (code, signal) => resolve({ code, signal }));
    });
    clearTimeout(deadline);
    req.signal?.removeEventListener('abort', onAbort);

    let stats = { oomKills: 0, pidsMaxHits: 0 };
    if (cgroup) {
      stats = await cgroup.stats();
      // Every process of the run is gone with its pid namespace; removing the emptied cgroup can
      // wait for the kernel to release them without holding up the answer.
      this.track(cgroup.remove().catch((err: Error) => this.warnOnce(`removing a run's cgroup failed: ${err.message}`)));
    }
    const extracted = await extraction;

    const notes: string[] = [];
    let saved = false;
    try {
      if (spawnError) throw new SandboxError(`the sandbox could not be started: ${(spawnError as Error).message}`);
      if (control.c === undefined && control.s === undefined && killedBy !== 'abort') {
        if (exit.code === 125) throw new SandboxError('the run could not be placed in its cgroup or given its limits');
        throw new SandboxError(`the sandbox failed to start: ${firstLine(stderr.text()) || `exit ${exit.code ?? exit.signal}`}`);
      }
      if (killedBy === 'abort') {
        notes.push('the run was cancelled; the workspace was left as it was');
      } else if (control.c !== 0) {
        notes.push('restoring the workspace into the sandbox failed, so its result was not saved (is the workspace over its size limit?)');
      } else if (extracted instanceof SnapshotError) {
        notes.push(`the workspace was not saved: ${extracted.message}${extracted.overQuota ? '; delete files and run again' : ''}`);
      } else if (control.t === undefined) {
        notes.push('the workspace was not saved: the sandbox was killed before it could save it (out of memory or time?)');
      } else {
        // A complete archive (its end marker was read) even when tar reports errors: files it
        // could not read (e.g. chmod 000) are missing from it.
        this.track(commitSnapshot(req.workspaceDir, snapshot).catch(() => {}));
        saved = true;
        if (control.t > 1) notes.push('some files in /workspace could not be read (permissions?) and were not saved');
        if (extracted.skipped > 0) notes.push(`${extracted.skipped} symlinks or special files in /workspace were not kept (only regular files and directories are)`);
      }
    } finally {
      if (!saved) discardSnapshot(snapshot);
    }
    if (killedBy === 'abort') throw req.signal?.reason ?? new SandboxError('the run was cancelled');

    const status = control.e?.status;
    const ranMs = control.e && control.s !== undefined ? control.e.at - control.s : Date.now() - started;
    let exitCode: number | null = null;
    let signal: string | null = null;
    if (status === undefined) signal = 'SIGKILL';
    else if (status > 128 && status < 128 + 65) signal = signalName(status - 128);
    else exitCode = status;
    const timedOut = killedBy === 'deadline' || (status === 128 + 9 && ranMs >= timeoutS * 1000 - 100);
    if (killedBy === 'deadline') notes.push('the sandbox did not finish in time and was killed');

    let limitHit: LimitHit | undefined;
    const err = stderr.text();
    if (stats.oomKills > 0) limitHit = 'memory';
    else if (stats.pidsMaxHits > 0) limitHit = 'processes';
    else if (signal === 'SIGXCPU') limitHit = 'cpu_time';
    else if (signal === 'SIGXFSZ' || /File too large/.test(err)) limitHit = 'file_size';
    else if ((extracted instanceof SnapshotError && extracted.overQuota) || (!(extracted instanceof SnapshotError) && extracted.pages >= limits.workspaceBytes - Math.max(1024 * 1024, limits.workspaceBytes / 100)) || /No space left on device/.test(err)) limitHit = 'disk';
    else if (/Too many open files/.test(err)) limitHit = 'open_files';
    else if (!hasMemoryCgroup && /MemoryError|Cannot allocate memory|heap out of memory/.test(err)) limitHit = 'memory';

    return {
      exitCode,
      signal,
      timedOut,
      stdout: stdout.text(),
      stderr: err,
      stdoutTruncated: stdout.truncated,
      stderrTruncated: stderr.truncated,
      durationMs: Date.now() - started,
      ...(limitHit ? { limitHit } : {}),
      workspaceSaved: saved,
      notes,
    };
  }

  private warned = new Set<string>();
  private warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.warnings.push(message);
  }
}

function firstLine(text: string): string {
  return text.split('\n').map((l) => l.trim()).find(Boolean)?.slice(0, 300) ?? '';
}

function signalName(n: number): string {
  const entry = Object.entries(osConstants.signals).find(([, v]) => v === n);
  return entry ? entry[0] : `signal ${n}`;
}
