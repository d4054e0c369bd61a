/**
 * `/mcp`: Quarry as an MCP server over the Streamable HTTP transport (decisions §15.4), with the
 * official SDK. Stateless: each POST gets its own server and transport and no session id is
 * issued, so any process that serves the API (an `--role api` node of a cluster too) answers any
 * request, and a task started by an agent outlives the agent's connection. The API key is checked
 * by the same request gate as every keyed route.
 *
 * The SDK's low-level `Server` is used rather than `McpServer`: it takes the tools' JSON Schemas
 * as they are, so their arguments and results are the contract's (contract/mcp.ts), not a copy
 * of them in another schema language.
 */
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { MCP_TOOLS, type McpToolName } from '../../contract/index.js';
import type { Config } from '../../config.js';
import { QuarryError } from '../../errors.js';
import { routeHooks } from '../../http/contract-route.js';
import { sendError } from '../../http/error-handler.js';
import { publicBaseUrl } from '../../http/public-url.js';
import { QUARRY_VERSION } from '../../package-info.js';
import { createMcpTools } from './mcp-tools.js';

const SERVER_INFO = { name: 'quarry', title: 'Quarry research tasks', version: QUARRY_VERSION };
const INSTRUCTIONS =
  'Quarry runs durable research tasks: start_task returns at once; wait_for_task (up to 50 s a call, with progress) until active is false; ' +
  'read_rows for the results with their sources. A task keeps running when you disconnect; continue_task queues a message while it works.';

/** The tools as tools/list shows them: the contract's schemas, as JSON. */
const TOOL_LIST = (Object.keys(MCP_TOOLS) as McpToolName[]).map((name) => ({
  name,
  description: MCP_TOOLS[name].description,
  inputSchema: JSON.parse(JSON.stringify(MCP_TOOLS[name].input)) as { type: 'object' },
  outputSchema: JSON.parse(JSON.stringify(MCP_TOOLS[name].output)) as { type: 'object' },
}));

/** An origin as browsers send it (lower case, no default port); null when it is not one. */
function originOf(url: string): string | null {
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
}

/**
 * The Streamable HTTP transport's guard against DNS rebinding: a request that carries an Origin
 * (a browser's) is refused unless it is the service's own (QUARRY_PUBLIC_URL's, else the
 * request's scheme and Host) or one QUARRY_CORS_ORIGINS lets call the API. Clients that are no
 * browser send no Origin and pass. An onRequest hook of every /mcp route (those that answer 405
 * too), ahead of the request gate, so a foreign page learns nothing about keys.
 */
export function guardMcpOrigins(app: FastifyInstance, config: Pick<Config, 'publicUrl' | 'corsOrigins'>): void {
  const anyOrigin = config.corsOrigins.includes('*');
  const allowed = new Set(config.corsOrigins);
  const guard: onRequestHookHandler = (request, reply, done) => {
    const sent = request.headers.origin;
    if (sent === undefined || anyOrigin) return done();
    const origin = originOf(sent);
    if (origin !== null && (allowed.has(origin) || origin === originOf(publicBaseUrl(request, config.publicUrl)))) return done();
    sendError(reply, request, new QuarryError('origin_not_allowed', `Origin ${JSON.stringify(sent)} may not call /mcp: only the service's own origin and those in QUARRY_CORS_ORIGINS may (MCP clients that are no browser send no Origin).`));
  };
  app.addHook('onRoute', (route) => {
    if (route.url === '/mcp') route.onRequest = [guard, ...routeHooks(route.onRequest)];
  });
}

export async function mcpRoutes(app: FastifyInstance): Promise<void> {
  const { commands, queries, events, logger } = app.deps;
  const tools = createMcpTools({ commands, queries, events, logger });

  /** One MCP server for one request, acting as the request's account. */
  function serverFor(request: FastifyRequest, signal: AbortSignal) {
    const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOL_LIST }));
    server.setRequestHandler(CallToolRequestSchema, async (call, extra) => {
      if (!(call.params.name in MCP_TOOLS)) throw new McpError(ErrorCode.InvalidParams, `No tool "${call.params.name}": the tools are ${Object.keys(MCP_TOOLS).join(', ')}.`);
      const token = call.params._meta?.progressToken;
      return tools.call(call.params.name, call.params.arguments, {
        accountId: request.accountId,
        requestId: request.id,
        signal,
        async progress(progress, message) {
          if (token === undefined) return;
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, message } });
        },
      });
    });
    return server;
  }

  app.post('/mcp', { schema: { hide: true }, config: { auth: 'key' } }, async (request, reply) => {
    const closed = new AbortController();
    const server = serverFor(request, closed.signal);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    // The transport writes the answer (JSON or an SSE stream of progress, then the result) itself;
    // the headers set so far (X-Request-ID, CORS) go with it.
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
    reply.hijack();
    reply.raw.on('close', () => {
      closed.abort(new Error('the MCP client closed the connection'));
      const log = (err: unknown) => logger.debug({ err }, 'closing an MCP request failed');
      transport.close().catch(log);
      server.close().catch(log);
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  });

  // Stateless: no standalone stream to GET, no session to DELETE (the MCP clients expect 405 here).
  const notAllowed = async () => {
    throw new QuarryError('method_not_allowed', 'MCP runs over POST /mcp here: there are no sessions, so no GET stream and nothing to DELETE.', { headers: { Allow: 'POST' } });
  };
  app.get('/mcp', { schema: { hide: true }, config: { auth: 'key' } }, notAllowed);
  app.delete('/mcp', { schema: { hide: true }, config: { auth: 'key' } }, notAllowed);
}
