/** `client.account`: the account of the client's API key. */
import type { Transport } from '../internal/transport.js';
import type { RequestOptions } from '../request-options.js';
import type { OwnAccount } from '../types.js';

export class AccountResource {
  /** @internal */
  constructor(private readonly transport: Transport) {}

  /**
   * The key's account: its balance and the credits it has used (any API key; no admin key).
   *
   * @example
   * ```ts
   * const { balance } = await client.account.retrieve();
   * ```
   */
  retrieve(opts?: RequestOptions): Promise<OwnAccount> {
    return this.transport.json<OwnAccount>({ method: 'GET', path: '/account', auth: 'key', resendable: true }, opts);
  }
}
