/**
 * The metrics of one Quarry instance in Prometheus' text format (`GET /metrics`, docs/metrics.md),
 * kept with prom-client in a registry of the instance's own: tests run many instances in one
 * process, and the library's global registry would mix their numbers and refuse a second series
 * of one name.
 */
import { Counter, Gauge, Histogram, Registry, type Metric, type MetricValue } from 'prom-client';
import type { TurnsRepository } from '../store/store.js';
import { isStoreUnavailable } from '../store/store-errors.js';
import type { LimitedProvider, ScrapableMetrics, StoreErrorSource, TurnOutcome, WebhookAttemptResult } from './metrics.js';

const TURN_OUTCOMES: TurnOutcome[] = ['completed', 'failed', 'stopped'];
const WEBHOOK_RESULTS: WebhookAttemptResult[] = ['delivered', 'retrying', 'dead'];
const STORE_ERROR_SOURCES: StoreErrorSource[] = ['http', 'turns', 'webhooks', 'metrics'];
const LIMITED_PROVIDERS: LimitedProvider[] = ['model', 'search'];
/** A provider call waits nothing, a pacing gap, or a provider's reset (up to a minute and more). */
const PROVIDER_WAIT_BUCKETS_S = [0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Answers take milliseconds; long-polls up to a minute. */
const HTTP_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** A turn is seconds to its limit (max_turn_seconds, up to hours). */
const TURN_BUCKETS_S = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200];

export interface PrometheusMetricsOptions {
  /** Read at each scrape for the queue gauges. */
  turns: Pick<TurnsRepository, 'countPending' | 'countRunning'>;
  /** The route templates that open event streams: each shows 0 open until its first. */
  streamRoutes: readonly string[];
}

export class PrometheusMetrics implements ScrapableMetrics {
  private readonly registry = new Registry();
  private readonly requests = new RequestSeries();
  private readonly streams: Gauge<'route'>;
  private readonly turns: Counter<'outcome'>;
  private readonly turnSeconds: Histogram<'outcome'>;
  private readonly tokens: Counter<'type'>;
  private readonly compactions: Counter;
  private readonly webhookAttempts: Counter<'status'>;
  private readonly storeErrors: Counter<'component'>;
  private readonly providerWaits: Histogram<'provider'>;
  private readonly providerWaitingCalls: Gauge<'provider'>;

  constructor(opts: PrometheusMetricsOptions) {
    const registers = [this.registry];
    for (const metric of this.requests.metrics()) this.registry.registerMetric(metric);
    this.streams = new Gauge({ name: 'quarry_streams_open', help: 'Event streams (SSE) open now, by route template.', labelNames: ['route'], registers });
    this.turns = new Counter({ name: 'quarry_turns_total', help: 'Turns this process ran that ended, by outcome.', labelNames: ['outcome'], registers });
    this.turnSeconds = new Histogram({ name: 'quarry_turn_duration_seconds', help: 'How long this process worked on a turn that ended, by outcome.', labelNames: ['outcome'], buckets: TURN_BUCKETS_S, registers });
    this.tokens = new Counter({
      name: 'quarry_model_tokens_total', help: 'Tokens the model provider reported: input (prompt, all of it), cached_input (of input, read from the prompt cache) and output (completion).',
      labelNames: ['type'], registers,
    });
    this.compactions = new Counter({ name: 'quarry_context_compactions_total', help: 'Times a turn\'s conversation was compacted to stay inside QUARRY_MODEL_CONTEXT_TOKENS.', registers });
    this.webhookAttempts = new Counter({
      name: 'quarry_webhook_deliveries_total', help: 'Webhook delivery attempts, by what they left the delivery as: delivered, retrying (another attempt is scheduled) or dead.',
      labelNames: ['status'], registers,
    });
    this.storeErrors = new Counter({ name: 'quarry_store_errors_total', help: 'Store operations that found the database unavailable (busy, disk full, connection lost), by component.', labelNames: ['component'], registers });
    this.providerWaits = new Histogram({
      name: 'quarry_provider_wait_seconds', help: 'How long a call to a provider (model, search) waited for its place under the provider\'s limits, fixed or learned; 0 when it waited for nothing.',
      labelNames: ['provider'], buckets: PROVIDER_WAIT_BUCKETS_S, registers,
    });
    this.providerWaitingCalls = new Gauge({ name: 'quarry_provider_waiting_calls', help: 'Calls of this process waiting now for their place under a provider\'s limits, by provider.', labelNames: ['provider'], registers });
    const storeGauge = (name: string, help: string, count: () => Promise<number>) => {
      const gauge: Gauge = new Gauge({
        name, help, registers,
        // Read at the scrape, from the store every process shares: the queue as it is, not as one process saw it.
        collect: async () => {
          try {
            gauge.set(await count());
          } catch (err) {
            if (!isStoreUnavailable(err)) throw err;
            this.storeUnavailable('metrics');
            // Unknown rather than a stale number: the rest of the scrape still answers.
            gauge.set(Number.NaN);
          }
        },
      });
    };
    storeGauge('quarry_turns_pending', 'Turns waiting for a worker, in the whole service.', () => opts.turns.countPending());
    storeGauge('quarry_turns_running', 'Turns held by a worker now, in the whole service.', () => opts.turns.countRunning());

    // Every known label value starts at 0, so a rate() or an alert has a series before the first event.
    for (const outcome of TURN_OUTCOMES) {
      this.turns.inc({ outcome }, 0);
      this.turnSeconds.zero({ outcome });
    }
    for (const route of opts.streamRoutes) this.streams.set({ route }, 0);
    for (const type of ['input', 'cached_input', 'output']) this.tokens.inc({ type }, 0);
    for (const status of WEBHOOK_RESULTS) this.webhookAttempts.inc({ status }, 0);
    for (const component of STORE_ERROR_SOURCES) this.storeErrors.inc({ component }, 0);
    for (const provider of LIMITED_PROVIDERS) {
      this.providerWaits.zero({ provider });
      this.providerWaitingCalls.set({ provider }, 0);
    }
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every series in the text format, with the store's gauges read now. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  httpRequest(request: { method: string; route: string; status: number; seconds: number | null }): void {
    this.requests.add(request.method, request.route, request.status, request.seconds);
  }

  streamOpened(route: string): () => void {
    this.streams.inc({ route });
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      this.streams.dec({ route });
    };
  }

  turnEnded(outcome: TurnOutcome, seconds: number): void {
    this.turns.inc({ outcome });
    this.turnSeconds.observe({ outcome }, seconds);
  }

  modelUsage(usage: { tokensIn: number; tokensInCached: number; tokensOut: number; compactions: number }): void {
    if (usage.tokensIn > 0) this.tokens.inc({ type: 'input' }, usage.tokensIn);
    if (usage.tokensInCached > 0) this.tokens.inc({ type: 'cached_input' }, usage.tokensInCached);
    if (usage.tokensOut > 0) this.tokens.inc({ type: 'output' }, usage.tokensOut);
    if (usage.compactions > 0) this.compactions.inc(usage.compactions);
  }

  webhookAttempt(result: WebhookAttemptResult): void {
    this.webhookAttempts.inc({ status: result });
  }

  providerWait(provider: LimitedProvider, seconds: number): void {
    this.providerWaits.observe({ provider }, seconds);
  }

  providerWaiting(provider: LimitedProvider, delta: number): void {
    this.providerWaitingCalls.inc({ provider }, delta);
  }

  storeUnavailable(source: StoreErrorSource): void {
    this.storeErrors.inc({ component: source });
  }
}

/** The answers of one method on one route template: a count per status, and the answer times' histogram (non-streamed answers). */
interface RouteRequests {
  labels: { method: string; route: string };
  statuses: Map<number, number>;
  /** Answers per bucket of HTTP_BUCKETS_S (each counted once, in the first bucket it fits), and all of them. */
  buckets: number[];
  count: number;
  sum: number;
}

/**
 * The request counter and answer-time histogram, counted in plain numbers and handed to the
 * registry as prom-client metrics read at each scrape. prom-client's own Counter and Histogram
 * check and hash their labels at every increment, a cost every request paid; here a request costs
 * two map look-ups. The text they scrape to is the one prom-client's Counter and Histogram write.
 */
class RequestSeries {
  private readonly byMethod = new Map<string, Map<string, RouteRequests>>();

  add(method: string, route: string, status: number, seconds: number | null): void {
    let byRoute = this.byMethod.get(method);
    if (!byRoute) this.byMethod.set(method, (byRoute = new Map()));
    let series = byRoute.get(route);
    if (!series) byRoute.set(route, (series = { labels: { method, route }, statuses: new Map(), buckets: HTTP_BUCKETS_S.map(() => 0), count: 0, sum: 0 }));
    series.statuses.set(status, (series.statuses.get(status) ?? 0) + 1);
    if (seconds === null) return;
    series.count++;
    series.sum += seconds;
    const bucket = HTTP_BUCKETS_S.findIndex((bound) => seconds <= bound);
    if (bucket >= 0) series.buckets[bucket]!++;
  }

  private *series(): Iterable<RouteRequests> {
    for (const byRoute of this.byMethod.values()) yield* byRoute.values();
  }

  /** The two metrics to register; each reads the counts when it is scraped. */
  metrics(): Metric[] {
    const counter = scraped('quarry_http_requests_total', 'HTTP requests answered, by route template and status.', 'counter', () =>
      [...this.series()].flatMap((s) => [...s.statuses].map(([status, value]) => ({ labels: { ...s.labels, status: String(status) }, value }))));
    const name = 'quarry_http_request_duration_seconds';
    const histogram = scraped(name, 'Time to answer an HTTP request (event streams are left out: they last as long as the client follows).', 'histogram', () =>
      [...this.series()].filter((s) => s.count > 0).flatMap((s) => {
        let below = 0;
        return [
          ...HTTP_BUCKETS_S.map((le, i) => ({ labels: { le, ...s.labels }, value: (below += s.buckets[i]!), metricName: `${name}_bucket` })),
          { labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: `${name}_bucket` },
          { labels: s.labels, value: s.sum, metricName: `${name}_sum` },
          { labels: s.labels, value: s.count, metricName: `${name}_count` },
        ];
      }));
    return [counter, histogram];
  }
}

/** A metric whose values are read when it is scraped, in the shape the registry reads from prom-client's own. */
function scraped(name: string, help: string, type: 'counter' | 'histogram', values: () => MetricValue<string>[]): Metric {
  const read = () => Promise.resolve({ name, help, type, aggregator: 'sum' as const, values: values() });
  return { name, help, type, aggregator: 'sum', get: read, reset() {} } as unknown as Metric;
}
