import type { RateLimitReport } from '../../retry-policy.js';

/**
 * The contract every model provider fills (version 1). The agent loop talks only to this
 * interface, so adding a provider never touches the loop.
 */

export type ModelMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ModelToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

export interface ModelToolCall {
  id: string;
  name: string;
  /** The arguments exactly as the model sent them (JSON text, possibly malformed). */
  arguments: string;
}

export interface ModelToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export interface ModelUsage {
  /** All input tokens, those read from the provider's prompt cache (and written to it) included. */
  inputTokens: number;
  /** Of inputTokens, those read from the prompt cache. */
  cachedInputTokens: number;
  outputTokens: number;
}

export interface ModelRequest {
  messages: ModelMessage[];
  tools: ModelToolDefinition[];
  /**
   * Names the conversation for the provider's prompt cache (the task id): requests that share a
   * key and a prefix are routed where that prefix is cached. Sent as OpenAI's `prompt_cache_key`.
   */
  cacheKey?: string;
  /** Aborting cancels the HTTP call at once; generate() then rejects with an AbortError. */
  signal: AbortSignal;
  /**
   * Called with each piece of assistant text as it arrives (streamed answers). An answer that
   * arrives whole calls it not at all: the agent loop passes on whatever text of the reply no
   * delta carried, so the text reaches the task once either way.
   */
  onTextDelta?: (text: string) => void;
  /** Called with what a successful answer's headers say of the provider's rate limits, as they arrive. */
  onRateLimits?: (report: RateLimitReport) => void;
}

export interface ModelResponse {
  text: string;
  toolCalls: ModelToolCall[];
  usage: ModelUsage;
  finishReason: string;
}

export interface ModelProvider {
  readonly specificationVersion: 'v1';
  /** Short name for logs and errors, e.g. `openai-compatible`. */
  readonly name: string;
  generate(request: ModelRequest): Promise<ModelResponse>;
}

/**
 * A failed provider call. `retryable` is set from the HTTP status (408, 409, 429 and 5xx), and
 * for network errors, timeouts and malformed answers.
 */
export class ModelProviderError extends Error {
  readonly status: number | undefined;
  readonly retryable: boolean;
  /** How long the server asked us to wait before trying again (its `Retry-After`), when it said. */
  readonly retryAfterMs: number | undefined;
  /** What the answer's headers said of the provider's rate limits (an HTTP error's answer only). */
  readonly rateLimits: RateLimitReport | undefined;
  constructor(message: string, opts: { status?: number; retryable: boolean; retryAfterMs?: number; rateLimits?: RateLimitReport; cause?: unknown }) {
    super(message, { cause: opts.cause });
    this.name = 'ModelProviderError';
    this.status = opts.status;
    this.retryable = opts.retryable;
    this.retryAfterMs = opts.retryAfterMs;
    this.rateLimits = opts.rateLimits;
  }
}
