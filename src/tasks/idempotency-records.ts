/**
 * Idempotency-Key records (decisions §2, §14): what the HTTP edge remembers of a change made under
 * a key, read and written here so the edge never touches the store. A key is claimed in the
 * unit of work of the change it guards, so the claim commits or rolls back with the change; the
 * answer is stored once it is sent.
 */
import type { IdempotencyRecord } from '../domain/records.js';
import type { Store } from '../store/store.js';
import type { UnitOfWork } from './unit-of-work.js';

/** How long a key's answer is remembered (decisions §2). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export class IdempotencyRecords {
  constructor(private readonly store: Store) {}

  /** Whether other processes write records too (a shared store): a wait for their answer must look again. */
  get shared(): boolean {
    return this.store.shared;
  }

  /** The record under the key, unless its window has passed. */
  async find(accountId: string, key: string): Promise<IdempotencyRecord | undefined> {
    return this.store.idempotency.get(accountId, key, windowStart(Date.now()));
  }

  /**
   * Takes the key in the unit of work of the change it guards, storing `record`: false when
   * another request's record holds it (committed, or on PostgreSQL committed while this waited).
   */
  async claim(uow: UnitOfWork, accountId: string, key: string, record: IdempotencyRecord): Promise<boolean> {
    return uow.tx.idempotency.claim(accountId, key, record, windowStart(Date.parse(record.createdAt)));
  }

  /** Replaces the key's record: in the change's unit of work, or on its own (`uow` null: the answer once sent). */
  async put(uow: UnitOfWork | null, accountId: string, key: string, record: IdempotencyRecord): Promise<void> {
    await (uow?.tx ?? this.store).idempotency.put(accountId, key, record);
  }
}

function windowStart(at: number): string {
  return new Date(at - IDEMPOTENCY_WINDOW_MS).toISOString();
}
