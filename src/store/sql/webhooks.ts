/**
 * Webhook endpoints and the outbox of their deliveries. Deliveries are inserted in the
 * transaction of the event that causes them (a turn's end) and leave the outbox one attempt at a
 * time: claimDue takes due ones as a single UPDATE (SKIP LOCKED where several processes claim),
 * recordAttempt is guarded by the attempt number, so a sender whose claim ran out and was taken
 * over cannot overwrite what the newer attempt recorded.
 */
import type { Selectable } from 'kysely';
import type { WebhookDeliveriesTable, WebhookEndpointsTable } from '../database.js';
import type { AttemptLogRecord, AttemptResult, DeliveryRecord, WebhookEndpointRecord } from '../../domain/records.js';

/**
 * Attempts logged per delivery. The retry schedule makes about 30 in its 24 hours; only
 * redeliveries add more, and past this the oldest go.
 */
export const ATTEMPTS_KEPT = 50;
import type { WebhooksRepository } from '../store.js';
import { SqlRepository } from './sql-repository.js';

function toEndpoint(r: Selectable<WebhookEndpointsTable>): WebhookEndpointRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    url: r.url,
    events: JSON.parse(r.events) as WebhookEndpointRecord['events'],
    description: r.description,
    secret: r.secret,
    previousSecret: r.previous_secret,
    previousSecretExpiresAt: r.previous_secret_expires_at,
    createdAt: r.created_at,
  };
}

function toDelivery(r: Selectable<WebhookDeliveriesTable>): DeliveryRecord {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    event: r.event as DeliveryRecord['event'],
    payload: r.payload,
    status: r.status as DeliveryRecord['status'],
    attempts: Number(r.attempts),
    lastStatusCode: r.last_status_code === null ? null : Number(r.last_status_code),
    lastError: r.last_error,
    nextAttemptAt: r.next_attempt_at,
    retrySince: r.retry_since,
    createdAt: r.created_at,
    deliveredAt: r.delivered_at,
  };
}

export class SqlWebhooks extends SqlRepository implements WebhooksRepository {
  async insertEndpoint(e: WebhookEndpointRecord): Promise<void> {
    await this.db.insertInto('webhook_endpoints').values({
      id: e.id, account_id: e.accountId, url: e.url, events: JSON.stringify(e.events), description: e.description,
      secret: e.secret, previous_secret: e.previousSecret, previous_secret_expires_at: e.previousSecretExpiresAt, created_at: e.createdAt,
    }).execute();
  }

  async getEndpoint(id: string): Promise<WebhookEndpointRecord | undefined> {
    const r = await this.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
    return r && toEndpoint(r);
  }

  /** Read at every turn's end (which endpoints want the event): one compiled statement on the (account_id, id) index. */
  async listEndpoints(accountId: string): Promise<WebhookEndpointRecord[]> {
    const { rows } = await this.runCompiled('webhooks.listEndpoints', [accountId], () =>
      this.db.selectFrom('webhook_endpoints').selectAll().where('account_id', '=', accountId).orderBy('id', 'desc'),
    );
    return rows.map(toEndpoint);
  }

  async countEndpoints(accountId: string): Promise<number> {
    const r = await this.db.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number>().as('n')).where('account_id', '=', accountId).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async replaceSecret(id: string, current: string, p: { secret: string; previousSecret: string | null; previousSecretExpiresAt: string | null }): Promise<boolean> {
    const r = await this.db.updateTable('webhook_endpoints')
      .set({ secret: p.secret, previous_secret: p.previousSecret, previous_secret_expires_at: p.previousSecretExpiresAt })
      .where('id', '=', id)
      .where('secret', '=', current)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async deleteEndpoint(id: string): Promise<void> {
    await this.db.deleteFrom('webhook_attempts')
      .where('delivery_id', 'in', (eb) => eb.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', id)).execute();
    await this.db.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute();
    await this.db.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
  }

  async insertDeliveries(deliveries: DeliveryRecord[]): Promise<void> {
    if (deliveries.length === 0) return;
    await this.db.insertInto('webhook_deliveries').values(deliveries.map((d) => ({
      id: d.id, endpoint_id: d.endpointId, event: d.event, payload: d.payload, status: d.status, attempts: d.attempts,
      last_status_code: d.lastStatusCode, last_error: d.lastError, next_attempt_at: d.nextAttemptAt, retry_since: d.retrySince,
      created_at: d.createdAt, delivered_at: d.deliveredAt,
    }))).execute();
  }

  async getDelivery(endpointId: string, id: string): Promise<DeliveryRecord | undefined> {
    const r = await this.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).where('endpoint_id', '=', endpointId).executeTakeFirst();
    return r && toDelivery(r);
  }

  async listDeliveries(endpointId: string, limit: number, before?: string): Promise<DeliveryRecord[]> {
    let q = this.db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId);
    if (before !== undefined) q = q.where('id', '<', before);
    const rows = await q.orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toDelivery);
  }

  async claimDue(now: string, claimUntil: string, limit: number): Promise<DeliveryRecord[]> {
    let due = this.db.selectFrom('webhook_deliveries').select('id')
      .where('status', '=', 'pending').where('next_attempt_at', '<=', now)
      .orderBy('next_attempt_at').limit(limit);
    // SKIP LOCKED: several processes claim side by side, each getting other deliveries.
    if (this.profile.skipLocked) due = due.forUpdate().skipLocked();
    // The selection as a CTE, run once: inside `IN (…)` PostgreSQL may re-run a locking sub-select
    // per row (a semi join), each run skipping the rows already updated, so LIMIT would not bound it.
    const rows = await this.db.with('due', () => due).updateTable('webhook_deliveries')
      .set((eb) => ({ attempts: eb('attempts', '+', 1), next_attempt_at: claimUntil }))
      .where('id', 'in', (eb) => eb.selectFrom('due').select('id'))
      // Between the sub-select and the update another process may have claimed it (without SKIP LOCKED).
      .where('status', '=', 'pending').where('next_attempt_at', '<=', now)
      .returningAll()
      .execute();
    return rows.map(toDelivery);
  }

  async recordAttempt(claim: Pick<DeliveryRecord, 'id' | 'attempts' | 'nextAttemptAt'>, result: AttemptResult, log?: AttemptLogRecord): Promise<boolean> {
    const set = result.delivered
      ? { status: 'delivered', last_status_code: result.statusCode, last_error: null, next_attempt_at: null, delivered_at: result.at }
      : { status: result.nextAttemptAt === null ? 'dead' : 'pending', last_status_code: result.statusCode, last_error: result.error, next_attempt_at: result.nextAttemptAt };
    const r = await this.db.updateTable('webhook_deliveries').set(set)
      // The claim's attempt number and claim time: a later claim changes both, a redelivery the time.
      .where('id', '=', claim.id).where('attempts', '=', claim.attempts).where('next_attempt_at', '=', claim.nextAttemptAt).where('status', '=', 'pending')
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) return false;
    if (!log) return true;
    // Only the attempt that still held its claim is logged; the log keeps the last ATTEMPTS_KEPT.
    await this.db.insertInto('webhook_attempts').values({
      delivery_id: claim.id, attempt: log.attempt, at: log.at, status_code: log.statusCode, error: log.error, duration_ms: log.durationMs, response_excerpt: log.responseExcerpt,
    }).onConflict((oc) => oc.columns(['delivery_id', 'attempt']).doNothing()).execute();
    if (log.attempt > ATTEMPTS_KEPT) {
      await this.db.deleteFrom('webhook_attempts').where('delivery_id', '=', claim.id).where('attempt', '<=', log.attempt - ATTEMPTS_KEPT).execute();
    }
    return true;
  }

  async listAttempts(deliveryId: string): Promise<AttemptLogRecord[]> {
    const rows = await this.db.selectFrom('webhook_attempts').selectAll().where('delivery_id', '=', deliveryId).orderBy('attempt').execute();
    return rows.map((r) => ({
      attempt: Number(r.attempt), at: r.at, statusCode: r.status_code === null ? null : Number(r.status_code), error: r.error,
      durationMs: Number(r.duration_ms), responseExcerpt: r.response_excerpt,
    }));
  }

  async redeliver(id: string, now: string): Promise<void> {
    await this.db.updateTable('webhook_deliveries')
      .set({ status: 'pending', next_attempt_at: now, retry_since: now, delivered_at: null })
      .where('id', '=', id)
      .execute();
  }

  async nextDue(): Promise<string | undefined> {
    const r = await this.db.selectFrom('webhook_deliveries').select('next_attempt_at').where('status', '=', 'pending')
      .orderBy('next_attempt_at').limit(1).executeTakeFirst();
    return r?.next_attempt_at ?? undefined;
  }
}
