/**
 * The code sandbox behind the `run_code` tool: the one interface every implementation keeps,
 * and `createSandbox`, which probes the host once at start-up and picks one. The guarantees and
 * how each limit is enforced are in docs/security.md.
 */
import { BwrapSandbox } from './bwrap-sandbox.js';
import { DEFAULT_LIMITS, SANDBOX_INTERFACE_VERSION, SandboxError, type RunResult, type Sandbox, type SandboxLanguage, type SandboxLimits, type SandboxOptions } from './types.js';

export * from './types.js';

/** The sandbox used when QUARRY_SANDBOX=off or the host cannot run one. */
export class UnavailableSandbox implements Sandbox {
  readonly version = SANDBOX_INTERFACE_VERSION;
  readonly available = false;
  readonly languages: readonly SandboxLanguage[] = [];
  readonly warnings: readonly string[] = [];

  constructor(readonly reason: string, readonly limits: SandboxLimits = DEFAULT_LIMITS) {}

  async run(): Promise<RunResult> {
    throw new SandboxError(`run_code is not available on this server: ${this.reason}`);
  }

  async close(): Promise<void> {}
}

/**
 * Builds the sandbox for QUARRY_SANDBOX. `bwrap` probes once whether bubblewrap exists and can
 * create namespaces here (a few tens of ms); when it cannot, the result is unavailable with a
 * one-line reason for the start-up log, and run_code answers the model with that reason.
 */
export async function createSandbox(opts: SandboxOptions): Promise<Sandbox> {
  const limits = { ...DEFAULT_LIMITS, ...opts.limits };
  if (opts.mode === 'off') return new UnavailableSandbox('it is disabled (QUARRY_SANDBOX=off)', limits);
  const { mode: _mode, ...rest } = opts;
  return BwrapSandbox.create({ ...rest, limits, log: opts.log ?? (() => {}) });
}
