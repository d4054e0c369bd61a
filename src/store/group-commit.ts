/**
 * Group commit for a database that runs one write transaction at a time (SQLite). Transactions
 * that arrive while one is being written wait, then run together in a single database
 * transaction, each inside a savepoint of its own, and are committed once. Every commit writes
 * the pages it touched to the WAL, and consecutive creates touch the same few pages (ids grow),
 * so a group writes far less than its members would one by one.
 *
 * Each member keeps the all-or-nothing of a transaction: a member that throws is rolled back to
 * its savepoint and rejected with its own error, while the others go on. No member resolves
 * before the commit that stores it; if the commit fails, every member of the group is rejected.
 * A group starts at the end of the current turn of the event loop, so it takes every transaction
 * that arrived in that turn plus those that queued up while the previous group was written.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './database.js';
import { runTransaction } from './sql/run-transaction.js';
import type { RunInTransaction } from './sql/sql-repository.js';

/** The most members one commit takes, so that one group never holds the connection for long. */
const MAX_GROUP = 100;

interface Member {
  run(trx: Transaction<Database>): Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; err: unknown };

export class GroupCommit {
  private queue: Member[] = [];
  private writing = false;

  /**
   * `statement` runs SQL on the connection a group's transaction holds: each member's
   * savepoints, two statements for every member of every group, go through it.
   */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly statement: RunInTransaction,
  ) {}

  run<T>(fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run: fn, resolve: resolve as (value: unknown) => void, reject });
      if (!this.writing) {
        this.writing = true;
        // Starting on the next turn of the event loop lets the requests that arrived together
        // join the group, instead of the first one committing alone.
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const group = this.queue.splice(0, MAX_GROUP);
      const outcomes: Outcome[] = [];
      // The error that ended the whole transaction, when one did: what the group is rejected with.
      let fatal: unknown;
      try {
        await runTransaction(this.db, async (trx) => {
          // Alone, a member needs no savepoint: its failure is the transaction's.
          if (group.length === 1) {
            try {
              outcomes.push({ ok: true, value: await group[0]!.run(trx) });
            } catch (err) {
              fatal = err;
              throw err;
            }
            return;
          }
          for (const member of group) {
            this.statement('savepoint member', []);
            try {
              outcomes.push({ ok: true, value: await member.run(trx) });
              this.statement('release savepoint member', []);
            } catch (err) {
              fatal = err;
              // Fails too when the database already dropped the whole transaction (disk full,
              // I/O error): then the group fails as one, with the member's error.
              this.statement('rollback to savepoint member', []);
              this.statement('release savepoint member', []);
              fatal = undefined;
              outcomes.push({ ok: false, err });
            }
          }
        });
      } catch (err) {
        // Nothing of this group was stored.
        for (const member of group) member.reject(fatal ?? err);
        continue;
      }
      group.forEach((member, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) member.resolve(outcome.value);
        else member.reject(outcome.err);
      });
    }
    this.writing = false;
  }
}
