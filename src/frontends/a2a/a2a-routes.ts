/**
 * Quarry as an A2A v1.0 agent (decisions §15.4): the agent card at
 * `GET /.well-known/agent-card.json` (public) and JSON-RPC at `POST /a2a` (the API key, checked
 * by the request gate like every keyed route). The SDK's JsonRpcTransportHandler reads the
 * envelope and calls our handler; the two streaming methods are written here as SSE, because
 * each frame carries `id: <seq>` of the task event it comes from (the SDK's own writer sends no
 * ids), so a client resumes with `Last-Event-ID` and loses and repeats nothing.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AgentCard, SendMessageRequest, StreamResponse, SubscribeToTaskRequest } from '@a2a-js/sdk';
import { JsonRpcTransportHandler, validateVersion } from '@a2a-js/sdk/server';
import { VersionNotSupportedError } from '@a2a-js/sdk/errors';
import { drainedWithin, openStream } from '../../http/sse.js';
import { publicBaseUrl } from '../../http/public-url.js';
import { A2A_VERSION, buildAgentCard } from './agent-card.js';
import { INVALID_REQUEST, invalidEnvelope, malformed, PARSE_ERROR, quarryMetadata, toA2AError } from './a2a-errors.js';
import { callContext, isObject, QuarryA2AHandler, type A2ACall } from './a2a-handler.js';
import type { Frame } from './task-mapping.js';

type RpcId = string | number | null;

/** Where the JSON-RPC endpoint is served (its streaming methods are counted under it as event streams). */
export const A2A_URL = '/a2a';

/** How long a stream waits for a client that stopped reading before it gives up on it. */
const DRAIN_TIMEOUT_MS = 30_000;

const STREAM_METHODS = new Set(['SendStreamingMessage', 'SubscribeToTask']);

/** The request's JSON-RPC id when it is one (a string or an integer); null when it cannot be read. */
function idOf(body: unknown): RpcId {
  const id = isObject(body) ? body.id : undefined;
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
}

/**
 * Why the body is not a JSON-RPC 2.0 Request object, or null when it is one. The SDK would
 * answer these with -32602 (its RequestMalformedError); JSON-RPC's code for them is -32600.
 */
function envelopeProblem(body: unknown): string | null {
  if (Array.isArray(body)) return 'Batch requests are not supported: send one JSON-RPC request per POST.';
  if (!isObject(body)) return 'The body must be a JSON-RPC 2.0 request object.';
  if (body.jsonrpc !== '2.0') return 'jsonrpc must be "2.0".';
  if (typeof body.method !== 'string' || body.method === '') return 'method must name an A2A method (a non-empty string).';
  if ('id' in body && body.id !== null && idOf(body) === null) return 'id must be a string, an integer or null.';
  if ('params' in body && body.params !== undefined && (typeof body.params !== 'object' || body.params === null)) return 'params must be an object.';
  return null;
}

function errorEnvelope(id: RpcId, err: unknown) {
  return { jsonrpc: '2.0' as const, id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) };
}

/** One header's value (the first, if sent more than once). */
function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export async function a2aRoutes(fastify: FastifyInstance): Promise<void> {
  const { commands, queries, events, config } = fastify.deps;
  const handler = new QuarryA2AHandler({ commands, queries, events, config, logger: fastify.log });
  const rpc = new JsonRpcTransportHandler(handler);
  // The versions /a2a accepts are the card's; they do not depend on the URL it is served at.
  const versionCard = buildAgentCard('');

  // A body that is not JSON is JSON-RPC's parse error on /a2a; every other failure is answered as anywhere else.
  fastify.setErrorHandler((err: FastifyError, request, reply) => {
    if (request.routeOptions.url === A2A_URL && err.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
      return reply.code(200).send(errorEnvelope(null, invalidEnvelope(PARSE_ERROR, 'Parse error: the body is not valid JSON.')));
    }
    throw err;
  });

  fastify.get('/.well-known/agent-card.json', { schema: { hide: true }, config: { auth: 'none' } }, async (request, reply) => {
    // Built from the request's Host when QUARRY_PUBLIC_URL is unset: no shared cache may keep one host's card for another.
    if (!config.publicUrl) reply.header('Cache-Control', 'no-store');
    return AgentCard.toJSON(buildAgentCard(publicBaseUrl(request, config.publicUrl)));
  });

  fastify.post(A2A_URL, { schema: { hide: true }, config: { auth: 'key' } }, async (request, reply) => {
    const body = request.body;
    const closed = new AbortController();
    // A client that leaves before its stream opens (or during a blocking send) ends the waits for it.
    reply.raw.once('close', () => closed.abort());
    if (request.raw.socket.destroyed) closed.abort();
    const call: A2ACall = { accountId: request.accountId, baseUrl: publicBaseUrl(request, config.publicUrl), headers: request.headers, signal: closed.signal };
    // The SDK reads a missing header as 0.3; this endpoint speaks 1.0 only, so that is what a request without one gets.
    const version = headerValue(request.headers['a2a-version'])?.trim() || A2A_VERSION;
    const context = callContext(call, version);
    const problem = envelopeProblem(body);
    if (problem) return reply.send(errorEnvelope(idOf(body), invalidEnvelope(INVALID_REQUEST, `Invalid Request: ${problem}`)));
    const { method, params } = body as { method: string; params?: unknown };
    const id = idOf(body);
    // A streaming method answers with a stream even when it is refused: the error is its one frame.
    const stream = STREAM_METHODS.has(method);
    try {
      validateVersion(version, versionCard, 'JSONRPC');
    } catch (err) {
      const message = err instanceof Error ? err.message : `A2A-Version ${version} is not supported.`;
      const refusal = new VersionNotSupportedError({ message: `${message} This agent speaks A2A ${A2A_VERSION}.`, metadata: quarryMetadata('invalid_request', { retryable: false }) });
      return stream ? writeFrames(request, reply, id, refused(refusal), closed) : reply.send(errorEnvelope(id, refusal));
    }

    if (!stream) {
      const out = await rpc.handle(body as Record<string, unknown>, context);
      if (Symbol.asyncIterator in out) {
        // Streaming methods are taken above; a stream reaching here has no ids to give.
        return writeFrames(request, reply, id, toFrames(out), closed);
      }
      return reply.send(out);
    }
    let frames: AsyncGenerator<Frame, void, undefined>;
    try {
      frames = method === 'SendStreamingMessage'
        ? await handler.openMessageStream(parse(SendMessageRequest, params), context)
        : await handler.openSubscription(parse(SubscribeToTaskRequest, params), context);
    } catch (err) {
      // Refused before it started (no such task, out of credits): the stream's one frame is the error.
      frames = refused(err);
    }
    await writeFrames(request, reply, id, frames, closed, config.pingIntervalMs);
  });
}

function parse<T>(codec: { fromJSON(value: unknown): T }, params: unknown): T {
  if (!isObject(params) || Object.keys(params).some((k) => k === '')) throw malformed('params must be an object of the method\'s parameters.', 'params');
  try {
    return codec.fromJSON(params);
  } catch (err) {
    throw malformed(`Invalid method parameters: ${err instanceof Error ? err.message : String(err)}`, 'params');
  }
}

/** A stream that fails before its first frame. */
// eslint-disable-next-line require-yield
async function* refused(err: unknown): AsyncGenerator<Frame, void, undefined> {
  throw err;
}

/** JSON-RPC answers the SDK streamed, as frames without an id. */
async function* toFrames(out: AsyncGenerator<{ result?: unknown }, void, undefined>): AsyncGenerator<Frame, void, undefined> {
  for await (const answer of out) yield { id: null, response: StreamResponse.fromJSON(answer.result) };
}

/**
 * Writes the frames as SSE until they end or the client leaves: `id: <seq>` on each frame that
 * has one, `: ping` comments while nothing happens, and a client that stops reading is waited for
 * (bounded) rather than buffered for. A failure is a frame holding the JSON-RPC error response
 * (JSON-RPC over SSE has no other way to say it), then the end.
 */
async function writeFrames(
  request: FastifyRequest,
  reply: FastifyReply,
  rpcId: RpcId,
  frames: AsyncGenerator<Frame, void, undefined>,
  closed: AbortController,
  pingIntervalMs = 15_000,
): Promise<void> {
  const raw = openStream(request, reply);
  const onClose = () => closed.abort();
  raw.on('close', onClose);
  const ping = setInterval(() => {
    if (!raw.destroyed) raw.write(': ping\n\n');
  }, pingIntervalMs);
  try {
    for await (const frame of frames) {
      if (raw.destroyed) break;
      const data = JSON.stringify({ jsonrpc: '2.0', id: rpcId, result: StreamResponse.toJSON(frame.response) });
      const text = frame.id === null ? `data: ${data}\n\n` : `id: ${frame.id}\ndata: ${data}\n\n`;
      if (!raw.write(text) && !(await drainedWithin(raw, raw, DRAIN_TIMEOUT_MS))) {
        request.log.info('A2A stream client stopped reading; disconnected');
        raw.destroy();
        break;
      }
    }
  } catch (err) {
    if (!raw.destroyed) raw.write(`data: ${JSON.stringify(errorEnvelope(rpcId, toA2AError(err, request.log)))}\n\n`);
  } finally {
    clearInterval(ping);
    raw.off('close', onClose);
    closed.abort();
    if (!raw.destroyed) raw.end();
  }
}
