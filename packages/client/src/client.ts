/**
 * The client object: configuration (with defaults from the environment), the resources
 * (`tasks`, `groups`, `uploads`, `webhooks`, `admin`) and the service's self-description routes.
 */
import { AccountResource } from './resources/account.js';
import { Admin } from './resources/admin.js';
import { Groups } from './resources/groups.js';
import { Tasks } from './resources/tasks.js';
import { Uploads } from './resources/uploads.js';
import { Webhooks } from './resources/webhooks.js';
import { TaskWriteQueue } from './internal/task-write-queue.js';
import { Transport } from './internal/transport.js';
import type { Fetch, RequestOptions } from './request-options.js';

/**
 * Settings of a {@link QuarryClient}. Everything is optional.
 *
 * @example
 * ```ts
 * const client = new QuarryClient({ baseURL: 'http://127.0.0.1:8080', apiKey: 'qry_…', maxRetries: 4 });
 * ```
 */
export interface ClientOptions {
  /** Default: QUARRY_URL, else `http://127.0.0.1:8080`. */
  baseURL?: string;
  /** Default: QUARRY_API_KEY. Sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** For `client.admin`. Default: QUARRY_ADMIN_KEY. */
  adminKey?: string;
  /** Retries after the first attempt of a call (default 2, so at most 3 attempts). */
  maxRetries?: number;
  /** Per-attempt timeout in ms (default 60,000); long-polls and blocking waits get longer. */
  timeoutMs?: number;
  /** First backoff between attempts when the server names no `retry_after` (default 500 ms, doubling). */
  retryBaseDelayMs?: number;
  /** Longest backoff (default 8,000 ms). A server's `retry_after` is always honoured in full. */
  retryMaxDelayMs?: number;
  /** A stream silent for this long (no event, no ping) counts as dropped and is resumed (default 45,000 ms). */
  streamIdleTimeoutMs?: number;
  /** Reconnects in a row without a new event before a stream gives up (default 5). */
  streamReconnects?: number;
  /** The `fetch` to call (default `globalThis.fetch`): for proxies, tests, instrumentation. */
  fetch?: Fetch;
  /** Headers sent with every request. */
  defaultHeaders?: Record<string, string>;
}

function fromEnv(name: string): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const value = env?.[name];
  return value ? value : undefined;
}

/**
 * A client for one Quarry service.
 *
 * @example
 * ```ts
 * import { QuarryClient } from '@quarry/client';
 *
 * const client = new QuarryClient(); // QUARRY_URL and QUARRY_API_KEY from the environment
 * const task = await client.tasks.create({ prompt: 'List the EU plants making Li-ion cells.' });
 * for await (const event of client.tasks.stream(task.task_id)) {
 *   if (event.type === 'done') console.log('turn', event.outcome);
 * }
 * for await (const row of client.tasks.rows(task.task_id)) console.log(row);
 * ```
 */
export class QuarryClient {
  /** The base URL every path is relative to, without a trailing slash. */
  readonly baseURL: string;
  readonly tasks: Tasks;
  readonly groups: Groups;
  readonly uploads: Uploads;
  readonly webhooks: Webhooks;
  readonly account: AccountResource;
  readonly admin: Admin;
  private readonly transport: Transport;

  constructor(options: ClientOptions = {}) {
    this.baseURL = (options.baseURL ?? fromEnv('QUARRY_URL') ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
    const fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.transport = new Transport({
      baseURL: this.baseURL,
      apiKey: options.apiKey ?? fromEnv('QUARRY_API_KEY'),
      adminKey: options.adminKey ?? fromEnv('QUARRY_ADMIN_KEY'),
      fetch: fetchImpl,
      maxRetries: options.maxRetries ?? 2,
      timeoutMs: options.timeoutMs ?? 60_000,
      baseDelayMs: options.retryBaseDelayMs ?? 500,
      maxDelayMs: options.retryMaxDelayMs ?? 8_000,
      defaultHeaders: options.defaultHeaders ?? {},
    });
    const streams = { streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? 45_000, streamReconnects: options.streamReconnects ?? 5 };
    this.tasks = new Tasks({ transport: this.transport, writes: new TaskWriteQueue(), ...streams });
    this.uploads = new Uploads(this.transport);
    this.groups = new Groups({ transport: this.transport, uploads: this.uploads, ...streams });
    this.webhooks = new Webhooks(this.transport);
    this.account = new AccountResource(this.transport);
    this.admin = new Admin(this.transport);
  }

  /**
   * `GET /task/workflow`: the route map, the state machine and the polling and retry rules.
   *
   * @example
   * ```ts
   * const { routes } = await client.workflow();
   * ```
   */
  workflow(opts?: RequestOptions): Promise<Record<string, unknown>> {
    return this.transport.json({ method: 'GET', path: '/task/workflow', auth: 'key', resendable: true }, opts);
  }

  /**
   * `GET /task/metaprompt`: the spec's JSON Schema, output kinds and a guide for writing specs.
   *
   * @example
   * ```ts
   * const { spec_schema, metaprompt } = await client.metaprompt();
   * ```
   */
  metaprompt(opts?: RequestOptions): Promise<Record<string, unknown>> {
    return this.transport.json({ method: 'GET', path: '/task/metaprompt', auth: 'key', resendable: true }, opts);
  }

  /**
   * `GET /readyz` (no key): whether the store and workers are ready. Not retried.
   *
   * @example
   * ```ts
   * if (!(await client.ready())) console.log('not ready yet');
   * ```
   */
  async ready(opts?: RequestOptions): Promise<boolean> {
    try {
      await this.transport.send({ method: 'GET', path: '/readyz', auth: 'none', resendable: true }, { maxRetries: 0, ...opts });
      return true;
    } catch (err) {
      if ((err as { status?: number }).status === 503) return false;
      throw err;
    }
  }
}
