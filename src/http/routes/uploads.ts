import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { publicBaseUrl } from '../public-url.js';
import { UploadParams, UploadPutQuery, UploadUrlBody } from '../schemas.js';

/** POST /upload-url hands out a signed URL; PUT /upload/{id} (no API key, the signature is the credential) stores the file. */
export async function uploadRoutes(app: FastifyInstance): Promise<void> {
  const { uploads, config } = app.deps;

  app.post('/upload-url', { schema: { body: UploadUrlBody, tags: ['uploads'], summary: 'Get a signed URL to PUT a large input to' } }, async (request) => {
    return uploads.createTicket(request.accountId, publicBaseUrl(request, config.publicUrl), request.body as { filename: string; content_type: string; size_bytes: number });
  });

  await app.register(async (scope) => {
    // The body is the file itself, of any type: hand the raw stream to the handler.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    scope.put('/upload/:upload_id', {
      config: { auth: 'none' },
      bodyLimit: config.maxUploadBytes,
      schema: { params: UploadParams, querystring: UploadPutQuery, tags: ['uploads'], summary: 'Upload the file to a signed URL', security: [] },
    }, async (request, reply) => {
      const { upload_id } = request.params as { upload_id: string };
      const { expires, sig } = request.query as { expires?: string; sig?: string };
      const upload = await uploads.authorize(upload_id, expires, sig);
      // No body at all (an empty file) arrives as undefined rather than a stream.
      const body = (request.body as Readable | undefined) ?? Readable.from([]);
      try {
        return reply.code(201).send(await uploads.receive(upload, body));
      } catch (err) {
        // The rest of a refused body is never read: close the connection rather than leave it stuck.
        reply.header('Connection', 'close');
        throw err;
      }
    });
  });
}
