/**
 * Request bodies sent compressed (`Content-Encoding: gzip` or `deflate`) are decoded before the
 * body parsers read them; any other coding is refused with 415, since reading it as it is would
 * take compressed bytes for the body. The body limit applies to the decoded bytes (Fastify
 * counts what the parser reads), so a small body that inflates enormously is a 413, not a
 * process out of memory.
 */
import zlib from 'node:zlib';
import type { Transform } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { QuarryError } from '../errors.js';

const DECODERS: Record<string, () => Transform> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
};

/** A decoded body as Fastify reads it: `receivedEncodedLength` is what arrived, for the Content-Length check. */
type DecodedBody = Transform & { receivedEncodedLength: number };

export function registerContentDecoding(app: FastifyInstance): void {
  app.addHook('preParsing', (request, _reply, payload, done) => {
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
  });
}

/** A body that is not the data its Content-Encoding names (zlib's own errors). */
export function isUndecodableBody(err: { code?: unknown }): boolean {
  return typeof err.code === 'string' && /^Z_(DATA|BUF)_ERROR$/.test(err.code);
}
