/** `quarry account`: the account of the API key, its balance and the credits it has used. */
import { parseCommand, type Command } from '../context.js';
import { ExitCode } from '../exit-codes.js';
import { credits, fields } from '../format.js';

export const ownAccountCommand: Command = async (ctx, args) => {
  parseCommand(args, {}, { min: 0, max: 0, names: '' });
  const account = await ctx.client().account();
  if (ctx.json) ctx.printJson(account);
  else ctx.out(fields([['account', account.account_id], ['name', account.name], ['balance', credits(account.balance)], ['credits used', credits(account.credits_used)]]));
  return ExitCode.ok;
};
