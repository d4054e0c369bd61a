/**
 * Sends webhook deliveries out of the outbox (decisions §15.3). Each process that runs turns
 * runs one dispatcher; a delivery is claimed by exactly one of them for each attempt
 * (WebhooksRepository.claimDue), POSTed signed, without following redirects, within the attempt
 * timeout, to an address the SSRF policy allows, and its outcome recorded: delivered on a 2xx,
 * else due again after the next wait of the retry schedule (or the receiver's Retry-After on a
 * 429 or 503), or dead once that would pass the give-up time. A process that dies mid-attempt leaves its claim to run out; the delivery is
 * then sent again, with the same webhook-id, by whichever process claims it next.
 */
import type { Logger } from 'pino';
import { ClaimLoop } from '../claim-loop.js';
import type { WebhookConfig } from '../config.js';
import { crashPoint } from '../crash-points.js';
import { safeFetch, WebFetchError } from '../net/safe-fetch.js';
import type { Metrics } from '../metrics/metrics.js';
import { RetryPolicy, retryAfterMs } from '../retry-policy.js';
import { isStoreUnavailable } from '../store/store-errors.js';
import type { AttemptLogRecord, AttemptResult, DeliveryRecord, WebhookEndpointRecord } from '../domain/records.js';
import type { Store } from '../store/store.js';
import { signatureHeader } from './signing.js';
import { signingSecrets } from './webhooks.js';

/** Attempts one process has in flight at most. */
const MAX_IN_FLIGHT = 16;
/**
 * How long a claim outlives the attempt's own timeout (which bounds the whole request), so a
 * sender that is slow to record its outcome is not taken over. A takeover costs a repeat send,
 * never a lost one: the late record is refused (recordAttempt).
 */
export const CLAIM_MARGIN_MS = 5_000;
/** How often the outbox is looked at without a wake (retries falling due, deliveries queued by other processes). */
const POLL_MS = 1000;
/** Bytes of a receiver's answer read (and dropped): only its status matters. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** How much of each answer an attempt's log keeps (GET /webhooks/{id}/deliveries/{delivery_id}). */
const RESPONSE_EXCERPT_BYTES = 2048;
const USER_AGENT = 'Quarry-Webhooks/1.0';

export interface DispatcherOptions {
  store: Store;
  config: WebhookConfig;
  /** Loopback and private addresses may be reached (QUARRY_FETCH_ALLOW_PRIVATE=1). */
  allowPrivate: boolean;
  logger: Logger;
  /** Where attempts and store outages are counted. */
  metrics: Pick<Metrics, 'webhookAttempt' | 'storeUnavailable'>;
  clock?: () => Date;
}

export class WebhookDispatcher {
  private readonly inFlight = new Set<Promise<void>>();
  /**
   * One controller per attempt in flight, which stop() aborts: a single shutdown signal shared by
   * every attempt would carry one abort listener per attempt, past EventTarget's limit of 10.
   */
  private readonly attempts = new Set<AbortController>();
  /** Claims due deliveries when woken, up to the free slots. */
  private readonly claims: ClaimLoop = new ClaimLoop({
    pass: () => this.pass(),
    hasRoom: () => this.inFlight.size < MAX_IN_FLIGHT,
    onError: (err) => this.logFailure(err, 'claiming webhook deliveries failed'),
  });
  private pollTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly clock: () => Date;
  /** QUARRY_WEBHOOK_RETRY_S as documented, no jitter; retried until the give-up time, not a number of times. */
  private readonly retries: RetryPolicy;

  constructor(private readonly opts: DispatcherOptions) {
    this.clock = opts.clock ?? (() => new Date());
    this.retries = new RetryPolicy({ delaysMs: opts.config.retryDelaysMs, jitter: 'none' });
  }

  start(): void {
    this.pollTimer = setInterval(() => this.wake(), POLL_MS);
    this.pollTimer.unref();
    this.wake();
  }

  /** A delivery may have fallen due. */
  wake(): void {
    this.claims.wake();
  }

  /** Stops claiming and cuts the attempts in flight short; each is recorded as due again at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    for (const attempt of this.attempts) attempt.abort();
    await this.claims.stop();
    await Promise.allSettled([...this.inFlight]);
  }

  private async pass(): Promise<void> {
    while (!this.stopped && this.claims.mayHaveWork) {
      const free = MAX_IN_FLIGHT - this.inFlight.size;
      if (free <= 0) return;
      this.claims.mayHaveWork = false;
      const now = this.clock().getTime();
      const claimed = await this.opts.store.webhooks.claimDue(new Date(now).toISOString(), new Date(now + this.opts.config.timeoutMs + CLAIM_MARGIN_MS).toISOString(), free);
      if (claimed.length === free) this.claims.mayHaveWork = true;
      // A claim often holds many deliveries to one endpoint: it is read once for them all.
      const endpoints = new Map<string, Promise<WebhookEndpointRecord | undefined>>();
      for (const delivery of claimed) {
        let endpoint = endpoints.get(delivery.endpointId);
        if (!endpoint) endpoints.set(delivery.endpointId, (endpoint = this.opts.store.webhooks.getEndpoint(delivery.endpointId)));
        const attempt = this.attempt(delivery, endpoint)
          .catch((err) => this.logFailure(err, 'recording a webhook attempt failed', delivery))
          .finally(() => {
            this.inFlight.delete(attempt);
            this.claims.soon();
          });
        this.inFlight.add(attempt);
      }
    }
  }

  private async attempt(delivery: DeliveryRecord, endpointRead: Promise<WebhookEndpointRecord | undefined>): Promise<void> {
    const { store, logger } = this.opts;
    const endpoint = await endpointRead;
    // Deleted since it was claimed: its deliveries went with it.
    if (!endpoint) return;
    const { result, log } = await this.send(delivery, endpoint.url, signingSecrets(endpoint, this.clock().getTime()));
    crashPoint('webhook.sent');
    const fields = { webhook_id: endpoint.id, delivery_id: delivery.id, attempt: delivery.attempts };
    if (result.delivered) logger.debug({ ...fields, status: result.statusCode }, 'webhook delivered');
    else logger.warn({ ...fields, url: endpoint.url, status: result.statusCode, error: result.error, next_attempt_at: result.nextAttemptAt }, result.nextAttemptAt ? 'webhook attempt failed' : 'webhook delivery is dead');
    await store.webhooks.recordAttempt(delivery, result, log);
    this.opts.metrics.webhookAttempt(result.delivered ? 'delivered' : result.nextAttemptAt ? 'retrying' : 'dead');
    // A retry due before the next poll gets a wake of its own.
    const wait = result.delivered || !result.nextAttemptAt ? Infinity : Date.parse(result.nextAttemptAt) - this.clock().getTime();
    if (wait < POLL_MS && !this.stopped) setTimeout(() => this.wake(), Math.max(0, wait)).unref();
  }

  /** Sends the delivery once: how it went, and the attempt as its log keeps it. */
  private async send(delivery: DeliveryRecord, url: string, secrets: string[]): Promise<{ result: AttemptResult; log: AttemptLogRecord }> {
    const began = performance.now();
    const sentAt = this.clock();
    let excerpt: string | null = null;
    const result = await this.post(delivery, url, secrets, sentAt, (body) => {
      excerpt = body.subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8');
    });
    const log: AttemptLogRecord = {
      attempt: delivery.attempts,
      at: sentAt.toISOString(),
      statusCode: result.statusCode,
      error: result.delivered ? null : result.error,
      durationMs: Math.round(performance.now() - began),
      responseExcerpt: excerpt,
    };
    return { result, log };
  }

  private async post(delivery: DeliveryRecord, url: string, secrets: string[], sentAt: Date, answered: (body: Buffer) => void): Promise<AttemptResult> {
    const timestamp = Math.floor(sentAt.getTime() / 1000);
    const cutShort = new AbortController();
    // An attempt that gets here after stop() is cut short at once, as one in flight would be.
    if (this.stopped) cutShort.abort();
    this.attempts.add(cutShort);
    try {
      const answer = await safeFetch(url, {
        method: 'POST',
        body: Buffer.from(delivery.payload),
        headers: {
          'content-type': 'application/json',
          'webhook-id': delivery.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(secrets, delivery.id, timestamp, delivery.payload),
        },
        accept: '*/*',
        userAgent: USER_AGENT,
        followRedirects: false,
        timeoutMs: this.opts.config.timeoutMs,
        maxBytes: MAX_ANSWER_BYTES,
        allowPrivate: this.opts.allowPrivate,
        signal: cutShort.signal,
      });
      answered(answer.body);
      if (answer.status >= 200 && answer.status < 300) return { delivered: true, statusCode: answer.status, at: this.clock().toISOString() };
      const redirect = answer.status >= 300 && answer.status < 400 ? ' (redirects are not followed)' : '';
      // A receiver that says when to come back (busy, rate limited) is taken at its word.
      const asked = answer.status === 429 || answer.status === 503 ? retryAfterMs((name) => headerText(answer.headers[name])) : undefined;
      return this.failed(delivery, answer.status, `the receiver answered HTTP ${answer.status}${redirect}`, asked);
    } catch (err) {
      if (cutShort.signal.aborted) return { delivered: false, statusCode: null, error: 'the sending process shut down mid-attempt', nextAttemptAt: this.clock().toISOString() };
      if (err instanceof WebFetchError) return this.failed(delivery, null, err.message);
      throw err;
    } finally {
      this.attempts.delete(cutShort);
    }
  }

  /**
   * A failed attempt: due again after the schedule's next wait (or the wait the receiver asked
   * for), or dead when that passes the give-up time. The schedule is followed by the time since
   * the delivery's retries began rather than by the attempt number, so a redelivery (which
   * restarts the retries) starts the schedule over however many attempts came before.
   */
  private failed(delivery: DeliveryRecord, statusCode: number | null, error: string, retryAfter?: number): AttemptResult {
    const { giveUpMs } = this.opts.config;
    const now = this.clock().getTime();
    const next = now + this.retries.delay(this.retries.retryAt(now - Date.parse(delivery.retrySince)), retryAfter);
    const dead = next - Date.parse(delivery.retrySince) > giveUpMs;
    return { delivered: false, statusCode, error, nextAttemptAt: dead ? null : new Date(next).toISOString() };
  }

  private logFailure(err: unknown, msg: string, delivery?: DeliveryRecord): void {
    const fields = { err, ...(delivery ? { delivery_id: delivery.id } : {}) };
    // The next poll tries again; a claim that was not recorded runs out and is sent again.
    if (isStoreUnavailable(err)) {
      this.opts.metrics.storeUnavailable('webhooks');
      this.opts.logger.warn(fields, `${msg}: the store is unavailable`);
    } else {
      this.opts.logger.error(fields, msg);
    }
  }
}

/** One header of an answer as a string (the first, where a server sent it twice). */
function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
