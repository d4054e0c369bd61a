/**
 * Task group routes (decisions §15.2): schema → one call to the group service → reply. The
 * group's stream is its stored events (under the group's id), replayed and then followed live
 * as a task's are.
 */
import type { FastifyInstance } from 'fastify';
import { ROUTES } from '../../contract/index.js';
import { mergedOutput } from '../../groups/group-view.js';
import { exportMergedRows } from '../../outputs/export.js';
import { contractRoute, typed } from '../contract-route.js';
import { sendExport, wantedFormat } from '../exports.js';
import { groupRowsBody } from '../spliced-bodies.js';
import { withIdempotency } from '../idempotency.js';
import { nextPageHeaders, publicBaseUrl } from '../public-url.js';
import { resumeSeq, streamEvents } from '../sse.js';

export async function groupRoutes(fastify: FastifyInstance): Promise<void> {
  const app = typed(fastify);
  const { groups, events, config } = app.deps;

  app.route({
    ...contractRoute(ROUTES.createGroup),
    handler: async (request, reply) => withIdempotency(request, reply, async (guard) => reply.send(await groups.create(request.accountId, request.body, guard))),
  });

  app.route({
    ...contractRoute(ROUTES.listGroups),
    handler: async (request, reply) => {
      const { limit = 50, cursor, q, status } = request.query;
      const page = await groups.list(request.accountId, limit, cursor, { q, status });
      if (page.nextCursor) {
        reply.header('X-Next-Cursor', page.nextCursor);
        const next = new URLSearchParams({ limit: String(limit), ...(q === undefined ? {} : { q }), ...(status === undefined ? {} : { status }), cursor: page.nextCursor });
        reply.header('Link', `<${publicBaseUrl(request, config.publicUrl)}/group?${next.toString()}>; rel="next"`);
      }
      return page.groups;
    },
  });

  app.route({
    ...contractRoute(ROUTES.getGroup),
    handler: async (request) => groups.get(request.accountId, request.params.group_id),
  });

  app.route({
    ...contractRoute(ROUTES.addGroupInputs),
    handler: async (request) => groups.addInputs(request.accountId, request.params.group_id, request.body),
  });

  app.route({
    ...contractRoute(ROUTES.getGroupRows),
    handler: async (request, reply) => {
      const group = await groups.find(request.accountId, request.params.group_id);
      const format = wantedFormat(request, request.query.format);
      if (format !== 'json') return sendExport(reply, format, `${group.id}.${format}`, exportMergedRows(mergedOutput(group.spec), groups.allRows(group), format));
      const page = await groups.rows(group, request.query.offset ?? 0, request.query.limit ?? 100);
      return reply.type('application/json; charset=utf-8').send(groupRowsBody(page.total, page.rows));
    },
  });

  app.route({
    ...contractRoute(ROUTES.listGroupChanges),
    handler: async (request, reply) => {
      const group = await groups.find(request.accountId, request.params.group_id);
      const page = await groups.changes(group, request.query);
      if (page.nextCursor) nextPageHeaders(request, reply, config.publicUrl, `/group/${group.id}/changes`, request.query, page.nextCursor);
      return { changes: page.changes };
    },
  });

  app.route({
    ...contractRoute(ROUTES.streamGroup),
    handler: async (request, reply) => {
      const resumeAt = resumeSeq(request, request.query.after) ?? 0;
      const group = await groups.find(request.accountId, request.params.group_id);
      const afterSeq = Math.min(resumeAt, group.lastEventSeq);
      const idle = group.counts.pending + group.counts.running === 0;
      // Nothing left to run and nothing new after the resume point: 204 (which stops an EventSource).
      if (idle && afterSeq >= group.lastEventSeq) return reply.code(204).send(null);
      // A group with nothing to run: what was stored, up to its last event. Else until a `done`
      // still to come (an earlier one, followed by more inputs, is passed over).
      const openedAt = group.lastEventSeq;
      await streamEvents(request, reply, {
        events, pingIntervalMs: config.pingIntervalMs, maxBufferBytes: config.sseMaxBufferBytes,
        streamId: group.id, afterSeq,
        isLast: idle ? (event) => event.seq >= openedAt : (event) => event.type === 'done' && event.seq >= openedAt,
      });
    },
  });

  app.route({
    ...contractRoute(ROUTES.stopGroup),
    handler: async (request) => groups.stop(request.accountId, request.params.group_id),
  });

  app.route({
    ...contractRoute(ROUTES.retryGroup),
    handler: async (request) => groups.retry(request.accountId, request.params.group_id, request.body?.include, request.body?.max_credits),
  });

  app.route({
    ...contractRoute(ROUTES.listGroupRuns),
    handler: async (request, reply) => {
      const { limit = 100, status, cursor } = request.query;
      const page = await groups.runs(request.accountId, request.params.group_id, limit, { status, cursor });
      if (page.nextCursor) {
        reply.header('X-Next-Cursor', page.nextCursor);
        const next = new URLSearchParams({ limit: String(limit), ...(status === undefined ? {} : { status }), cursor: page.nextCursor });
        reply.header('Link', `<${publicBaseUrl(request, config.publicUrl)}/group/${encodeURIComponent(request.params.group_id)}/runs?${next.toString()}>; rel="next"`);
      }
      return { runs: page.runs };
    },
  });
}
