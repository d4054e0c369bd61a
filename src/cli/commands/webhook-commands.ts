/**
 * `quarry webhooks …`: create, ls, show, rm, rotate-secret, deliveries, redeliver. A signing
 * secret is printed only by `create` and `rotate-secret`, the only answers that carry it.
 */
import type { WebhookEventType } from '../../../packages/client/src/index.js';
import { LIST_OPTIONS, listItems, parseCommand, printShownOnce, type Command } from '../context.js';
import { ExitCode, UsageError } from '../exit-codes.js';
import { attemptsTable, deliveriesTable, fields, shortTime, webhookFields, webhooksTable } from '../format.js';

/** `--events a,b`: the names as given (the server says which it does not know). */
function eventList(value: string): WebhookEventType[] {
  const events = value.split(',').map((e) => e.trim()).filter(Boolean);
  if (events.length === 0) throw new UsageError('--events needs at least one event, e.g. --events task.turn_completed,task.turn_failed');
  return events as WebhookEventType[];
}

const create: Command = async (ctx, args) => {
  const { values } = parseCommand(args, {
    url: { type: 'string' },
    events: { type: 'string' },
    description: { type: 'string' },
  }, { min: 0, max: 0, names: '' });
  if (values.url === undefined) throw new UsageError('missing --url URL');
  if (values.events === undefined) throw new UsageError('missing --events EVENT[,EVENT…]');
  const hook = await ctx.client().webhooks.create({ url: values.url, events: eventList(values.events), description: values.description });
  if (ctx.json) ctx.printJson(hook);
  else printShownOnce(ctx, fields([...webhookFields(hook), ['secret', hook.secret]]), 'the signing secret is shown only once: store it where your receiver verifies webhook-signature');
  return ExitCode.ok;
};

const ls: Command = async (ctx, args) => {
  parseCommand(args, {}, { min: 0, max: 0, names: '' });
  const hooks = await ctx.client().webhooks.list();
  if (ctx.json) ctx.printJson(hooks);
  else ctx.out(hooks.length ? webhooksTable(hooks) : 'no webhooks');
  return ExitCode.ok;
};

const show: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {}, { min: 1, max: 1, names: 'ID' });
  const hook = await ctx.client().webhooks.retrieve(positionals[0]!);
  if (ctx.json) ctx.printJson(hook);
  else ctx.out(fields(webhookFields(hook)));
  return ExitCode.ok;
};

const rm: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {}, { min: 1, max: 1, names: 'ID' });
  const hook = await ctx.client().webhooks.delete(positionals[0]!);
  if (ctx.json) ctx.printJson(hook);
  else ctx.out(`${hook.webhook_id} deleted`);
  return ExitCode.ok;
};

const rotateSecret: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {}, { min: 1, max: 1, names: 'ID' });
  const hook = await ctx.client().webhooks.rotateSecret(positionals[0]!);
  if (ctx.json) ctx.printJson(hook);
  else {
    const until = hook.previous_secret_expires_at ? `; the previous one signs too until ${shortTime(hook.previous_secret_expires_at)}` : '';
    printShownOnce(ctx, fields([['webhook', hook.webhook_id], ['secret', hook.secret]]), `the new signing secret is shown only once: store it${until}`);
  }
  return ExitCode.ok;
};

const deliveries: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, LIST_OPTIONS, { min: 1, max: 1, names: 'ID' });
  const { items: list } = await listItems(values, (limit) => ctx.client().webhooks.deliveries(positionals[0]!, { limit }));
  if (ctx.json) ctx.printJson(list);
  else ctx.out(list.length ? deliveriesTable(list) : 'no deliveries');
  return ExitCode.ok;
};

const delivery: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {}, { min: 2, max: 2, names: 'ID and DELIVERY_ID' });
  const detail = await ctx.client().webhooks.delivery(positionals[0]!, positionals[1]!);
  if (ctx.json) {
    ctx.printJson(detail);
    return ExitCode.ok;
  }
  ctx.out(fields([
    ['delivery', detail.delivery_id], ['event', detail.event], ['status', detail.status], ['created', shortTime(detail.created_at)],
    ['delivered', shortTime(detail.delivered_at)], ['next attempt', shortTime(detail.next_attempt_at)], ['payload', JSON.stringify(detail.payload)],
  ]));
  ctx.out(detail.attempts.length ? attemptsTable(detail.attempts) : 'no attempts yet');
  return ExitCode.ok;
};

const redeliver: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {}, { min: 2, max: 2, names: 'ID and DELIVERY_ID' });
  const delivery = await ctx.client().webhooks.redeliver(positionals[0]!, positionals[1]!);
  if (ctx.json) ctx.printJson(delivery);
  else ctx.out(`${delivery.delivery_id} due again now (${delivery.event})`);
  return ExitCode.ok;
};

export const WEBHOOK_COMMANDS: Record<string, Command> = {
  create,
  ls,
  list: ls,
  show,
  get: show,
  rm,
  delete: rm,
  'rotate-secret': rotateSecret,
  deliveries,
  delivery,
  redeliver,
};
