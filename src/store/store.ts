/**
 * The data layer's contract. The rest of Quarry sees only these types and methods; the SQL
 * lives behind them, once for every database (kysely-store.ts), with the few places where the
 * databases differ declared in a DialectProfile.
 *
 * Methods on `Store` run on their own; inside `transaction(fn)` the same methods run atomically
 * and the task rows they read with `lock: true` stay locked until the transaction ends, which is
 * how writes to one task are serialized.
 */
import type { TaskSpec } from '../tasks/spec.js';

export type TaskStatus = 'plan' | 'execute' | 'deleted';
export type TaskPhase = 'plan' | 'execute';
export type TaskActivity = 'idle' | 'planning' | 'executing' | 'thinking';
export type TurnKind = 'plan' | 'execute' | 'continue';
/** queued: waits behind the task's current turn · pending: ready for a worker · running: owned by a worker. */
export type TurnStatus = 'queued' | 'pending' | 'running' | 'completed' | 'stopped' | 'failed' | 'cancelled';

/** Credits are integers of micro-credits everywhere in the store (src/accounts/credits.ts). */
export interface AccountRecord {
  id: string;
  name: string;
  balanceMicros: number;
  creditsUsedMicros: number;
  createdAt: string;
}

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  createdAt: string;
  revokedAt: string | null;
}

export interface TaskRecord {
  id: string;
  accountId: string;
  name: string | null;
  type: string;
  status: TaskStatus;
  phase: TaskPhase | null;
  activity: TaskActivity | null;
  spec: TaskSpec;
  pinned: boolean;
  cronExpression: string | null;
  cronTimezone: string | null;
  cronNextRunAt: string | null;
  activeOutput: string | null;
  creditsUsedMicros: number;
  lastEventSeq: number;
  currentTurnId: string | null;
  queuedCount: number;
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
}

/** What the /state poll shows: a task's state fields and its current turn. */
export interface TaskStateRecord {
  id: string;
  accountId: string;
  status: TaskStatus;
  phase: TaskPhase | null;
  activity: TaskActivity | null;
  queuedCount: number;
  lastEventSeq: number;
  currentTurnId: string | null;
  updatedAt: string;
  turn: { id: string; kind: TurnKind; startedAt: string | null } | null;
}

export type { TurnError } from '../errors.js';
import type { TurnError } from '../errors.js';

export interface TurnRecord {
  id: string;
  taskId: string;
  accountId: string;
  kind: TurnKind;
  status: TurnStatus;
  input: string | null;
  planOnly: boolean;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
  leaseOwner: string | null;
  leaseExpiresAt: string | null;
  creditsUsedMicros: number;
  tokensIn: number;
  tokensOut: number;
  toolCalls: number;
  error: TurnError | null;
}

export interface EventRecord {
  taskId: string;
  seq: number;
  type: string;
  turnId: string | null;
  /** The JSON text sent as the SSE `data:` line; holds seq, type, task_id, turn_id, at and the payload. */
  data: string;
}

export interface OutputStatsRecord {
  outputId: string;
  rowCount: number;
  updatedAt: string;
}

export interface UploadRecord {
  id: string;
  accountId: string;
  filename: string;
  contentType: string;
  declaredBytes: number;
  sizeBytes: number | null;
  sha256: string | null;
  storagePath: string | null;
  expiresAt: string;
  createdAt: string;
  completedAt: string | null;
}

export interface IdempotencyRecord {
  requestHash: string;
  status: number;
  body: string;
  createdAt: string;
}

export interface TaskListCursor {
  pinned: boolean;
  updatedAt: string;
  id: string;
}

export type TaskPatch = Partial<Omit<TaskRecord, 'id' | 'accountId' | 'createdAt'>>;
export type TurnPatch = Partial<Omit<TurnRecord, 'id' | 'taskId' | 'accountId' | 'kind' | 'createdAt'>>;

export interface StoreOps {
  // accounts and keys
  insertAccount(account: AccountRecord): Promise<void>;
  getAccount(id: string): Promise<AccountRecord | undefined>;
  countAccounts(): Promise<number>;
  /** Adds `deltaMicros` (may be negative) to the balance, never below zero; returns the new balance in micro-credits. */
  adjustBalanceMicros(accountId: string, deltaMicros: number): Promise<number>;
  /** Takes `amountMicros` from the balance (floor zero) and adds it to credits_used; returns the new balance in micro-credits. */
  chargeAccountMicros(accountId: string, amountMicros: number): Promise<number>;
  insertApiKey(key: ApiKeyRecord & { keyHash: string }): Promise<void>;
  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  listApiKeys(accountId: string): Promise<ApiKeyRecord[]>;
  revokeApiKey(accountId: string, keyId: string, at: string): Promise<ApiKeyRecord | undefined>;

  // tasks
  insertTask(task: TaskRecord): Promise<void>;
  getTask(id: string, opts?: { lock?: boolean }): Promise<TaskRecord | undefined>;
  updateTask(id: string, patch: TaskPatch): Promise<void>;
  /** The task's state and its current turn in one indexed read, without the spec (the /state poll). */
  getTaskState(id: string): Promise<TaskStateRecord | undefined>;
  /** One page in list order (pinned first, then newest update), starting after `after`. Deleted tasks are left out. */
  listTasks(accountId: string, limit: number, after?: TaskListCursor): Promise<TaskRecord[]>;
  /** Tasks in cron mode whose next run is due at `now`. */
  listDueCronTasks(now: string, limit: number): Promise<TaskRecord[]>;

  // turns
  insertTurn(turn: TurnRecord): Promise<void>;
  getTurn(id: string): Promise<TurnRecord | undefined>;
  updateTurn(id: string, patch: TurnPatch): Promise<void>;
  /** The oldest queued turn of a task (the next message to take). */
  nextQueuedTurn(taskId: string): Promise<TurnRecord | undefined>;
  /** Marks every queued turn of the task cancelled; returns how many. */
  cancelQueuedTurns(taskId: string, at: string): Promise<number>;
  countPendingTurns(): Promise<number>;
  /**
   * Gives up to `limit` pending turns to `owner` until `leaseUntil`, oldest first, and returns them.
   * Turns whose lease ran out (`running` with lease_expires_at before `now`) are taken over too,
   * first, unless `takeOverExpired` is false. A turn's started_at is set when its start is
   * recorded, so a claimed turn that has one is resumed.
   */
  claimTurns(owner: string, limit: number, now: string, leaseUntil: string, opts?: { takeOverExpired?: boolean }): Promise<TurnRecord[]>;
  /** Extends a lease; false when the turn is no longer running under this owner. */
  renewLease(turnId: string, owner: string, leaseUntil: string): Promise<boolean>;
  /** Returns running turns owned by `owner` (every owner when omitted) to pending: a clean shutdown, or an embedded store's restart. */
  releaseLeases(owner?: string): Promise<number>;
  listTurnsByAccount(accountId: string, limit: number): Promise<TurnRecord[]>;
  /** Messages and instructions of the task's turns up to and including `upToTurnId`, oldest first. */
  listTurnInputs(taskId: string, upToTurnId: string): Promise<string[]>;

  // agent step checkpoints
  /** Stores a step unless the turn already has one of that number; returns whether it stored it. Touches that one step only. */
  insertStep(turnId: string, step: number, data: string, at: string): Promise<boolean>;
  listSteps(turnId: string): Promise<{ step: number; data: string }[]>;

  // events
  /** Stores events (one statement for all of them). */
  insertEvents(events: EventRecord[]): Promise<void>;
  listEvents(taskId: string, afterSeq: number, limit: number): Promise<EventRecord[]>;
  lastEvents(taskId: string, count: number): Promise<EventRecord[]>;

  // outputs and rows
  listOutputStats(taskId: string): Promise<OutputStatsRecord[]>;
  /**
   * Appends rows (already serialized, without their numbers) under `writeKey`. Writing the same
   * key twice does nothing the second time, so replayed tool calls never duplicate rows.
   */
  appendRows(taskId: string, outputId: string, writeKey: string, rows: ((rowNumber: number) => string)[], at: string): Promise<{ firstRow: number; count: number; replayed: boolean }>;
  /** Rows `offset + 1` to `offset + limit` in order: each one's stored JSON, as UTF-8 bytes. */
  readRows(taskId: string, outputId: string, offset: number, limit: number): Promise<Buffer[]>;

  // uploads
  insertUpload(upload: UploadRecord): Promise<void>;
  getUpload(id: string): Promise<UploadRecord | undefined>;
  /** `storagePath` null: the contents are in the store (putUploadChunk). */
  completeUpload(id: string, patch: { sizeBytes: number; sha256: string; storagePath: string | null; completedAt: string }): Promise<void>;

  // idempotency keys
  getIdempotency(accountId: string, key: string, since: string): Promise<IdempotencyRecord | undefined>;
  /**
   * Takes the key for the change of the transaction it runs in, storing `record`: true when this
   * transaction now holds it (a new key, or one whose record is older than `expiredBefore`),
   * false when another request's record holds it. Where transactions run side by side
   * (PostgreSQL), a key another transaction has claimed but not yet committed makes this wait
   * for that one to end: it is taken if that one rolled back, refused if it committed. A
   * rolled-back claim leaves nothing behind.
   */
  claimIdempotency(accountId: string, key: string, record: IdempotencyRecord, expiredBefore: string): Promise<boolean>;
  putIdempotency(accountId: string, key: string, record: IdempotencyRecord): Promise<void>;

  // settings
  getSetting(key: string): Promise<string | undefined>;
  setSetting(key: string, value: string): Promise<void>;

  // what several processes on one database share
  /** Sends `payload` to every process listening on `channel`, when (and only if) the transaction commits. No-op where one process owns the store. */
  notify(channel: string, payload: string): Promise<void>;
  /** Counts one request of `keyId` in the window starting at `windowStart`; returns the window's count so far. */
  hitRateWindow(keyId: string, windowStart: string): Promise<number>;
  putUploadChunk(uploadId: string, chunk: number, data: Buffer): Promise<void>;
  deleteUploadChunks(uploadId: string): Promise<void>;
}

/** A lock held by this process until released or until the process dies. */
export interface HeldLock {
  /** False once the lock was lost (its connection died). */
  readonly held: boolean;
  release(): Promise<void>;
}

export interface Store extends StoreOps {
  readonly kind: 'sqlite' | 'postgres';
  migrate(): Promise<void>;
  transaction<T>(fn: (tx: StoreOps) => Promise<T>): Promise<T>;
  /** Streams a whole output in row order, in batches, without loading it at once. */
  iterateRows(taskId: string, outputId: string): AsyncIterable<string>;
  /** An upload's contents stored with putUploadChunk, in order. */
  readUploadChunks(uploadId: string): AsyncIterable<Buffer>;
  /** Whether other processes may share this store (PostgreSQL): then rate limits and uploads live in it. */
  readonly shared: boolean;
  /** Calls `handler` with the payload of every notification on `channel`; resolves with a function that stops listening. */
  listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>>;
  /** Takes the named lock if no other process holds it; null when another does. */
  tryLock(name: string): Promise<HeldLock | null>;
  close(): Promise<void>;
}
