import type { FastifyReply, FastifyRequest } from 'fastify';

/** The service's base URL as the caller sees it: QUARRY_PUBLIC_URL when set, else the request's own scheme and Host. */
export function publicBaseUrl(request: FastifyRequest, configured: string | undefined): string {
  return configured ?? `${request.protocol}://${request.host}`;
}

/**
 * Sets X-Next-Cursor and a `Link: rel="next"` to `path` with the request's query and the cursor,
 * for a listing that has more after this page.
 */
export function nextPageHeaders(request: FastifyRequest, reply: FastifyReply, configured: string | undefined, path: string, query: Record<string, unknown>, cursor: string): void {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && name !== 'cursor') params.set(name, String(value));
  params.set('cursor', cursor);
  reply.header('X-Next-Cursor', cursor);
  reply.header('Link', `<${publicBaseUrl(request, configured)}${path}?${params}>; rel="next"`);
}
