/**
 * `/console` (decisions §15.5): the web console that `npm run build` puts in dist/console
 * (scripts/build-console.ts), served without a key: the page asks for one and sends it with
 * every API call. Its assets have content hashes in their names and are cached for good;
 * index.html, which names them, is revalidated on every load. Every path under /console that
 * is not an asset is the page too: the console routes in the browser.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { QuarryError } from '../../errors.js';
import { PACKAGE_ROOT } from '../../package-info.js';

/**
 * Only the console's own files, and API calls to this origin: no inline script or style, no
 * other origin, no framing. Downloads (exports) are made from blob: URLs, which need no source.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

interface ConsoleFiles {
  index: Buffer;
  assets: Map<string, { body: Buffer; type: string }>;
  /** When index.html was written: a newer build (its hashed assets replace these) is read again. */
  builtAt: number;
}

/**
 * Reads the build once it is there (a server started before its first build finds it later),
 * and again after a rebuild: the new index.html names assets the old files do not have.
 */
function consoleReader(dir: string | undefined): () => ConsoleFiles | undefined {
  let files: ConsoleFiles | undefined;
  return () => {
    const indexFile = dir && path.join(dir, 'index.html');
    const builtAt = indexFile ? fs.statSync(indexFile, { throwIfNoEntry: false })?.mtimeMs : undefined;
    if (!dir || !indexFile || builtAt === undefined || files?.builtAt === builtAt) return files;
    const assets = new Map<string, { body: Buffer; type: string }>();
    const assetDir = path.join(dir, 'assets');
    for (const name of fs.readdirSync(assetDir)) {
      const type = TYPES[path.extname(name)];
      if (type) assets.set(name, { body: fs.readFileSync(path.join(assetDir, name)), type });
    }
    files = { index: fs.readFileSync(indexFile), assets, builtAt };
    return files;
  };
}

export async function consoleRoutes(app: FastifyInstance): Promise<void> {
  const read = consoleReader(PACKAGE_ROOT && path.join(PACKAGE_ROOT, 'dist', 'console'));
  const built = (): ConsoleFiles => {
    const files = read();
    if (!files) throw new QuarryError('not_found', 'The console is not built: run `npm run build`.');
    return files;
  };
  const page = async (_request: unknown, reply: FastifyReply) => reply
    .type('text/html; charset=utf-8')
    .header('Cache-Control', 'no-cache')
    .header('Content-Security-Policy', CONTENT_SECURITY_POLICY)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Referrer-Policy', 'no-referrer')
    .send(built().index);
  // Not operations of the API: left out of /openapi.json, like /docs.
  const options = { schema: { hide: true }, config: { auth: 'none' as const } };
  app.get('/console', options, page);
  app.get('/console/*', options, page);
  app.get<{ Params: { file: string } }>('/console/assets/:file', options, async (request, reply) => {
    const asset = built().assets.get(request.params.file);
    if (!asset) throw new QuarryError('not_found', `The console has no asset ${request.params.file}.`);
    return reply
      .type(asset.type)
      .header('Cache-Control', 'public, max-age=31536000, immutable')
      .header('X-Content-Type-Options', 'nosniff')
      .send(asset.body);
  });
}
