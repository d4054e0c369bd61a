/**
 * Everything Quarry reads from its environment, parsed once at start-up (decisions §12).
 * Modules receive a Config; nothing else reads process.env.
 */
import os from 'node:os';
import path from 'node:path';
import type { Prices } from './domain/credits.js';
import type { SandboxLimits } from './sandbox/types.js';

// ---- provider and search defaults: the providers read them from here ----------------------------

export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 8192;

/** QUARRY_MODEL_TIMEOUT_S's default: a model that says nothing for two minutes is taken as hung. */
export const DEFAULT_MODEL_TIMEOUT_MS = 120_000;

export type SearchProviderName = 'searxng' | 'brave' | 'tavily';
export const SEARCH_PROVIDERS: readonly SearchProviderName[] = ['searxng', 'brave', 'tavily'];

export interface SearchConfig {
  provider: SearchProviderName;
  /** SearXNG: its base URL (required). Brave and Tavily: replaces the public API's base URL. */
  url?: string;
  /** Brave: the subscription token. Tavily: the API key. SearXNG: sent as a Bearer token if given. */
  apiKey?: string;
}

/** Checks a search configuration; returns the problem, or undefined when it is usable. */
export function searchConfigProblem(config: SearchConfig): string | undefined {
  if (!SEARCH_PROVIDERS.includes(config.provider)) return `QUARRY_SEARCH_PROVIDER must be one of ${SEARCH_PROVIDERS.join(', ')}, got "${String(config.provider)}"`;
  if (config.provider === 'searxng' && !config.url) return 'QUARRY_SEARCH_PROVIDER=searxng needs QUARRY_SEARCH_URL (the SearXNG base URL)';
  if (config.provider !== 'searxng' && !config.apiKey) return `QUARRY_SEARCH_PROVIDER=${config.provider} needs QUARRY_SEARCH_API_KEY`;
  if (config.url) {
    try {
      const url = new URL(config.url);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'QUARRY_SEARCH_URL must be an http or https URL';
    } catch {
      return `QUARRY_SEARCH_URL is not a valid URL: "${config.url}"`;
    }
  }
  return undefined;
}

export type Role = 'all' | 'api' | 'worker';

/** The fields OpenAI-compatible servers read a reply's token limit from (OpenAI's current one, and the older one). */
export const MAX_TOKENS_FIELDS = ['max_completion_tokens', 'max_tokens'] as const;
export type MaxTokensField = (typeof MAX_TOKENS_FIELDS)[number];

export interface ModelConfig {
  /** `demo` is the scripted stand-in of src/agent/providers/demo-model.ts, for trying Quarry without a model. */
  provider: 'openai-compatible' | 'anthropic' | 'demo';
  baseUrl: string;
  model: string;
  apiKey: string | undefined;
  stream: boolean;
  /**
   * The most tokens a reply may have (QUARRY_MODEL_MAX_TOKENS): Anthropic's `max_tokens`, and what
   * a capped group reserves for a call's answer.
   */
  maxTokens: number;
  /**
   * QUARRY_MODEL_MAX_TOKENS_FIELD, OpenAI-compatible only: the request field that carries
   * maxTokens (`max_completion_tokens`, or `max_tokens` for servers that know only that one);
   * unset, none is sent and the server decides a reply's length.
   */
  maxTokensField?: MaxTokensField;
  /** The model's context window (QUARRY_MODEL_CONTEXT_TOKENS): no request goes over it (compaction). */
  contextTokens: number;
  /** QUARRY_MODEL_CACHE_KEY (default on): OpenAI-compatible requests send `prompt_cache_key`. */
  sendCacheKey: boolean;
  /**
   * QUARRY_MODEL_TIMEOUT_S: the longest a model call may go without a byte from the server (to
   * the answer's headers, then between chunks), in ms; 0 = no limit. A timed-out call is retried.
   */
  timeoutMs: number;
}

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl: string | undefined;
  /** PostgreSQL schema to use (created if missing); the database's default when unset. */
  databaseSchema: string | undefined;
  adminKey: string | undefined;
  /** QUARRY_METRICS_PUBLIC=1: `GET /metrics` answers without a key (else it takes the admin key). */
  metricsPublic: boolean;
  starterCredits: number;
  /** Base URL for absolute links (Link headers, upload URLs); unset = taken from each request's Host. */
  publicUrl: string | undefined;
  platformUrl: string;
  model: ModelConfig | undefined;
  /** web_search's provider; unset = the tool answers that none is configured. */
  search: SearchConfig | undefined;
  /** fetch_url may reach loopback, private and link-local addresses (never in production). */
  fetchAllowPrivate: boolean;
  /** run_code's sandbox. */
  sandbox: { mode: 'bwrap' | 'off'; limits: Partial<SandboxLimits>; pythonPath: string | undefined; cgroupParent: string | undefined };
  rateLimitPerMin: number;
  maxBodyBytes: number;
  maxUploadBytes: number;
  maxQueuedMessages: number;
  maxConcurrentTurns: number;
  /** QUARRY_TOOL_CONCURRENCY: tool calls of one reply (reads: web_search, fetch_url, …) an agent runs at once. */
  toolConcurrency: number;
  /** QUARRY_SUBAGENT_CONCURRENCY: sub-researchers of a turn's research call that run at once. */
  subagentConcurrency: number;
  maxPendingTurns: number;
  maxBlockSeconds: number;
  role: Role;
  workerId: string;
  leaseSeconds: number;
  prices: Prices;
  logLevel: string;
  /** SSE keep-alive comment interval. */
  pingIntervalMs: number;
  /** Bytes an SSE client may fall behind before it is cut off. */
  sseMaxBufferBytes: number;
  /**
   * The longest a stream waits for one read of stored events before it ends with a retryable
   * `error` (docs/durability.md). Not read from the environment: tests shorten it.
   */
  sseReadTimeoutMs: number;
  /**
   * Browser origins allowed to call the API (CORS); empty = CORS off, `['*']` = any origin.
   * QUARRY_CORS_ORIGINS, comma-separated.
   */
  corsOrigins: string[];
  /**
   * QUARRY_REQUEST_TIMEOUT_S: the longest a client may take to send a whole request, headers and
   * body (uploads included); answers and streams are not limited by it.
   */
  requestTimeoutSeconds: number;
  /** Webhook deliveries (docs/webhooks.md). */
  webhooks: WebhookConfig;
  /** The model's and the search provider's limits, shared by the cluster (docs/deploy.md#provider-limits). */
  providerLimits: ProviderLimitsConfig;
  /** What the pruner deletes, and when (docs/durability.md#what-is-pruned-and-when). */
  prune: PruneConfig;
}

/** A provider's fixed limits; each undefined when unset (no fixed limit: only what the provider says is kept to). */
export interface ProviderLimits {
  requestsPerMinute?: number;
  tokensPerMinute?: number;
  /** Calls in flight at once. */
  concurrency?: number;
}

export interface ProviderLimitsConfig {
  /** QUARRY_MODEL_RPM, QUARRY_MODEL_TPM, QUARRY_MODEL_CONCURRENCY. */
  model: ProviderLimits;
  /** QUARRY_SEARCH_RPM. */
  search: ProviderLimits;
}

export interface PruneConfig {
  /** QUARRY_PRUNE_INTERVAL_S: how often a pass runs; 0 = never. */
  intervalMs: number;
  /** QUARRY_DELETED_TASK_GRACE_HOURS: how long a deleted task's data is kept before it is purged. */
  deletedTaskGraceMs: number;
  /** QUARRY_EVENT_RETENTION_DAYS: events of turns that ended longer ago are dropped; 0 = kept for ever. */
  eventRetentionMs: number;
  /** QUARRY_WEBHOOK_DELIVERY_RETENTION_DAYS: how long delivered and dead deliveries stay in the log. */
  deliveryRetentionMs: number;
}

export interface WebhookConfig {
  /** QUARRY_WEBHOOK_TIMEOUT_S: the longest one attempt may take, answer included. */
  timeoutMs: number;
  /** QUARRY_WEBHOOK_RETRY_S: the waits before the 2nd, 3rd, … attempt; the last repeats. */
  retryDelaysMs: number[];
  /** QUARRY_WEBHOOK_GIVE_UP_S: no retry is scheduled further than this from the delivery's creation (or last redelivery): it is dead. */
  giveUpMs: number;
}

/** About 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then hourly (decisions §15.3). */
const WEBHOOK_RETRY_S = [5, 30, 120, 600, 1800, 3600];

const HOUR_MS = 60 * 60 * 1000;

class ConfigError extends Error {}

/** A setting that is one of `values`, or unset (or empty; `whenUnset` says what that means). */
function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[], whenUnset?: string): T | undefined {
  const value = env[name] || undefined;
  if (value === undefined || (values as readonly string[]).includes(value)) return value as T | undefined;
  throw new ConfigError(`${name} must be one of ${values.join(', ')}${whenUnset ? ` (or unset: ${whenUnset})` : ''}, got "${value}"`);
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new ConfigError(`${name} must be an integer >= ${min}, got "${raw}"`);
  return n;
}

/** A positive integer setting that may be left unset (undefined: no such limit). */
function optionalLimit(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  return int(env, name, 0, 1);
}

function num(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new ConfigError(`${name} must be a number >= 0, got "${raw}"`);
  return n;
}

/** Token prices per 1,000 tokens, read before version 1.2: refused by name rather than priced differently. */
const RETIRED_PRICES = [['QUARRY_PRICE_INPUT_PER_1K', 'QUARRY_PRICE_INPUT'], ['QUARRY_PRICE_OUTPUT_PER_1K', 'QUARRY_PRICE_OUTPUT']] as const;

/**
 * Token prices in credits per million tokens, per class (decisions §16.3). Cached input defaults
 * to a tenth of input. A server still configured with the per-1,000 names does not start: read
 * as they were, they would leave cached input at a price nobody chose.
 */
function tokenPrices(env: NodeJS.ProcessEnv): Pick<Prices, 'inputPerMillion' | 'cachedInputPerMillion' | 'outputPerMillion'> {
  for (const [old, now] of RETIRED_PRICES) {
    const raw = env[old];
    if (raw === undefined || raw === '') continue;
    const per1k = Number(raw);
    const same = Number.isFinite(per1k) ? ` (${raw} per 1,000 tokens is ${now}=${per1k * 1000})` : '';
    throw new ConfigError(`${old} is no longer read: token prices are per million tokens now. Set ${now} instead${same}; cached input tokens are priced by QUARRY_PRICE_CACHED_INPUT (default a tenth of ${'QUARRY_PRICE_INPUT'})`);
  }
  const inputPerMillion = num(env, 'QUARRY_PRICE_INPUT', 10);
  return {
    inputPerMillion,
    cachedInputPerMillion: num(env, 'QUARRY_PRICE_CACHED_INPUT', inputPerMillion / 10),
    outputPerMillion: num(env, 'QUARRY_PRICE_OUTPUT', 30),
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const host = env.QUARRY_HOST || '127.0.0.1';
  const port = int(env, 'QUARRY_PORT', 8080);
  const role = (env.QUARRY_ROLE || 'all') as Role;
  if (!['all', 'api', 'worker'].includes(role)) throw new ConfigError(`QUARRY_ROLE must be all, api or worker, got "${role}"`);
  const model = modelConfig(env);
  const search = searchConfig(env);
  const config: Config = {
    host,
    port,
    dataDir: path.resolve(env.QUARRY_DATA_DIR || './data'),
    databaseUrl: env.QUARRY_DATABASE_URL || undefined,
    databaseSchema: env.QUARRY_DATABASE_SCHEMA || undefined,
    adminKey: env.QUARRY_ADMIN_KEY || undefined,
    metricsPublic: env.QUARRY_METRICS_PUBLIC === '1',
    starterCredits: num(env, 'QUARRY_STARTER_CREDITS', 100),
    publicUrl: env.QUARRY_PUBLIC_URL ? env.QUARRY_PUBLIC_URL.replace(/\/+$/, '') : undefined,
    platformUrl: (env.QUARRY_PLATFORM_URL || 'https://platform.quarry.invalid').replace(/\/+$/, ''),
    model,
    search,
    fetchAllowPrivate: env.QUARRY_FETCH_ALLOW_PRIVATE === '1',
    sandbox: sandboxConfig(env),
    rateLimitPerMin: int(env, 'QUARRY_RATE_LIMIT_PER_MIN', 600, 1),
    maxBodyBytes: int(env, 'QUARRY_MAX_BODY_BYTES', 1024 * 1024, 1),
    maxUploadBytes: int(env, 'QUARRY_MAX_UPLOAD_BYTES', 100 * 1024 * 1024, 1),
    maxQueuedMessages: int(env, 'QUARRY_MAX_QUEUED_MESSAGES', 16, 0),
    maxConcurrentTurns: int(env, 'QUARRY_MAX_CONCURRENT_TURNS', 256, 1),
    toolConcurrency: int(env, 'QUARRY_TOOL_CONCURRENCY', 8, 1),
    subagentConcurrency: int(env, 'QUARRY_SUBAGENT_CONCURRENCY', 4, 1),
    maxPendingTurns: int(env, 'QUARRY_MAX_PENDING_TURNS', 10_000, 1),
    maxBlockSeconds: int(env, 'QUARRY_MAX_BLOCK_SECONDS', 600, 1),
    role,
    workerId: env.QUARRY_WORKER_ID || `${os.hostname()}-${process.pid}`,
    leaseSeconds: int(env, 'QUARRY_LEASE_SECONDS', 30, 1),
    prices: {
      ...tokenPrices(env),
      toolCall: num(env, 'QUARRY_PRICE_TOOL_CALL', 0.01),
    },
    logLevel: env.QUARRY_LOG_LEVEL || 'info',
    pingIntervalMs: int(env, 'QUARRY_SSE_PING_MS', 15_000, 10),
    sseMaxBufferBytes: int(env, 'QUARRY_SSE_MAX_BUFFER_BYTES', 1024 * 1024, 1024),
    sseReadTimeoutMs: 10_000,
    corsOrigins: corsOrigins(env.QUARRY_CORS_ORIGINS),
    requestTimeoutSeconds: int(env, 'QUARRY_REQUEST_TIMEOUT_S', 300, 1),
    webhooks: webhookConfig(env),
    providerLimits: {
      model: {
        requestsPerMinute: optionalLimit(env, 'QUARRY_MODEL_RPM'),
        tokensPerMinute: optionalLimit(env, 'QUARRY_MODEL_TPM'),
        concurrency: optionalLimit(env, 'QUARRY_MODEL_CONCURRENCY'),
      },
      search: { requestsPerMinute: optionalLimit(env, 'QUARRY_SEARCH_RPM') },
    },
    // Rounded up: a tiny fraction must not become 0, which turns pruning or retention off.
    prune: {
      intervalMs: Math.ceil(num(env, 'QUARRY_PRUNE_INTERVAL_S', 300) * 1000),
      deletedTaskGraceMs: Math.ceil(num(env, 'QUARRY_DELETED_TASK_GRACE_HOURS', 24) * HOUR_MS),
      eventRetentionMs: Math.ceil(num(env, 'QUARRY_EVENT_RETENTION_DAYS', 0) * 24 * HOUR_MS),
      deliveryRetentionMs: Math.ceil(num(env, 'QUARRY_WEBHOOK_DELIVERY_RETENTION_DAYS', 7) * 24 * HOUR_MS),
    },
  };
  return { ...config, ...overrides };
}

/** `https://app.example.com, http://localhost:5173` → exact origins as browsers send them; `*` allows any. */
function corsOrigins(raw: string | undefined): string[] {
  const listed = (raw ?? '').split(',').map((o) => o.trim()).filter(Boolean);
  if (listed.includes('*')) return ['*'];
  return listed.map((o) => {
    let url: URL | undefined;
    try { url = new URL(o); } catch { /* reported below */ }
    if (!url || !/^https?:$/.test(url.protocol) || url.origin + '/' !== url.href || url.username || url.password) {
      throw new ConfigError(`QUARRY_CORS_ORIGINS must list origins like https://app.example.com (scheme, host and port only) or be *, got "${o}"`);
    }
    return url.origin;
  });
}

/**
 * The model provider: an OpenAI-compatible endpoint needs its base URL; Anthropic needs a key
 * and has a default base URL. Neither configured: no model, and turns fail saying what to set.
 */
function modelConfig(env: NodeJS.ProcessEnv): ModelConfig | undefined {
  const provider = env.QUARRY_MODEL_PROVIDER || 'openai-compatible';
  if (provider !== 'openai-compatible' && provider !== 'anthropic' && provider !== 'demo') {
    throw new ConfigError(`QUARRY_MODEL_PROVIDER must be openai-compatible, anthropic or demo, got "${provider}"`);
  }
  const apiKey = env.QUARRY_MODEL_API_KEY || undefined;
  const common = {
    apiKey,
    stream: env.QUARRY_MODEL_STREAM !== '0',
    maxTokens: int(env, 'QUARRY_MODEL_MAX_TOKENS', ANTHROPIC_DEFAULT_MAX_TOKENS, 1),
    contextTokens: int(env, 'QUARRY_MODEL_CONTEXT_TOKENS', 100_000, 1000),
    sendCacheKey: env.QUARRY_MODEL_CACHE_KEY !== '0',
    timeoutMs: Math.round(num(env, 'QUARRY_MODEL_TIMEOUT_S', DEFAULT_MODEL_TIMEOUT_MS / 1000) * 1000),
  };
  if (provider === 'demo') return { provider, baseUrl: '', model: 'demo', ...common };
  if (provider === 'anthropic') {
    if (!env.QUARRY_MODEL_BASE_URL && !apiKey) return undefined;
    return { provider, baseUrl: env.QUARRY_MODEL_BASE_URL || ANTHROPIC_DEFAULT_BASE_URL, model: env.QUARRY_MODEL || 'claude-sonnet-4-5', ...common };
  }
  if (!env.QUARRY_MODEL_BASE_URL) return undefined;
  const maxTokensField = oneOf(env, 'QUARRY_MODEL_MAX_TOKENS_FIELD', MAX_TOKENS_FIELDS, 'no limit is sent');
  return { provider, baseUrl: env.QUARRY_MODEL_BASE_URL, model: env.QUARRY_MODEL || 'gpt-4o-mini', ...common, ...(maxTokensField ? { maxTokensField } : {}) };
}

function searchConfig(env: NodeJS.ProcessEnv): SearchConfig | undefined {
  const provider = oneOf(env, 'QUARRY_SEARCH_PROVIDER', SEARCH_PROVIDERS);
  if (!provider) return undefined;
  const config: SearchConfig = { provider, url: env.QUARRY_SEARCH_URL || undefined, apiKey: env.QUARRY_SEARCH_API_KEY || undefined };
  const problem = searchConfigProblem(config);
  if (problem) throw new ConfigError(problem);
  return config;
}

function sandboxConfig(env: NodeJS.ProcessEnv): Config['sandbox'] {
  const mode = env.QUARRY_SANDBOX || 'bwrap';
  if (mode !== 'bwrap' && mode !== 'off') throw new ConfigError(`QUARRY_SANDBOX must be bwrap or off, got "${mode}"`);
  const MiB = 1024 * 1024;
  const limits: Partial<SandboxLimits> = {};
  if (env.QUARRY_SANDBOX_MEMORY_MB) limits.memoryBytes = int(env, 'QUARRY_SANDBOX_MEMORY_MB', 1024, 16) * MiB;
  if (env.QUARRY_SANDBOX_WORKSPACE_MB) limits.workspaceBytes = int(env, 'QUARRY_SANDBOX_WORKSPACE_MB', 256, 1) * MiB;
  if (env.QUARRY_SANDBOX_PIDS) limits.pids = int(env, 'QUARRY_SANDBOX_PIDS', 128, 8);
  if (env.QUARRY_SANDBOX_CPUS) limits.cpus = num(env, 'QUARRY_SANDBOX_CPUS', 1);
  if (env.QUARRY_SANDBOX_MAX_RUNS) limits.concurrentRuns = int(env, 'QUARRY_SANDBOX_MAX_RUNS', 4, 1);
  return { mode, limits, pythonPath: env.QUARRY_SANDBOX_PYTHON || undefined, cgroupParent: env.QUARRY_SANDBOX_CGROUP || undefined };
}

function webhookConfig(env: NodeJS.ProcessEnv): WebhookConfig {
  const raw = env.QUARRY_WEBHOOK_RETRY_S;
  const retryS = raw ? raw.split(',').map((part) => Number(part.trim())) : WEBHOOK_RETRY_S;
  if (retryS.length === 0 || retryS.some((s) => !Number.isFinite(s) || s <= 0)) {
    throw new ConfigError(`QUARRY_WEBHOOK_RETRY_S must list seconds > 0, comma-separated, got "${raw}"`);
  }
  const timeoutS = num(env, 'QUARRY_WEBHOOK_TIMEOUT_S', 10);
  if (timeoutS <= 0) throw new ConfigError(`QUARRY_WEBHOOK_TIMEOUT_S must be a number > 0, got "${env.QUARRY_WEBHOOK_TIMEOUT_S}"`);
  return {
    timeoutMs: Math.round(timeoutS * 1000),
    retryDelaysMs: retryS.map((s) => Math.round(s * 1000)),
    giveUpMs: Math.round(num(env, 'QUARRY_WEBHOOK_GIVE_UP_S', 24 * 60 * 60) * 1000),
  };
}

export { ConfigError };
