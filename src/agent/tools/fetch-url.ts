/**
 * fetch_url {url}: GETs a public web page or file and returns readable text (HTML through
 * Readability, PDF text, pretty JSON, CSV, plain text), headed by the final URL and content
 * type so the model can cite exactly what it read. Non-public addresses are refused unless the
 * operator allows them (QUARRY_FETCH_ALLOW_PRIVATE=1); see src/net/safe-fetch.ts.
 */
import { Type } from 'typebox';
import { cutText, extractText, UnsupportedContentError, type ExtractedText } from '../web/extract.js';
import { domainPolicy } from '../../net/domain-policy.js';
import { safeFetch, WebFetchError, type FetchedResource, type SafeFetchOptions } from '../../net/safe-fetch.js';
import type { AgentTool, ToolContext, ToolResult } from './tool.js';

export interface FetchUrlToolOptions extends Omit<SafeFetchOptions, 'signal'> {
  /** Characters of text returned to the model. Default 100,000. */
  maxChars?: number;
}

interface FetchUrlArgs {
  url: string;
}

export const DEFAULT_FETCH_MAX_CHARS = 100_000;
/** Characters of an error page shown with an HTTP error. */
const ERROR_PAGE_CHARS = 2_000;

const parameters = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 8192, description: 'Absolute http(s) URL of the page or file to read.' }),
});

export function createFetchUrlTool(opts: FetchUrlToolOptions = {}): AgentTool<FetchUrlArgs> {
  const maxChars = opts.maxChars ?? DEFAULT_FETCH_MAX_CHARS;
  return {
    name: 'fetch_url',
    concurrent: true,
    description:
      'Fetch a web page or file (HTML, PDF, JSON, CSV, plain text) and return its readable text, with the final URL to cite. ' +
      `At most ${maxChars.toLocaleString('en-US')} characters are returned. Only public http(s) addresses can be fetched, within the task's source policy. ` +
      'The text is kept as a snapshot: a row citing this URL is verified only if its quote appears in this text, so copy quotes from it exactly.',
    parameters,
    async run(args, ctx) {
      if (ctx.offline) return fromSnapshot(args.url, ctx);
      let res: FetchedResource;
      try {
        const policy = domainPolicy(ctx.spec().sources);
        res = await safeFetch(args.url, { ...opts, refuseUrl: (url) => policy.refuses(url), signal: ctx.signal });
      } catch (err) {
        if (ctx.signal.aborted || !(err instanceof WebFetchError)) throw err;
        return { isError: true, content: `Could not fetch ${args.url}: ${err.message}.`, summary: `${err.kind === 'refused' ? 'refused' : 'failed'}: ${short(args.url)}` };
      }

      const head = [`URL: ${res.url}`];
      if (res.redirects.length > 0) head.push(`Redirected from: ${res.requestedUrl}`);
      head.push(`Status: ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`);
      head.push(`Content-Type: ${res.contentType || '(none given)'}`);

      let extracted: ExtractedText;
      try {
        extracted = await extractText(res.body, { contentType: res.contentType, url: res.url, maxChars, signal: ctx.signal });
      } catch (err) {
        if (ctx.signal.aborted || !(err instanceof UnsupportedContentError)) throw err;
        const why = res.truncated ? `${err.message} (only the first ${mib(res.body.length)} were downloaded)` : err.message;
        return { isError: true, content: `${head.join('\n')}\n\nCould not read ${res.url}: ${why}.`, summary: `unreadable: ${short(res.url)}` };
      }

      const failed = res.status >= 400;
      const limit = failed ? ERROR_PAGE_CHARS : maxChars;
      const text = cutText(extracted.text, limit);
      // What the model is given is what its quotes are checked against (a page that failed is no source).
      if (!failed) head.push(`Source: ${await ctx.recordSource({ url: res.requestedUrl, finalUrl: res.url, uploadId: null, title: extracted.title ?? null, text })}`);
      if (extracted.title) head.push(`Title: ${extracted.title}`);
      if (extracted.byline) head.push(`Byline: ${extracted.byline}`);
      if (extracted.published) head.push(`Published: ${extracted.published}`);
      if (extracted.pages) head.push(`Pages: ${extracted.pages.total}`);
      const notes: string[] = [];
      if (res.truncated) notes.push(`the file is larger than ${mib(res.body.length)}; only its beginning was downloaded`);
      if (extracted.note) notes.push(extracted.note);
      if (text.length < extracted.text.length) {
        notes.push(`the text is ${count(extracted.text.length)} characters; only the first ${count(text.length)} are shown`);
      }
      head.push(`Length: ${count(text.length)} characters`);
      for (const note of notes) head.push(`Note: ${note}`);

      if (failed) {
        return {
          isError: true,
          content: `${head.join('\n')}\n\nThe server answered HTTP ${res.status}; the page says:\n\n${text || '(nothing)'}`,
          summary: `HTTP ${res.status}: ${short(res.url)}`,
        };
      }
      return {
        content: `${head.join('\n')}\n\n${text || '(The page has no readable text.)'}`,
        summary: `fetched ${short(res.url)} (${extracted.kind}, ${count(text.length)} chars)`,
      };
    },
  };
}

/**
 * An offline turn's fetch_url (decisions §17.2): the task's latest snapshot of the URL (asked for
 * or arrived at), as fetch_url gave it then; nothing goes out to the web.
 */
async function fromSnapshot(url: string, ctx: ToolContext): Promise<ToolResult> {
  const snapshot = (await ctx.citedSources([url], [])).filter((s) => s.uploadId === null).at(-1);
  if (!snapshot) {
    return {
      isError: true,
      content: `This turn is offline: ${url} was never fetched by this task, so there is no stored copy to read. Use a page this task fetched before, or read_source.`,
      summary: `offline, never fetched: ${short(url)}`,
    };
  }
  const head = [`URL: ${snapshot.finalUrl}`];
  if (snapshot.finalUrl !== snapshot.url) head.push(`Redirected from: ${snapshot.url}`);
  head.push(`Source: ${snapshot.id}`, `Read at: ${snapshot.fetchedAt} (offline: the stored snapshot)`);
  if (snapshot.title) head.push(`Title: ${snapshot.title}`);
  head.push(`Length: ${count(snapshot.text.length)} characters`);
  return {
    content: `${head.join('\n')}\n\n${snapshot.text || '(The page has no readable text.)'}`,
    summary: `snapshot ${snapshot.id} of ${short(snapshot.finalUrl)} (${count(snapshot.text.length)} chars)`,
  };
}

/** fetch_url with the defaults: public addresses only. */
export const fetchUrlTool = createFetchUrlTool();

function count(n: number): string {
  return n.toLocaleString('en-US');
}

function mib(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${+(bytes / (1024 * 1024)).toFixed(1)} MiB` : `${count(bytes)} bytes`;
}

function short(url: string): string {
  return url.length > 160 ? `${url.slice(0, 160)}…` : url;
}
