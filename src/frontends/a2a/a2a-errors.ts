/**
 * Quarry's errors as A2A errors. Every error `/a2a` answers with carries our catalogue code in
 * its ErrorInfo metadata (`quarry_code`), so a client can act on it exactly as on the REST
 * answer with that code; the A2A error class (and so the JSON-RPC code) is the nearest A2A one.
 */
import type { FastifyBaseLogger, FastifyError } from 'fastify';
import { A2AError, A2A_ERROR_CODE, JsonRpcRequestMalformedError, RequestMalformedError, TaskNotFoundError, type A2AErrorInfo } from '@a2a-js/sdk/errors';
import { QuarryError } from '../../errors.js';
import { toQuarryError } from '../../http/error-handler.js';

/**
 * A Quarry refusal A2A has no error for (out of credits, a queue that is full, a store that cannot
 * answer): JSON-RPC's internal error code, with ErrorInfo naming our code as its reason in our
 * own domain, so it is not mistaken for one of A2A's reasons.
 */
export class QuarryA2AError extends A2AError {
  override readonly reason: string;

  constructor(code: string, message: string, metadata: Record<string, string>) {
    super({ message, metadata });
    this.reason = code.toUpperCase();
  }

  override toErrorInfo(): A2AErrorInfo {
    const info = super.toErrorInfo();
    return { ...info, reason: this.reason, domain: 'quarry' as A2AErrorInfo['domain'] };
  }
}

/** Metadata every error carries: our catalogue code, and what the REST body would add (param, retry_after). */
export function quarryMetadata(code: string, extras: { param?: string; retryable?: boolean; retry_after?: number; task_id?: string } = {}): Record<string, string> {
  const metadata: Record<string, string> = { quarry_code: code };
  if (extras.retryable !== undefined) metadata.retryable = String(extras.retryable);
  if (extras.param !== undefined) metadata.param = extras.param;
  if (extras.retry_after !== undefined) metadata.retry_after = String(extras.retry_after);
  if (extras.task_id !== undefined) metadata.task_id = extras.task_id;
  return metadata;
}

/** A malformed request in A2A's terms, with our `invalid_request` code. */
export function malformed(message: string, param?: string): A2AError {
  return new RequestMalformedError({ message, metadata: quarryMetadata('invalid_request', { param, retryable: false }) });
}

export const PARSE_ERROR = A2A_ERROR_CODE.PARSE_ERROR;
export const INVALID_REQUEST = A2A_ERROR_CODE.INVALID_REQUEST;

/** A body that is not JSON (-32700) or not a JSON-RPC 2.0 request (-32600): JSON-RPC's own codes, with our `invalid_request`. */
export function invalidEnvelope(code: typeof PARSE_ERROR | typeof INVALID_REQUEST, message: string): A2AError {
  return new JsonRpcRequestMalformedError({ message, envelopeCode: code, metadata: quarryMetadata('invalid_request', { retryable: false }) });
}

/** Any failure as the A2A error to answer with; unexpected ones are logged and answered without internals. */
export function toA2AError(err: unknown, log?: FastifyBaseLogger): A2AError {
  if (err instanceof A2AError) return err;
  if (err instanceof QuarryError) {
    const metadata = quarryMetadata(err.code, { param: err.extras.param, retryable: err.retryable, retry_after: err.extras.retry_after, task_id: err.extras.task_id });
    if (err.code === 'task_not_found') return new TaskNotFoundError({ message: err.message, metadata });
    if (err.code === 'invalid_request') return new RequestMalformedError({ message: err.message, metadata });
    return new QuarryA2AError(err.code, err.message, metadata);
  }
  const known = err instanceof Error ? toQuarryError(err as FastifyError) : null;
  if (known) return toA2AError(known, log);
  log?.error({ err }, 'A2A request failed');
  return new QuarryA2AError('internal_error', 'Something went wrong on our side.', quarryMetadata('internal_error', { retryable: true }));
}
