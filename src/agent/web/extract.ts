/**
 * Text from a fetched page or an uploaded file: HTML becomes readable text, PDF its text layer,
 * JSON is pretty-printed, CSV and plain text are decoded as they are. Shared by fetch_url and
 * read_input. What kind a file is comes from its content type, then its name, then its first bytes.
 */
import { htmlToReadable } from './html-text.js';

export type ContentKind = 'html' | 'pdf' | 'json' | 'csv' | 'text';

export interface ExtractedText {
  kind: ContentKind;
  title?: string;
  /** HTML: the author line and publication time the page gives. */
  byline?: string;
  published?: string;
  text: string;
  /** PDFs: pages in the document, and pages whose text was read (fewer when maxChars was reached). */
  pages?: { total: number; read: number };
  /** Something the reader should know, e.g. that a JSON file did not parse. */
  note?: string;
}

export interface ExtractOptions {
  /** The Content-Type header or the upload's declared type. */
  contentType?: string;
  /** A URL or file name: its extension helps when the content type says little. */
  name?: string;
  /** Base for relative links in HTML. */
  url?: string;
  /** PDFs stop being read after this many characters (text of other kinds is cheap to cut later). */
  maxChars?: number;
  signal?: AbortSignal;
}

/** Content that is not text Quarry can read (an image, an archive…). */
export class UnsupportedContentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedContentError';
  }
}

const EXTENSIONS: Record<string, ContentKind> = {
  html: 'html', htm: 'html', xhtml: 'html',
  pdf: 'pdf',
  json: 'json', geojson: 'json',
  csv: 'csv', tsv: 'csv',
  txt: 'text', text: 'text', md: 'text', markdown: 'text', log: 'text', xml: 'text', rss: 'text', atom: 'text', yaml: 'text', yml: 'text', ndjson: 'text', jsonl: 'text',
};

/** The kind of a document, or undefined when it is not text Quarry can read. */
export function detectKind(bytes: Uint8Array, contentType = '', name = ''): ContentKind | undefined {
  if (startsWith(bytes, '%PDF-')) return 'pdf';
  const mime = contentType.split(';')[0]!.trim().toLowerCase();
  const fromMime = kindOfMime(mime);
  if (fromMime) return fromMime;
  const ext = /\.([a-z0-9]+)$/i.exec(name.split(/[?#]/)[0] ?? '')?.[1]?.toLowerCase();
  if (ext && EXTENSIONS[ext]) return EXTENSIONS[ext];
  // A type that names something else (image/png, application/zip…) is believed.
  if (mime && mime !== 'application/octet-stream' && mime !== 'binary/octet-stream' && mime !== 'application/unknown') return undefined;
  return sniff(bytes);
}

function kindOfMime(mime: string): ContentKind | undefined {
  if (mime === 'text/html' || mime === 'application/xhtml+xml') return 'html';
  if (mime === 'application/pdf' || mime === 'application/x-pdf') return 'pdf';
  if (mime === 'application/json' || mime === 'text/json' || mime.endsWith('+json')) return 'json';
  if (mime === 'text/csv' || mime === 'application/csv' || mime === 'text/tab-separated-values') return 'csv';
  if (mime.startsWith('text/') || mime === 'application/xml' || mime.endsWith('+xml') || mime === 'application/x-ndjson' || mime === 'application/yaml' || mime === 'application/x-yaml') return 'text';
  return undefined;
}

function sniff(bytes: Uint8Array): ContentKind | undefined {
  const head = new TextDecoder('utf-8').decode(bytes.subarray(0, 1024)).replace(/^\uFEFF/, '').trimStart().toLowerCase();
  if (head.startsWith('<!doctype html') || head.startsWith('<html') || /^<(head|body|meta|title)[\s>]/.test(head)) return 'html';
  const sample = bytes.subarray(0, 8192);
  if (looksBinary(sample)) return undefined;
  if (head.startsWith('{') || head.startsWith('[')) return 'json';
  return 'text';
}

/** NUL bytes, or many control characters, mean binary (UTF-16 text carries a BOM and is handled). */
function looksBinary(sample: Uint8Array): boolean {
  if (hasUtf16Bom(sample)) return false;
  let control = 0;
  for (const b of sample) {
    if (b === 0) return true;
    if (b < 9 || (b > 13 && b < 32)) control++;
  }
  return sample.length > 0 && control / sample.length > 0.1;
}

export async function extractText(bytes: Uint8Array, opts: ExtractOptions = {}): Promise<ExtractedText> {
  const kind = detectKind(bytes, opts.contentType, opts.name ?? opts.url);
  if (!kind) {
    const type = opts.contentType?.split(';')[0]?.trim() || 'unknown type';
    throw new UnsupportedContentError(`the content (${type}) is not text, HTML, JSON, CSV or PDF, so it cannot be read as text`);
  }
  switch (kind) {
    case 'pdf':
      return pdfText(bytes, opts);
    case 'html': {
      const readable = htmlToReadable(decodeText(bytes, charsetOf(opts.contentType), true), opts.url);
      const extracted: ExtractedText = { kind, text: readable.text };
      if (readable.title) extracted.title = readable.title;
      if (readable.byline) extracted.byline = readable.byline;
      if (readable.published) extracted.published = readable.published;
      return extracted;
    }
    case 'json': {
      const raw = decodeText(bytes, charsetOf(opts.contentType));
      try {
        return { kind, text: JSON.stringify(JSON.parse(raw), null, 2) };
      } catch {
        return { kind, text: raw, note: 'the content is not valid JSON (it may be cut short); shown as it is' };
      }
    }
    case 'csv':
    case 'text':
      return { kind, text: decodeText(bytes, charsetOf(opts.contentType)) };
  }
}

function charsetOf(contentType: string | undefined): string | undefined {
  return /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1];
}

/**
 * Decodes text: a byte-order mark wins, then the declared charset, then (HTML) a <meta> charset
 * in the first bytes, then UTF-8, falling back to windows-1252 for bytes that are not UTF-8.
 */
export function decodeText(bytes: Uint8Array, charset?: string, html = false): string {
  if (startsWithBytes(bytes, [0xef, 0xbb, 0xbf])) return new TextDecoder('utf-8').decode(bytes.subarray(3));
  if (startsWithBytes(bytes, [0xff, 0xfe])) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (startsWithBytes(bytes, [0xfe, 0xff])) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  let label = charset;
  if (!label && html) {
    const head = new TextDecoder('latin1').decode(bytes.subarray(0, 4096));
    label = /<meta[^>]+charset\s*=\s*["']?([\w-]+)/i.exec(head)?.[1];
  }
  if (label && !/^utf-?8$/i.test(label)) {
    try {
      return new TextDecoder(label).decode(bytes);
    } catch {
      // an unknown label: try UTF-8
    }
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    // Cut mid-character at the end (a capped download) is still UTF-8.
    const loose = new TextDecoder('utf-8').decode(bytes);
    const bad = (loose.match(/\uFFFD/g) ?? []).length;
    return bad <= 1 ? loose : new TextDecoder('windows-1252').decode(bytes);
  }
}

interface PdfTextItem {
  str?: string;
  hasEOL?: boolean;
}

async function pdfText(bytes: Uint8Array, opts: ExtractOptions): Promise<ExtractedText> {
  const { getDocumentProxy } = await import('unpdf');
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // pdf.js may take the buffer over, so it gets a copy.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  } catch (err) {
    throw new UnsupportedContentError(pdfProblem(err));
  }
  try {
    let title: string | undefined;
    try {
      const meta = await pdf.getMetadata();
      const info = meta.info as { Title?: unknown } | undefined;
      if (typeof info?.Title === 'string' && info.Title.trim()) title = info.Title.trim();
    } catch {
      // metadata is optional
    }
    const total = pdf.numPages;
    const pages: string[] = [];
    let chars = 0;
    for (let n = 1; n <= total; n++) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      const page = await pdf.getPage(n);
      const content = await page.getTextContent();
      const text = (content.items as PdfTextItem[])
        .map((item) => (item.str ?? '') + (item.hasEOL ? '\n' : ''))
        .join('')
        .replace(/[^\S\n]+/g, ' ')
        .replace(/ ?\n ?/g, '\n')
        .trim();
      page.cleanup();
      pages.push(total > 1 ? `[page ${n}]\n${text}` : text);
      chars += text.length;
      if (opts.maxChars !== undefined && chars >= opts.maxChars) break;
    }
    const text = pages.join('\n\n');
    const extracted: ExtractedText = { kind: 'pdf', text, pages: { total, read: pages.length } };
    if (title) extracted.title = title;
    if (chars === 0) extracted.note = 'the PDF has no text layer (it may be scanned images)';
    else if (pages.length < total) extracted.note = `only the first ${pages.length} of ${total} pages were read`;
    return extracted;
  } finally {
    await pdf.destroy().catch(() => undefined);
  }
}

function pdfProblem(err: unknown): string {
  const name = (err as { name?: string }).name ?? '';
  if (name === 'PasswordException') return 'the PDF is password-protected';
  const message = err instanceof Error ? err.message : String(err);
  return `the PDF could not be read (${message}); it may be damaged or cut short`;
}

function startsWith(bytes: Uint8Array, text: string): boolean {
  return startsWithBytes(bytes, [...text].map((c) => c.charCodeAt(0)));
}

function startsWithBytes(bytes: Uint8Array, prefix: number[]): boolean {
  return bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b);
}

function hasUtf16Bom(bytes: Uint8Array): boolean {
  return startsWithBytes(bytes, [0xff, 0xfe]) || startsWithBytes(bytes, [0xfe, 0xff]);
}

/** Cuts text to at most `max` characters, never between the two halves of a surrogate pair. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}
