/**
 * `client.webhooks`: endpoints that Quarry POSTs turn (and group) events to, signed as Standard
 * Webhooks, and the deliveries made to them. A secret is shown only by `create` and
 * `rotateSecret`, so neither is resent after a lost answer: a resend would make a second endpoint,
 * or rotate the secret again.
 */
import { cursorPages, type CursorPage, type PagePromise } from '../pagination.js';
import type { Transport } from '../internal/transport.js';
import type { RequestOptions } from '../request-options.js';
import type { QueryOf, RequestBody, Webhook, WebhookDelivery, WebhookDeliveryDetail, WebhookWithSecret } from '../types.js';

/**
 * `POST /webhooks`: where to send, and which events.
 *
 * @example
 * ```ts
 * const params: CreateWebhookParams = { url: 'https://example.com/hooks/quarry', events: ['task.turn_completed', 'task.turn_failed'], description: 'CI' };
 * ```
 */
export type CreateWebhookParams = RequestBody<'createWebhook'>;

/**
 * `GET /webhooks/{id}/deliveries`: page size (1 to 200, default 50) and where to start.
 *
 * @example
 * ```ts
 * const page = await client.webhooks.deliveries(webhookId, { limit: 20 } satisfies DeliveriesParams);
 * ```
 */
export type DeliveriesParams = QueryOf<'listWebhookDeliveries'>;

function webhookPath(webhookId: string, rest = ''): string {
  return `/webhooks/${encodeURIComponent(webhookId)}${rest}`;
}

/**
 * The webhook routes. Reached as `client.webhooks`.
 *
 * @example
 * ```ts
 * const hook = await client.webhooks.create({ url: 'https://example.com/hooks/quarry', events: ['task.turn_completed'] });
 * console.log('store this secret:', hook.secret);
 * for await (const d of client.webhooks.deliveries(hook.webhook_id)) console.log(d.event, d.status);
 * ```
 */
export class Webhooks {
  /** @internal */
  constructor(private readonly transport: Transport) {}

  /**
   * Registers an endpoint (`POST /webhooks`); the answer carries its signing secret, shown only
   * now. At most 20 per account (ConflictError `webhook_limit_reached`). Not resent after a lost
   * answer: list the endpoints and delete the one whose secret you never got.
   *
   * @example
   * ```ts
   * const { webhook_id, secret } = await client.webhooks.create({ url: 'https://example.com/hooks/quarry', events: ['task.turn_completed'] });
   * ```
   */
  create(params: CreateWebhookParams, opts?: RequestOptions): Promise<WebhookWithSecret> {
    return this.transport.json<WebhookWithSecret>({ method: 'POST', path: '/webhooks', json: params, auth: 'key', resendable: false }, opts);
  }

  /**
   * The account's endpoints, newest first, never their secrets (`GET /webhooks`).
   *
   * @example
   * ```ts
   * for (const hook of await client.webhooks.list()) console.log(hook.webhook_id, hook.url);
   * ```
   */
  async list(opts?: RequestOptions): Promise<Webhook[]> {
    const body = await this.transport.json<{ webhooks: Webhook[] }>({ method: 'GET', path: '/webhooks', auth: 'key', resendable: true }, opts);
    return body.webhooks;
  }

  /**
   * One endpoint (`GET /webhooks/{id}`); NotFoundError `webhook_not_found` for an id of no endpoint of this account.
   *
   * @example
   * ```ts
   * const { events, previous_secret_expires_at } = await client.webhooks.retrieve(webhookId);
   * ```
   */
  retrieve(webhookId: string, opts?: RequestOptions): Promise<Webhook> {
    return this.transport.json<Webhook>({ method: 'GET', path: webhookPath(webhookId), auth: 'key', resendable: true }, opts);
  }

  /**
   * Deletes an endpoint and its deliveries (pending ones are not sent); answers with the endpoint
   * as it was. Not resent after a lost answer: the resend would find it gone.
   *
   * @example
   * ```ts
   * await client.webhooks.delete(webhookId);
   * ```
   */
  delete(webhookId: string, opts?: RequestOptions): Promise<Webhook> {
    return this.transport.json<Webhook>({ method: 'DELETE', path: webhookPath(webhookId), auth: 'key', resendable: false }, opts);
  }

  /**
   * A new signing secret, shown only in this answer; for 24 h (until `previous_secret_expires_at`)
   * the previous one signs too. A second rotation within those 24 h ends the older secret at once.
   *
   * @example
   * ```ts
   * const { secret, previous_secret_expires_at } = await client.webhooks.rotateSecret(webhookId);
   * ```
   */
  rotateSecret(webhookId: string, opts?: RequestOptions): Promise<WebhookWithSecret> {
    return this.transport.json<WebhookWithSecret>({ method: 'POST', path: webhookPath(webhookId, '/rotate-secret'), json: {}, auth: 'key', resendable: false }, opts);
  }

  /**
   * The endpoint's deliveries, newest first. `await` it for one page; `for await` over it for
   * every delivery, following `X-Next-Cursor` page by page.
   *
   * @example
   * ```ts
   * for await (const d of client.webhooks.deliveries(webhookId, { limit: 200 })) {
   *   if (d.status === 'dead') console.log(d.delivery_id, d.last_error);
   * }
   * ```
   */
  deliveries(webhookId: string, params: DeliveriesParams = {}, opts?: RequestOptions): PagePromise<CursorPage<WebhookDelivery>, WebhookDelivery> {
    return cursorPages(async (cursor) => {
      const { response, text } = await this.transport.send(
        { method: 'GET', path: webhookPath(webhookId, '/deliveries'), query: { limit: params.limit, cursor }, auth: 'key', resendable: true },
        opts,
      );
      return { data: (JSON.parse(text) as { deliveries: WebhookDelivery[] }).deliveries, nextCursor: response.headers.get('x-next-cursor') };
    }, params.cursor);
  }

  /**
   * One delivery with its `payload` and `attempts`, the log of its attempts (when, status code,
   * error, duration, the first 2 KiB of the answer). NotFoundError `delivery_not_found` for an
   * id of no delivery of this endpoint.
   *
   * @example
   * ```ts
   * const d = await client.webhooks.delivery(webhookId, deliveryId);
   * for (const a of d.attempts) console.log(a.at, a.status_code, a.error, a.response_excerpt);
   * ```
   */
  delivery(webhookId: string, deliveryId: string, opts?: RequestOptions): Promise<WebhookDeliveryDetail> {
    return this.transport.json<WebhookDeliveryDetail>(
      { method: 'GET', path: webhookPath(webhookId, `/deliveries/${encodeURIComponent(deliveryId)}`), auth: 'key', resendable: true },
      opts,
    );
  }

  /**
   * Sends a delivery again, with the same `webhook-id` (whatever its status): it is due now and
   * retried as a new delivery would be. NotFoundError `delivery_not_found` for an id of no
   * delivery of this endpoint.
   *
   * @example
   * ```ts
   * const again = await client.webhooks.redeliver(webhookId, deliveryId);
   * console.log(again.status); // "pending"
   * ```
   */
  redeliver(webhookId: string, deliveryId: string, opts?: RequestOptions): Promise<WebhookDelivery> {
    return this.transport.json<WebhookDelivery>(
      // Resent after a lost answer: a second redelivery at worst sends it once more, under the same webhook-id receivers dedupe on.
      { method: 'POST', path: webhookPath(webhookId, `/deliveries/${encodeURIComponent(deliveryId)}/redeliver`), json: {}, auth: 'key', resendable: true },
      opts,
    );
  }
}
