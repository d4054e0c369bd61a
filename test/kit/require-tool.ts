/**
 * Tests that need something from the machine (bubblewrap, Chromium, a PostgreSQL server) ask for
 * it here. On a developer's machine without it they are skipped and say why; in CI (CI set to
 * anything but "", "0" or "false", as `.ci/run` and CI services set it) a missing tool fails the
 * test instead, so a run that lacks one cannot pass by skipping what it was meant to check.
 */
import type { TestContext } from 'node:test';

export class MissingToolError extends Error {
  override name = 'MissingToolError';
}

function inCi(): boolean {
  const ci = process.env.CI?.trim().toLowerCase();
  return ci !== undefined && ci !== '' && ci !== '0' && ci !== 'false';
}

/**
 * The `skip` option of a test or suite that needs `tool`: false when it is here (`missing` is
 * false), else the reason to skip. In CI a missing tool throws MissingToolError instead, which
 * fails the test file (at its top level) or the suite (in a describe body).
 */
export function skipUnlessAvailable(tool: string, missing: string | false): string | false {
  if (missing === false) return false;
  const reason = `needs ${tool}, which cannot be used here: ${missing}`;
  if (inCi()) throw new MissingToolError(`CI=${process.env.CI}, and this test ${reason}`);
  return reason;
}

/** For a test that learns only while it runs that `tool` is missing: skips it, or fails it in CI. */
export function skipTestWithout(t: TestContext, tool: string, missing: string): void {
  t.skip(skipUnlessAvailable(tool, missing) || undefined);
}
