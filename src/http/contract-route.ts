/**
 * How a route of the contract table (contract/routes.ts) becomes a Fastify route: its method,
 * path and schema as declared, who may call it, and typed request and reply through the TypeBox
 * type provider, so a handler reads `request.body` as the schema says, with no casts.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { OPTIONAL_BODY, type RouteDef } from '../contract/index.js';

/**
 * A route's hooks of one kind as a list (Fastify takes none, one, or a list): for onRoute hooks
 * that give a route a hook of its own before or after those it declares.
 */
export function routeHooks<H>(hooks: H | H[] | undefined): H[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}

/** The app as route modules use it: every route typed by its contract schema. */
export function typed(app: FastifyInstance) {
  return app.withTypeProvider<TypeBoxTypeProvider>();
}

/** Stop, execute and key creation take an optional body: no body at all means `{}`. */
async function defaultEmptyBody(request: FastifyRequest): Promise<void> {
  request.body ??= {};
}

/** Fastify route options (without the handler) for a route of the contract table. */
export function contractRoute<R extends RouteDef>(def: R) {
  const optionalBody = 'optionalBody' in def && def.optionalBody;
  return {
    method: def.method,
    url: def.url,
    schema: optionalBody ? { ...def.schema, [OPTIONAL_BODY]: true } : def.schema,
    config: { auth: def.auth },
    ...(optionalBody ? { preValidation: defaultEmptyBody } : {}),
  } as { method: R['method']; url: R['url']; schema: R['schema']; config: { auth: R['auth'] } };
}
