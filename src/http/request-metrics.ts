/**
 * Every answered request is counted by its route template (`/task/:task_id`, never the raw
 * path: one series per route, not per task) and status; requests no route matched share one
 * label. Store outages met by requests are counted where Fastify hands them to the error handler.
 */
import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../metrics/metrics.js';
import { isStoreUnavailable } from '../store/store-errors.js';
import { isEventStream } from './sse.js';

/** The route label of a request no route matched (404s). */
const UNMATCHED_ROUTE = 'unmatched';

export function registerRequestMetrics(app: FastifyInstance, metrics: Pick<Metrics, 'httpRequest' | 'storeUnavailable'>): void {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.is404 ? UNMATCHED_ROUTE : (request.routeOptions.url ?? UNMATCHED_ROUTE);
    // An event stream's time is how long its client followed it: nothing to put beside answer times.
    const streamed = isEventStream(reply.raw);
    metrics.httpRequest({ method: request.method, route, status: reply.statusCode, seconds: streamed ? null : reply.elapsedTime / 1000 });
    done();
  });
  app.addHook('onError', (_request, _reply, err, done) => {
    if (isStoreUnavailable(err)) metrics.storeUnavailable('http');
    done();
  });
}
