/**
 * Accounts, API keys and credits. Keys are random 256-bit tokens stored as SHA-256 hashes (a
 * slow hash buys nothing for keys this long) and shown once. Verified keys are cached briefly so
 * the hot read routes do not pay a store round trip per request; revoking clears the cache entry.
 */
import crypto from 'node:crypto';
import { QuarryError } from '../errors.js';
import { CONTROL_CHANNEL } from '../events/cluster-messages.js';
import { newId, randomToken } from '../ids.js';
import type { AccountRecord, ApiKeyRecord, TurnRecord } from '../domain/records.js';
import type { Repositories, Store } from '../store/store.js';
import { toMicros } from '../domain/credits.js';

const KEY_CACHE_MS = 5_000;
const KEY_CACHE_MAX = 10_000;

/** The account the first start of an empty store creates (its key is the starter key). */
export const STARTER_ACCOUNT = 'default';

function newApiKey(): string {
  return `qry_${randomToken()}`;
}

export function hashKey(apiKey: string): string {
  return crypto.createHash('sha256').update(apiKey).digest('hex');
}

/** Credits a caller sent (`param` of the request), in micro-credits; an amount micro-credits cannot hold exactly is 422. */
function creditsParam(credits: number, param: string): number {
  try {
    return toMicros(credits);
  } catch (err) {
    if (err instanceof RangeError) throw QuarryError.validation(param, `${param} ${err.message}`);
    throw err;
  }
}

export interface VerifiedKey {
  accountId: string;
  keyId: string;
}

/** Whether the account may start work: its exact balance, as the API shows it, is above 0 (one that reads 0 is 0). */
export async function hasCredits(repos: Pick<Repositories, 'accounts'>, accountId: string): Promise<boolean> {
  return ((await repos.accounts.get(accountId))?.balanceMicros ?? 0) > 0;
}

/** 402 out_of_credits unless the account has credits; the message says that no `notStarted` (a turn, a run) was started. */
export async function requireCredits(
  repos: Pick<Repositories, 'accounts'>, accountId: string, opts: { platformUrl: string; notStarted: 'turn' | 'run'; extras?: { task_id?: string; task_created?: false } },
): Promise<void> {
  if (await hasCredits(repos, accountId)) return;
  throw new QuarryError('out_of_credits', `The account has no credits left: add credits, then resend. No ${opts.notStarted} was started.`, {
    ...opts.extras,
    resolve: `${opts.platformUrl}/credits`,
  });
}

export class Accounts {
  /**
   * Recent verdicts by the key as sent, so a cached key costs no hash. The keys are already in
   * this process's memory with every request that carries one. The verdict is handed out as it
   * is kept (shared: never changed).
   */
  private readonly keyCache = new Map<string, { verdict: Readonly<VerifiedKey> | null; at: number }>();

  constructor(
    private readonly store: Store,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** A new account with `credits` (a decimal amount, rounded to whole micro-credits) and its first key. */
  async createAccount(name: string, credits: number, apiKey = newApiKey()): Promise<{ account: AccountRecord; apiKey: string; keyId: string }> {
    const now = this.clock().toISOString();
    const account: AccountRecord = { id: newId('acct'), name, balanceMicros: creditsParam(credits, 'credits'), creditsUsedMicros: 0, createdAt: now };
    const keyId = newId('key');
    await this.store.transaction(async (tx) => {
      await tx.accounts.insert(account);
      await tx.accounts.insertKey({ id: keyId, accountId: account.id, keyHash: hashKey(apiKey), createdAt: now, revokedAt: null });
    });
    return { account, apiKey, keyId };
  }

  /**
   * On an empty store, creates the `default` account and returns its key (shown once); else null.
   * `announce` gets the key before it is stored, so no crash can lose it: a process that dies
   * after announcing and before storing leaves the store empty, and the next start announces a
   * new key; one that dies after storing has shown it already. Announce synchronously.
   */
  async ensureStarterAccount(credits: number, announce: (apiKey: string) => void = () => {}): Promise<string | null> {
    if ((await this.store.accounts.count()) > 0) return null;
    const apiKey = newApiKey();
    announce(apiKey);
    await this.createAccount(STARTER_ACCOUNT, credits, apiKey);
    return apiKey;
  }

  /**
   * A new key for the oldest account named `name` (`quarry keys create` on the server's host).
   * With no such account, `default` is created with `starterCredits` (a store whose starter
   * account was never made); any other name is 404.
   */
  async createKeyForName(name: string, starterCredits: number): Promise<{ account: AccountRecord; keyId: string; apiKey: string }> {
    const [account] = await this.store.accounts.findByName(name);
    if (account) return { account, ...(await this.createKey(account.id)) };
    if (name !== STARTER_ACCOUNT) throw new QuarryError('not_found', `No account named "${name}".`);
    return this.createAccount(STARTER_ACCOUNT, starterCredits);
  }

  /**
   * The account a key belongs to, or null for an unknown or revoked key. A store failure is
   * 503 auth_unavailable: the key may be fine, we just cannot tell.
   */
  async verifyKey(apiKey: string): Promise<Readonly<VerifiedKey> | null> {
    const cached = this.cachedKey(apiKey);
    if (cached !== undefined) return cached;
    const hash = hashKey(apiKey);
    const now = Date.now();
    let key: ApiKeyRecord | undefined;
    try {
      key = await this.store.accounts.findKeyByHash(hash);
    } catch {
      throw new QuarryError('auth_unavailable', 'Key verification is unavailable right now: wait retry_after seconds, then resend.', { retry_after: 2 });
    }
    const verdict = key && !key.revokedAt ? { accountId: key.accountId, keyId: key.id } : null;
    if (this.keyCache.size >= KEY_CACHE_MAX) this.keyCache.clear();
    this.keyCache.set(apiKey, { verdict, at: now });
    return verdict;
  }

  /** The verdict on a key verified in the last few seconds (null: invalid), or undefined when there is none. */
  cachedKey(apiKey: string): Readonly<VerifiedKey> | null | undefined {
    const cached = this.keyCache.get(apiKey);
    if (!cached || Date.now() - cached.at >= KEY_CACHE_MS) return undefined;
    return cached.verdict;
  }

  async getAccount(accountId: string): Promise<AccountRecord> {
    const account = await this.store.accounts.get(accountId);
    if (!account) throw new QuarryError('not_found', `No account "${accountId}".`);
    return account;
  }

  /** Adds `amount` credits (negative: takes them, down to 0 at most); returns the balance in micro-credits. */
  async addCredits(accountId: string, amount: number): Promise<number> {
    const deltaMicros = creditsParam(amount, 'amount');
    await this.getAccount(accountId);
    return this.store.accounts.adjustBalance(accountId, deltaMicros);
  }

  async createKey(accountId: string): Promise<{ keyId: string; apiKey: string }> {
    await this.getAccount(accountId);
    const apiKey = newApiKey();
    const keyId = newId('key');
    await this.store.accounts.insertKey({ id: keyId, accountId, keyHash: hashKey(apiKey), createdAt: this.clock().toISOString(), revokedAt: null });
    return { keyId, apiKey };
  }

  async listKeys(accountId: string): Promise<ApiKeyRecord[]> {
    await this.getAccount(accountId);
    return this.store.accounts.listKeys(accountId);
  }

  async revokeKey(accountId: string, keyId: string): Promise<ApiKeyRecord> {
    await this.getAccount(accountId);
    const key = await this.store.transaction(async (tx) => {
      const revoked = await tx.accounts.revokeKey(accountId, keyId, this.clock().toISOString());
      // Other processes on a shared store drop their cached verdicts too.
      if (revoked) await tx.cluster.notify(CONTROL_CHANNEL, JSON.stringify({ type: 'key_revoked', keyId }));
      return revoked;
    });
    if (!key) throw new QuarryError('not_found', `No key "${keyId}" on account "${accountId}".`);
    this.forgetKey(keyId);
    return key;
  }

  /** Drops every cached verdict for a key, so it is checked against the store again. */
  forgetKey(keyId: string): void {
    for (const [apiKey, entry] of this.keyCache) if (entry.verdict?.keyId === keyId) this.keyCache.delete(apiKey);
  }

  async usage(accountId: string, limit = 1000): Promise<TurnRecord[]> {
    await this.getAccount(accountId);
    return this.store.turns.listByAccount(accountId, limit);
  }
}
