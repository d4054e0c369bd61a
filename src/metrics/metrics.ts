/**
 * What Quarry's modules report for the operator's metrics (decisions §15.5). Each module takes
 * the few methods it reports through, so none of them knows how the numbers are kept or shown;
 * PrometheusMetrics (prometheus-metrics.ts) is the one implementation that keeps them.
 */

/** How a turn ended, as its `done` event says (a turn handed to another worker has not ended). */
export type TurnOutcome = 'completed' | 'failed' | 'stopped';

/** What one webhook attempt left its delivery as: sent, to be tried again, or given up. */
export type WebhookAttemptResult = 'delivered' | 'retrying' | 'dead';

/** Where a store failure that means "unavailable" (store-errors.ts) was met. */
export type StoreErrorSource = 'http' | 'turns' | 'webhooks' | 'metrics';

/** A provider whose limits calls wait under (agent/providers/provider-gate.ts). */
export type LimitedProvider = 'model' | 'search';

export interface Metrics {
  /** A request was answered: its route template (never the raw path), status and time to answer. */
  httpRequest(request: { method: string; route: string; status: number; seconds: number | null }): void;
  /** An event stream opened on `route`; the function returned is called once when it closes. */
  streamOpened(route: string): () => void;
  /** A turn this process ran ended, after `seconds` of work here. */
  turnEnded(outcome: TurnOutcome, seconds: number): void;
  /** What a model call used, as its provider reported it (input counts the cached input too), and the compactions before it. */
  modelUsage(usage: { tokensIn: number; tokensInCached: number; tokensOut: number; compactions: number }): void;
  webhookAttempt(result: WebhookAttemptResult): void;
  /** A provider call got its place after waiting `seconds` (0 when it waited for nothing) under the provider's limits. */
  providerWait(provider: LimitedProvider, seconds: number): void;
  /** Calls waiting for their place changed by `delta` (+1 one more waits, -1 one stopped waiting). */
  providerWaiting(provider: LimitedProvider, delta: number): void;
  storeUnavailable(source: StoreErrorSource): void;
}

/** Metrics that can also be shown: what `GET /metrics` answers with. */
export interface ScrapableMetrics extends Metrics {
  readonly contentType: string;
  /** Every series as text, with values read from the store at this moment. */
  scrape(): Promise<string>;
}

/** Reports to nothing: for parts built without metrics (unit tests that build one module). */
export const NO_METRICS: Metrics = {
  httpRequest() {},
  streamOpened: () => () => {},
  turnEnded() {},
  modelUsage() {},
  webhookAttempt() {},
  providerWait() {},
  providerWaiting() {},
  storeUnavailable() {},
};
