/** Accounts, their API keys and their balances, in whole micro-credits. */
import { sql, type Selectable } from 'kysely';
import { fromStoredMicros } from '../../domain/credits.js';
import type { AccountsTable } from '../database.js';
import type { AccountRecord, ApiKeyRecord } from '../../domain/records.js';
import type { AccountsRepository } from '../store.js';
import { SqlRepository } from './sql-repository.js';

/** A micro-credit amount bound into SQL: whole, so no fraction of a micro-credit reaches a column. */
function wholeMicros(micros: number): number {
  if (!Number.isSafeInteger(micros)) throw new RangeError(`micro-credits must be a safe integer, got ${micros}`);
  return micros;
}

function toAccount(r: Selectable<AccountsTable>): AccountRecord {
  return { id: r.id, name: r.name, balanceMicros: fromStoredMicros(r.balance_micros), creditsUsedMicros: fromStoredMicros(r.credits_used_micros), createdAt: r.created_at };
}

const KEY_COLUMNS = ['id', 'account_id', 'created_at', 'revoked_at'] as const;

function toKey(r: { id: string; account_id: string; created_at: string; revoked_at: string | null }): ApiKeyRecord {
  return { id: r.id, accountId: r.account_id, createdAt: r.created_at, revokedAt: r.revoked_at };
}

export class SqlAccounts extends SqlRepository implements AccountsRepository {
  async insert(a: AccountRecord): Promise<void> {
    await this.db.insertInto('accounts').values({ id: a.id, name: a.name, balance_micros: a.balanceMicros, credits_used_micros: a.creditsUsedMicros, created_at: a.createdAt }).execute();
  }

  async get(id: string, opts: { lock?: boolean } = {}): Promise<AccountRecord | undefined> {
    const lock = opts.lock === true && this.profile.rowLocks;
    const [r] = (await this.runCompiled(lock ? 'accounts.get:lock' : 'accounts.get', [id], () => {
      const q = this.db.selectFrom('accounts').selectAll().where('id', '=', id);
      return lock ? q.forUpdate() : q;
    })).rows;
    return r && toAccount(r);
  }

  async findByName(name: string): Promise<AccountRecord[]> {
    // Not indexed: run by the keys command on the server's host, never per request.
    const rows = await this.db.selectFrom('accounts').selectAll().where('name', '=', name).orderBy('created_at').orderBy('id').execute();
    return rows.map(toAccount);
  }

  async count(): Promise<number> {
    const r = await this.db.selectFrom('accounts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async adjustBalance(accountId: string, deltaMicros: number): Promise<number> {
    const delta = wholeMicros(deltaMicros);
    const r = await this.db
      .updateTable('accounts')
      .set({ balance_micros: sql<number>`case when balance_micros + ${delta} < 0 then 0 else balance_micros + ${delta} end` })
      .where('id', '=', accountId)
      .returning('balance_micros')
      .executeTakeFirst();
    return r ? fromStoredMicros(r.balance_micros) : 0;
  }

  async charge(accountId: string, amountMicros: number): Promise<number> {
    const amount = wholeMicros(amountMicros);
    const r = await this.db
      .updateTable('accounts')
      .set({
        balance_micros: sql<number>`case when balance_micros - ${amount} < 0 then 0 else balance_micros - ${amount} end`,
        credits_used_micros: sql<number>`credits_used_micros + ${amount}`,
      })
      .where('id', '=', accountId)
      .returning('balance_micros')
      .executeTakeFirst();
    return r ? fromStoredMicros(r.balance_micros) : 0;
  }

  async insertKey(k: ApiKeyRecord & { keyHash: string }): Promise<void> {
    await this.db.insertInto('api_keys').values({ id: k.id, account_id: k.accountId, key_hash: k.keyHash, created_at: k.createdAt, revoked_at: k.revokedAt }).execute();
  }

  async findKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const r = await this.db.selectFrom('api_keys').select(KEY_COLUMNS).where('key_hash', '=', keyHash).executeTakeFirst();
    return r && toKey(r);
  }

  async listKeys(accountId: string): Promise<ApiKeyRecord[]> {
    const rows = await this.db.selectFrom('api_keys').select(KEY_COLUMNS).where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
    return rows.map(toKey);
  }

  async revokeKey(accountId: string, keyId: string, at: string): Promise<ApiKeyRecord | undefined> {
    await this.db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', keyId).where('account_id', '=', accountId).where('revoked_at', 'is', null).execute();
    const r = await this.db.selectFrom('api_keys').select(KEY_COLUMNS).where('id', '=', keyId).where('account_id', '=', accountId).executeTakeFirst();
    return r && toKey(r);
  }
}
