/**
 * `client.admin`: accounts, keys and credits, with the admin key (`adminKey` or
 * QUARRY_ADMIN_KEY). Creates are not resent after a lost answer: a second account or a second
 * credit would be real.
 */
import type { Transport } from '../internal/transport.js';
import type { RequestOptions } from '../request-options.js';
import type { Account, Balance, CreatedAccount, CreatedKey, KeyInfo, TurnUsage } from '../types.js';

function accountPath(accountId: string, rest = ''): string {
  return `/admin/accounts/${encodeURIComponent(accountId)}${rest}`;
}

/**
 * Accounts and their credits. Reached as `client.admin.accounts`.
 *
 * @example
 * ```ts
 * const admin = new QuarryClient({ adminKey: process.env.QUARRY_ADMIN_KEY });
 * const team = await admin.admin.accounts.create({ name: 'research-team', credits: 500 });
 * ```
 */
export class AdminAccounts {
  /** @internal */
  constructor(private readonly transport: Transport) {}

  /**
   * Creates an account with credits and a first API key (shown once).
   *
   * @example
   * ```ts
   * const { account_id, api_key } = await client.admin.accounts.create({ name: 'research-team', credits: 500 });
   * ```
   */
  create(params: { name: string; credits: number }, opts?: RequestOptions): Promise<CreatedAccount> {
    return this.transport.json<CreatedAccount>({ method: 'POST', path: '/admin/accounts', json: params, auth: 'admin', resendable: false }, opts);
  }

  /**
   * An account and its balance.
   *
   * @example
   * ```ts
   * const { balance, credits_used } = await client.admin.accounts.retrieve(accountId);
   * ```
   */
  retrieve(accountId: string, opts?: RequestOptions): Promise<Account> {
    return this.transport.json<Account>({ method: 'GET', path: accountPath(accountId), auth: 'admin', resendable: true }, opts);
  }

  /**
   * Adds credits (a negative amount takes them away; the balance never goes below 0).
   *
   * @example
   * ```ts
   * const { balance } = await client.admin.accounts.addCredits(accountId, 250);
   * ```
   */
  addCredits(accountId: string, amount: number, opts?: RequestOptions): Promise<Balance> {
    return this.transport.json<Balance>({ method: 'POST', path: accountPath(accountId, '/credits'), json: { amount }, auth: 'admin', resendable: false }, opts);
  }

  /**
   * Per-turn usage: the last 1,000 started turns, newest first.
   *
   * @example
   * ```ts
   * const turns = await client.admin.accounts.usage(accountId);
   * console.log(turns.reduce((sum, t) => sum + t.credits, 0));
   * ```
   */
  async usage(accountId: string, opts?: RequestOptions): Promise<TurnUsage[]> {
    const body = await this.transport.json<{ turns: TurnUsage[] }>({ method: 'GET', path: accountPath(accountId, '/usage'), auth: 'admin', resendable: true }, opts);
    return body.turns;
  }
}

/**
 * API keys of an account. Reached as `client.admin.keys`.
 *
 * @example
 * ```ts
 * const { key_id, api_key } = await client.admin.keys.create(accountId);
 * await client.admin.keys.revoke(accountId, key_id);
 * ```
 */
export class AdminKeys {
  /** @internal */
  constructor(private readonly transport: Transport) {}

  /**
   * Creates another API key (the secret is shown once).
   *
   * @example
   * ```ts
   * const { api_key } = await client.admin.keys.create(accountId);
   * ```
   */
  create(accountId: string, opts?: RequestOptions): Promise<CreatedKey> {
    return this.transport.json<CreatedKey>({ method: 'POST', path: accountPath(accountId, '/keys'), json: {}, auth: 'admin', resendable: false }, opts);
  }

  /**
   * The account's keys, never their secrets.
   *
   * @example
   * ```ts
   * const live = (await client.admin.keys.list(accountId)).filter((k) => !k.revoked_at);
   * ```
   */
  async list(accountId: string, opts?: RequestOptions): Promise<KeyInfo[]> {
    const body = await this.transport.json<{ keys: KeyInfo[] }>({ method: 'GET', path: accountPath(accountId, '/keys'), auth: 'admin', resendable: true }, opts);
    return body.keys;
  }

  /**
   * Revokes a key: it is refused (401) from then on.
   *
   * @example
   * ```ts
   * const { revoked_at } = await client.admin.keys.revoke(accountId, keyId);
   * ```
   */
  revoke(accountId: string, keyId: string, opts?: RequestOptions): Promise<{ key_id: string; revoked_at: string }> {
    return this.transport.json({ method: 'DELETE', path: accountPath(accountId, `/keys/${encodeURIComponent(keyId)}`), auth: 'admin', resendable: true }, opts);
  }
}

/**
 * The admin routes. Reached as `client.admin`.
 *
 * @example
 * ```ts
 * const client = new QuarryClient({ adminKey: 'admin-secret' });
 * await client.admin.accounts.addCredits('acct_…', 100);
 * ```
 */
export class Admin {
  readonly accounts: AdminAccounts;
  readonly keys: AdminKeys;

  /** @internal */
  constructor(transport: Transport) {
    this.accounts = new AdminAccounts(transport);
    this.keys = new AdminKeys(transport);
  }
}
