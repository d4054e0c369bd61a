/**
 * The console's way to Quarry: the typed client (packages/client) for tasks and webhooks, with
 * the key the user signed in with, and plain calls for task groups, which the client does not
 * cover yet. Every failure reaches the page as the API's own `message`.
 */
import { QuarryClient, QuarryError } from '../../packages/client/src/index.js';
import type { RowSource, TaskSpecInput } from '../../packages/client/src/types.js';

export type { QuarryClient };
export type * from '../../packages/client/src/types.js';

/** Session storage: the key lives as long as the tab, and never in a cookie or the URL. */
const KEY_ITEM = 'quarry.apiKey';

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_ITEM);
}

export function storeKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(KEY_ITEM);
  else sessionStorage.setItem(KEY_ITEM, key);
}

export function clientFor(apiKey: string): QuarryClient {
  // One retry: a person is waiting, and the page says what went wrong rather than waiting long.
  return new QuarryClient({ baseURL: location.origin, apiKey, maxRetries: 1 });
}

/** What to show a person: the API's `message` when there is one. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

// ---- task groups (decisions §15.2) ---------------------------------------------------------

export type GroupStatus = 'running' | 'finished' | 'stopped';

export interface Group {
  group_id: string;
  name: string | null;
  status: GroupStatus;
  counts: { pending: number; running: number; completed: number; failed: number; stopped: number };
  inputs: number;
  duplicates: number;
  credits_used: number;
  max_parallel: number;
  max_credits: number | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

/** One merged row: the input's fields, the output's columns, and where it came from. */
export interface GroupRow {
  _input: number;
  _sources?: RowSource[];
  _basis?: Record<string, { confidence: string; reasoning?: string }>;
  _run: { task_id: string; status: string };
  [field: string]: unknown;
}

export interface CreateGroupParams {
  name?: string;
  task: TaskSpecInput & { input_columns: unknown[] };
  inputs: Record<string, unknown>[];
  max_parallel?: number;
  max_credits?: number;
}

/** Calls of the group routes, with the same key and error bodies as every other route. */
export class Groups {
  constructor(private readonly apiKey: string) {}

  private async send(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { 'X-API-Key': this.apiKey };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.ok) return res;
    const text = await res.text();
    let parsed: { error?: string; message?: string; retryable?: boolean } = {};
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      // not Quarry's body (a proxy's page): said below
    }
    throw new QuarryError({
      status: res.status,
      error: parsed.error ?? `http_${res.status}`,
      message: parsed.message ?? `The server answered ${res.status}.`,
      retryable: parsed.retryable ?? false,
      request_id: res.headers.get('x-request-id') ?? undefined,
    });
  }

  /** The newest 50 groups. */
  async list(): Promise<Group[]> {
    return (await this.send('GET', '/group?limit=50')).json() as Promise<Group[]>;
  }

  async get(groupId: string): Promise<Group> {
    return (await this.send('GET', `/group/${encodeURIComponent(groupId)}`)).json() as Promise<Group>;
  }

  async rows(groupId: string, offset: number, limit: number): Promise<{ total: number; rows: GroupRow[] }> {
    return (await this.send('GET', `/group/${encodeURIComponent(groupId)}/rows?limit=${limit}&offset=${offset}`)).json() as Promise<{ total: number; rows: GroupRow[] }>;
  }

  async export(groupId: string, format: 'csv' | 'jsonl'): Promise<string> {
    return (await this.send('GET', `/group/${encodeURIComponent(groupId)}/rows?format=${format}`)).text();
  }

  async create(params: CreateGroupParams): Promise<Group> {
    return (await this.send('POST', '/group', params)).json() as Promise<Group>;
  }

  async stop(groupId: string): Promise<Group> {
    return (await this.send('POST', `/group/${encodeURIComponent(groupId)}/stop`)).json() as Promise<Group>;
  }

  async retry(groupId: string): Promise<Group> {
    return (await this.send('POST', `/group/${encodeURIComponent(groupId)}/retry`)).json() as Promise<Group>;
  }
}
