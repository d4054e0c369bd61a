/** Idempotency-Key records: claimed inside the transaction of the change they guard, answered with once sent. */
import type { IdempotencyRecord } from '../../domain/records.js';
import type { IdempotencyRepository } from '../store.js';
import { SqlRepository } from './sql-repository.js';

export class SqlIdempotency extends SqlRepository implements IdempotencyRepository {
  async get(accountId: string, key: string, since: string): Promise<IdempotencyRecord | undefined> {
    const r = await this.db.selectFrom('idempotency').selectAll().where('account_id', '=', accountId).where('key', '=', key).where('created_at', '>=', since).executeTakeFirst();
    return r && { requestHash: r.request_hash, status: Number(r.status), body: r.body, createdAt: r.created_at };
  }

  async claim(accountId: string, key: string, rec: IdempotencyRecord, expiredBefore: string): Promise<boolean> {
    // One statement on the primary key (account_id, key), so the database decides between
    // concurrent claims: PostgreSQL makes a second insert of the key wait on the first one's
    // uncommitted row, then does nothing if that committed; SQLite writes one transaction at a
    // time. A record past its window is taken over as if the key were new.
    const claimed = await this.db
      .insertInto('idempotency')
      .values({ account_id: accountId, key, request_hash: rec.requestHash, status: rec.status, body: rec.body, created_at: rec.createdAt })
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'key'])
          .doUpdateSet({ request_hash: rec.requestHash, status: rec.status, body: rec.body, created_at: rec.createdAt })
          .where('idempotency.created_at', '<', expiredBefore),
      )
      .returning('key')
      .executeTakeFirst();
    return claimed !== undefined;
  }

  async put(accountId: string, key: string, rec: IdempotencyRecord): Promise<void> {
    await this.db
      .insertInto('idempotency')
      .values({ account_id: accountId, key, request_hash: rec.requestHash, status: rec.status, body: rec.body, created_at: rec.createdAt })
      .onConflict((oc) => oc.columns(['account_id', 'key']).doUpdateSet({ request_hash: rec.requestHash, status: rec.status, body: rec.body, created_at: rec.createdAt }))
      .execute();
  }
}
