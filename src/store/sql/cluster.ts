/**
 * What several processes on one database share: notifications sent on commit, request counts of
 * the rate limit, settings they must agree on, and (through the adapter's ClusterLink, outside
 * transactions) listening and named locks.
 */
import { sql } from 'kysely';
import type { ProviderLimitState } from '../../domain/records.js';
import type { HeldLock, StoreCluster } from '../store.js';
import type { DialectProfile } from './dialect-profile.js';
import { SqlRepository, type SqlHandle } from './sql-repository.js';

/**
 * Cross-process signals, each adapter's own (sqlite/sqlite-link.ts, postgres/postgres-link.ts):
 * LISTEN/NOTIFY and session locks on a shared database, nothing to do on an embedded one.
 */
/** One notification to the processes sharing the store. */
export interface Notice {
  channel: string;
  payload: string;
}

export interface ClusterLink {
  /**
   * Sends notices soon, outside any transaction: those of one event-loop turn go out together,
   * as few notifications as their size allows (postgres/postgres-link.ts says why).
   */
  notify(notices: readonly Notice[]): void;
  listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>>;
  onResume(handler: () => void): () => void;
  tryLock(name: string): Promise<HeldLock | null>;
  close(): Promise<void>;
}

export class SqlCluster extends SqlRepository implements StoreCluster {
  // Assigned by hand, as in SqlRepository: built for every transaction.
  private declare readonly link: ClusterLink;
  /** In a transaction: its notices, which SqlStore hands to the link once it has committed. */
  private declare readonly notices: Notice[] | undefined;

  constructor(db: SqlHandle, profile: DialectProfile, link: ClusterLink, notices?: Notice[]) {
    super(db, profile);
    this.link = link;
    this.notices = notices;
  }

  async notify(channel: string, payload: string): Promise<void> {
    if (!this.profile.shared) return;
    // Sent after the commit, never inside it (a rollback sends nothing): PostgreSQL commits a
    // transaction that notified under one lock for the whole database.
    if (this.notices) this.notices.push({ channel, payload });
    else this.link.notify([{ channel, payload }]);
  }

  async hitRateWindow(keyId: string, windowStart: string, hits = 1): Promise<number> {
    const r = await this.db
      .insertInto('rate_windows')
      .values({ key_id: keyId, window_start: windowStart, hits })
      .onConflict((oc) => oc.columns(['key_id', 'window_start']).doUpdateSet({ hits: sql<number>`rate_windows.hits + ${hits}` }))
      .returning('hits')
      .executeTakeFirstOrThrow();
    return Number(r.hits);
  }

  async getSetting(key: string): Promise<string | undefined> {
    const r = await this.db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
    return r?.value;
  }

  async setSetting(key: string, value: string): Promise<void> {
    await this.db.insertInto('settings').values({ key, value }).onConflict((oc) => oc.column('key').doUpdateSet({ value })).execute();
  }

  async providerLimits(provider: string, opts: { lock?: boolean } = {}): Promise<ProviderLimitState> {
    await this.db.insertInto('provider_limits').values({ provider }).onConflict((oc) => oc.column('provider').doNothing()).execute();
    let q = this.db.selectFrom('provider_limits').selectAll().where('provider', '=', provider);
    if (opts.lock && this.profile.rowLocks) q = q.forUpdate();
    const r = await q.executeTakeFirstOrThrow();
    return {
      nextRequestAt: Number(r.next_request_at),
      nextTokenAt: Number(r.next_token_at),
      blockedUntil: Number(r.blocked_until),
      learnedRpm: r.learned_rpm === null ? null : Number(r.learned_rpm),
      learnedTpm: r.learned_tpm === null ? null : Number(r.learned_tpm),
    };
  }

  async setProviderLimits(provider: string, patch: Partial<ProviderLimitState>): Promise<void> {
    const row = {
      ...(patch.nextRequestAt !== undefined ? { next_request_at: Math.round(patch.nextRequestAt) } : {}),
      ...(patch.nextTokenAt !== undefined ? { next_token_at: Math.round(patch.nextTokenAt) } : {}),
      ...(patch.blockedUntil !== undefined ? { blocked_until: Math.round(patch.blockedUntil) } : {}),
      ...(patch.learnedRpm !== undefined ? { learned_rpm: patch.learnedRpm } : {}),
      ...(patch.learnedTpm !== undefined ? { learned_tpm: patch.learnedTpm } : {}),
    };
    if (Object.keys(row).length === 0) return;
    await this.db.updateTable('provider_limits').set(row).where('provider', '=', provider).execute();
  }

  async countProviderCalls(provider: string, now: number): Promise<number> {
    // A process that died left its calls behind: their leases free the places.
    await this.db.deleteFrom('provider_calls').where('provider', '=', provider).where('expires_at', '<=', now).execute();
    const r = await this.db.selectFrom('provider_calls').select((eb) => eb.fn.countAll<number | string>().as('n')).where('provider', '=', provider).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async addProviderCall(provider: string, callId: string, expiresAt: number): Promise<void> {
    await this.db.insertInto('provider_calls').values({ provider, call_id: callId, expires_at: expiresAt }).execute();
  }

  async removeProviderCall(provider: string, callId: string): Promise<void> {
    await this.db.deleteFrom('provider_calls').where('provider', '=', provider).where('call_id', '=', callId).execute();
  }

  listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>> {
    return this.link.listen(channel, handler);
  }

  onResume(handler: () => void): () => void {
    return this.link.onResume(handler);
  }

  tryLock(name: string): Promise<HeldLock | null> {
    return this.link.tryLock(name);
  }
}
