/**
 * The console's way to Quarry: the typed client (packages/client) with the key the user signed
 * in with, for every call (tasks, groups, webhooks). Every failure reaches the page as the API's
 * own `message`.
 */
import { QuarryClient, QuarryError, type CursorPage } from '../../packages/client/src/index.js';
import { fieldSentence } from './human-errors.js';

export { QuarryError };
export type { CursorPage, QuarryClient };
export type { ListGroupsParams, ListTasksParams } from '../../packages/client/src/index.js';
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

/**
 * What to show a person: the API's `message`, or for a refused field a sentence that names it
 * as the form does.
 */
export function messageOf(err: unknown): string {
  if (err instanceof QuarryError && err.detail?.[0]) return fieldSentence(err.detail[0]);
  if (err instanceof Error) return err.message;
  return String(err);
}
