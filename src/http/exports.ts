/** Answers that are files: a task's output or a group's merged table as CSV or JSON Lines. */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ExportFormat } from '../contract/index.js';
import { exportContentType } from '../outputs/export.js';

/** `format=` when given, else CSV when the client accepts `text/csv`, else a JSON page. */
export function wantedFormat(request: FastifyRequest, format: ExportFormat | undefined): ExportFormat {
  if (format) return format;
  return /\btext\/csv\b/.test(request.headers.accept ?? '') ? 'csv' : 'json';
}

/** Streams `chunks` as the file `fileName`, written as they come (an export of any size is never held whole). */
export function sendExport(reply: FastifyReply, format: Exclude<ExportFormat, 'json'>, fileName: string, chunks: AsyncIterable<string>): FastifyReply {
  return reply
    .type(exportContentType(format))
    .header('Content-Disposition', `attachment; filename="${fileName}"`)
    .send(Readable.from(chunks));
}
