import { DEFAULT_LIMITS, SANDBOX_INTERFACE_VERSION, SandboxError, type RunResult, type Sandbox, type SandboxLanguage, type SandboxLimits } from './types.js';

/** The sandbox used when QUARRY_SANDBOX=off or the host cannot run one: every run is refused with the reason. */
export class UnavailableSandbox implements Sandbox {
  readonly version = SANDBOX_INTERFACE_VERSION;
  readonly available = false;
  readonly languages: readonly SandboxLanguage[] = [];
  readonly cgroupControllers = [];

  constructor(
    readonly reason: string,
    readonly limits: SandboxLimits = DEFAULT_LIMITS,
    readonly warnings: readonly string[] = [],
  ) {}

  async run(): Promise<RunResult> {
    throw new SandboxError(`run_code is not available on this server: ${this.reason}`);
  }

  async close(): Promise<void> {}
}
