import type { FastifyRequest } from 'fastify';

/** The service's base URL as the caller sees it: QUARRY_PUBLIC_URL when set, else the request's own scheme and Host. */
export function publicBaseUrl(request: FastifyRequest, configured: string | undefined): string {
  return configured ?? `${request.protocol}://${request.host}`;
}
