/**
 * The data layer's contract. The rest of Quarry sees only these types and methods, one
 * repository per aggregate, reached as namespaces of the Store: `store.tasks.get(id)`,
 * `store.turns.claim(…)`, `store.accounts.charge(…)`. The SQL lives behind them, once for every
 * database (sql/), with the few places where the databases differ declared in a DialectProfile.
 *
 * Repositories on `Store` run each call on its own; inside `transaction(fn)` the same
 * repositories (`tx.tasks`, `tx.events`, …) run atomically, and the task rows they read with
 * `lock: true` stay locked until the transaction ends, which is how writes to one task are
 * serialized.
 */
import type {
  AccountRecord, ApiKeyRecord, AttemptLogRecord, AttemptResult, ChangeCounts, DeliveryRecord, EventRecord, GroupInputRecord, GroupPatch,
  GroupRecord, GroupRowRecord, IdempotencyRecord, OutputStatsRecord, ProviderLimitState, RowChangeRecord, RowTally, SourceSnapshotInfo, SourceSnapshotRecord, TaskPatch,
  GroupListFilter, GroupRunRecord, TaskListFilter, TaskRecord, TaskStateRecord, TurnPatch, TurnRecord, UploadRecord, WebhookEndpointRecord,
} from '../domain/records.js';
import type { RunStatus } from '../contract/index.js';
import type { TurnError } from '../errors.js';

// ---- accounts: accounts, API keys and balances ------------------------------------------------

export interface AccountsRepository {
  insert(account: AccountRecord): Promise<void>;
  /** `lock: true` (in a transaction) serializes changes that count what an account has, such as its webhook endpoints. */
  get(id: string, opts?: { lock?: boolean }): Promise<AccountRecord | undefined>;
  /** Accounts with this name (names need not be unique), oldest first. */
  findByName(name: string): Promise<AccountRecord[]>;
  count(): Promise<number>;
  /** Adds `deltaMicros` (may be negative) to the balance, never below zero; returns the new balance in micro-credits. */
  adjustBalance(accountId: string, deltaMicros: number): Promise<number>;
  /** Takes `amountMicros` from the balance (floor zero) and adds it to credits_used; returns the new balance in micro-credits. */
  charge(accountId: string, amountMicros: number): Promise<number>;
  insertKey(key: ApiKeyRecord & { keyHash: string }): Promise<void>;
  findKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  listKeys(accountId: string): Promise<ApiKeyRecord[]>;
  revokeKey(accountId: string, keyId: string, at: string): Promise<ApiKeyRecord | undefined>;
}

// ---- tasks ------------------------------------------------------------------------------------

export interface TaskListCursor {
  pinned: boolean;
  updatedAt: string;
  id: string;
}

/** A task in a page of the list, and its row's version, which every change of the row raises. */
export interface TaskListEntry {
  id: string;
  version: number;
}

export interface TaskListPage {
  tasks: TaskListEntry[];
  /** Where the next page starts; absent on the last page. */
  next?: TaskListCursor;
}

export interface TasksRepository {
  insert(task: TaskRecord): Promise<void>;
  get(id: string, opts?: { lock?: boolean }): Promise<TaskRecord | undefined>;
  /**
   * The task locked (as `get` with `lock`) and, in the same read, whether `owner` holds the lease
   * of its running turn `turnId`: that turn's row is then held until the transaction ends too, so
   * no other worker takes it over before the caller's writes commit.
   */
  getForLeasedTurn(id: string, turnId: string, owner: string): Promise<{ task: TaskRecord; leased: boolean } | undefined>;
  update(id: string, patch: TaskPatch): Promise<void>;
  /**
   * The task's state and its current turn in one indexed read, without the spec (the /state
   * poll). A store that holds the record in memory answers at once, without a promise: a poll is
   * then answered in the same tick it arrived.
   */
  getState(id: string): TaskStateRecord | undefined | Promise<TaskStateRecord | undefined>;
  /**
   * One page of the list in its order (pinned first, then newest update), starting after
   * `after`: each task's id and row version, read from the list's index alone. Deleted tasks
   * are left out; so are groups' runs, unless `filter.groupId` names the group whose runs to
   * list. The filter's other members narrow the page; it pages in the same order.
   */
  listPage(accountId: string, limit: number, after?: TaskListCursor, filter?: TaskListFilter): Promise<TaskListPage>;
  /** How many tasks the list holds (as listPage sees them, group runs left out), those updated at or after `updatedSince` when given. */
  countListed(accountId: string, updatedSince?: string): Promise<number>;
  /** The tasks with these ids that exist, in no particular order. */
  getMany(ids: readonly string[]): Promise<TaskRecord[]>;
  /** Tasks in cron mode whose next run is due at `now`. */
  listDueCron(now: string, limit: number): Promise<TaskRecord[]>;
}

// ---- turns: the durable work queue (claims, leases, queued messages) --------------------------

/** One step's usage, added to its turn's totals: credits, tokens (all input, cached input, output), tool calls, compactions. */
export interface TurnUsage {
  creditsMicros: number;
  tokensIn: number;
  tokensInCached: number;
  tokensOut: number;
  toolCalls: number;
  compactions: number;
}

export interface TurnsRepository {
  insert(turn: TurnRecord): Promise<void>;
  get(id: string): Promise<TurnRecord | undefined>;
  update(id: string, patch: TurnPatch): Promise<void>;
  /**
   * Adds a step's usage to the turn's totals in one statement; returns the turn's credits used
   * afterwards, in micro-credits (undefined when there is no such turn).
   */
  addUsage(id: string, usage: TurnUsage): Promise<number | undefined>;
  /**
   * A capped group's run is about to call the model: adds `micros` (what the call may cost at
   * most) to the running turn's reserve, unless the group's spent credits plus its running runs'
   * reserves have reached its max_credits; returns whether the call may begin.
   */
  reserveModelCall(turnId: string, groupId: string, micros: number): Promise<boolean>;
  /** The model call that reserved `micros` ended: its reserve is taken back. */
  releaseModelReserve(turnId: string, micros: number): Promise<void>;
  /** What the running turns of a capped group's runs have reserved for their model calls, in micro-credits. */
  modelReserves(groupId: string): Promise<number>;
  /** Adds rows the turn wrote (and how many of them are verified) to its counts. */
  addRows(id: string, rows: { written: number; verified: number }): Promise<void>;
  /** Adds to the turn's change counts (decisions §19), under the task's row lock. */
  addChanges(id: string, counts: ChangeCounts): Promise<void>;
  /**
   * Ends a turn: its outcome, end time and error, its lease dropped, in one statement; returns
   * the turn's credits used, in micro-credits (undefined when there is no such turn).
   */
  end(id: string, end: { status: 'completed' | 'failed' | 'stopped'; endedAt: string; error: TurnError | null }): Promise<number | undefined>;
  /** The oldest queued turn of a task (the next message to take). */
  nextQueued(taskId: string): Promise<TurnRecord | undefined>;
  /** Marks every queued turn of the task cancelled; returns how many. */
  cancelQueued(taskId: string, at: string): Promise<number>;
  countPending(): Promise<number>;
  /** Turns a worker holds now (or held when its lease ran out): no lock, a count of one moment, for the metrics. */
  countRunning(): Promise<number>;
  /**
   * Gives up to `limit` pending turns to `owner` until `leaseUntil`, oldest first, and returns them.
   * Turns whose lease ran out (`running` with lease_expires_at before `now`) are taken over too,
   * first, unless `takeOverExpired` is false. A turn's started_at is set when its start is
   * recorded, so a claimed turn that has one is resumed.
   */
  claim(owner: string, limit: number, now: string, leaseUntil: string, opts?: { takeOverExpired?: boolean }): Promise<TurnRecord[]>;
  /** Extends a lease; false when the turn is no longer running under this owner. */
  renewLease(turnId: string, owner: string, leaseUntil: string): Promise<boolean>;
  /** Returns running turns owned by `owner` (every owner when omitted) to pending: a clean shutdown, or an embedded store's restart. */
  releaseLeases(owner?: string): Promise<number>;
  listByAccount(accountId: string, limit: number): Promise<TurnRecord[]>;
  /** How the task's last ended turn ended (completed, failed or stopped; cancelled queued messages do not count); undefined before any. */
  lastOutcome(taskId: string): Promise<'completed' | 'failed' | 'stopped' | undefined>;
  /** Messages and instructions of the task's turns up to and including `upToTurnId`, oldest first. */
  listInputs(taskId: string, upToTurnId: string): Promise<string[]>;
  /** The task's last `limit` turns that were not cancelled (queued ones too), oldest first: what its conversation is read from. */
  listRecent(taskId: string, limit: number): Promise<Pick<TurnRecord, 'id' | 'input' | 'status'>[]>;
}

// ---- steps: a turn's agent checkpoints --------------------------------------------------------

export interface StepsRepository {
  /** Stores a step unless the turn already has one of that number; returns whether it stored it. Touches that one step only. */
  insert(turnId: string, step: number, data: string, at: string): Promise<boolean>;
  /** The data of one stored step, undefined when there is none. */
  get(turnId: string, step: number): Promise<string | undefined>;
  list(turnId: string): Promise<{ step: number; data: string }[]>;
}

// ---- events -----------------------------------------------------------------------------------

/**
 * What a turn said, in order: a text event (`restart`: it withdrew the reply cut off before it),
 * a tool call, or the move from plan to execute.
 */
export type TurnText = TurnSaid & { turnId: string };
/** A TurnText without the turn it belongs to. */
export type TurnSaid = { kind: 'text'; text: string; restart?: true } | { kind: 'tool' } | { kind: 'phase_changed' };

export interface EventsRepository {
  /** Stores events (one statement for all of them). */
  insert(events: EventRecord[]): Promise<void>;
  list(taskId: string, afterSeq: number, limit: number): Promise<EventRecord[]>;
  last(taskId: string, count: number): Promise<EventRecord[]>;
  /**
   * The text, tool and phase_changed events of these turns of the task, in order, with the data
   * of the text events only: enough to read what each turn said last (its text after its last
   * tool call).
   */
  turnTexts(taskId: string, turnIds: readonly string[]): Promise<TurnText[]>;
  /** The seq of the last stored event of each of these streams (tasks or groups) that has any. */
  lastSeqs(streamIds: readonly string[]): Promise<Map<string, number>>;
}

// ---- rows: the outputs' rows ------------------------------------------------------------------

export interface RowsRepository {
  /** Each output of the task that has rows: how many, and when it last got some. */
  stats(taskId: string): Promise<OutputStatsRecord[]>;
  /**
   * Appends rows (already serialized, without their numbers) under `writeKey`. Writing the same
   * key twice does nothing the second time, so replayed tool calls never duplicate rows.
   */
  append(taskId: string, outputId: string, writeKey: string, rows: ((rowNumber: number) => string)[], at: string, tally?: RowTally): Promise<{ firstRow: number; count: number; replayed: boolean }>;
  /**
   * Replaces the stored JSON of rows already written (a recheck) and sets the output's verified
   * and cell counts to what they are now over all its rows. The row count stays.
   */
  rewrite(taskId: string, outputId: string, rows: { rowNumber: number; data: string }[], counts: RowTally): Promise<void>;
  /** Rows `offset + 1` to `offset + limit` in order: each one's stored JSON, as UTF-8 bytes. */
  read(taskId: string, outputId: string, offset: number, limit: number): Promise<Buffer[]>;
  /** The call written under `writeKey`, if one was: a replayed tool call writes nothing again. */
  batch(taskId: string, writeKey: string): Promise<{ firstRow: number; count: number } | undefined>;
  /** The keyed rows of an output with one of `keys` (row_key texts), as stored. */
  keyed(taskId: string, outputId: string, keys: string[]): Promise<KeyedRowRecord[]>;
  /**
   * One call to a keyed output under `writeKey`, under the task's row lock: `updates` replace
   * rows in place (their numbers stay; null data: the row is unchanged), `inserts` are appended
   * after the last row; every row written is marked as written by `turnId`.
   */
  writeKeyed(taskId: string, outputId: string, writeKey: string, turnId: string, write: KeyedWrite, at: string): Promise<{ firstRow: number; count: number }>;
  /** The keyed rows of an output that `turnId` did not write (the keys an execute turn left unconfirmed). */
  keyedNotWrittenBy(taskId: string, outputId: string, turnId: string): Promise<{ key: string; rowNumber: number }[]>;
  /** Stores change records (with the rows they describe, in the same transaction). */
  insertChanges(changes: RowChangeRecord[]): Promise<void>;
  /** A task's changes in order, after the cursor; filtered by turn (`sinceTurn`: turns after it) or time. */
  changes(taskId: string, query: ChangeQuery): Promise<RowChangeRecord[]>;
  /** A group's runs' changes in order, each with its run's input index. */
  groupChanges(groupId: string, query: ChangeQuery): Promise<(RowChangeRecord & { inputIndex: number; input: string })[]>;
}

export interface KeyedRowRecord {
  key: string;
  rowNumber: number;
  data: string;
}

export interface KeyedWrite {
  updates: { key: string; rowNumber: number; data: string | null }[];
  inserts: { key: string; make: (rowNumber: number) => string }[];
  /** What the call adds to the output's counts: rows and cells written, minus those of the rows they replace. */
  tally: RowTally;
}

export interface ChangeQuery {
  /** Only this turn's changes. */
  turnId?: string;
  sinceTurn?: string;
  after?: string;
  /** The id of the last change of the previous page. */
  cursor?: string;
  limit: number;
}

// ---- sources: snapshots of what a task read ---------------------------------------------------

export interface SourcesRepository {
  /** Stores the snapshot unless the task has one of the same URL and text; returns the id of the one kept. */
  record(snapshot: SourceSnapshotRecord): Promise<string>;
  /** A page of the task's snapshots in the order they were read, without their text, and how many there are. */
  list(taskId: string, limit: number, offset: number): Promise<{ total: number; sources: SourceSnapshotInfo[] }>;
  get(taskId: string, id: string): Promise<SourceSnapshotRecord | undefined>;
  /** The task's snapshots, with text, whose URL or final URL is one of `urls`, or that are one of `uploadIds`. */
  cited(taskId: string, urls: string[], uploadIds: string[]): Promise<SourceSnapshotRecord[]>;
}

// ---- uploads, and the contents of those kept in the database ----------------------------------

export interface UploadsRepository {
  insert(upload: UploadRecord): Promise<void>;
  get(id: string): Promise<UploadRecord | undefined>;
  /** `storagePath` null: the contents are in the store (putChunk). */
  complete(id: string, patch: { sizeBytes: number; sha256: string; storagePath: string | null; completedAt: string }): Promise<void>;
  putChunk(uploadId: string, chunk: number, data: Buffer): Promise<void>;
  deleteChunks(uploadId: string): Promise<void>;
}

// ---- idempotency keys -------------------------------------------------------------------------

export interface IdempotencyRepository {
  get(accountId: string, key: string, since: string): Promise<IdempotencyRecord | undefined>;
  /**
   * Takes the key for the change of the transaction it runs in, storing `record`: true when this
   * transaction now holds it (a new key, or one whose record is older than `expiredBefore`),
   * false when another request's record holds it. Where transactions run side by side
   * (PostgreSQL), a key another transaction has claimed but not yet committed makes this wait
   * for that one to end: it is taken if that one rolled back, refused if it committed. A
   * rolled-back claim leaves nothing behind.
   */
  claim(accountId: string, key: string, record: IdempotencyRecord, expiredBefore: string): Promise<boolean>;
  put(accountId: string, key: string, record: IdempotencyRecord): Promise<void>;
}

// ---- webhooks: endpoints, and the outbox of their deliveries ----------------------------------

export interface WebhooksRepository {
  insertEndpoint(endpoint: WebhookEndpointRecord): Promise<void>;
  getEndpoint(id: string): Promise<WebhookEndpointRecord | undefined>;
  /** The account's endpoints, newest first. */
  listEndpoints(accountId: string): Promise<WebhookEndpointRecord[]>;
  countEndpoints(accountId: string): Promise<number>;
  /** Sets the secrets if the endpoint's secret is still `current`; false (nothing changed) when another rotation came first or it is gone. */
  replaceSecret(id: string, current: string, patch: { secret: string; previousSecret: string | null; previousSecretExpiresAt: string | null }): Promise<boolean>;
  /** Deletes the endpoint and its deliveries. */
  deleteEndpoint(id: string): Promise<void>;
  insertDeliveries(deliveries: DeliveryRecord[]): Promise<void>;
  getDelivery(endpointId: string, id: string): Promise<DeliveryRecord | undefined>;
  /** The endpoint's deliveries newest first, after (older than) the delivery id `before`. */
  listDeliveries(endpointId: string, limit: number, before?: string): Promise<DeliveryRecord[]>;
  /**
   * Takes up to `limit` pending deliveries due at `now` for one attempt each: counts the attempt
   * and moves next_attempt_at to `claimUntil`, so no other process takes them meanwhile (SKIP
   * LOCKED where several run), and one whose sender died is due again once the claim runs out.
   */
  claimDue(now: string, claimUntil: string, limit: number): Promise<DeliveryRecord[]>;
  /**
   * Records the outcome of the attempt `claim` (a delivery as claimDue returned it: its attempt
   * number and claim time); false (nothing changed) when a later claim or a redelivery has taken
   * the delivery since, or it is no longer pending.
   */
  recordAttempt(claim: Pick<DeliveryRecord, 'id' | 'attempts' | 'nextAttemptAt'>, result: AttemptResult, log?: AttemptLogRecord): Promise<boolean>;
  /** The delivery's attempts, oldest first (at most the last ATTEMPTS_KEPT of them). */
  listAttempts(deliveryId: string): Promise<AttemptLogRecord[]>;
  /** Makes the delivery pending and due at `now`, its 24 h of retries counted from now. */
  redeliver(id: string, now: string): Promise<void>;
  /** The earliest next_attempt_at of a pending delivery (the dispatcher sleeps until then). */
  nextDue(): Promise<string | undefined>;
}

// ---- groups: one spec over many inputs, each input a run --------------------------------------

export interface GroupsRepository {
  insert(group: GroupRecord): Promise<void>;
  /** `lock: true` (in a transaction) serializes every change to the group's counts and runs. */
  get(id: string, opts?: { lock?: boolean }): Promise<GroupRecord | undefined>;
  update(id: string, patch: GroupPatch): Promise<void>;
  /** The account's groups, newest first, after (older than) the group id `before`. */
  /** A page of the account's groups, newest first, before the group id `before`; `filter` narrows it (its status, `q` in its name). */
  list(accountId: string, limit: number, before?: string, filter?: GroupListFilter): Promise<GroupRecord[]>;
  /** Stores inputs, skipping those whose key the group has already; returns the indexes stored. */
  insertInputs(inputs: GroupInputRecord[]): Promise<number[]>;
  getInput(groupId: string, index: number): Promise<GroupInputRecord | undefined>;
  /** Inputs in `status`, in index order, after the index `after`; `started`: only those whose run has (or has not) had a task. */
  listInputs(groupId: string, status: RunStatus, limit: number, after?: number, opts?: { started?: boolean }): Promise<GroupInputRecord[]>;
  /** Scheduled groups whose next tick is due at `now`. */
  listDueCron(now: string, limit: number): Promise<GroupRecord[]>;
  /** Running scheduled groups with runs waiting for a free slot, and a slot free. */
  listScheduledWaiting(limit: number): Promise<GroupRecord[]>;
  setInput(groupId: string, index: number, patch: { status: RunStatus; taskId?: string; turnId?: string }): Promise<void>;
  /** Adds what a capped group's run was just charged to the group's credits used, as it is charged. */
  addCreditsUsed(groupId: string, micros: number): Promise<void>;
  /** Moves every input in status `from` to `to`; returns how many moved. */
  moveInputs(groupId: string, from: RunStatus, to: RunStatus): Promise<number>;
  /** A page of the group's inputs in index order, after index `after`, with their runs' tasks; only those of `status` when given. */
  listRuns(groupId: string, limit: number, opts?: { status?: RunStatus; after?: number }): Promise<GroupRunRecord[]>;
  /** How many rows the group's runs wrote to `outputId`. */
  rowCount(groupId: string, outputId: string): Promise<number>;
  /** Merged rows in (input, row) order: a page at `offset`, or the rows after `after`. */
  rows(groupId: string, outputId: string, limit: number, from: { offset: number } | { after: { index: number; rowNumber: number } }): Promise<GroupRowRecord[]>;
}

// ---- cluster: what several processes on one database share ------------------------------------

/**
 * Notifications, shared request counts, settings every process must agree on (the upload
 * signing secret) and, outside transactions, listening and named locks (StoreCluster).
 */
export interface ClusterRepository {
  /** Sends `payload` to every process listening on `channel`, once (and only if) the transaction commits. No-op where one process owns the store. */
  notify(channel: string, payload: string): Promise<void>;
  /** Counts `hits` requests (default 1) of `keyId` in the window starting at `windowStart`; returns the window's count so far. */
  hitRateWindow(keyId: string, windowStart: string, hits?: number): Promise<number>;
  getSetting(key: string): Promise<string | undefined>;
  setSetting(key: string, value: string): Promise<void>;
  /** A provider's shared limit state (made on first use); `lock: true` holds it to the transaction's end. */
  providerLimits(provider: string, opts?: { lock?: boolean }): Promise<ProviderLimitState>;
  setProviderLimits(provider: string, patch: Partial<ProviderLimitState>): Promise<void>;
  /** Counts the provider's calls in flight whose lease runs past `now`, dropping those that expired. */
  countProviderCalls(provider: string, now: number): Promise<number>;
  addProviderCall(provider: string, callId: string, expiresAt: number): Promise<void>;
  removeProviderCall(provider: string, callId: string): Promise<void>;
}

/** A lock held by this process until released or until the process dies. */
export interface HeldLock {
  /** False once the lock was lost (its connection died). */
  readonly held: boolean;
  release(): Promise<void>;
}

// ---- pruning: what has expired, deleted a bounded batch at a time (src/pruner.ts) --------------

/** A live task whose events the retention may drop: its last seq, the `error` it keeps, and how far it dropped before. */
export interface RetentionCandidate {
  id: string;
  lastEventSeq: number;
  lastErrorSeq: number | null;
  prunedSeq: number;
}

/**
 * Every method deletes at most `limit` rows in one statement (or says what to delete next) and
 * returns how many it deleted: running one twice, or on two processes at once, deletes nothing
 * more than once. Times are ISO-8601 text, as stored.
 */
export interface PruneRepository {
  /** Idempotency records created before `before`. */
  idempotency(before: string, limit: number): Promise<number>;
  /** Rate-limit windows that started before `before`. */
  rateWindows(before: string, limit: number): Promise<number>;
  /** Delivered and dead deliveries whose last round of retries (creation or redelivery) started before `before`. */
  deliveries(before: string, limit: number): Promise<number>;
  /** Uploads never completed whose URL expired before `before`, with the contents kept in the store. */
  uploads(before: string, limit: number): Promise<number>;
  /** Up to `limit` tasks deleted before `before` whose data is not purged yet, oldest first. */
  deletedTasks(before: string, limit: number): Promise<{ id: string; groupRun: boolean }[]>;
  /**
   * Deletes up to `limit` rows of a deleted task's data: its turns and their steps, snapshots,
   * events but the last `keepEvents`, and (unless `keepRows`, a group's run whose rows the group
   * still shows) its rows and outputs. Once nothing is left, marks the task purged at `now` and
   * returns 0.
   */
  purgeTask(taskId: string, opts: { keepEvents: number; keepRows: boolean; limit: number; now: string }): Promise<number>;
  /** Live tasks, in id order after `afterId`, with more than `keepEvents` events not yet dropped. */
  retentionCandidates(afterId: string | null, keepEvents: number, limit: number): Promise<RetentionCandidate[]>;
  /** The seq and turn of the task's first `limit` events after `afterSeq`. */
  eventTurns(taskId: string, afterSeq: number, limit: number): Promise<{ seq: number; turnId: string | null }[]>;
  /** Of these turns, those that ended before `before`. */
  turnsEndedBefore(turnIds: readonly string[], before: string): Promise<Set<string>>;
  /** Drops the task's events after `afterSeq` up to `throughSeq` but `keepSeq`, and records `throughSeq` as dropped. */
  dropEvents(taskId: string, afterSeq: number, throughSeq: number, keepSeq: number | null): Promise<number>;
}

// ---- the store --------------------------------------------------------------------------------

/** Every repository, as `store.transaction` hands them to its function (`tx.tasks`, `tx.turns`, …). */
export interface Repositories {
  readonly accounts: AccountsRepository;
  readonly tasks: TasksRepository;
  readonly turns: TurnsRepository;
  readonly steps: StepsRepository;
  readonly events: EventsRepository;
  readonly rows: RowsRepository;
  readonly uploads: UploadsRepository;
  readonly idempotency: IdempotencyRepository;
  readonly webhooks: WebhooksRepository;
  readonly sources: SourcesRepository;
  readonly groups: GroupsRepository;
  readonly cluster: ClusterRepository;
}

/** `store.rows`: outside a transaction, an output can also be streamed. */
export interface StoreRows extends RowsRepository {
  /** Streams a whole output in row order, in batches, without loading it at once. */
  iterate(taskId: string, outputId: string): AsyncIterable<string>;
}

/** `store.uploads`: outside a transaction, contents kept in the store can be streamed back. */
export interface StoreUploads extends UploadsRepository {
  /** An upload's contents stored with putChunk, in order. */
  readChunks(uploadId: string): AsyncIterable<Buffer>;
}

/** `store.cluster`: listening and named locks live on connections of their own, outside any transaction. */
export interface StoreCluster extends ClusterRepository {
  /** Calls `handler` with the payload of every notification on `channel`; resolves with a function that stops listening. */
  listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * Calls `handler` each time listening starts again after its connection was lost (the database
   * restarted): notifications sent meanwhile were missed, and whoever relies on them catches up
   * from the store. Never called where one process owns the store. Returns a function that stops it.
   */
  onResume(handler: () => void): () => void;
  /** Takes the named lock if no other process holds it; null when another does. */
  tryLock(name: string): Promise<HeldLock | null>;
}

export interface Store extends Repositories {
  readonly kind: 'sqlite' | 'postgres';
  /** Whether other processes may share this store (PostgreSQL): then rate limits and uploads live in it. */
  readonly shared: boolean;
  readonly rows: StoreRows;
  readonly uploads: StoreUploads;
  readonly cluster: StoreCluster;
  readonly prune: PruneRepository;
  migrate(): Promise<void>;
  /** Runs a trivial query: resolves once the database answers, rejects as any statement would when it cannot. */
  ping(): Promise<void>;
  transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
