/**
 * `quarry group …`: create (a spec file and a CSV or JSON Lines file of inputs), ls, get, rows,
 * follow, stop, retry, add-inputs. `--follow` shows the group's progress from its stream until no
 * run is pending or running, and exits 0 only when every run completed.
 */
import fs from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import {
  ConnectionError, QuarryError, type Group, type GroupDetail, type GroupInputFormat, type GroupRunsParams, type QuarryClient, type RetryGroupParams,
} from '../../../packages/client/src/index.js';
import { changesCommand, intOption, LIST_OPTIONS, listCommand, listItems, numberArg, parseCommand, ROWS_OPTIONS, rowsRequest, writeExport, type CliContext, type Command } from '../context.js';
import { ExitCode, UsageError, type ExitCodeValue } from '../exit-codes.js';
import { fields, groupCounts, groupFields, groupsTable, inputCount, rowsTable, runsTable } from '../format.js';
import { GroupProgressView } from '../progress-view.js';
import { readSpec } from './task-commands.js';

/** How often the group is read when its stream cannot be followed. */
const POLL_MS = 2000;

const INPUT_OPTIONS = {
  inputs: { type: 'string' },
  format: { type: 'string' },
} as const;

/**
 * Runs `send` on the file `--inputs` names, once it is known to be readable. The client refuses
 * a file it cannot read or whose format it cannot tell before sending anything; the CLI reports
 * that as a usage error (exit 2), as it does any unreadable input file.
 */
async function withInputFile(values: { inputs?: string; format?: string }, send: (file: string, format: GroupInputFormat | undefined) => Promise<GroupDetail>): Promise<GroupDetail> {
  const file = values.inputs;
  if (file === undefined) throw new UsageError('missing --inputs FILE (a .csv file with a header row naming the columns, or .jsonl with one object per line)');
  const format = values.format;
  if (format !== undefined && format !== 'csv' && format !== 'jsonl') throw new UsageError(`--format must be csv or jsonl, got "${format}"`);
  const stat = await fs.stat(file).catch((err: Error) => {
    throw new UsageError(`cannot read ${file}: ${err.message}`);
  });
  if (!stat.isFile()) throw new UsageError(`${file} is not a file`);
  try {
    return await send(file, format);
  } catch (err) {
    if (err instanceof QuarryError) throw err;
    throw new UsageError((err as Error).message);
  }
}

/**
 * The exit code for a group no run of which is pending or running: 0 only when every run
 * completed. Read from the counts, not the status: a group stopped after its last run ended is
 * `stopped` with nothing left undone.
 */
function groupExitCode(group: Group): ExitCodeValue {
  return group.counts.failed === 0 && group.counts.stopped === 0 ? ExitCode.ok : ExitCode.turnNotCompleted;
}

/** Failures of the stream itself, after its own retries, that reading the group may get around (a proxy that breaks SSE). */
function streamUnavailable(err: unknown): boolean {
  if (err instanceof ConnectionError) return true;
  return err instanceof QuarryError && (err.error === 'invalid_stream' || err.status === 502 || err.status === 503 || err.status === 504);
}

/**
 * Follows the group until no run is pending or running: from its stream, or, when the stream
 * cannot be followed, by reading the group every few seconds. Ctrl-C stops following, never the
 * group (exit 130). After a change (`changed`: the answer to adding inputs or a retry), what the
 * stream replays from before it is not shown again.
 */
async function followGroup(ctx: CliContext, client: QuarryClient, groupId: string, changed?: GroupDetail): Promise<ExitCodeValue> {
  const write = (text: string) => void ctx.io.stdout.write(text);
  const view = new GroupProgressView(write, ctx.json ? 'json' : ctx.live ? 'live' : 'plain', {
    color: !ctx.io.env.NO_COLOR, columns: ctx.io.stdout.columns, quietBefore: changed?.updated_at,
  });
  const stream = client.groups.stream(groupId);
  const interrupt = new AbortController();
  const onInterrupt = () => {
    interrupt.abort();
    stream.close();
  };
  process.once('SIGINT', onInterrupt);
  try {
    try {
      for await (const event of stream) view.event(event);
    } catch (err) {
      if (!streamUnavailable(err)) throw err;
      ctx.err(`quarry: the group's stream cannot be followed (${(err as Error).message}); reading the group every ${POLL_MS / 1000} s instead`);
      for (;;) {
        const group = await client.groups.get(groupId, { signal: interrupt.signal });
        view.polled(group);
        if (view.progress.idle()) break;
        await delay(POLL_MS, undefined, { signal: interrupt.signal });
      }
    }
  } catch (err) {
    // An interrupted poll throws its abort; an interrupted stream just ends.
    if (!interrupt.signal.aborted) {
      view.close('failed');
      throw err;
    }
  } finally {
    process.off('SIGINT', onInterrupt);
  }
  if (interrupt.signal.aborted) {
    view.close('interrupted');
    if (!ctx.json) ctx.err(`follow it again with: quarry group follow ${groupId}`);
    return ExitCode.interrupted;
  }
  view.close('ended');
  const group = view.progress.group;
  return group && view.progress.idle() ? groupExitCode(group) : ExitCode.unavailable;
}

/** `grp_… created: 300 inputs; 4 completed · …` (or the group as JSON). */
function printGroupAnswer(ctx: CliContext, group: GroupDetail, what: string): void {
  if (ctx.json) return ctx.printJson(group);
  ctx.out(`${group.group_id} ${what}; ${groupCounts(group.counts)}`);
}

const create: Command = async (ctx, args) => {
  const { values } = parseCommand(args, {
    spec: { type: 'string' },
    ...INPUT_OPTIONS,
    name: { type: 'string' },
    'max-parallel': { type: 'string' },
    'max-credits': { type: 'string' },
    follow: { type: 'boolean', short: 'f' },
  }, { min: 0, max: 0, names: '' });
  if (values.spec === undefined) throw new UsageError('missing --spec FILE (the spec each input runs: input_columns and one table output)');
  const task = await readSpec(ctx, values.spec);
  const settings = {
    task,
    name: values.name,
    max_parallel: intOption(values['max-parallel'], 'max-parallel', { min: 1 }),
    max_credits: values['max-credits'] === undefined ? undefined : numberArg(values['max-credits'], '--max-credits'),
  };
  const client = ctx.client();
  const group = await withInputFile(values, (file, format) => client.groups.createFromFile(file, { ...settings, format }));
  if (values.follow) return followGroup(ctx, client, group.group_id);
  printGroupAnswer(ctx, group, `created: ${inputCount(group)}`);
  if (!ctx.json && ctx.io.stdout.isTTY) ctx.err(`follow it: quarry group follow ${group.group_id}`);
  return ExitCode.ok;
};

const ls = listCommand((ctx, limit) => ctx.client().groups.list({ limit }), groupsTable, 'no groups');

const get: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {}, { min: 1, max: 1, names: 'ID' });
  const group = await ctx.client().groups.get(positionals[0]!);
  if (ctx.json) ctx.printJson(group);
  else ctx.out(fields(groupFields(group)));
  return ExitCode.ok;
};

const follow: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {}, { min: 1, max: 1, names: 'ID' });
  return followGroup(ctx, ctx.client(), positionals[0]!);
};

const rows: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, ROWS_OPTIONS, { min: 1, max: 1, names: 'ID' });
  const groupId = positionals[0]!;
  const client = ctx.client();
  const asked = rowsRequest(ctx, values, { maxLimit: 10_000, exported: 'every merged row' });
  if ('export' in asked) {
    await writeExport(ctx, await client.groups.export(groupId, asked.export));
    return ExitCode.ok;
  }
  const { limit, offset } = asked;
  const page = await client.groups.rows(groupId, { limit, offset });
  if (ctx.json) {
    ctx.printJson(page);
    return ExitCode.ok;
  }
  if (page.rows.length === 0) {
    ctx.out(`no merged rows${offset ? ` from ${offset}` : ''} (${page.total} in all)`);
    return ExitCode.ok;
  }
  ctx.out(rowsTable(page.rows, { key: '_input', header: 'INPUT' }));
  const last = offset + page.rows.length;
  ctx.err(`merged rows ${offset + 1}-${last} of ${page.total}${last < page.total ? '; --offset to page, --csv or --jsonl to export all' : ''}`);
  return ExitCode.ok;
};

const stop: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {}, { min: 1, max: 1, names: 'ID' });
  printGroupAnswer(ctx, await ctx.client().groups.stop(positionals[0]!), 'stopped');
  return ExitCode.ok;
};

const runs: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, { ...LIST_OPTIONS, status: { type: 'string' } }, { min: 1, max: 1, names: 'ID' });
  const status = values.status as GroupRunsParams['status'];
  const { items: list } = await listItems(values, (limit) => ctx.client().groups.runs(positionals[0]!, { limit, status }));
  if (ctx.json) ctx.printJson(list);
  else ctx.out(list.length ? runsTable(list) : 'no runs');
  return ExitCode.ok;
};

const retry: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, { follow: { type: 'boolean', short: 'f' }, include: { type: 'string' } }, { min: 1, max: 1, names: 'ID' });
  const client = ctx.client();
  // `--include failed,stopped`: the runs to retry, as the API's include (default: failed).
  const include = values.include?.split(',').map((s) => s.trim()) as RetryGroupParams['include'];
  const group = await client.groups.retry(positionals[0]!, include ? { include } : {});
  if (values.follow) return followGroup(ctx, client, group.group_id, group);
  // A group without failed runs is answered as it was.
  printGroupAnswer(ctx, group, group.status === 'running' ? 'retrying its failed runs' : `has no failed runs to retry (${group.status})`);
  return ExitCode.ok;
};

const addInputs: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, { ...INPUT_OPTIONS, follow: { type: 'boolean', short: 'f' } }, { min: 1, max: 1, names: 'ID' });
  const client = ctx.client();
  const group = await withInputFile(values, (file, format) => client.groups.addInputsFromFile(positionals[0]!, file, { format }));
  if (values.follow) return followGroup(ctx, client, group.group_id, group);
  printGroupAnswer(ctx, group, `inputs added: ${inputCount(group)} in all`);
  return ExitCode.ok;
};

const changes = changesCommand((client, id, params) => client.groups.changes(id, params));

export const GROUP_COMMANDS: Record<string, Command> = {
  create,
  ls,
  list: ls,
  get,
  show: get,
  follow,
  rows,
  changes,
  stop,
  retry,
  runs,
  'add-inputs': addInputs,
};
