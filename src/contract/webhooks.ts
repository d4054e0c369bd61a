/** Webhooks: endpoints, their deliveries, and the body Quarry POSTs (decisions §15.3). */
import { Type, type Static } from 'typebox';
import { component, IdCursor, Nullable, Str, StringEnum, Timestamp } from './common.js';
import { Task } from './task.js';
import { Group } from './groups.js';
import { ChangeCounts, RowChange } from './changes.js';

/** The events an endpoint may ask for. */
export const WEBHOOK_EVENTS = ['task.turn_completed', 'task.turn_failed', 'task.turn_stopped', 'task.changed', 'group.finished'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

/** How many endpoints one account may have. */
export const MAX_WEBHOOKS_PER_ACCOUNT = 20;
export const MAX_WEBHOOK_URL_CHARS = 2048;

const WebhookEvents = Type.Array(StringEnum(WEBHOOK_EVENTS), {
  minItems: 1, maxItems: WEBHOOK_EVENTS.length, uniqueItems: true,
  description: 'Which events to send: task.turn_completed, task.turn_failed, task.turn_stopped, task.changed (a turn changed a keyed output), group.finished.',
});

export const WebhookBody = Type.Object({
  url: Str({ minLength: 1, maxLength: MAX_WEBHOOK_URL_CHARS, description: 'An http(s) URL that takes POST requests; no user name or password in it.' }),
  events: WebhookEvents,
  description: Type.Optional(Str({ maxLength: 500 })),
});
export type WebhookBody = Static<typeof WebhookBody>;

export const Webhook = component('Webhook', Type.Object({
  webhook_id: Type.String(),
  url: Type.String(),
  events: Type.Array(StringEnum(WEBHOOK_EVENTS)),
  description: Nullable(Type.String()),
  created_at: Timestamp(),
  previous_secret_expires_at: Nullable(Timestamp('After a rotation: until then the previous secret signs too.')),
}));
export type Webhook = Static<typeof Webhook>;

export const WebhookWithSecret = component('WebhookWithSecret', Type.Object({
  ...Webhook.properties,
  secret: Type.String({ description: '`whsec_` + base64: the signing secret. Shown only here; store it.' }),
}));
export type WebhookWithSecret = Static<typeof WebhookWithSecret>;

export const WebhookList = Type.Object({ webhooks: Type.Array(Webhook) });

export const WebhookParams = Type.Object({ webhook_id: Str({ minLength: 1, maxLength: 200 }) });
export const DeliveryParams = Type.Object({ webhook_id: Str({ minLength: 1, maxLength: 200 }), delivery_id: Str({ minLength: 1, maxLength: 200 }) });

export const DELIVERY_STATUSES = ['pending', 'delivered', 'dead'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const Delivery = component('WebhookDelivery', Type.Object({
  delivery_id: Type.String({ description: 'Sent as the webhook-id header; the same on every attempt.' }),
  event: StringEnum(WEBHOOK_EVENTS),
  status: StringEnum(DELIVERY_STATUSES),
  attempts: Type.Integer({ minimum: 0, description: 'Attempts started so far.' }),
  last_status_code: Nullable(Type.Integer({ description: 'The HTTP status of the last attempt; null when it got none (timeout, refused).' })),
  last_error: Nullable(Type.String({ description: 'Why the last attempt failed; null once delivered.' })),
  next_attempt_at: Nullable(Timestamp('When it is sent (again); null once delivered or dead.')),
  created_at: Timestamp(),
  delivered_at: Nullable(Timestamp()),
}));
export type Delivery = Static<typeof Delivery>;

export const DeliveryList = Type.Object({ deliveries: Type.Array(Delivery) });

export const DeliveriesQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  cursor: Type.Optional(IdCursor('msg')),
});

/** What a task's webhook carries in `data`. */
export const TaskWebhookData = Type.Object({
  task_id: Type.String(),
  turn_id: Type.String(),
  outcome: StringEnum(['completed', 'failed', 'stopped'] as const),
  output_count: Type.Integer({ minimum: 0 }),
  credits_used: Type.Number({ description: 'What the turn used.' }),
  task: Task,
});

/** The changes `task.changed` carries at most; the task's changes route lists them all. */
export const MAX_WEBHOOK_CHANGES = 100;

/** What `task.changed` carries in `data`: sent after a turn that changed a keyed output (decisions §19). */
export const ChangedWebhookData = Type.Object({
  task_id: Type.String(),
  turn_id: Type.String(),
  changes: ChangeCounts,
  first_changes: Type.Array(RowChange, { maxItems: MAX_WEBHOOK_CHANGES, description: 'The turn\'s first 100 changes; GET /task/{task_id}/changes lists them all.' }),
});

/** What `group.finished` carries in `data`: sent when no run of the group is left pending or running. */
export const GroupWebhookData = Type.Object({ group_id: Type.String(), group: Group });

/** The JSON body of every delivery, signed as Standard Webhooks. */
export const WebhookPayload = component('WebhookPayload', Type.Object({
  type: StringEnum(WEBHOOK_EVENTS),
  timestamp: Timestamp('When the event happened.'),
  data: Type.Union([TaskWebhookData, ChangedWebhookData, GroupWebhookData]),
}));
export type WebhookPayload = Static<typeof WebhookPayload>;
