/**
 * Output routes: pages of rows as JSON (rows are spliced in as stored, never re-serialized),
 * whole outputs streamed as CSV or JSONL, the list of a task's outputs, and the snapshots of
 * what the task read (its sources).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ROUTES, type OutputQuery } from '../../contract/index.js';
import { exportFileName, exportRows } from '../../outputs/export.js';
import type { SourceSnapshotInfo } from '../../domain/records.js';
import { contractRoute, typed } from '../contract-route.js';
import { sendExport, wantedFormat } from '../exports.js';
import { nextPageHeaders } from '../public-url.js';
import { outputPageBody } from '../spliced-bodies.js';

export async function outputRoutes(fastify: FastifyInstance): Promise<void> {
  const app = typed(fastify);
  const { queries } = app.deps;

  async function sendOutput(request: FastifyRequest, reply: FastifyReply, query: OutputQuery, taskId: string, outputId: string | undefined) {
    const { task, output } = await queries.output(request.accountId, taskId, outputId);
    if (!output) return reply.type('application/json; charset=utf-8').send(outputPageBody(0, [], null));
    const format = wantedFormat(request, query.format);
    if (format !== 'json') return sendExport(reply, format, exportFileName(output, format), exportRows(output, queries.allRows(task, output), format));
    const { total, rows } = await queries.rows(task, output, query.offset ?? 0, query.limit ?? 100);
    return reply.type('application/json; charset=utf-8').send(outputPageBody(total, rows, { id: output.id, kind: output.kind, path: output.path }));
  }

  app.route({
    ...contractRoute(ROUTES.getOutput),
    handler: (request, reply) => sendOutput(request, reply, request.query, request.params.task_id, request.query.output),
  });

  app.route({
    ...contractRoute(ROUTES.getNamedOutput),
    handler: (request, reply) => sendOutput(request, reply, request.query, request.params.task_id, request.params.output_id),
  });

  app.route({
    ...contractRoute(ROUTES.listOutputs),
    handler: async (request) => {
      const task = await queries.task(request.accountId, request.params.task_id);
      const stats = new Map((await queries.outputStats(task)).map((s) => [s.outputId, s]));
      return {
        outputs: task.spec.outputs.map((o) => ({
          id: o.id,
          kind: o.kind,
          path: o.path,
          description: o.description ?? null,
          ...(o.columns ? { columns: o.columns } : {}),
          row_count: stats.get(o.id)?.rowCount ?? 0,
          verified_rows: stats.get(o.id)?.verifiedCount ?? 0,
          unverified_rows: (stats.get(o.id)?.rowCount ?? 0) - (stats.get(o.id)?.verifiedCount ?? 0),
          supported_cells: stats.get(o.id)?.cells.supported ?? 0,
          unsupported_cells: stats.get(o.id)?.cells.unsupported ?? 0,
          unchecked_cells: stats.get(o.id)?.cells.unchecked ?? 0,
          updated_at: stats.get(o.id)?.updatedAt ?? null,
        })),
      };
    },
  });

  app.route({
    ...contractRoute(ROUTES.recheckTask),
    handler: async (request) => app.deps.commands.recheck(request.accountId, request.params.task_id),
  });

  app.route({
    ...contractRoute(ROUTES.listSources),
    handler: async (request) => {
      const { total, sources } = await queries.sources(request.accountId, request.params.task_id, request.query.limit ?? 50, request.query.offset ?? 0);
      return { total, sources: sources.map(toSourceInfo) };
    },
  });

  app.route({
    ...contractRoute(ROUTES.listChanges),
    handler: async (request, reply) => {
      const { task_id } = request.params;
      const page = await queries.changes(request.accountId, task_id, request.query);
      if (page.nextCursor) nextPageHeaders(request, reply, app.deps.config.publicUrl, `/task/${encodeURIComponent(task_id)}/changes`, request.query, page.nextCursor);
      return { changes: page.changes };
    },
  });

  app.route({
    ...contractRoute(ROUTES.getSource),
    handler: async (request) => {
      const source = await queries.source(request.accountId, request.params.task_id, request.params.source_id);
      return { ...toSourceInfo(source), text: source.text };
    },
  });
}

function toSourceInfo(s: SourceSnapshotInfo) {
  return { source_id: s.id, url: s.url, final_url: s.finalUrl, upload_id: s.uploadId, title: s.title, fetched_at: s.fetchedAt, sha256: s.sha256, bytes: s.bytes };
}
