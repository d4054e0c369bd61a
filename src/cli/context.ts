/**
 * What every command gets: the process's streams and environment, the global flags, and clients
 * built from QUARRY_URL, QUARRY_API_KEY and QUARRY_ADMIN_KEY.
 */
import { once } from 'node:events';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { QuarryClient, type GroupRowChange, type RowChange } from '../../packages/client/src/index.js';
import { ExitCode, HelpRequested, UsageError, type ExitCodeValue } from './exit-codes.js';
import { changesTable, fields } from './format.js';

export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadableStream;
  env: NodeJS.ProcessEnv;
}

const DEFAULT_URL = 'http://127.0.0.1:8080';

export class CliContext {
  constructor(
    readonly io: CliIo,
    /** `--json`: machine-readable output on stdout, errors as JSON on stderr. */
    readonly json: boolean,
  ) {}

  get baseURL(): string {
    return this.io.env.QUARRY_URL || DEFAULT_URL;
  }

  /** A client with the API key; exit 3 when QUARRY_API_KEY is not set. */
  client(): QuarryClient {
    const apiKey = this.io.env.QUARRY_API_KEY;
    if (!apiKey) throw new MissingCredentials('QUARRY_API_KEY is not set: export the API key (the starter key is printed by `quarry serve` on first start).');
    return new QuarryClient({ baseURL: this.baseURL, apiKey });
  }

  /** A client with the admin key; exit 3 when QUARRY_ADMIN_KEY is not set. */
  adminClient(): QuarryClient {
    const adminKey = this.io.env.QUARRY_ADMIN_KEY;
    if (!adminKey) throw new MissingCredentials('QUARRY_ADMIN_KEY is not set: admin commands need the admin key the server was started with.');
    return new QuarryClient({ baseURL: this.baseURL, adminKey });
  }

  /** Whether the live progress view can redraw (stdout is a terminal and --json is off). */
  get live(): boolean {
    return !this.json && this.io.stdout.isTTY === true && this.io.env.TERM !== 'dumb';
  }

  out(text: string): void {
    this.io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  err(text: string): void {
    this.io.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** Prints a value as JSON (pretty on a terminal, one line otherwise). */
  printJson(value: unknown): void {
    this.out(this.io.stdout.isTTY ? JSON.stringify(value, null, 2) : JSON.stringify(value));
  }
}

/** A client command: parses its arguments, runs, and resolves with the exit code. */
export type Command = (ctx: CliContext, args: string[]) => Promise<ExitCodeValue>;

/** Credentials are not configured: nothing was sent (exit 3). */
export class MissingCredentials extends Error {
  readonly name = 'MissingCredentials';
  readonly exitCode: ExitCodeValue = ExitCode.auth;
}

type OptionSpec = NonNullable<ParseArgsConfig['options']>;

/** Options every command takes. */
const GLOBAL_OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies OptionSpec;

interface Parsed<O extends OptionSpec> {
  values: { [K in keyof (O & typeof GLOBAL_OPTIONS)]?: (O & typeof GLOBAL_OPTIONS)[K] extends { type: 'boolean' } ? boolean : string };
  positionals: string[];
}

const NEGATIVE_NUMBER = /^-\d/;
const SHIELD = '\u0000';

/**
 * Parses a command's arguments: its own options plus `--json` and `--help`, and between `min`
 * and `max` positionals. Anything else is a UsageError naming what was wrong.
 */
export function parseCommand<O extends OptionSpec>(
  args: string[],
  options: O,
  positionals: { min: number; max: number; names: string; negativeNumbers?: boolean },
): Parsed<O> {
  // parseArgs reads "-3" as an option; where a positional may be a negative number, shield it.
  const shielded = positionals.negativeNumbers ? args.map((a) => (NEGATIVE_NUMBER.test(a) ? SHIELD + a : a)) : args;
  let parsed;
  try {
    parsed = parseArgs({ args: shielded, options: { ...options, ...GLOBAL_OPTIONS }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message.split('\n')[0]!);
  }
  parsed.positionals = parsed.positionals.map((p) => (p.startsWith(SHIELD) ? p.slice(SHIELD.length) : p));
  const values = parsed.values as Parsed<O>['values'];
  if (values.help) throw new HelpRequested();
  if (parsed.positionals.length < positionals.min) throw new UsageError(`missing ${positionals.names}`);
  if (parsed.positionals.length > positionals.max) throw new UsageError(`unexpected argument "${parsed.positionals[positionals.max]}"`);
  return { values, positionals: parsed.positionals };
}

/** An integer option within bounds, or a UsageError. */
export function intOption(value: string | undefined, name: string, bounds: { min: number; max?: number }): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value)) throw new UsageError(`--${name} must be an integer, got "${value}"`);
  const n = Number(value);
  if (n < bounds.min || (bounds.max !== undefined && n > bounds.max)) {
    throw new UsageError(`--${name} must be ${bounds.max === undefined ? `at least ${bounds.min}` : `between ${bounds.min} and ${bounds.max}`}, got ${n}`);
  }
  return n;
}

/** A number argument, or a UsageError. */
export function numberArg(value: string, name: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${name} must be a number, got "${value}"`);
  return n;
}

/** `--limit N` and `--all`, the options of a command that lists a paged list. */
export const LIST_OPTIONS = { limit: { type: 'string', short: 'n' }, all: { type: 'boolean' } } as const satisfies OptionSpec;

/** `task changes` and `group changes`: the list options, and `--since TURN` (changes of later turns). */
const CHANGES_OPTIONS = { ...LIST_OPTIONS, since: { type: 'string' } } as const satisfies OptionSpec;

/**
 * The first items of a paged list as `--limit N` (default 20) or `--all` asks, and whether more
 * remain: `list(pageSize)` is iterated with pages of at most 200 (the most a page holds) up to one
 * item past the limit, so a page more is read only where the limit ends a page of 200.
 */
export async function listItems<T>(values: { limit?: string; all?: boolean }, list: (pageSize: number) => AsyncIterable<T>): Promise<{ items: T[]; more: boolean }> {
  const limit = values.all ? Infinity : (intOption(values.limit, 'limit', { min: 1 }) ?? 20);
  const items: T[] = [];
  for await (const item of list(Math.min(200, limit + 1))) {
    if (items.length === limit) return { items, more: true };
    items.push(item);
  }
  return { items, more: false };
}

/** `--limit N`, `--offset N`, `--csv` and `--jsonl`: the options of a command that shows rows (`task rows`, `group rows`). */
export const ROWS_OPTIONS = {
  limit: { type: 'string', short: 'n' }, offset: { type: 'string' }, csv: { type: 'boolean' }, jsonl: { type: 'boolean' },
} as const satisfies OptionSpec;

/**
 * What a rows command was asked for: a whole export (`--csv` or `--jsonl`), or a page of the
 * table view (`--limit`, default 20, or 100 with --json; `--offset`). `exported` names what an
 * export holds, for the message that refuses paging one.
 */
export function rowsRequest(ctx: CliContext, values: { limit?: string; offset?: string; csv?: boolean; jsonl?: boolean }, opts: { maxLimit: number; exported: string }):
  { export: 'csv' | 'jsonl' } | { limit: number; offset: number } {
  if (values.csv && values.jsonl) throw new UsageError('choose one of --csv and --jsonl');
  if (values.csv || values.jsonl) {
    if (values.limit || values.offset) throw new UsageError(`--csv and --jsonl export ${opts.exported}; --limit and --offset apply to the table view`);
    return { export: values.csv ? 'csv' : 'jsonl' };
  }
  return {
    limit: intOption(values.limit, 'limit', { min: 1, max: opts.maxLimit }) ?? (ctx.json ? 100 : 20),
    offset: intOption(values.offset, 'offset', { min: 0 }) ?? 0,
  };
}

/** Writes an export to stdout as it arrives, waiting whenever stdout is full (a pipe to a slow reader). */
export async function writeExport(ctx: CliContext, chunks: AsyncIterable<Uint8Array>): Promise<void> {
  const stdout = ctx.io.stdout;
  for await (const chunk of chunks) {
    if (!stdout.write(chunk)) await once(stdout, 'drain');
  }
}

/**
 * A command that lists a paged list (`ls`): `--limit N` or `--all`, then the items as JSON or as
 * a table (`empty` when there are none).
 */
export function listCommand<T>(list: (ctx: CliContext, pageSize: number) => AsyncIterable<T>, table: (items: T[]) => string, empty: string): Command {
  return async (ctx, args) => {
    const { values } = parseCommand(args, LIST_OPTIONS, { min: 0, max: 0, names: '' });
    const { items } = await listItems(values, (pageSize) => list(ctx, pageSize));
    if (ctx.json) ctx.printJson(items);
    else ctx.out(items.length ? table(items) : empty);
    return ExitCode.ok;
  };
}

/**
 * `task changes ID` and `group changes ID`: the changes `list` reads, oldest first. Those a limit
 * leaves out are the newest, the ones a monitor is read for, so the table says when more remain.
 */
export function changesCommand(list: (client: QuarryClient, id: string, params: { limit: number; since?: string }) => AsyncIterable<RowChange | GroupRowChange>): Command {
  return async (ctx, args) => {
    const { values, positionals } = parseCommand(args, CHANGES_OPTIONS, { min: 1, max: 1, names: 'ID' });
    const { items, more } = await listItems(values, (pageSize) => list(ctx.client(), positionals[0]!, { limit: pageSize, since: values.since }));
    if (ctx.json) {
      ctx.printJson(items);
      return ExitCode.ok;
    }
    ctx.out(items.length ? changesTable(items) : 'no changes');
    if (more) ctx.err(`the first ${items.length} changes, oldest first; more remain: --limit N or --all`);
    return ExitCode.ok;
  };
}

/** Prints `text`, which holds a secret, then `note` on stderr: that it is not shown again. */
export function printShownOnce(ctx: CliContext, text: string, note: string): void {
  ctx.out(text);
  ctx.err(note);
}

/** Prints a new key's id and secret, then warns on stderr that the secret is not shown again. */
export function printNewKey(ctx: CliContext, key: { key_id: string; api_key: string }): void {
  printShownOnce(ctx, fields([['key_id', key.key_id], ['api_key', key.api_key]]), 'the API key is shown only once: keep it');
}
