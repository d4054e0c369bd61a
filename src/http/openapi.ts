/**
 * GET /openapi.json: @fastify/swagger builds the document from the routes' contract schemas;
 * this module adds what the routes cannot say themselves. Schemas marked as components
 * (contract/common.ts `component`) become `#/components/schemas/<name>` references, so a
 * generated client gets one named type per shape; a route whose body may be left out says so.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import { OPTIONAL_BODY, RAW_BODY, ROUTES } from '../contract/index.js';
import { QUARRY_VERSION } from '../package-info.js';
import { contractRoute } from './contract-route.js';

type Json = Record<string, unknown>;

const COMPONENT = 'x-component';

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Replaces every marked schema under `node` by a reference, storing one copy of each in `schemas`. */
function hoist(node: unknown, schemas: Json): unknown {
  if (Array.isArray(node)) return node.map((item) => hoist(item, schemas));
  if (!isObject(node)) return node;
  const copy: Json = {};
  for (const [key, value] of Object.entries(node)) if (key !== COMPONENT) copy[key] = hoist(value, schemas);
  const name = node[COMPONENT];
  if (typeof name !== 'string') return copy;
  if (!(name in schemas)) schemas[name] = copy;
  return { $ref: `#/components/schemas/${name}` };
}

/**
 * The contract builds an error answer from its status alone (contract/routes.ts), so every
 * operation's 401, say, is the same: each is stored once as `#/components/responses/Error<status>`.
 * Answers of other shapes at those statuses (readiness's 503 `{ok: false}`) stay where they are.
 */
function isErrorAnswer(answer: Json): boolean {
  const media = (answer.content as Record<string, Json> | undefined)?.['application/json'];
  return (media?.schema as Json | undefined)?.$ref === '#/components/schemas/Error';
}

function shareErrorAnswers(paths: Record<string, Record<string, Json>>): Json {
  const shared: Record<string, unknown> = {};
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      const responses = operation.responses as Json;
      for (const status of Object.keys(responses)) {
        if (Number(status) < 400 || !isErrorAnswer(responses[status] as Json)) continue;
        const name = `Error${status}`;
        shared[name] ??= responses[status];
        responses[status] = { $ref: `#/components/responses/${name}` };
      }
    }
  }
  return Object.fromEntries(Object.entries(shared).sort(([a], [b]) => a.localeCompare(b)));
}

function finish(document: Json): Json {
  const paths = document.paths as Record<string, Record<string, Json>>;
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      if (operation[OPTIONAL_BODY]) {
        (operation.requestBody as Json).required = false;
        delete operation[OPTIONAL_BODY];
      }
      if (operation[RAW_BODY]) {
        operation.requestBody = { required: true, description: 'The file itself, of any type, at most size_bytes bytes.', content: { '*/*': { schema: { type: 'string', format: 'binary' } } } };
        delete operation[RAW_BODY];
      }
    }
  }
  const schemas: Json = {};
  const hoisted = hoist(document, schemas) as Json;
  const components = hoisted.components as Json;
  components.schemas = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  components.responses = shareErrorAnswers(hoisted.paths as Record<string, Record<string, Json>>);
  return hoisted;
}

export async function registerOpenApi(app: FastifyInstance, publicUrl: string | undefined): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Quarry',
        version: QUARRY_VERSION,
        description: 'Durable research tasks run by a sandboxed agent. Every error is one JSON body: branch on `error`, show `message`.',
        license: { name: 'UNLICENSED', identifier: 'UNLICENSED' },
      },
      // Relative to the document's own address unless QUARRY_PUBLIC_URL names the public one.
      servers: [{ url: publicUrl ?? '/' }],
      tags: [
        { name: 'tasks', description: 'Create tasks, message them, follow them, stop them.' },
        { name: 'outputs', description: 'Read and export the rows of a task\'s outputs.' },
        { name: 'uploads', description: 'Upload large inputs through signed URLs.' },
        { name: 'groups', description: 'Run one spec over many inputs and read the merged table.' },
        { name: 'webhooks', description: 'Endpoints Quarry calls, signed, when a turn or a group ends.' },
        { name: 'meta', description: 'The workflow and the spec\'s schema.' },
        { name: 'health', description: 'Probes for load balancers and orchestrators.' },
        { name: 'admin', description: 'Accounts, keys and credits (QUARRY_ADMIN_KEY).' },
      ],
      components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' }, bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ apiKey: [] }, { bearer: [] }],
    },
    transformObject: (document) => finish((document as { openapiObject: Json }).openapiObject),
  });
}

/**
 * The OpenAPI document from the contract's route table alone, without a store or services: what
 * GET /openapi.json serves, for tools that generate from it (the client's types).
 */
export async function buildOpenApiDocument(publicUrl?: string): Promise<Json> {
  const app = Fastify();
  // Nothing is served: requests are never validated nor answers serialized here.
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  try {
    await registerOpenApi(app, publicUrl);
    for (const route of Object.values(ROUTES)) app.route({ ...contractRoute(route), handler: async () => undefined });
    await app.ready();
    return app.swagger() as unknown as Json;
  } finally {
    await app.close();
  }
}
