/**
 * Output routes: pages of rows as JSON (rows are spliced in as stored, never re-serialized),
 * whole outputs streamed as CSV or JSONL, and the list of a task's outputs.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { QuarryError } from '../../errors.js';
import { exportContentType, exportFileName, exportRows } from '../../outputs/export.js';
import type { OutputDecl } from '../../tasks/spec.js';
import { activeOutputOf } from '../../tasks/task-view.js';
import { OutputPageReplies, OutputParams, OutputQuery, TaskIdParams } from '../schemas.js';

interface OutputQueryValues {
  limit: number;
  offset: number;
  output?: string;
  format?: 'json' | 'csv' | 'jsonl';
}

function wantedFormat(request: FastifyRequest, query: OutputQueryValues): 'json' | 'csv' | 'jsonl' {
  if (query.format) return query.format;
  return /\btext\/csv\b/.test(request.headers.accept ?? '') ? 'csv' : 'json';
}

const COMMA = Buffer.from(',');

/**
 * The page as one buffer of the rows' stored bytes: a 50,000-row page is tens of megabytes, and
 * joining it as a string would cost a UTF-16 copy, a flattening and a re-encoding on write.
 */
function pageBody(total: number, rows: Buffer[], outputRef: string): Buffer {
  const parts: Buffer[] = [Buffer.from(`{"total":${total},"rows":[`)];
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) parts.push(COMMA);
    parts.push(rows[i]!);
  }
  parts.push(Buffer.from(`],"output":${outputRef}}`));
  return Buffer.concat(parts);
}

export async function outputRoutes(app: FastifyInstance): Promise<void> {
  const { tasks, store } = app.deps;

  async function sendOutput(request: FastifyRequest, reply: FastifyReply, taskId: string, outputId: string | undefined) {
    const query = request.query as OutputQueryValues;
    const task = await tasks.getTask(request.accountId, taskId);
    const id = outputId ?? activeOutputOf(task);
    if (!id) return reply.type('application/json; charset=utf-8').send('{"total":0,"rows":[],"output":null}');
    const output = task.spec.outputs.find((o) => o.id === id);
    if (!output) throw new QuarryError('not_found', `Task "${task.id}" has no output "${id}". GET /task/${task.id}/outputs lists them.`);
    const format = wantedFormat(request, query);
    if (format !== 'json') return streamExport(reply, task.id, output, format);
    const stats = await store.listOutputStats(task.id);
    const total = stats.find((s) => s.outputId === id)?.rowCount ?? 0;
    const rows = query.offset < total ? await store.readRows(task.id, id, query.offset, query.limit) : [];
    const ref = JSON.stringify({ id: output.id, kind: output.kind, path: output.path });
    return reply.type('application/json; charset=utf-8').send(pageBody(total, rows, ref));
  }

  function streamExport(reply: FastifyReply, taskId: string, output: OutputDecl, format: 'csv' | 'jsonl') {
    const body = Readable.from(exportRows(output, store.iterateRows(taskId, output.id), format));
    return reply
      .type(exportContentType(format))
      .header('Content-Disposition', `attachment; filename="${exportFileName(output, format)}"`)
      .send(body);
  }

  app.get('/task/:task_id/output', { schema: { response: OutputPageReplies, params: TaskIdParams, querystring: OutputQuery, tags: ['outputs'], summary: 'Rows of the active output (or ?output=ID); format=csv|jsonl exports' } }, async (request, reply) => {
    const { task_id } = request.params as { task_id: string };
    return sendOutput(request, reply, task_id, (request.query as OutputQueryValues).output);
  });

  app.get('/task/:task_id/outputs/:output_id', { schema: { response: OutputPageReplies, params: OutputParams, querystring: OutputQuery, tags: ['outputs'], summary: 'Rows of one named output' } }, async (request, reply) => {
    const { task_id, output_id } = request.params as { task_id: string; output_id: string };
    return sendOutput(request, reply, task_id, output_id);
  });

  app.get('/task/:task_id/outputs', { schema: { params: TaskIdParams, tags: ['outputs'], summary: "The task's named outputs with row counts" } }, async (request) => {
    const { task_id } = request.params as { task_id: string };
    const task = await tasks.getTask(request.accountId, task_id);
    const stats = new Map((await store.listOutputStats(task.id)).map((s) => [s.outputId, s]));
    return {
      outputs: task.spec.outputs.map((o) => ({
        id: o.id,
        kind: o.kind,
        path: o.path,
        description: o.description ?? null,
        ...(o.columns ? { columns: o.columns } : {}),
        row_count: stats.get(o.id)?.rowCount ?? 0,
        updated_at: stats.get(o.id)?.updatedAt ?? null,
      })),
    };
  });
}
