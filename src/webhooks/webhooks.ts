/**
 * Webhook endpoints and their deliveries as the API offers them (decisions §15.3): register,
 * list, rotate and delete endpoints of an account; page and redeliver their deliveries. Which
 * endpoint an account may see is decided here, once. Deliveries are queued by the outbox
 * (webhook-outbox.ts), inside the transaction of what they tell, and sent by the dispatcher
 * (dispatcher.ts).
 */
import { isIP } from 'node:net';
import {
  MAX_WEBHOOKS_PER_ACCOUNT, type Delivery, type DeliveryDetail, type Webhook, type WebhookBody, type WebhookWithSecret,
} from '../contract/index.js';
import { QuarryError } from '../errors.js';
import { newId } from '../ids.js';
import { blockedReason } from '../net/address-policy.js';
import { parseUrl, WebFetchError } from '../net/safe-fetch.js';
import type { DeliveryRecord, WebhookEndpointRecord } from '../domain/records.js';
import type { Store } from '../store/store.js';
import { newSecret } from './signing.js';

/** How long a rotated-out secret keeps signing, so receivers can switch without missing a message. */
export const PREVIOUS_SECRET_MS = 24 * 60 * 60 * 1000;

export interface WebhooksOptions {
  store: Store;
  /** Loopback and private addresses may be registered (QUARRY_FETCH_ALLOW_PRIVATE=1). */
  allowPrivate: boolean;
  clock?: () => Date;
  /** Called after a commit that made a delivery due now (a redelivery). */
  onDeliveryDue?: () => void;
}

/** Whether the secret a rotation replaced still signs at `now` (its 24 h are not over). */
function previousSecretSigns(e: WebhookEndpointRecord, now: number): boolean {
  return e.previousSecret !== null && e.previousSecretExpiresAt !== null && Date.parse(e.previousSecretExpiresAt) > now;
}

export function toWebhookView(e: WebhookEndpointRecord, now: number): Webhook {
  return {
    webhook_id: e.id,
    url: e.url,
    events: e.events,
    description: e.description,
    created_at: e.createdAt,
    previous_secret_expires_at: previousSecretSigns(e, now) ? e.previousSecretExpiresAt : null,
  };
}

export function toDeliveryView(d: DeliveryRecord): Delivery {
  return {
    delivery_id: d.id,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    next_attempt_at: d.status === 'pending' ? d.nextAttemptAt : null,
    created_at: d.createdAt,
    delivered_at: d.deliveredAt,
  };
}

/** The secrets that sign at `now`: the current one, and the previous one during its 24 h. */
export function signingSecrets(e: WebhookEndpointRecord, now: number): string[] {
  return previousSecretSigns(e, now) ? [e.secret, e.previousSecret!] : [e.secret];
}

export class Webhooks {
  private readonly store: Store;
  private readonly allowPrivate: boolean;
  private readonly clock: () => Date;
  private readonly onDeliveryDue: () => void;

  constructor(opts: WebhooksOptions) {
    this.store = opts.store;
    this.allowPrivate = opts.allowPrivate;
    this.clock = opts.clock ?? (() => new Date());
    this.onDeliveryDue = opts.onDeliveryDue ?? (() => {});
  }

  async create(accountId: string, body: WebhookBody): Promise<WebhookWithSecret> {
    const url = this.checkedUrl(body.url);
    const now = this.clock().toISOString();
    const endpoint: WebhookEndpointRecord = {
      id: newId('wh'), accountId, url, events: body.events, description: body.description ?? null,
      secret: newSecret(), previousSecret: null, previousSecretExpiresAt: null, createdAt: now,
    };
    await this.store.transaction(async (tx) => {
      // Under the account's row lock, so creates at once cannot all count 19 and all insert.
      await tx.accounts.get(accountId, { lock: true });
      if ((await tx.webhooks.countEndpoints(accountId)) >= MAX_WEBHOOKS_PER_ACCOUNT) {
        throw new QuarryError('webhook_limit_reached', `The account has ${MAX_WEBHOOKS_PER_ACCOUNT} webhook endpoints, the most it may have: delete one first.`);
      }
      await tx.webhooks.insertEndpoint(endpoint);
    });
    return { ...toWebhookView(endpoint, this.clock().getTime()), secret: endpoint.secret };
  }

  async list(accountId: string): Promise<Webhook[]> {
    const now = this.clock().getTime();
    return (await this.store.webhooks.listEndpoints(accountId)).map((e) => toWebhookView(e, now));
  }

  /** An endpoint of this account, else 404 webhook_not_found. */
  async get(accountId: string, webhookId: string): Promise<WebhookEndpointRecord> {
    const endpoint = await this.store.webhooks.getEndpoint(webhookId);
    if (!endpoint || endpoint.accountId !== accountId) {
      throw new QuarryError('webhook_not_found', `No webhook endpoint with webhook_id "${webhookId}".`);
    }
    return endpoint;
  }

  async view(accountId: string, webhookId: string): Promise<Webhook> {
    return toWebhookView(await this.get(accountId, webhookId), this.clock().getTime());
  }

  /** Deletes the endpoint and its deliveries: pending ones are not sent. */
  async delete(accountId: string, webhookId: string): Promise<Webhook> {
    const endpoint = await this.get(accountId, webhookId);
    await this.store.transaction((tx) => tx.webhooks.deleteEndpoint(endpoint.id));
    return toWebhookView(endpoint, this.clock().getTime());
  }

  /** A new secret; the one it replaces keeps signing for PREVIOUS_SECRET_MS. */
  async rotateSecret(accountId: string, webhookId: string): Promise<WebhookWithSecret> {
    // Two rotations at once: each replaces the secret it read, so the one that loses reads again
    // and rotates out the winner's secret (which then still signs for a day) rather than erasing it.
    for (;;) {
      const endpoint = await this.get(accountId, webhookId);
      const now = this.clock().getTime();
      const rotated: WebhookEndpointRecord = {
        ...endpoint, secret: newSecret(), previousSecret: endpoint.secret, previousSecretExpiresAt: new Date(now + PREVIOUS_SECRET_MS).toISOString(),
      };
      if (await this.store.webhooks.replaceSecret(endpoint.id, endpoint.secret, rotated)) return { ...toWebhookView(rotated, now), secret: rotated.secret };
    }
  }

  /** One page of the endpoint's deliveries, newest first; `nextCursor` when more remain. */
  async deliveries(accountId: string, webhookId: string, limit: number, cursor?: string): Promise<{ deliveries: Delivery[]; nextCursor?: string }> {
    const endpoint = await this.get(accountId, webhookId);
    const rows = await this.store.webhooks.listDeliveries(endpoint.id, limit + 1, cursor);
    const page = rows.slice(0, limit);
    return { deliveries: page.map(toDeliveryView), ...(rows.length > limit ? { nextCursor: page[page.length - 1]!.id } : {}) };
  }

  /** One delivery with its body and its attempts' log. */
  async delivery(accountId: string, webhookId: string, deliveryId: string): Promise<DeliveryDetail> {
    const delivery = await this.findDelivery(accountId, webhookId, deliveryId);
    const { attempts: _count, ...fields } = toDeliveryView(delivery);
    const attempts = await this.store.webhooks.listAttempts(delivery.id);
    return {
      ...fields,
      payload: JSON.parse(delivery.payload) as Record<string, unknown>,
      attempts: attempts.map((a) => ({ at: a.at, status_code: a.statusCode, error: a.error, duration_ms: a.durationMs, response_excerpt: a.responseExcerpt })),
    };
  }

  /** Makes the delivery due now, whatever its status, with the same webhook-id. */
  async redeliver(accountId: string, webhookId: string, deliveryId: string): Promise<Delivery> {
    const delivery = await this.findDelivery(accountId, webhookId, deliveryId);
    const now = this.clock().toISOString();
    await this.store.webhooks.redeliver(delivery.id, now);
    this.onDeliveryDue();
    return toDeliveryView({ ...delivery, status: 'pending', nextAttemptAt: now, retrySince: now, deliveredAt: null });
  }

  private async findDelivery(accountId: string, webhookId: string, deliveryId: string): Promise<DeliveryRecord> {
    const endpoint = await this.get(accountId, webhookId);
    const delivery = await this.store.webhooks.getDelivery(endpoint.id, deliveryId);
    if (!delivery) throw new QuarryError('delivery_not_found', `No delivery with delivery_id "${deliveryId}" for webhook "${webhookId}".`);
    return delivery;
  }

  /**
   * An http(s) URL without credentials, normalized. An address literal (or a localhost name)
   * that is not public is refused here already; names are checked again at every attempt.
   */
  private checkedUrl(raw: string): string {
    let url: URL;
    try {
      url = parseUrl(raw);
    } catch (err) {
      if (err instanceof WebFetchError) throw QuarryError.validation('url', `url: ${err.message}`);
      throw err;
    }
    if (!this.allowPrivate) {
      const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
      const why = isIP(host) !== 0 ? blockedReason(host) : /(^|\.)localhost\.?$/i.test(host) ? 'loopback' : undefined;
      if (why) throw QuarryError.validation('url', `url: ${host} is not a public address (${why}); webhooks reach only the public internet unless QUARRY_FETCH_ALLOW_PRIVATE=1`);
    }
    return url.href;
  }
}
