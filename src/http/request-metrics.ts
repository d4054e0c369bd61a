/**
 * Every answered request is counted by its route template (`/task/:task_id`, never the raw
 * path: one series per route, not per task) and status; requests no route matched share one
 * label. Store outages met by requests are counted where Fastify hands them to the error handler.
 */
import type { FastifyInstance, onResponseHookHandler } from 'fastify';
import type { Metrics } from '../metrics/metrics.js';
import { isStoreUnavailable } from '../store/store-errors.js';
import { routeHooks } from './contract-route.js';
import { isEventStream } from './sse.js';

/** The route label of a request no route matched (404s). */
const UNMATCHED_ROUTE = 'unmatched';

/**
 * Each route counts its answers with its template in hand, from a hook given to it as it is
 * added, rather than looking its template up per request (Fastify builds the route's options
 * object at each read). Returns the hook that counts the not-found handler's answers.
 */
export function registerRequestMetrics(app: FastifyInstance, metrics: Pick<Metrics, 'httpRequest' | 'storeUnavailable'>): onResponseHookHandler {
  const countAnswers = (route: string): onResponseHookHandler => (request, reply, done) => {
    // An event stream's time is how long its client followed it: nothing to put beside answer times.
    const streamed = isEventStream(reply.raw);
    metrics.httpRequest({ method: request.method, route, status: reply.statusCode, seconds: streamed ? null : reply.elapsedTime / 1000 });
    done();
  };
  app.addHook('onRoute', (route) => {
    route.onResponse = [...routeHooks(route.onResponse), countAnswers(route.url)];
  });
  app.addHook('onError', (_request, _reply, err, done) => {
    if (isStoreUnavailable(err)) metrics.storeUnavailable('http');
    done();
  });
  return countAnswers(UNMATCHED_ROUTE);
}
