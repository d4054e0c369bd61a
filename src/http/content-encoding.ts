/**
 * Request bodies sent compressed (`Content-Encoding: gzip` or `deflate`) are decoded before the
 * body parsers read them; any other coding is refused with 415, since reading it as it is would
 * take compressed bytes for the body. The body limit applies to the decoded bytes (Fastify
 * counts what the parser reads), so a small body that inflates enormously is a 413, not a
 * process out of memory.
 */
import zlib from 'node:zlib';
import type { Transform } from 'node:stream';
import type { FastifyInstance, preParsingHookHandler } from 'fastify';
import { QuarryError } from '../errors.js';
import { routeHooks } from './contract-route.js';

const DECODERS: Record<string, () => Transform> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
};

/** A decoded body as Fastify reads it: `receivedEncodedLength` is what arrived, for the Content-Length check. */
type DecodedBody = Transform & { receivedEncodedLength: number };

/** Methods whose requests Fastify answers without reading a body (it never parses one for them). */
const BODYLESS = new Set(['GET', 'HEAD', 'TRACE']);

/**
 * Decoding is a preParsing hook of the routes that read a body, given as each route is added:
 * a poll or a page passes no body step at all. Returns the hook for the not-found handler, which
 * reads a body too (an unknown path is a 404 whatever its body's coding, not a parse error).
 */
export function registerContentDecoding(app: FastifyInstance): preParsingHookHandler {
  app.addHook('onRoute', (route) => {
    if ([route.method].flat().some((method) => !BODYLESS.has(method))) route.preParsing = [decodeBody, ...routeHooks(route.preParsing)];
  });
  return decodeBody;
}

const decodeBody: preParsingHookHandler = (request, _reply, payload, done) => {
  const coding = request.headers['content-encoding']?.trim().toLowerCase();
  const hasBody = request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
  if (!coding || coding === 'identity' || !hasBody) return done(null, payload);
  const decoder = DECODERS[coding];
  if (!decoder) {
    return done(new QuarryError('unsupported_media_type', `Content-Encoding "${coding}" is not accepted: send the body uncompressed, or as gzip or deflate.`));
  }
  const decoded = decoder() as DecodedBody;
  decoded.receivedEncodedLength = 0;
  payload.on('data', (chunk: Buffer) => {
    decoded.receivedEncodedLength += chunk.length;
  });
  payload.on('error', (err) => decoded.destroy(err));
  decoded.on('error', () => payload.unpipe(decoded));
  done(null, payload.pipe(decoded));
};

/** A body that is not the data its Content-Encoding names (zlib's own errors). */
export function isUndecodableBody(err: { code?: unknown }): boolean {
  return typeof err.code === 'string' && /^Z_(DATA|BUF)_ERROR$/.test(err.code);
}
