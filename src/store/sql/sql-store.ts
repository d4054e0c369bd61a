/**
 * The Store, written once with Kysely for every database: one repository per aggregate over a
 * shared Kysely handle. The adapters (sqlite/, postgres/) open the connection, pick the
 * DialectProfile and the ClusterLink, and build a SqlStore.
 */
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider, type Transaction } from 'kysely';
import type { Database } from '../database.js';
import { GroupCommit } from '../group-commit.js';
import * as m000001 from '../migrations/000001_initial.js';
import * as m000002 from '../migrations/000002_cluster.js';
import * as m000003 from '../migrations/000003_credit_micros.js';
import * as m000004 from '../migrations/000004_last_error.js';
import * as m000005 from '../migrations/000005_webhooks.js';
import * as m000006 from '../migrations/000006_sources.js';
import * as m000007 from '../migrations/000007_groups.js';
import * as m000008 from '../migrations/000008_task_version.js';
import * as m000009 from '../migrations/000009_pruning.js';
import * as m000010 from '../migrations/000010_turn_cache_usage.js';
import * as m000011 from '../migrations/000011_turn_rows.js';
import * as m000012 from '../migrations/000012_cell_support.js';
import * as m000013 from '../migrations/000013_turn_offline.js';
import * as m000014 from '../migrations/000014_fair_share.js';
import * as m000015 from '../migrations/000015_provider_limits.js';
import * as m000016 from '../migrations/000016_monitors.js';
import * as m000017 from '../migrations/000017_finding_work.js';
import * as m000018 from '../migrations/000018_text_search.js';
import * as m000019 from '../migrations/000019_turn_reply_text.js';
import type { Repositories, Store } from '../store.js';
import { SqlAccounts } from './accounts.js';
import { SqlCluster, type ClusterLink, type Notice } from './cluster.js';
import type { DialectProfile } from './dialect-profile.js';
import { runTransaction } from './run-transaction.js';
import { SqlEvents } from './events.js';
import { SqlIdempotency } from './idempotency.js';
import { SqlPrune } from './prune.js';
import { SqlRows } from './rows.js';
import type { RunInTransaction, SqlHandle } from './sql-repository.js';
import { SqlSources } from './sources.js';
import { SqlGroups } from './groups.js';
import { SqlSteps } from './steps.js';
import { SqlTasks } from './tasks.js';
import { SqlTurns } from './turns.js';
import { SqlUploads } from './uploads.js';
import { SqlWebhooks } from './webhooks.js';

const MIGRATIONS: Record<string, Migration> = {
  '000001_initial': m000001,
  '000002_cluster': m000002,
  '000003_credit_micros': m000003,
  '000004_last_error': m000004,
  '000005_webhooks': m000005,
  '000006_sources': m000006,
  '000007_groups': m000007,
  '000008_task_version': m000008,
  '000009_pruning': m000009,
  '000010_turn_cache_usage': m000010,
  '000011_turn_rows': m000011,
  '000012_cell_support': m000012,
  '000013_turn_offline': m000013,
  '000014_fair_share': m000014,
  '000015_provider_limits': m000015,
  '000016_monitors': m000016,
  '000017_finding_work': m000017,
  '000018_text_search': m000018,
  '000019_turn_reply_text': m000019,
};

class StaticMigrations implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return MIGRATIONS;
  }
}

/** Repositories an adapter serves its own way outside transactions; inside one, every statement runs on the transaction. */
export interface OwnRepositories {
  tasks?: SqlTasks;
  rows?: SqlRows;
}

/** Every repository over one handle: the store's root, or one transaction (what `transaction` hands its function). */
export class SqlRepositories implements Repositories {
  readonly accounts: SqlAccounts;
  readonly tasks: SqlTasks;
  readonly turns: SqlTurns;
  readonly steps: SqlSteps;
  readonly events: SqlEvents;
  readonly rows: SqlRows;
  readonly uploads: SqlUploads;
  readonly idempotency: SqlIdempotency;
  readonly webhooks: SqlWebhooks;
  readonly sources: SqlSources;
  readonly groups: SqlGroups;
  readonly cluster: SqlCluster;

  /**
   * `own` and `run` are for the root and for a transaction respectively: the adapter's own
   * repositories outside transactions, and how a transaction's hot statements run (see
   * RunInTransaction).
   */
  constructor(db: SqlHandle, profile: DialectProfile, link: ClusterLink, opts: { own?: OwnRepositories; notices?: Notice[]; run?: RunInTransaction } = {}) {
    const { own = {}, notices, run } = opts;
    this.accounts = new SqlAccounts(db, profile, run);
    this.tasks = own.tasks ?? new SqlTasks(db, profile, run);
    this.turns = new SqlTurns(db, profile, run);
    this.steps = new SqlSteps(db, profile, run);
    this.events = new SqlEvents(db, profile, run);
    this.rows = own.rows ?? new SqlRows(db, profile, run);
    this.uploads = new SqlUploads(db, profile, run);
    this.idempotency = new SqlIdempotency(db, profile, run);
    this.webhooks = new SqlWebhooks(db, profile, run);
    this.sources = new SqlSources(db, profile, run);
    this.groups = new SqlGroups(db, profile, run);
    this.cluster = new SqlCluster(db, profile, link, notices);
  }
}

export interface SqlStoreOptions {
  profile: DialectProfile;
  link: ClusterLink;
  /** Where the migration bookkeeping tables live (PostgreSQL schema); the database default when unset. */
  migrationSchema?: string;
  own?: OwnRepositories;
  /** How a transaction's hot statements run, where they may skip Kysely's executor (SQLite). */
  runInTransaction?: RunInTransaction;
  /** Closes what the adapter opened besides the Kysely handle and the link (SQLite's read connection). */
  close?: () => void | Promise<void>;
}

export class SqlStore extends SqlRepositories implements Store {
  readonly kind: DialectProfile['kind'];
  readonly shared: boolean;
  readonly prune: SqlPrune;
  private readonly commits: GroupCommit | undefined;

  constructor(
    private readonly root: Kysely<Database>,
    private readonly opts: SqlStoreOptions,
  ) {
    super(root, opts.profile, opts.link, { own: opts.own });
    this.kind = opts.profile.kind;
    this.shared = opts.profile.shared;
    this.prune = new SqlPrune(root, opts.profile);
    if (opts.profile.groupCommit) {
      // Its savepoints run straight on the connection the group's transaction holds.
      if (!opts.runInTransaction) throw new Error('group commit needs the adapter to give runInTransaction');
      this.commits = new GroupCommit(root, opts.runInTransaction);
    }
  }

  async migrate(): Promise<void> {
    const migrator = new Migrator({ db: this.root, provider: new StaticMigrations(), migrationTableSchema: this.opts.migrationSchema });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.root);
  }

  async transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T> {
    const notices: Notice[] = [];
    const body = async (trx: Transaction<Database>) => {
      const direct = this.opts.runInTransaction;
      // A statement run straight on the connection has no transaction object to refuse it: one
      // from repositories kept past their transaction would land in whatever runs then.
      let open = true;
      const run: RunInTransaction | undefined = direct && ((sql, parameters) => {
        if (!open) throw new Error('a statement ran on a transaction that had ended');
        return direct(sql, parameters);
      });
      try {
        return await fn(new SqlRepositories(trx, this.opts.profile, this.opts.link, { notices, run }));
      } finally {
        open = false;
      }
    };
    const result = await (this.commits ? this.commits.run(body) : runTransaction(this.root, body));
    if (notices.length > 0) this.opts.link.notify(notices);
    return result;
  }

  async close(): Promise<void> {
    await this.opts.link.close();
    await this.root.destroy();
    await this.opts.close?.();
  }
}
