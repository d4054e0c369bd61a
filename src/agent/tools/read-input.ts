/**
 * read_input {upload_id, offset?, length?}: the text of one of the task's inputs (an upload the
 * spec lists under `inputs`): txt, md, csv, json, html (as readable text) or pdf (its text),
 * a window of it at a time, in characters, with the total length so the model can page on.
 * The text of a file is extracted once and kept in a small cache while it is paged through.
 */
import fs from 'node:fs';
import { Type } from 'typebox';
import { cutText, extractText, UnsupportedContentError, type ExtractedText } from '../web/extract.js';
import { uploadUrl } from '../../outputs/citations.js';
import type { AgentTool } from './tool.js';
import type { InputFile } from '../turn-port.js';

interface ReadInputArgs {
  upload_id: string;
  offset?: number;
  length?: number;
}

export const DEFAULT_READ_LENGTH = 20_000;
export const MAX_READ_LENGTH = 100_000;
/** Files up to this size are read whole; larger text files are read up to it. */
const MAX_FILE_BYTES = 64 * 1024 * 1024;
/** Extracted text beyond this is not kept. */
const MAX_TEXT_CHARS = 20_000_000;

const parameters = Type.Object({
  upload_id: Type.String({ minLength: 1, maxLength: 64, description: 'The upload_id of one of the task inputs.' }),
  offset: Type.Optional(Type.Integer({ minimum: 0, description: 'Character to start at (default 0).' })),
  length: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_READ_LENGTH, description: `Characters to read (default ${DEFAULT_READ_LENGTH}, at most ${MAX_READ_LENGTH}).` })),
});

export const readInputTool: AgentTool<ReadInputArgs> = {
  name: 'read_input',
  concurrent: true,
  description:
    'Read the text of one of the task inputs (txt, md, csv, json, html, pdf) by upload_id, a window of characters at a time. ' +
    'The answer gives the total length; call again with a larger offset to read on. Cite it in sources as {upload_id, quote}: the quote is checked against the input\'s text.',
  parameters,
  async run(args, ctx) {
    const inputs = await ctx.inputs();
    const input = inputs.find((i) => i.upload_id === args.upload_id);
    if (!input) {
      const known = inputs.map((i) => `${i.upload_id} (${i.name})`).join(', ');
      return {
        isError: true,
        content: `${args.upload_id} is not an input of this task. ${known ? `Its inputs: ${known}.` : 'The task has no inputs.'}`,
        summary: `not an input: ${args.upload_id}`,
      };
    }

    let doc: CachedText;
    try {
      doc = await textOf(input, ctx.signal);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      if (err instanceof UnsupportedContentError) return { isError: true, content: `Could not read ${describe(input)}: ${err.message}.`, summary: `unreadable: ${input.name}` };
      if ((err as { code?: string }).code === 'ENOENT') return { isError: true, content: `The file of ${describe(input)} is missing on the server.`, summary: `missing file: ${input.name}` };
      throw err;
    }

    const total = doc.text.length;
    const offset = args.offset ?? 0;
    const read = textWindow(doc.text, offset, args.length);
    if (!read) {
      return { isError: true, content: `offset ${offset} is past the end of ${describe(input)}, which has ${count(total)} characters.`, summary: `offset past end of ${input.name}` };
    }
    const { start, end, window } = read;

    // The whole text is the input's snapshot: quotes citing {upload_id} are checked against it.
    const url = uploadUrl(input.upload_id);
    const sourceId = await ctx.recordSource({ url, finalUrl: url, uploadId: input.upload_id, title: input.name, text: doc.text });
    const head = [`Input ${describe(input)}, ${doc.extracted.kind}${doc.extracted.title ? `, title "${doc.extracted.title}"` : ''}. Source: ${sourceId}.`];
    if (doc.extracted.pages) head.push(`Pages: ${doc.extracted.pages.total}.`);
    head.push(end === total && start === 0 ? `Characters 0-${count(end)} of ${count(total)}: the whole text.` : `Characters ${count(start)}-${count(end)} of ${count(total)}.`);
    if (end < total) head.push(`More follows: call read_input with upload_id "${input.upload_id}" and offset ${end} to read on.`);
    for (const note of doc.notes) head.push(`Note: ${note}.`);
    return {
      content: `${head.join('\n')}\n\n${window || '(The input has no text.)'}`,
      summary: `read ${input.name} ${count(start)}-${count(end)} of ${count(total)} chars`,
    };
  },
};

interface CachedText {
  extracted: ExtractedText;
  text: string;
  notes: string[];
}

/** Recently read inputs, keyed by path, size and modification time; least recently used first. */
const cache = new Map<string, CachedText>();
const CACHE_MAX_CHARS = 40_000_000;
const CACHE_MAX_ENTRIES = 16;

async function textOf(input: InputFile, signal: AbortSignal): Promise<CachedText> {
  const stat = await fs.promises.stat(input.path);
  const key = `${input.path}\0${stat.size}\0${stat.mtimeMs}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }

  const notes: string[] = [];
  const partial = stat.size > MAX_FILE_BYTES;
  const bytes = await readStart(input.path, Math.min(stat.size, MAX_FILE_BYTES));
  if (partial && bytes.subarray(0, 5).toString('latin1') === '%PDF-') {
    throw new UnsupportedContentError(`the PDF is ${count(stat.size)} bytes; PDFs over ${count(MAX_FILE_BYTES)} bytes cannot be read`);
  }
  if (partial) notes.push(`the file is ${count(stat.size)} bytes; only its first ${count(MAX_FILE_BYTES)} bytes were read`);
  const extracted = await extractText(bytes, { contentType: input.contentType, name: input.name, maxChars: MAX_TEXT_CHARS, signal });
  let text = extracted.text;
  if (extracted.note) notes.push(extracted.note);
  if (text.length > MAX_TEXT_CHARS) {
    text = cutText(text, MAX_TEXT_CHARS);
    notes.push(`only the first ${count(MAX_TEXT_CHARS)} characters of the text can be read`);
  }
  const entry: CachedText = { extracted: { ...extracted, text: '' }, text, notes };
  cache.set(key, entry);
  let chars = 0;
  for (const value of cache.values()) chars += value.text.length;
  for (const [k, value] of cache) {
    if (cache.size <= 1 || (cache.size <= CACHE_MAX_ENTRIES && chars <= CACHE_MAX_CHARS)) break;
    cache.delete(k);
    chars -= value.text.length;
  }
  return entry;
}

async function readStart(path: string, bytes: number): Promise<Buffer> {
  const handle = await fs.promises.open(path, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    let read = 0;
    while (read < bytes) {
      const { bytesRead } = await handle.read(buffer, read, bytes - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return buffer.subarray(0, read);
  } finally {
    await handle.close();
  }
}

function describe(input: InputFile): string {
  return `${input.upload_id} "${input.name}"`;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** Characters `offset` on of `text`, at most `length` (default DEFAULT_READ_LENGTH); null when offset is past its end. */
export function textWindow(text: string, offset: number, length = DEFAULT_READ_LENGTH): { start: number; end: number; window: string } | null {
  const total = text.length;
  if (offset > total || (offset === total && total > 0)) return null;
  let start = offset;
  // Never start on the second half of a surrogate pair.
  if (start > 0 && start < total && isLowSurrogate(text.charCodeAt(start))) start -= 1;
  const window = cutText(text.slice(start), length);
  return { start, end: start + window.length, window };
}

export function count(n: number): string {
  return n.toLocaleString('en-US');
}
