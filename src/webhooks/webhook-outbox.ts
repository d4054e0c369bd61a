/**
 * The webhook outbox (decisions §15.3): handlers on the unit of work that queue a delivery to
 * every endpoint of the account that asked for what the unit records (a turn's end, a group's
 * finish), in the unit's own transaction, so the change and its deliveries are stored together
 * or not at all. The dispatcher (dispatcher.ts) sends them.
 */
import { MAX_WEBHOOK_CHANGES, type WebhookEventType, type WebhookPayload } from '../contract/index.js';
import { fromMicros } from '../domain/credits.js';
import { toTaskView } from '../domain/task-view.js';
import { newId } from '../ids.js';
import { changeView } from '../tasks/keyed-rows.js';
import type { UnitOfWork, UnitsOfWork } from '../tasks/unit-of-work.js';

/** Registers the outbox on every unit of work; `wake` runs once a unit that queued deliveries commits. */
export function registerWebhookOutbox(units: UnitsOfWork, wake: () => void): void {
  units.on('turn_ended', async (uow, ended) => {
    const { task, turnId, outcome, outputCount } = ended;
    await queueWebhooks(uow, task.accountId, `task.turn_${outcome}`, wake, () => ({
      task_id: task.id, turn_id: turnId, outcome, output_count: outputCount, credits_used: fromMicros(ended.creditsUsedMicros),
      task: toTaskView(task, Date.parse(uow.now)),
    }));
    const { changes } = ended;
    if (changes.added + changes.changed + changes.unconfirmed === 0) return;
    await queueWebhooks(uow, task.accountId, 'task.changed', wake, async () => ({
      task_id: task.id, turn_id: turnId, changes,
      first_changes: (await uow.tx.rows.changes(task.id, { turnId, limit: MAX_WEBHOOK_CHANGES })).map(changeView),
    }));
  });
  units.on('group_finished', async (uow, finished) => {
    await queueWebhooks(uow, finished.accountId, 'group.finished', wake, () => ({ group_id: finished.groupId, group: finished.group }));
  });
}

/** Queues a delivery of `type` to every endpoint of the account that asked for it; `data` is built only when one did. */
async function queueWebhooks(uow: UnitOfWork, accountId: string, type: WebhookEventType, wake: () => void, data: () => WebhookPayload['data'] | Promise<WebhookPayload['data']>): Promise<void> {
  const endpoints = await uow.tx.webhooks.listEndpoints(accountId);
  const wanted = endpoints.filter((e) => e.events.includes(type));
  if (wanted.length === 0) return;
  const at = uow.now;
  const body = JSON.stringify({ type, timestamp: at, data: await data() } satisfies WebhookPayload);
  await uow.tx.webhooks.insertDeliveries(wanted.map((e) => ({
    id: newId('msg'), endpointId: e.id, event: type, payload: body, status: 'pending', attempts: 0, lastStatusCode: null, lastError: null,
    nextAttemptAt: at, retrySince: at, createdAt: at, deliveredAt: null,
  })));
  uow.afterCommit(wake);
}
