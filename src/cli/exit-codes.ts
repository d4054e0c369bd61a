/**
 * The CLI's exit codes, which scripts branch on (documented in docs/client.md). Each failure
 * class maps to one code; the mapping reads the error's class and `error` code, never its text.
 */
import {
  AuthenticationError, ConflictError, ConnectionError, NotFoundError, OutOfCreditsError, QuarryAbortError, QuarryError, WaitTimeoutError,
} from '../../packages/client/src/index.js';

export const ExitCode = {
  /** Done as asked. */
  ok: 0,
  /** The API refused or failed the request for another reason (400/422 invalid_request, 413, 415, 500…). */
  apiError: 1,
  /** Bad command line or unreadable input file: nothing was sent. */
  usage: 2,
  /** Credentials missing (QUARRY_API_KEY / QUARRY_ADMIN_KEY unset) or refused (401). */
  auth: 3,
  /** No such task, output, account, key, webhook or delivery (404). */
  notFound: 4,
  /** The task's state refuses it (409 task_executing, task_in_cron_mode, task_exists), or another 409 (webhook_limit_reached). */
  conflict: 5,
  /** Out of credits (402, or a refusal inside a stream for the same reason). */
  outOfCredits: 6,
  /** Could not get through: rate limited, unavailable (429, 502, 503) or network failure, after retries; or `task wait --timeout` ran out. */
  unavailable: 7,
  /** A followed turn ended without completing (outcome failed or stopped). */
  turnNotCompleted: 8,
  /** Interrupted (Ctrl-C); the task keeps running. */
  interrupted: 130,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** A mistake on the command line: usage is printed and the CLI exits 2. */
export class UsageError extends Error {
  readonly name = 'UsageError';
}

/** `-h` found while parsing a command's options (e.g. in `-fh`): usage is printed and the CLI exits 0. */
export class HelpRequested extends Error {
  readonly name = 'HelpRequested';
}

/** The exit code for an error thrown by a command. */
export function exitCodeFor(err: unknown): ExitCodeValue {
  if (err instanceof UsageError) return ExitCode.usage;
  if (err instanceof QuarryAbortError) return ExitCode.interrupted;
  if (err instanceof AuthenticationError) return ExitCode.auth;
  if (err instanceof NotFoundError) return ExitCode.notFound;
  if (err instanceof ConflictError) return ExitCode.conflict;
  if (err instanceof OutOfCreditsError) return ExitCode.outOfCredits;
  if (err instanceof ConnectionError || err instanceof WaitTimeoutError) return ExitCode.unavailable;
  if (err instanceof QuarryError) {
    if (err.status === 429 || err.status === 502 || err.status === 503 || err.status === 504) return ExitCode.unavailable;
    return ExitCode.apiError;
  }
  return ExitCode.apiError;
}
