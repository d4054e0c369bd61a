/**
 * The client commands of `quarry`: finds the command, runs it, and turns whatever it threw into a
 * message and an exit code (see exit-codes.ts). `serve` is dispatched before this module loads.
 */
import { QuarryError, type ErrorFacts } from '../../packages/client/src/index.js';
import { ACCOUNT_COMMANDS, CREDIT_COMMANDS, KEY_COMMANDS } from './commands/admin-commands.js';
import { GROUP_COMMANDS } from './commands/group-commands.js';
import { TASK_COMMANDS } from './commands/task-commands.js';
import { uploadCommand } from './commands/upload-command.js';
import { evalCommand } from './commands/eval-command.js';
import { WEBHOOK_COMMANDS } from './commands/webhook-commands.js';
import { CliContext, MissingCredentials, type CliIo, type Command } from './context.js';
import { ExitCode, HelpRequested, UsageError, exitCodeFor, type ExitCodeValue } from './exit-codes.js';
import { USAGE } from './help.js';

const GROUPS: Record<string, Record<string, Command>> = {
  task: TASK_COMMANDS,
  tasks: TASK_COMMANDS,
  group: GROUP_COMMANDS,
  groups: GROUP_COMMANDS,
  webhooks: WEBHOOK_COMMANDS,
  webhook: WEBHOOK_COMMANDS,
  accounts: ACCOUNT_COMMANDS,
  account: ACCOUNT_COMMANDS,
  keys: KEY_COMMANDS,
  key: KEY_COMMANDS,
  credits: CREDIT_COMMANDS,
};

/** The arguments before a `--`, where options are read. */
function optionArgs(argv: string[]): string[] {
  const end = argv.indexOf('--');
  return end < 0 ? argv : argv.slice(0, end);
}

function wantsJson(argv: string[]): boolean {
  return optionArgs(argv).includes('--json');
}

/**
 * A plain `--help` or `-h` asks for the usage even beside options a command would refuse;
 * combined short options such as `-fh` are found when the command parses them (HelpRequested).
 */
function wantsHelp(argv: string[]): boolean {
  return optionArgs(argv).some((a) => a === '--help' || a === '-h');
}

/** The error facts passed on with --json when set, in this order. */
const ERROR_FACT_KEYS: (keyof ErrorFacts)[] = ['task_id', 'retry_after', 'param', 'detail', 'resolve', 'task_created'];

/** The error as the JSON scripts read with --json: the API's error body fields, plus status. */
function errorJson(err: unknown): Record<string, unknown> {
  if (err instanceof QuarryError) {
    const out: Record<string, unknown> = { error: err.error, message: err.message, retryable: err.retryable, status: err.status ?? null, request_id: err.request_id ?? null };
    for (const key of ERROR_FACT_KEYS) if (err[key] !== undefined) out[key] = err[key];
    return out;
  }
  if (err instanceof UsageError) return { error: 'usage', message: err.message };
  if (err instanceof MissingCredentials) return { error: 'missing_credentials', message: err.message };
  return { error: 'cli_error', message: (err as Error).message ?? String(err) };
}

function report(ctx: CliContext, err: unknown): void {
  if (ctx.json) return ctx.err(JSON.stringify(errorJson(err)));
  if (err instanceof UsageError) return ctx.err(`quarry: ${err.message}\nrun "quarry --help" for usage`);
  if (err instanceof QuarryError) {
    const facts = [err.error, err.status !== undefined ? `HTTP ${err.status}` : undefined, err.request_id ? `request ${err.request_id}` : undefined].filter(Boolean).join(', ');
    const hint = err.param ? ` [${err.param}]` : '';
    return ctx.err(`quarry: ${err.message}${hint} (${facts})`);
  }
  ctx.err(`quarry: ${(err as Error).message ?? String(err)}`);
}

/** Runs one client command; resolves with the exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<ExitCodeValue> {
  const ctx = new CliContext(io, wantsJson(argv));
  const [group, ...rest] = argv;
  if (group === undefined) {
    io.stderr.write(USAGE);
    return ExitCode.usage;
  }
  if (group === 'help' || ((group === '--help' || group === '-h') && rest.length === 0)) return help(io);
  try {
    const found = group === 'upload' ? { command: uploadCommand, args: rest } : group === 'eval' ? { command: evalCommand, args: rest } : findCommand(group, rest);
    if (!found || wantsHelp(found.args)) return help(io);
    return await found.command(ctx, found.args);
  } catch (err) {
    if (err instanceof HelpRequested) return help(io);
    report(ctx, err);
    return err instanceof MissingCredentials ? err.exitCode : exitCodeFor(err);
  }
}

/** The command `quarry <group> <name> ...args` names, or undefined for `quarry <group> -h`. */
function findCommand(group: string, rest: string[]): { command: Command; args: string[] } | undefined {
  const commands = GROUPS[group];
  if (!commands) throw new UsageError(`unknown command "${group}"`);
  const [name, ...args] = rest;
  if (name === undefined) throw new UsageError(`"quarry ${group}" needs a subcommand: ${Object.keys(commands).join(', ')}`);
  if (name === '--help' || name === '-h') return undefined;
  const command = commands[name];
  if (!command) throw new UsageError(`unknown command "${group} ${name}"; try: ${Object.keys(commands).join(', ')}`);
  return { command, args };
}

function help(io: CliIo): ExitCodeValue {
  io.stdout.write(USAGE);
  return ExitCode.ok;
}
