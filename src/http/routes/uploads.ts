import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { ROUTES } from '../../contract/index.js';
import { contractRoute, typed } from '../contract-route.js';
import { publicBaseUrl } from '../public-url.js';

/** POST /upload-url hands out a signed URL; PUT /upload/{id} (no API key, the signature is the credential) stores the file. */
export async function uploadRoutes(fastify: FastifyInstance): Promise<void> {
  const app = typed(fastify);
  const { uploads, config } = app.deps;

  app.route({
    ...contractRoute(ROUTES.createUploadUrl),
    handler: async (request) => uploads.createTicket(request.accountId, publicBaseUrl(request, config.publicUrl), request.body),
  });

  await app.register(async (fileScope) => {
    const scope = typed(fileScope);
    // The body is the file itself, of any type: hand the raw stream to the handler.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    scope.route({
      ...contractRoute(ROUTES.putUpload),
      bodyLimit: config.maxUploadBytes,
      handler: async (request, reply) => {
        const upload = await uploads.authorize(request.params.upload_id, request.query.expires, request.query.sig);
        // The parser above hands over the body stream; no body at all (an empty file) skips the parser and leaves none.
        const body = request.body instanceof Readable ? request.body : Readable.from([]);
        try {
          return reply.code(201).send(await uploads.receive(upload, body));
        } catch (err) {
          // The rest of a refused body is never read: close the connection rather than leave it stuck.
          reply.header('Connection', 'close');
          throw err;
        }
      },
    });
  });
}
