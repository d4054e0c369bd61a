/**
 * One cgroup per sandbox run, for the limits rlimits cannot give: a hard cap on the memory of all
 * the run's processes together, a cap on their number (a fork bomb; RLIMIT_NPROC does not bind
 * when the service runs as root), a CPU quota, and a way to find and kill every process of the
 * run. cgroup v1 (a hierarchy per controller under /sys/fs/cgroup/<controller>) and v2 (one
 * unified hierarchy at /sys/fs/cgroup) are both handled; with neither writable the probe says so
 * and runs go without (the caller logs the warning).
 *
 * Layout: <hierarchy root>/<parent>/<pid>-<seq>, the parent (default `quarry`) shared by every
 * Quarry process of the host. A launcher shell writes its own pid into each run's cgroup.procs
 * before it execs bubblewrap, so nothing of the run ever executes outside the cgroup.
 */
import fs from 'node:fs';
import path from 'node:path';

const ROOT = '/sys/fs/cgroup';
const V1_CONTROLLERS = ['pids', 'memory', 'cpu'] as const;
type Controller = (typeof V1_CONTROLLERS)[number];
const CPU_PERIOD_US = 100_000;

export interface CgroupLimits {
  pids: number;
  memoryBytes: number;
  cpus: number;
}

export interface CgroupStats {
  /** Processes the kernel killed for memory (OOM in the run's cgroup). */
  oomKills: number;
  /** Forks refused because pids.max was reached. */
  pidsMaxHits: number;
}

export interface CgroupRun {
  /** The cgroup.procs files the launcher must write its pid into, one per hierarchy. */
  readonly procsFiles: string[];
  stats(): Promise<CgroupStats>;
  /** SIGKILLs every process in the run's cgroups until none is left (or ~1 s has passed). */
  kill(): Promise<void>;
  /** Kills what is left and removes the run's cgroups. */
  remove(): Promise<void>;
}

export interface CgroupSupport {
  readonly version: 1 | 2 | null;
  readonly controllers: ReadonlySet<Controller>;
  /** One line per missing protection. */
  readonly warnings: string[];
  /** Null when no controller is usable (or making the cgroup failed; then logged once). */
  create(limits: CgroupLimits): Promise<CgroupRun | null>;
  /** Removes this process's leftovers; the shared parent stays (other processes may use it). */
  close(): Promise<void>;
}

let seq = 0;

function exists(p: string): boolean {
  try {
    fs.accessSync(p);
    return true;
  } catch {
    return false;
  }
}

function read(p: string): string {
  try {
    return fs.readFileSync(p, 'utf8');
  } catch {
    return '';
  }
}

/** The number after `key` in a flat keyed file such as memory.events (`oom_kill 3`). */
function keyed(text: string, key: string): number {
  const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

function pidsIn(procsFile: string): number[] {
  return read(procsFile).split('\n').filter(Boolean).map(Number).filter((n) => Number.isInteger(n) && n > 0);
}

function killAll(procsFile: string): number {
  const pids = pidsIn(procsFile);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  return pids.length;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** rmdir that waits for exiting processes to leave; a cgroup with members cannot be removed. */
async function removeDir(dir: string, procsFile: string): Promise<void> {
  for (let attempt = 0; attempt < 40; attempt++) {
    try {
      fs.rmdirSync(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY') throw err;
      killAll(procsFile);
      await pause(attempt < 10 ? 5 : 25);
    }
  }
}

function validParent(parent: string): string {
  const clean = parent.replace(/^\/+|\/+$/g, '');
  if (!clean || clean.split('/').some((p) => p === '' || p === '.' || p === '..')) throw new Error(`invalid cgroup parent "${parent}"`);
  return clean;
}

/** Removes cgroups left by Quarry processes that are gone (their names start with the dead pid). */
function sweepStale(parentDirs: string[]): void {
  for (const parentDir of parentDirs) {
    let names: string[] = [];
    try {
      names = fs.readdirSync(parentDir);
    } catch {
      continue;
    }
    for (const name of names) {
      const m = /^(\d+)-\d+$/.exec(name);
      if (!m) continue;
      const pid = Number(m[1]);
      if (pid !== process.pid && isAlive(pid)) continue;
      const dir = path.join(parentDir, name);
      killAll(path.join(dir, 'cgroup.procs'));
      try {
        fs.rmdirSync(dir);
      } catch {
        // Still busy or not ours to remove: left for the next sweep.
      }
    }
  }
}

/** Whether a process with this pid exists (EPERM: it does, and belongs to someone else). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

class V1Support implements CgroupSupport {
  readonly version = 1;
  private failed = false;

  constructor(
    readonly controllers: ReadonlySet<Controller>,
    private readonly parentDirs: Map<Controller, string>,
    readonly warnings: string[],
    private readonly log: (msg: string) => void,
  ) {}

  async create(limits: CgroupLimits): Promise<CgroupRun | null> {
    if (this.controllers.size === 0) return null;
    const name = `${process.pid}-${++seq}`;
    const dirs = new Map<Controller, string>();
    try {
      for (const [controller, parentDir] of this.parentDirs) {
        const dir = path.join(parentDir, name);
        fs.mkdirSync(dir);
        dirs.set(controller, dir);
        if (controller === 'pids') fs.writeFileSync(path.join(dir, 'pids.max'), String(limits.pids));
        if (controller === 'memory') {
          fs.writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(limits.memoryBytes));
          // With swap accounting, memory+swap gets the same cap: no escaping into swap.
          const memsw = path.join(dir, 'memory.memsw.limit_in_bytes');
          if (exists(memsw)) fs.writeFileSync(memsw, String(limits.memoryBytes));
        }
        if (controller === 'cpu') {
          fs.writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
          fs.writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US))));
        }
      }
    } catch (err) {
      for (const dir of dirs.values()) await removeDir(dir, path.join(dir, 'cgroup.procs')).catch(() => {});
      if (!this.failed) this.log(`creating the run's cgroup failed (${(err as Error).message}); runs go without cgroup limits`);
      this.failed = true;
      return null;
    }
    const procs = [...dirs.values()].map((d) => path.join(d, 'cgroup.procs'));
    // Any hierarchy lists every process of the run; pids is the one a fork bomb cannot outgrow.
    const members = path.join(dirs.get('pids') ?? [...dirs.values()][0]!, 'cgroup.procs');
    const kill = async () => {
      for (let i = 0; i < 100; i++) {
        if (procs.reduce((n, f) => n + killAll(f), 0) === 0) return;
        await pause(10);
      }
    };
    return {
      procsFiles: procs,
      stats: async () => ({
        oomKills: dirs.has('memory') ? keyed(read(path.join(dirs.get('memory')!, 'memory.oom_control')), 'oom_kill') : 0,
        pidsMaxHits: dirs.has('pids') ? keyed(read(path.join(dirs.get('pids')!, 'pids.events')), 'max') : 0,
      }),
      kill,
      remove: async () => {
        await kill();
        for (const dir of dirs.values()) await removeDir(dir, members);
      },
    };
  }

  async close(): Promise<void> {
    sweepStale([...this.parentDirs.values()]);
  }
}

class V2Support implements CgroupSupport {
  readonly version = 2;
  private failed = false;

  constructor(
    readonly controllers: ReadonlySet<Controller>,
    private readonly parentDir: string,
    readonly warnings: string[],
    private readonly log: (msg: string) => void,
  ) {}

  async create(limits: CgroupLimits): Promise<CgroupRun | null> {
    if (this.controllers.size === 0) return null;
    const dir = path.join(this.parentDir, `${process.pid}-${++seq}`);
    const procs = path.join(dir, 'cgroup.procs');
    try {
      fs.mkdirSync(dir);
      if (this.controllers.has('pids')) fs.writeFileSync(path.join(dir, 'pids.max'), String(limits.pids));
      if (this.controllers.has('memory')) {
        fs.writeFileSync(path.join(dir, 'memory.max'), String(limits.memoryBytes));
        if (exists(path.join(dir, 'memory.swap.max'))) fs.writeFileSync(path.join(dir, 'memory.swap.max'), '0');
        // An OOM kills the whole run rather than one process of it.
        if (exists(path.join(dir, 'memory.oom.group'))) fs.writeFileSync(path.join(dir, 'memory.oom.group'), '1');
      }
      if (this.controllers.has('cpu')) fs.writeFileSync(path.join(dir, 'cpu.max'), `${Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US))} ${CPU_PERIOD_US}`);
    } catch (err) {
      await removeDir(dir, procs).catch(() => {});
      if (!this.failed) this.log(`creating the run's cgroup failed (${(err as Error).message}); runs go without cgroup limits`);
      this.failed = true;
      return null;
    }
    const kill = async () => {
      // cgroup.kill (Linux 5.14+) kills every member atomically, forks in flight included.
      try {
        fs.writeFileSync(path.join(dir, 'cgroup.kill'), '1');
      } catch {
        // Older kernel: kill the members one by one until none is left.
      }
      for (let i = 0; i < 100; i++) {
        if (killAll(procs) === 0) return;
        await pause(10);
      }
    };
    return {
      procsFiles: [procs],
      stats: async () => ({
        oomKills: keyed(read(path.join(dir, 'memory.events')), 'oom_kill'),
        pidsMaxHits: keyed(read(path.join(dir, 'pids.events')), 'max'),
      }),
      kill,
      remove: async () => {
        await kill();
        await removeDir(dir, procs);
      },
    };
  }

  async close(): Promise<void> {
    sweepStale([this.parentDir]);
  }
}

class NoSupport implements CgroupSupport {
  readonly version = null;
  readonly controllers: ReadonlySet<Controller> = new Set();
  constructor(readonly warnings: string[]) {}
  async create(): Promise<null> {
    return null;
  }
  async close(): Promise<void> {}
}

/** No cgroups at all, with the reason. */
export function noCgroups(warnings: string[]): CgroupSupport {
  return new NoSupport(warnings);
}

function tryMkdir(dir: string): string | null {
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.accessSync(dir, fs.constants.W_OK);
    return null;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  }
}

const MISSING: Record<Controller, string> = {
  pids: 'the number of processes is not limited (a fork bomb is stopped only by the timeout)',
  memory: 'memory is limited per process (RLIMIT_AS), not for the run as a whole',
  cpu: 'CPU use is limited per process (RLIMIT_CPU), not to a share of the host',
};

/** Finds which cgroup hierarchy this host has and whether Quarry may make cgroups in it. */
export function probeCgroups(parent: string, log: (msg: string) => void, root: string = ROOT): CgroupSupport {
  const rel = validParent(parent);
  // cgroup v1: one hierarchy per controller (hybrid hosts also mount an empty v2 at unified/).
  if (V1_CONTROLLERS.some((c) => exists(path.join(root, c, 'tasks')))) {
    const usable = new Set<Controller>();
    const parentDirs = new Map<Controller, string>();
    const warnings: string[] = [];
    for (const c of V1_CONTROLLERS) {
      const dir = path.join(root, c, rel);
      const problem = exists(path.join(root, c, 'tasks')) ? tryMkdir(dir) : 'not mounted';
      if (problem) {
        warnings.push(`cgroup v1 ${c} controller unusable at ${dir} (${problem}): ${MISSING[c]}`);
        continue;
      }
      usable.add(c);
      parentDirs.set(c, dir);
    }
    sweepStale([...parentDirs.values()]);
    return new V1Support(usable, parentDirs, warnings, log);
  }
  // cgroup v2: controllers must be enabled in the subtree_control of every ancestor of the run.
  if (exists(path.join(root, 'cgroup.controllers'))) {
    const available = new Set(read(path.join(root, 'cgroup.controllers')).trim().split(/\s+/));
    const wanted = V1_CONTROLLERS.filter((c) => available.has(c));
    const warnings = V1_CONTROLLERS.filter((c) => !available.has(c)).map((c) => `cgroup v2 has no ${c} controller: ${MISSING[c]}`);
    const parentDir = path.join(root, rel);
    const problem = tryMkdir(parentDir);
    if (problem) {
      return new NoSupport([`cgroup v2 at ${root} is not writable for ${parentDir} (${problem}): ${Object.values(MISSING).join('; ')}. Run as root or delegate a subtree and set its path as the cgroup parent.`]);
    }
    const enabled = new Set<Controller>(wanted);
    // Enable from the root down to the parent itself (which holds no processes, only runs).
    const levels = rel.split('/').map((_, i, parts) => path.join(root, ...parts.slice(0, i)));
    levels.push(parentDir);
    for (const level of levels) {
      const have = new Set(read(path.join(level, 'cgroup.subtree_control')).trim().split(/\s+/));
      for (const c of [...enabled]) {
        if (have.has(c)) continue;
        try {
          fs.writeFileSync(path.join(level, 'cgroup.subtree_control'), `+${c}`);
        } catch (err) {
          enabled.delete(c);
          const code = (err as NodeJS.ErrnoException).code;
          const why = code === 'EBUSY' ? `${level} holds processes (cgroup v2 allows controllers only below cgroups without processes)` : `${code ?? (err as Error).message}`;
          warnings.push(`cgroup v2 ${c} controller cannot be enabled in ${level} (${why}): ${MISSING[c]}`);
        }
      }
    }
    sweepStale([parentDir]);
    return new V2Support(enabled, parentDir, warnings, log);
  }
  return new NoSupport([`no cgroup hierarchy found under ${root}: ${Object.values(MISSING).join('; ')}`]);
}
