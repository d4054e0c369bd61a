/**
 * HTTP requests out of Quarry to addresses a user chose (fetch_url's pages, webhook deliveries),
 * without letting them reach into the network Quarry runs in (SSRF). The host name is resolved here, every address it resolves to is checked
 * against the address policy, and the connection goes to the checked address itself, with the
 * name sent as Host header and TLS server name: a DNS answer that changes between the check and
 * the connection (DNS rebinding) cannot swap the address. Redirects are followed by hand, and
 * every hop is checked the same way. Size, time and redirect count are capped.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import { blockedReason } from './address-policy.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has. */
export type Lookup = (hostname: string) => Promise<ResolvedAddress[]>;

export interface SafeFetchOptions {
  /** Allow loopback, private, link-local and other non-public addresses (QUARRY_FETCH_ALLOW_PRIVATE=1). */
  allowPrivate?: boolean;
  /** Replaces DNS resolution (tests map made-up names to addresses with it). */
  lookup?: Lookup;
  /**
   * Test-only: where the socket really goes for an address that passed the check. Tests use it
   * to send a "public" address to the loopback fixture server. Never set from configuration.
   */
  connectTo?: (address: string, port: number) => { host: string; port: number };
  /** Bytes of (decompressed) body kept; the rest is dropped and `truncated` set. Default 5 MiB. */
  maxBytes?: number;
  /** Limit on the whole fetch, redirects included. Default 20 s. */
  timeoutMs?: number;
  /** Default 5. */
  maxRedirects?: number;
  /** Why a URL (the first, or one redirected to) may not be requested, or undefined: a policy beyond addresses (a task's source domains). */
  refuseUrl?: (url: URL) => string | undefined;
  /** false: a redirect is not followed but answered as it came (webhooks: a 3xx is not a delivery). Default true. */
  followRedirects?: boolean;
  /** Default GET. */
  method?: 'GET' | 'POST';
  /** Sent as the request body (with Content-Length). */
  body?: Buffer;
  /** Extra request headers; they replace the defaults of the same name. */
  headers?: Record<string, string>;
  userAgent?: string;
  accept?: string;
  /** The caller's signal (the turn's): aborting rejects with its reason at once. */
  signal?: AbortSignal;
}

export interface FetchedResource {
  /** The URL that was asked for. */
  requestedUrl: string;
  /** The URL that answered, after redirects. */
  url: string;
  /** Every URL redirected through, in order (the requested one first), not including `url`. */
  redirects: string[];
  status: number;
  statusText: string;
  /** The Content-Type header as sent, or '' when there was none. */
  contentType: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The body was longer than maxBytes; `body` is its beginning. */
  truncated: boolean;
  /** The address connected to for the final hop. */
  address: string;
}

export type WebFetchFailure = 'invalid_url' | 'refused' | 'dns' | 'network' | 'timeout' | 'too_many_redirects';

/** A fetch that failed or was refused; the message is written for the model to read. */
export class WebFetchError extends Error {
  constructor(
    readonly kind: WebFetchFailure,
    message: string,
    opts?: { cause?: unknown },
  ) {
    super(message, opts);
    this.name = 'WebFetchError';
  }
}

export const DEFAULT_MAX_BYTES = 5 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 20_000;
export const DEFAULT_MAX_REDIRECTS = 5;
const DEFAULT_USER_AGENT = 'Mozilla/5.0 (compatible; QuarryResearchAgent/0.1)';
const DEFAULT_ACCEPT = 'text/html,application/xhtml+xml,application/pdf;q=0.9,application/json;q=0.9,text/csv;q=0.9,text/plain;q=0.8,*/*;q=0.5';
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export const systemLookup: Lookup = async (hostname) => {
  const found = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

export async function safeFetch(rawUrl: string, opts: SafeFetchOptions = {}): Promise<FetchedResource> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxRedirects = opts.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const caller = opts.signal;
  if (caller?.aborted) throw abortReason(caller);

  // One controller for everything in flight: the caller's abort and the deadline both end it.
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onAbort = () => controller.abort();
  caller?.addEventListener('abort', onAbort, { once: true });

  const fail = (err: unknown): Error => {
    if (caller?.aborted) return abortReason(caller);
    if (timedOut) return new WebFetchError('timeout', `no complete answer within ${formatSeconds(timeoutMs)}`, { cause: err });
    return err instanceof WebFetchError ? err : new WebFetchError('network', describe(err), { cause: err });
  };

  try {
    let url = parseUrl(rawUrl);
    const redirects: string[] = [];
    while (true) {
      const refused = opts.refuseUrl?.(url);
      if (refused) throw new WebFetchError('refused', `refused: ${url.href}${redirects.length > 0 ? ` (redirected from ${redirects[0]})` : ''}: ${refused}`);
      const hop = await fetchOnce(url, opts, controller.signal).catch((err: unknown) => {
        throw fail(err);
      });
      const location = hop.response.headers.location;
      if (opts.followRedirects !== false && REDIRECTS.has(hop.response.statusCode ?? 0) && location) {
        hop.response.destroy();
        if (redirects.length >= maxRedirects) {
          throw new WebFetchError('too_many_redirects', `more than ${maxRedirects} redirects (last: ${url.href} → ${location})`);
        }
        redirects.push(url.href);
        url = parseUrl(location, url);
        continue;
      }
      const { body, truncated } = await readBody(hop.response, opts.maxBytes ?? DEFAULT_MAX_BYTES, controller.signal).catch((err: unknown) => {
        throw fail(err);
      });
      return {
        requestedUrl: redirects[0] ?? url.href,
        url: url.href,
        redirects,
        status: hop.response.statusCode ?? 0,
        statusText: hop.response.statusMessage ?? '',
        contentType: headerText(hop.response.headers['content-type']),
        headers: hop.response.headers,
        body,
        truncated,
        address: hop.address,
      };
    }
  } finally {
    clearTimeout(timer);
    caller?.removeEventListener('abort', onAbort);
    controller.abort();
  }
}

/** Parses and checks a URL (relative ones against `base`): http or https, no credentials. */
export function parseUrl(raw: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(raw.trim(), base);
  } catch {
    throw new WebFetchError('invalid_url', `"${preview(raw)}" is not a valid absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new WebFetchError('refused', `only http and https URLs are fetched, not ${url.protocol.replace(/:$/, '')}:`);
  }
  if (url.username || url.password) throw new WebFetchError('refused', 'URLs with a user name or password are not fetched');
  url.hash = '';
  return url;
}

/**
 * The addresses a URL's host may be reached at, each checked. A name with any blocked address
 * is refused whole: a public site has no reason to publish a private address.
 */
export async function resolveChecked(url: URL, opts: Pick<SafeFetchOptions, 'allowPrivate' | 'lookup'>, signal?: AbortSignal): Promise<ResolvedAddress[]> {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  let addresses: ResolvedAddress[];
  const literal = isIP(host);
  if (literal !== 0) {
    addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await abortable((opts.lookup ?? systemLookup)(host), signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      const code = (err as { code?: string }).code;
      throw new WebFetchError('dns', `the host name ${host} could not be resolved${code ? ` (${code})` : ''}`, { cause: err });
    }
    if (addresses.length === 0) throw new WebFetchError('dns', `the host name ${host} has no addresses`);
  }
  if (!opts.allowPrivate) {
    for (const { address } of addresses) {
      const why = blockedReason(address);
      if (why) {
        const what = literal !== 0 ? `${address} is` : `${host} resolves to ${address}, which is`;
        throw new WebFetchError('refused', `refused: ${what} not a public address (${why}); only the public internet is reached`);
      }
    }
  }
  return addresses;
}

interface Hop {
  response: http.IncomingMessage;
  address: string;
}

/** One request, no redirects followed: tries the checked addresses in turn until one connects. */
async function fetchOnce(url: URL, opts: SafeFetchOptions, signal: AbortSignal): Promise<Hop> {
  const addresses = await resolveChecked(url, opts, signal);
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  let lastError: unknown;
  for (const { address } of addresses) {
    const target = opts.connectTo?.(address, port) ?? { host: address, port };
    try {
      const response = await request(url, target, hostname, opts, signal);
      return { response, address };
    } catch (err) {
      if (signal.aborted || !isConnectFailure(err)) throw err;
      lastError = err;
    }
  }
  throw lastError;
}

function request(url: URL, target: { host: string; port: number }, hostname: string, opts: SafeFetchOptions, signal: AbortSignal): Promise<http.IncomingMessage> {
  const secure = url.protocol === 'https:';
  const options: https.RequestOptions = {
    host: target.host,
    port: target.port,
    method: opts.method ?? 'GET',
    path: `${url.pathname}${url.search}`,
    headers: {
      host: url.host,
      'user-agent': opts.userAgent ?? DEFAULT_USER_AGENT,
      accept: opts.accept ?? DEFAULT_ACCEPT,
      'accept-encoding': 'gzip, deflate, br',
      'accept-language': 'en;q=0.9, *;q=0.5',
      ...(opts.body ? { 'content-length': String(opts.body.length) } : {}),
      ...opts.headers,
    },
    // No pooling: every connection goes to the address checked for this very request.
    agent: false,
    signal,
  };
  // The certificate is checked against the name (SNI and verification use `servername`).
  if (secure && isIP(hostname) === 0) options.servername = hostname;
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).request(options, resolve);
    req.once('error', reject);
    req.end(opts.body);
  });
}

/** Reads the body, decompressing it; stops at `maxBytes` of decompressed data. */
function readBody(response: http.IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<{ body: Buffer; truncated: boolean }> {
  const encoding = headerText(response.headers['content-encoding']).trim().toLowerCase();
  let decoder: zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | undefined;
  if (encoding === 'gzip' || encoding === 'x-gzip') decoder = zlib.createGunzip();
  else if (encoding === 'deflate') decoder = zlib.createInflate();
  else if (encoding === 'br') decoder = zlib.createBrotliDecompress();
  else if (encoding !== '' && encoding !== 'identity') {
    response.destroy();
    return Promise.reject(new WebFetchError('network', `the server used a content encoding that is not supported: ${encoding}`));
  }
  const source: Readable = decoder ? pipeline(response, decoder, () => undefined) : response;

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (result: { body: Buffer; truncated: boolean } | Error) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const onAbort = () => {
      finish(new Error('aborted'));
      source.destroy();
      response.destroy();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    source.on('data', (chunk: Buffer) => {
      if (settled) return;
      if (size + chunk.length > maxBytes) {
        chunks.push(chunk.subarray(0, maxBytes - size));
        size = maxBytes;
        // Settle first: destroying the response makes it report itself aborted.
        finish({ body: Buffer.concat(chunks, size), truncated: true });
        source.destroy();
        response.destroy();
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    source.once('end', () => finish({ body: Buffer.concat(chunks, size), truncated: false }));
    const cutShort = () => new WebFetchError('network', 'the server closed the connection before the body was complete');
    source.once('error', (err: NodeJS.ErrnoException) => {
      finish(err.code === 'ECONNRESET' || err.code === 'ERR_STREAM_PREMATURE_CLOSE' ? cutShort() : err);
    });
    response.once('close', () => {
      if (!response.complete) finish(cutShort());
    });
  });
}

const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ETIMEDOUT', 'EAFNOSUPPORT']);

function isConnectFailure(err: unknown): boolean {
  return CONNECT_FAILURES.has((err as { code?: string }).code ?? '');
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('The fetch was aborted.', 'AbortError');
}

function headerText(value: string | string[] | undefined): string {
  return Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: string }).code;
  return code && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

function preview(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
