/**
 * Admin commands with QUARRY_ADMIN_KEY: `accounts create|show|usage`, `keys create|ls|revoke`,
 * `credits add`. `keys create` without an ACCOUNT runs on the server's host instead (host-key-command.ts).
 */
import { intOption, numberArg, parseCommand, printNewKey, type Command } from '../context.js';
import { ExitCode, UsageError } from '../exit-codes.js';
import { credits, fields, shortTime, table } from '../format.js';

export const ACCOUNT_COMMANDS: Record<string, Command> = {
  async create(ctx, args) {
    const { values, positionals } = parseCommand(args, { credits: { type: 'string' } }, { min: 1, max: 1, names: 'NAME' });
    const amount = values.credits === undefined ? 0 : numberArg(values.credits, '--credits');
    const account = await ctx.adminClient().admin.accounts.create({ name: positionals[0]!, credits: amount });
    if (ctx.json) ctx.printJson(account);
    else {
      ctx.out(fields([['account', account.account_id], ['name', account.name], ['balance', credits(account.balance)]]));
      printNewKey(ctx, account);
    }
    return ExitCode.ok;
  },

  async show(ctx, args) {
    const { positionals } = parseCommand(args, {}, { min: 1, max: 1, names: 'ACCOUNT' });
    const account = await ctx.adminClient().admin.accounts.retrieve(positionals[0]!);
    if (ctx.json) ctx.printJson(account);
    else ctx.out(fields([['account', account.account_id], ['name', account.name], ['balance', credits(account.balance)], ['used', credits(account.credits_used)], ['created', shortTime(account.created_at)]]));
    return ExitCode.ok;
  },

  async usage(ctx, args) {
    const { values, positionals } = parseCommand(args, { limit: { type: 'string', short: 'n' } }, { min: 1, max: 1, names: 'ACCOUNT' });
    const turns = await ctx.adminClient().admin.accounts.usage(positionals[0]!);
    const shown = turns.slice(0, intOption(values.limit, 'limit', { min: 1 }) ?? turns.length);
    if (ctx.json) ctx.printJson(shown);
    else ctx.out(shown.length
      ? table(['TASK', 'TURN', 'KIND', 'STATUS', 'CREDITS', 'TOKENS IN', 'TOKENS OUT', 'TOOLS'],
        shown.map((t) => [t.task_id, t.turn_id, t.kind, t.status, credits(t.credits), String(t.tokens_in), String(t.tokens_out), String(t.tool_calls)]))
      : 'no turns yet');
    return ExitCode.ok;
  },
};

export const KEY_COMMANDS: Record<string, Command> = {
  async create(ctx, args) {
    const { values, positionals } = parseCommand(args, { account: { type: 'string' } }, { min: 0, max: 1, names: 'ACCOUNT' });
    if (positionals.length === 0) {
      // Loaded only here: it opens the server's store.
      const { createKeyOnHost } = await import('./host-key-command.js');
      return createKeyOnHost(ctx, values.account ?? 'default');
    }
    if (values.account !== undefined) throw new UsageError('give either ACCOUNT (an account id, through the admin API) or --account NAME (on the server\'s host), not both');
    const key = await ctx.adminClient().admin.keys.create(positionals[0]!);
    if (ctx.json) ctx.printJson(key);
    else printNewKey(ctx, key);
    return ExitCode.ok;
  },

  async ls(ctx, args) {
    const { positionals } = parseCommand(args, {}, { min: 1, max: 1, names: 'ACCOUNT' });
    const keys = await ctx.adminClient().admin.keys.list(positionals[0]!);
    if (ctx.json) ctx.printJson(keys);
    else ctx.out(table(['KEY', 'CREATED', 'REVOKED'], keys.map((k) => [k.key_id, shortTime(k.created_at), k.revoked_at ? shortTime(k.revoked_at) : '-'])));
    return ExitCode.ok;
  },

  async revoke(ctx, args) {
    const { positionals } = parseCommand(args, {}, { min: 2, max: 2, names: 'ACCOUNT and KEY' });
    const revoked = await ctx.adminClient().admin.keys.revoke(positionals[0]!, positionals[1]!);
    if (ctx.json) ctx.printJson(revoked);
    else ctx.out(`${revoked.key_id} revoked at ${shortTime(revoked.revoked_at)}`);
    return ExitCode.ok;
  },
};
KEY_COMMANDS.list = KEY_COMMANDS.ls!;

export const CREDIT_COMMANDS: Record<string, Command> = {
  async add(ctx, args) {
    // A negative AMOUNT takes credits away.
    const { positionals } = parseCommand(args, {}, { min: 2, max: 2, names: 'ACCOUNT and AMOUNT', negativeNumbers: true });
    const [accountId, rawAmount] = positionals as [string, string];
    const balance = await ctx.adminClient().admin.accounts.addCredits(accountId, numberArg(rawAmount, 'AMOUNT'));
    if (ctx.json) ctx.printJson(balance);
    else ctx.out(`${balance.account_id} balance ${credits(balance.balance)}`);
    return ExitCode.ok;
  },
};
