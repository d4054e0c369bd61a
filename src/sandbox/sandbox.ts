/**
 * The code sandbox behind the `run_code` tool. `createSandbox` probes the host once at start-up
 * and returns a Sandbox (types.ts): bubblewrap when it works here, else one that refuses every
 * run with a one-line reason. The guarantees and how each limit is enforced: docs/security.md.
 */
import { BwrapSandbox } from './bwrap-sandbox.js';
import { DEFAULT_LIMITS, type Sandbox, type SandboxOptions } from './types.js';
import { UnavailableSandbox } from './unavailable.js';

export * from './types.js';
export { UnavailableSandbox } from './unavailable.js';

/**
 * Builds the sandbox for QUARRY_SANDBOX. `bwrap` checks that bubblewrap exists and can create
 * namespaces here by running one trivial program in it; when it cannot, the result has
 * `available: false` and a `reason` for the start-up log, and run_code answers the model with it.
 */
export async function createSandbox(opts: SandboxOptions): Promise<Sandbox> {
  const limits = { ...DEFAULT_LIMITS, ...opts.limits };
  if (opts.mode === 'off') return new UnavailableSandbox('it is disabled (QUARRY_SANDBOX=off)', limits);
  return BwrapSandbox.create({ ...opts, limits, log: opts.log ?? (() => {}) });
}
