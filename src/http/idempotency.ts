/**
 * Idempotency-Key (decisions §2, §14): the same key from the same account within 24 h answers
 * with the first response again and changes nothing; the same key with a different request is
 * 422. Only successful answers are remembered, so a refused or failed request can be retried
 * under the same key.
 *
 * The key is claimed inside the unit of work of the change it guards (a ChangeGuard this module
 * hands the route, which passes it to the service), so two requests with one key never both make
 * the change. This module reads the header, decides what the record says, answers from it, and
 * stores the answer once it is sent; the records are read and written through
 * IdempotencyRecords. A request that finds the key held by one still in flight waits for that
 * one's answer and replays it: on the request itself when it runs in this process, by polling
 * the store when it may run in another (a shared store).
 */
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import { QuarryError } from '../errors.js';
import type { IdempotencyRecord } from '../domain/records.js';
import type { IdempotencyRecords } from '../tasks/idempotency-records.js';
import type { ChangeGuard, ChangeTarget } from '../tasks/unit-of-work.js';
import { toReplyView } from '../domain/task-view.js';
import { routeHooks } from './contract-route.js';

/**
 * How long a request waits for the answer of the request that made the change, counted from
 * that change's commit. Answers normally follow their commit within milliseconds; a record still
 * without its answer after this (its process died in between, or the request blocks on `wait`)
 * is answered with the task as it stands.
 */
const ANSWER_WAIT_MS = 5_000;
const POLL_FIRST_MS = 5;
const POLL_MAX_MS = 100;

/**
 * How often a request looks for the record again after its own change found the key claimed.
 * The claim it lost to was committed by then, so one look finds it; more are for a record that
 * expired in between.
 */
const CLAIM_ATTEMPTS = 3;

/** A request's key, and the fingerprint of the request a replay must match. */
export interface IdempotencyMark {
  key: string;
  requestHash: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    idempotency?: IdempotencyMark;
  }
}

/**
 * The change was not made: another request holds the key, and its change committed (or, on
 * SQLite, is about to commit with this one's group). That request's record is the answer.
 */
export class IdempotencyKeyClaimed extends Error {
  constructor(readonly key: string) {
    super(`Idempotency-Key "${key}" was claimed by another request`);
    this.name = 'IdempotencyKeyClaimed';
  }
}

/** What a record says while its change committed but its answer is not stored yet: what the change made or changed. */
const COMMITTED_MARKS: Record<ChangeTarget['kind'], string> = { task: '@committed-task:', group: '@committed-group:' };

/** The target of a record whose change committed but whose answer was not stored yet; null for a stored answer. */
function committedTarget(body: string): ChangeTarget | null {
  for (const [kind, mark] of Object.entries(COMMITTED_MARKS)) {
    if (body.startsWith(mark)) return { kind: kind as ChangeTarget['kind'], id: body.slice(mark.length) };
  }
  return null;
}

function committedRecord(mark: IdempotencyMark, status: number, target: ChangeTarget, at: string): IdempotencyRecord {
  return { requestHash: mark.requestHash, status, body: `${COMMITTED_MARKS[target.kind]}${target.id}`, createdAt: at };
}

/**
 * The key's part in the change it guards, run in the change's unit of work: first it claims the
 * key (or throws IdempotencyKeyClaimed), with a record that says the change committed (it is
 * visible to other requests only once it has) and what it changed; then it records the status
 * the change is answered with, 202 for a queued message. A change that is refused or fails rolls
 * back and takes its claim with it, so the key can be used again.
 */
export function idempotencyGuard(records: IdempotencyRecords, accountId: string, mark: IdempotencyMark): ChangeGuard {
  return {
    async claim(uow, target) {
      if (!(await records.claim(uow, accountId, mark.key, committedRecord(mark, 200, target, uow.now)))) throw new IdempotencyKeyClaimed(mark.key);
    },
    async made(uow, target, outcome) {
      if (outcome.queued) await records.put(uow, accountId, mark.key, committedRecord(mark, 202, target, uow.now));
    },
  };
}

/**
 * The requests of this process that run a change under a key, by account and key, each until
 * its answer is stored and sent (or until it found the key claimed by another). A request
 * waiting for a key's answer waits for these, never for itself.
 */
class Answering {
  private readonly byKey = new Map<string, Set<Promise<void>>>();

  /** Enters a request; the returned function takes it out again (once it is done, or lost the key). Leaving twice is leaving once. */
  enter(id: string): () => void {
    let resolve!: () => void;
    const left = new Promise<void>((r) => (resolve = r));
    const running = this.byKey.get(id) ?? new Set();
    running.add(left);
    this.byKey.set(id, running);
    return () => {
      if (running.delete(left) && running.size === 0 && this.byKey.get(id) === running) this.byKey.delete(id);
      resolve();
    };
  }

  /** Resolves once every request of this process under the key has left, or after `ms`; false at once when there is none. */
  async waitFor(id: string, ms: number): Promise<boolean> {
    const running = this.byKey.get(id);
    if (!running || running.size === 0) return false;
    const timeout = new AbortController();
    await Promise.race([Promise.all(running), sleep(ms, undefined, { signal: timeout.signal }).catch(() => {})]);
    timeout.abort();
    return true;
  }
}

const answering = new Answering();

function refuse(msg: string): QuarryError {
  return QuarryError.validation('Idempotency-Key', `Idempotency-Key ${msg}`, [{ type: 'value_error', loc: ['header', 'Idempotency-Key'], msg }]);
}

/**
 * The record under the key, with its answer once the request that made the change has stored
 * it. A record that says only that the change committed belongs to a request still answering,
 * which is waited for until ANSWER_WAIT_MS after its commit: a request of this process until it
 * is done, one that may be in another process (a shared store) by polling with a growing pause.
 * With neither, no one is left to answer (the process died after the commit) and the record is
 * returned as it is.
 */
async function settledRecord(request: FastifyRequest, key: string): Promise<IdempotencyRecord | undefined> {
  const { idempotency } = request.server.deps;
  for (let pause = POLL_FIRST_MS; ; pause = Math.min(pause * 2, POLL_MAX_MS)) {
    const seen = await idempotency.find(request.accountId, key);
    if (!seen || !committedTarget(seen.body)) return seen;
    const waitLeft = ANSWER_WAIT_MS - (Date.now() - Date.parse(seen.createdAt));
    if (waitLeft <= 0) return seen;
    if (await answering.waitFor(answeringId(request, key), waitLeft)) continue;
    if (!idempotency.shared) return seen;
    await sleep(Math.min(pause, waitLeft));
  }
}

function answeringId(request: FastifyRequest, key: string): string {
  return `${request.accountId}\n${key}`;
}

async function replay(request: FastifyRequest, reply: FastifyReply, seen: IdempotencyRecord, requestHash: string): Promise<FastifyReply> {
  if (seen.requestHash !== requestHash) throw refuse('was already used with a different request; use a new key');
  reply.code(seen.status).header('Idempotent-Replayed', 'true').type('application/json; charset=utf-8');
  const target = committedTarget(seen.body);
  if (!target) return reply.send(seen.body);
  // The change committed but its answer was never stored (the process died in between, or the
  // request is still waiting on its turn): answer with the task or group as it stands now.
  const { queries, groups } = request.server.deps;
  if (target.kind === 'group') return reply.send(await groups.get(request.accountId, target.id));
  const task = await queries.task(request.accountId, target.id, { includeDeleted: true });
  return reply.send(toReplyView(task, { queued: seen.status === 202 }));
}

/**
 * Wraps a handler: replays a remembered answer, or runs the handler with the guard its change is
 * to run (undefined without the header), and lets the onSend hook remember the answer.
 */
export async function withIdempotency(request: FastifyRequest, reply: FastifyReply, handle: (guard?: ChangeGuard) => Promise<FastifyReply>): Promise<FastifyReply> {
  const raw = request.headers['idempotency-key'];
  if (raw === undefined) return handle();
  const key = Array.isArray(raw) ? raw[0]! : raw;
  if (key.length < 1 || key.length > 128) throw refuse('must be 1-128 characters');
  const requestHash = crypto.createHash('sha256').update(`${request.method} ${request.url}\n${JSON.stringify(request.body ?? null)}`).digest('hex');
  for (let attempt = 1; ; attempt++) {
    const seen = await settledRecord(request, key);
    if (seen) return replay(request, reply, seen, requestHash);
    request.idempotency = { key, requestHash };
    const leave = answering.enter(answeringId(request, key));
    // The answer is stored (onSend) before the response is done.
    reply.raw.once('close', leave);
    try {
      return await handle(idempotencyGuard(request.server.deps.idempotency, request.accountId, request.idempotency));
    } catch (err) {
      // Another request claimed the key between the look above and this change: this change
      // rolled back, and the other one's answer is the answer.
      if (!(err instanceof IdempotencyKeyClaimed) || attempt === CLAIM_ATTEMPTS) throw err;
      request.idempotency = undefined;
      reply.raw.off('close', leave);
      leave();
    }
  }
}

/** Stores a change's answer under its key before the answer is sent. */
const rememberAnswer: onSendHookHandler = (request, reply, payload, done) => {
  const marked = request.idempotency;
  if (!marked || reply.statusCode >= 300 || typeof payload !== 'string') return done(null, payload);
  request.server.deps.idempotency
    .put(null, request.accountId, marked.key, { requestHash: marked.requestHash, status: reply.statusCode, body: payload, createdAt: new Date().toISOString() })
    .then(() => done(null, payload), (err: Error) => done(err));
};

/**
 * Only the routes that take an Idempotency-Key (their headers schema names it; each answers
 * through withIdempotency) get the hook that remembers answers: every other answer skips it.
 */
export function registerIdempotency(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const headers = (route.schema?.headers ?? {}) as { properties?: Record<string, unknown> };
    if (!headers.properties || !('Idempotency-Key' in headers.properties)) return;
    route.onSend = [rememberAnswer, ...routeHooks(route.onSend)];
  });
}
