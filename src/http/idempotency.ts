/**
 * Idempotency-Key (decisions §2): the same key from the same account within 24 h answers with
 * the first response again and changes nothing; the same key with a different request is 422.
 * Only successful answers are remembered, so a refused or failed request can be retried under
 * the same key.
 */
import crypto from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { QuarryError } from '../errors.js';
import { COMMITTED_MARK } from '../tasks/task-service.js';
import { toReplyView } from '../tasks/task-view.js';

const WINDOW_MS = 24 * 60 * 60 * 1000;

declare module 'fastify' {
  interface FastifyRequest {
    idempotency?: { key: string; requestHash: string };
  }
}

function refuse(msg: string): QuarryError {
  return QuarryError.validation('Idempotency-Key', `Idempotency-Key ${msg}`, [{ type: 'value_error', loc: ['header', 'Idempotency-Key'], msg }]);
}

/** Wraps a handler: replays a remembered answer, or runs it and lets the onSend hook remember it. */
export async function withIdempotency(request: FastifyRequest, reply: FastifyReply, handle: () => Promise<FastifyReply>): Promise<FastifyReply> {
  const raw = request.headers['idempotency-key'];
  if (raw === undefined) return handle();
  const key = Array.isArray(raw) ? raw[0]! : raw;
  if (key.length < 1 || key.length > 128) throw refuse('must be 1-128 characters');
  const { store } = request.server.deps;
  const requestHash = crypto.createHash('sha256').update(`${request.method} ${request.url}\n${JSON.stringify(request.body ?? null)}`).digest('hex');
  const seen = await store.getIdempotency(request.accountId, key, new Date(Date.now() - WINDOW_MS).toISOString());
  if (seen) {
    if (seen.requestHash !== requestHash) throw refuse('was already used with a different request; use a new key');
    reply.code(seen.status).header('Idempotent-Replayed', 'true').type('application/json; charset=utf-8');
    if (!seen.body.startsWith(COMMITTED_MARK)) return reply.send(seen.body);
    // The change committed but its answer was never sent (the process died in between): answer
    // with the task as it stands now.
    const task = await request.server.deps.tasks.getTask(request.accountId, seen.body.slice(COMMITTED_MARK.length), { includeDeleted: true });
    return reply.send(toReplyView(task, seen.status));
  }
  request.idempotency = { key, requestHash };
  return handle();
}

export function registerIdempotency(app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    const marked = request.idempotency;
    if (!marked || reply.statusCode >= 300 || typeof payload !== 'string') return done(null, payload);
    app.deps.store
      .putIdempotency(request.accountId, marked.key, { requestHash: marked.requestHash, status: reply.statusCode, body: payload, createdAt: new Date().toISOString() })
      .then(() => done(null, payload), (err: Error) => done(err));
  });
}
