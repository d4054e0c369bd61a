/**
 * Web search providers behind one small interface: SearXNG (self-hosted, JSON API), Brave Search
 * API and Tavily. Which one is used, where it lives and its key come from configuration
 * (QUARRY_SEARCH_PROVIDER, QUARRY_SEARCH_URL, QUARRY_SEARCH_API_KEY). The provider's URL is the
 * operator's choice, so it is called directly (a SearXNG on localhost is normal), not through
 * fetch_url's address checks.
 */
import { searchConfigProblem, type SearchConfig, type SearchProviderName } from '../../config.js';
import { rateLimitReport, retryAfterMs, type RateLimitReport } from '../../retry-policy.js';



export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface SearchProvider {
  readonly name: SearchProviderName;
  /** `onRateLimits`: what each answer's headers say of the provider's limits (a 429's come in its SearchError instead). */
  search(query: string, maxResults: number, signal: AbortSignal, onRateLimits?: (report: RateLimitReport) => void): Promise<SearchResult[]>;
}

export interface SearchProviderOptions extends SearchConfig {
  fetch?: typeof fetch;
  /** Default 15 s. */
  timeoutMs?: number;
}

/** A search that failed; the message is written for the model (and the operator) to read. */
export class SearchError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    /** How long the provider asked to be left alone (its `Retry-After`), when it said. */
    readonly retryAfterMs?: number,
    /** What a 429's headers said of the provider's limits. */
    readonly rateLimits?: RateLimitReport,
  ) {
    super(message);
    this.name = 'SearchError';
  }
}

export const BRAVE_DEFAULT_URL = 'https://api.search.brave.com';
export const TAVILY_DEFAULT_URL = 'https://api.tavily.com';


export function createSearchProvider(opts: SearchProviderOptions): SearchProvider {
  const problem = searchConfigProblem(opts);
  if (problem) throw new Error(problem);
  const fetchImpl = opts.fetch ?? fetch;
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const name = opts.provider;

  /** Calls the provider's API and returns its JSON answer. */
  async function call(url: string, init: RequestInit, signal: AbortSignal, onRateLimits: ((report: RateLimitReport) => void) | undefined): Promise<unknown> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = AbortSignal.any([signal, timeout]);
    let response: Response;
    try {
      response = await fetchImpl(url, { ...init, signal: combined });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (timeout.aborted) throw new SearchError(`${name} did not answer within ${timeoutMs / 1000} s`);
      throw new SearchError(`${name} could not be reached at ${redact(url)}: ${describe(err)}`);
    }
    let text: string;
    try {
      text = await response.text();
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw new SearchError(`${name} answer could not be read: ${describe(err)}`);
    }
    const header = (name: string) => response.headers.get(name) ?? undefined;
    if (!response.ok) {
      let hint = '';
      if (name === 'searxng' && response.status === 403) hint = ' (is "json" listed under search.formats in SearXNG\'s settings.yml?)';
      if (response.status === 401 || response.status === 403) hint ||= ' (check QUARRY_SEARCH_API_KEY)';
      if (response.status === 429) hint = ' (rate limited: try again later, or search less often)';
      const limited = response.status === 429;
      throw new SearchError(`${name} answered HTTP ${response.status}${hint}: ${preview(errorMessage(text))}`, response.status, limited ? retryAfterMs(header) : undefined, limited ? rateLimitReport(header) : undefined);
    }
    // Read from every answer, so that searches slow down before the provider refuses one.
    onRateLimits?.(rateLimitReport(header));
    try {
      return JSON.parse(text);
    } catch {
      throw new SearchError(`${name} answered something that is not JSON: ${preview(text)}`);
    }
  }

  const base = (fallback: string) => (opts.url ?? fallback).replace(/\/+$/, '');

  switch (name) {
    case 'searxng':
      return {
        name,
        async search(query, maxResults, signal, onRateLimits) {
          const url = new URL(`${base('')}/search`);
          url.searchParams.set('q', query);
          url.searchParams.set('format', 'json');
          const headers: Record<string, string> = { accept: 'application/json' };
          if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
          const json = await call(url.href, { method: 'GET', headers }, signal, onRateLimits);
          const results = isObject(json) && Array.isArray(json.results) ? json.results : [];
          return normalize(results.map((r: unknown) => (isObject(r) ? { title: r.title, url: r.url, snippet: r.content } : {})), maxResults);
        },
      };
    case 'brave':
      return {
        name,
        async search(query, maxResults, signal, onRateLimits) {
          const url = new URL(`${base(BRAVE_DEFAULT_URL)}/res/v1/web/search`);
          url.searchParams.set('q', query);
          url.searchParams.set('count', String(Math.min(maxResults, 20)));
          const headers = { accept: 'application/json', 'x-subscription-token': opts.apiKey! };
          const json = await call(url.href, { method: 'GET', headers }, signal, onRateLimits);
          const web = isObject(json) && isObject(json.web) ? json.web : {};
          const results = Array.isArray(web.results) ? web.results : [];
          return normalize(
            results.map((r: unknown) => {
              if (!isObject(r)) return {};
              const extra = Array.isArray(r.extra_snippets) ? r.extra_snippets.filter((s): s is string => typeof s === 'string') : [];
              const snippet = [typeof r.description === 'string' ? r.description : '', ...extra.slice(0, 1)].filter(Boolean).join(' … ');
              return { title: r.title, url: r.url, snippet };
            }),
            maxResults,
          );
        },
      };
    case 'tavily':
      return {
        name,
        async search(query, maxResults, signal, onRateLimits) {
          const headers = { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${opts.apiKey!}` };
          const body = JSON.stringify({ api_key: opts.apiKey, query, max_results: Math.min(maxResults, 20), search_depth: 'basic' });
          const json = await call(`${base(TAVILY_DEFAULT_URL)}/search`, { method: 'POST', headers, body }, signal, onRateLimits);
          const results = isObject(json) && Array.isArray(json.results) ? json.results : [];
          return normalize(results.map((r: unknown) => (isObject(r) ? { title: r.title, url: r.url, snippet: r.content } : {})), maxResults);
        },
      };
  }
}

/** Keeps well-formed http(s) results, strips markup from titles and snippets, drops duplicates. */
function normalize(raw: { title?: unknown; url?: unknown; snippet?: unknown }[], maxResults: number): SearchResult[] {
  const seen = new Set<string>();
  const out: SearchResult[] = [];
  for (const r of raw) {
    if (typeof r.url !== 'string' || !/^https?:\/\//i.test(r.url) || seen.has(r.url)) continue;
    seen.add(r.url);
    const snippet = typeof r.snippet === 'string' ? plain(r.snippet) : '';
    out.push({ title: typeof r.title === 'string' && r.title.trim() ? plain(r.title) : r.url, url: r.url, snippet: snippet.length > 500 ? `${snippet.slice(0, 500)}…` : snippet });
    if (out.length >= maxResults) break;
  }
  return out;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#39': "'", '#x27': "'" };

/** Providers highlight matches with tags (<strong>) and escape entities; the model wants plain text. */
function plain(text: string): string {
  return text
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x?[0-9a-f]+|[a-z]+);/gi, (m, code: string) => {
      const named = ENTITIES[code.toLowerCase()];
      if (named) return named;
      if (code.startsWith('#')) {
        const n = code[1] === 'x' || code[1] === 'X' ? parseInt(code.slice(2), 16) : parseInt(code.slice(1), 10);
        return Number.isFinite(n) && n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : m;
      }
      return m;
    })
    .replace(/\s+/g, ' ')
    .trim();
}

function errorMessage(body: string): string {
  try {
    const json: unknown = JSON.parse(body);
    if (isObject(json)) {
      if (typeof json.error === 'string') return json.error;
      if (isObject(json.error) && typeof json.error.detail === 'string') return json.error.detail;
      if (isObject(json.error) && typeof json.error.message === 'string') return json.error.message;
      if (isObject(json.detail) && typeof json.detail.error === 'string') return json.detail.error;
      if (typeof json.detail === 'string') return json.detail;
      if (typeof json.message === 'string') return json.message;
    }
  } catch {
    // not JSON
  }
  return body.trim() || '(no message)';
}

/** Never shows a key that might sit in a query string. */
function redact(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause: unknown = err.cause;
  if (cause instanceof Error) return `${err.message} (${cause.message || (cause as { code?: string }).code || cause.name})`;
  return err.message;
}

function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 300 ? `${flat.slice(0, 300)}…` : flat;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
