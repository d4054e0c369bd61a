/**
 * `quarry upload FILE`: asks for a signed URL and PUTs the file to it. The file is read from
 * disk as it is sent, not loaded into memory first.
 */
import { openAsBlob } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseCommand, type CliContext } from '../context.js';
import { ExitCode, UsageError, type ExitCodeValue } from '../exit-codes.js';

const CONTENT_TYPES: Record<string, string> = {
  '.csv': 'text/csv',
  '.tsv': 'text/tab-separated-values',
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.json': 'application/json',
  '.jsonl': 'application/x-ndjson',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.pdf': 'application/pdf',
};

export async function uploadCommand(ctx: CliContext, args: string[]): Promise<ExitCodeValue> {
  const { values, positionals } = parseCommand(args, { 'content-type': { type: 'string' }, name: { type: 'string' } }, { min: 1, max: 1, names: 'FILE' });
  const file = positionals[0]!;
  const stat = await fs.stat(file).catch((err: Error) => {
    throw new UsageError(`cannot read ${file}: ${err.message}`);
  });
  if (!stat.isFile()) throw new UsageError(`${file} is not a file`);
  const filename = values.name ?? path.basename(file);
  const contentType = values['content-type'] ?? CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
  const data = await openAsBlob(file, { type: contentType });
  const stored = await ctx.client().uploads.upload({ data, filename, content_type: contentType });
  if (ctx.json) {
    ctx.printJson({ ...stored, filename, content_type: contentType });
  } else {
    ctx.out(`${stored.upload_id}  ${filename}  ${stored.size_bytes} bytes  sha256 ${stored.sha256}`);
    if (ctx.io.stdout.isTTY) ctx.err(`use it in a spec: "inputs": [{"upload_id": "${stored.upload_id}", "name": "${filename}"}]`);
  }
  return ExitCode.ok;
}
