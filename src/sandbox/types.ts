/**
 * The sandbox's versioned interface: what run_code asks for and gets back. Implementations live
 * beside this file; createSandbox (sandbox.ts) picks one.
 */
/** Bumped when the shape of Sandbox, RunRequest or RunResult changes incompatibly. */
export const SANDBOX_INTERFACE_VERSION = 1;

export type SandboxLanguage = 'python' | 'javascript' | 'shell';

/** A read-only file shown to the code as /workspace/inputs/<name>. */
export interface SandboxInput {
  /** One path component; anything else is replaced by a safe one (see inputNames in workspace.ts). */
  name: string;
  /** Host path of the file (an upload). */
  path: string;
}

export interface RunRequest {
  language: SandboxLanguage;
  /** The program text; handed to the sandbox as a file, never on a command line. */
  code: string;
  /** Wall-clock limit of the code itself, in seconds. */
  timeoutS: number;
  /**
   * The task's workspace on the host. Its contents are /workspace inside, and what /workspace
   * holds when the code ends (inputs/ aside) becomes its new contents. Only this sandbox writes it.
   */
  workspaceDir: string;
  /** A host directory shown read-only as /workspace/inputs (the alternative to `inputs`). */
  inputsDir?: string;
  /** Files shown read-only in /workspace/inputs. */
  inputs?: SandboxInput[];
  /** Aborting kills the run at once; the workspace is then left as it was. */
  signal?: AbortSignal;
}

/** Which limit ended or hampered the run, when the sandbox can tell. */
export type LimitHit = 'memory' | 'processes' | 'cpu_time' | 'file_size' | 'disk' | 'open_files';

export interface RunResult {
  /** The code's exit status; null when it was ended by a signal or never finished. */
  exitCode: number | null;
  /** The signal that ended the code (e.g. SIGKILL), else null. */
  signal: string | null;
  /** The code ran past timeoutS and was killed together with everything it started. */
  timedOut: boolean;
  stdout: string;
  stderr: string;
  /** More than the cap was written; the middle was dropped (head and tail are kept). */
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** Wall time of the whole run: set-up, the code, saving the workspace. */
  durationMs: number;
  limitHit?: LimitHit;
  /** The workspace was replaced by what the code left; false leaves it as it was before the run. */
  workspaceSaved: boolean;
  /** Why the workspace was not saved, or other notes for the model (one line each). */
  notes: string[];
}

export interface Sandbox {
  readonly version: typeof SANDBOX_INTERFACE_VERSION;
  /** False when run() cannot work on this host; `reason` then says why in one line. */
  readonly available: boolean;
  readonly reason?: string;
  /** Languages this host can run (python needs a python3). */
  readonly languages: readonly SandboxLanguage[];
  /** What the sandbox enforces, for logs and the tool description. */
  readonly limits: SandboxLimits;
  /** Degraded protections found by the probe (already logged). */
  readonly warnings: readonly string[];
  /** The cgroup controllers that bound every run; fewer than all three is a degraded host (see warnings). */
  readonly cgroupControllers: readonly ('pids' | 'memory' | 'cpu')[];
  /** Rejects with SandboxError when the request cannot run at all (unavailable, bad language). */
  run(req: RunRequest): Promise<RunResult>;
  /** Removes what the sandbox keeps on the host between runs (cgroup parents, its etc files). */
  close(): Promise<void>;
}

export interface SandboxLimits {
  /** Memory of the code's processes (cgroup hard cap; RLIMIT_AS per process without one). */
  memoryBytes: number;
  /** Size of /workspace (a tmpfs inside, and the most the saved workspace may hold). */
  workspaceBytes: number;
  /** Size of /tmp and of /dev/shm (each a tmpfs). */
  tmpBytes: number;
  /** Most files and directories the saved workspace may hold. */
  workspaceEntries: number;
  /** Processes and threads at once (pids cgroup). */
  pids: number;
  /** CPU share, in CPUs (cgroup cpu quota). */
  cpus: number;
  /** RLIMIT_NOFILE. */
  openFiles: number;
  /** Cap on each of stdout and stderr, in bytes. */
  outputBytes: number;
  /** The longest timeoutS accepted. */
  maxTimeoutS: number;
  /** Runs at once in this process; more wait their turn (their timeout starts when they run). */
  concurrentRuns: number;
}

export const DEFAULT_LIMITS: SandboxLimits = {
  memoryBytes: 1024 * 1024 * 1024,
  workspaceBytes: 256 * 1024 * 1024,
  tmpBytes: 128 * 1024 * 1024,
  workspaceEntries: 10_000,
  pids: 128,
  cpus: 1,
  openFiles: 1024,
  outputBytes: 64 * 1024,
  maxTimeoutS: 300,
  concurrentRuns: 4,
};

export type SandboxLog = (level: 'info' | 'warn', message: string) => void;

export interface SandboxOptions {
  /** QUARRY_SANDBOX: `bwrap` (default) or `off`. */
  mode: 'bwrap' | 'off';
  limits?: Partial<SandboxLimits>;
  /** Where probe results and degraded protections are reported (the server's logger). */
  log?: SandboxLog;
  /** bubblewrap binary; default `bwrap` on PATH. */
  bwrapPath?: string;
  /** Python interpreter; default `python3` on PATH (a pyenv shim is resolved to the real one). */
  pythonPath?: string;
  /** Node binary for javascript; default the one running Quarry. */
  nodePath?: string;
  /**
   * Cgroup (relative to each hierarchy's root) under which every run gets its own child;
   * default `quarry`, i.e. /sys/fs/cgroup/pids/quarry/<run> (v1) or /sys/fs/cgroup/quarry/<run> (v2).
   */
  cgroupParent?: string;
  /** Where the cgroup hierarchies are mounted; default /sys/fs/cgroup. */
  cgroupRoot?: string;
  /**
   * Host paths that must never be visible inside (the data dir: database, uploads, other
   * workspaces). The probe refuses to start when a system directory it exposes contains one.
   */
  protectedPaths?: string[];
  /** Install the seccomp filter (default true where the architecture is known). */
  seccomp?: boolean;
}

/** A request the sandbox refuses outright (no run happened). */
export class SandboxError extends Error {
  override name = 'SandboxError';
}

