/**
 * What Quarry keeps, as plain records: the shapes the store reads and writes and the services
 * work on. They belong to no database and no service, so both sides import them from here.
 */
import type { DeliveryStatus, GroupStatus, RunStatus, TaskActivity, TaskPhase, TaskSpec, TaskStatus, TaskWait, TurnKind, WebhookEventType } from '../contract/index.js';
import type { TurnError } from '../errors.js';


/** queued: waits behind the task's current turn · pending: ready for a worker · running: owned by a worker. */
export type TurnStatus = 'queued' | 'pending' | 'running' | 'completed' | 'stopped' | 'failed' | 'cancelled';

// ---- accounts: accounts, API keys and balances ------------------------------------------------

/** Credits are integers of micro-credits everywhere in the store (src/domain/credits.ts). */
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

// ---- tasks ------------------------------------------------------------------------------------

export interface TaskRecord {
  id: string;
  accountId: string;
  name: string | null;
  type: string;
  status: TaskStatus;
  phase: TaskPhase | null;
  activity: TaskActivity | null;
  /** What its running turn waits on now (absent: nothing, as on a new task). */
  waiting?: TaskWait | null;
  spec: TaskSpec;
  pinned: boolean;
  cronExpression: string | null;
  cronTimezone: string | null;
  cronNextRunAt: string | null;
  activeOutput: string | null;
  creditsUsedMicros: number;
  lastEventSeq: number;
  /** The seq of the `error` event of the last ended turn when it failed, else null (absent: none yet, as on a new task). */
  lastErrorSeq?: number | null;
  currentTurnId: string | null;
  queuedCount: number;
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
  /** A group's run: the group, and the input it runs on (its index and its JSON). Absent or null for a single task. */
  group?: { id: string; inputIndex: number; input: string } | null;
  /** The last turn that ended, kept on the task so its body reads no turn; null before the first ends (absent: a new task). */
  lastTurn?: LastTurnRecord | null;
  /** Cells of the task's rows that a source supports, and cells checked that none does (decisions §17.1); absent: none yet. */
  supportedCells?: number;
  unsupportedCells?: number;
}

/**
 * Which tasks a page of the list holds (decisions §20): single tasks, or the runs of `groupId`;
 * `q` in the name or prompt (case-insensitive); `state` (running: a turn runs or waits); the last
 * turn's `outcome`; created after / before (ISO 8601 as stored: `Date.toISOString()`).
 */
export interface TaskListFilter {
  groupId?: string;
  q?: string;
  state?: 'running' | 'idle';
  outcome?: LastTurnRecord['outcome'];
  createdAfter?: string;
  createdBefore?: string;
}

/** Which groups a page of the group list holds (decisions §20): by status, `q` in the name (case-insensitive). */
export interface GroupListFilter {
  q?: string;
  status?: GroupStatus;
}

/** A turn that ended, as its task keeps it (decisions §20). */
export interface LastTurnRecord {
  turnId: string;
  kind: TurnKind;
  outcome: 'completed' | 'failed' | 'stopped';
  startedAt: string | null;
  endedAt: string;
  creditsUsedMicros: number;
  error: Pick<TurnError, 'error' | 'message'> | null;
  /** A task with a keyed output: what the turn changed (absent otherwise, and on turns ended before changes were kept). */
  changes?: ChangeCounts;
}

/** What the /state poll shows: a task's state fields and its current turn. */
export interface TaskStateRecord {
  id: string;
  accountId: string;
  status: TaskStatus;
  phase: TaskPhase | null;
  activity: TaskActivity | null;
  waiting: TaskWait | null;
  queuedCount: number;
  lastEventSeq: number;
  currentTurnId: string | null;
  updatedAt: string;
  turn: { id: string; kind: TurnKind; startedAt: string | null } | null;
  /** The error the last ended turn failed with; null when it did not fail, and while a turn runs. */
  lastError: TurnError | null;
}

export type TaskPatch = Partial<Omit<TaskRecord, 'id' | 'accountId' | 'createdAt' | 'group'>>;

// ---- turns: the durable work queue (claims, leases, queued messages) --------------------------

export interface TurnRecord {
  id: string;
  taskId: string;
  accountId: string;
  /**
   * The line the turn waits in for a worker (decisions §18): its group's id for a group's run,
   * its account's id for a single task. Workers take turns between lines.
   */
  line: string;
  kind: TurnKind;
  status: TurnStatus;
  input: string | null;
  planOnly: boolean;
  /** Decisions §17.2: no web_search, and fetch_url answers only from the task's snapshots. */
  offline: boolean;
  /**
   * Text of the model reply under way is stored as `text` events, and no checkpoint holds the reply:
   * a turn taken up again asks for the reply again, so it withdraws that text first.
   */
  replyTextStored: boolean;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
  leaseOwner: string | null;
  leaseExpiresAt: string | null;
  creditsUsedMicros: number;
  /** All input tokens, cached ones included. */
  tokensIn: number;
  /** Of tokensIn, those read from the provider's prompt cache. */
  tokensInCached: number;
  tokensOut: number;
  toolCalls: number;
  /** Compactions of the turn's conversation (decisions §16.3). */
  compactions: number;
  error: TurnError | null;
  /** Rows the turn wrote, and how many of them had every source verified. */
  rowsWritten: number;
  verifiedRows: number;
  /** What the turn changed in keyed outputs (decisions §19). */
  changes: ChangeCounts;
}

export interface ChangeCounts {
  added: number;
  changed: number;
  unconfirmed: number;
}

/** One change of a keyed row (decisions §19); `data` is the JSON text of `{key, fields, sources}`. */
export interface RowChangeRecord {
  id: string;
  taskId: string;
  turnId: string;
  outputId: string;
  change: 'added' | 'changed' | 'unconfirmed';
  at: string;
  data: string;
}

export type TurnPatch = Partial<Omit<TurnRecord, 'id' | 'taskId' | 'accountId' | 'line' | 'kind' | 'createdAt'>>;

// ---- events -----------------------------------------------------------------------------------

export interface EventRecord {
  taskId: string;
  seq: number;
  type: string;
  turnId: string | null;
  /** The JSON text sent as the SSE `data:` line; holds seq, type, task_id, turn_id, at and the payload. */
  data: string;
}

// ---- rows: the outputs' rows ------------------------------------------------------------------

export interface OutputStatsRecord {
  outputId: string;
  rowCount: number;
  /** Rows with at least one source, every one verified. */
  verifiedCount: number;
  /** The output's cells by support (decisions §17.1). */
  cells: CellCounts;
  updatedAt: string;
}

/** Cells by support: a source's quote holds the value, none that was checked does, or none was checked. */
export interface CellCounts {
  supported: number;
  unsupported: number;
  unchecked: number;
}

/** What rows being appended add to their output's and task's counts. */
export interface RowTally {
  /** Rows with at least one source, every one verified. */
  verified: number;
  cells: CellCounts;
}

// ---- sources: snapshots of what a task read ---------------------------------------------------

export interface SourceSnapshotRecord {
  id: string;
  taskId: string;
  /** The URL asked for; an upload's is `upload:<upload_id>`. */
  url: string;
  finalUrl: string;
  uploadId: string | null;
  title: string | null;
  fetchedAt: string;
  /** Of the text, UTF-8. */
  sha256: string;
  bytes: number;
  text: string;
}

export type SourceSnapshotInfo = Omit<SourceSnapshotRecord, 'text'>;

// ---- uploads, and the contents of those kept in the database ----------------------------------

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

// ---- idempotency keys -------------------------------------------------------------------------

export interface IdempotencyRecord {
  requestHash: string;
  status: number;
  body: string;
  createdAt: string;
}

// ---- webhooks: endpoints, and the outbox of their deliveries ----------------------------------

export interface WebhookEndpointRecord {
  id: string;
  accountId: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: string | null;
  createdAt: string;
}

export interface DeliveryRecord {
  id: string;
  endpointId: string;
  event: WebhookEventType;
  /** The JSON body, the same bytes on every attempt. */
  payload: string;
  status: DeliveryStatus;
  /** Attempts started (a claim counts one). */
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  /** Pending: when it is due, or while claimed, when the claim runs out. Null once delivered or dead. */
  nextAttemptAt: string | null;
  /** Retries stop once this lies the give-up time behind (the creation, or the last redelivery). */
  retrySince: string;
  createdAt: string;
  deliveredAt: string | null;
}

/** How an attempt ended: delivered, or failed and due again at `nextAttemptAt` (null: dead). */
export type AttemptResult =
  | { delivered: true; statusCode: number; at: string }
  | { delivered: false; statusCode: number | null; error: string; nextAttemptAt: string | null };

/** One attempt to send a delivery as its log keeps it: when it began, what came back, how long it took. */
export interface AttemptLogRecord {
  attempt: number;
  at: string;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** The first 2 KiB of the receiver's answer as text; null when none came. */
  responseExcerpt: string | null;
}

// ---- groups: one spec over many inputs, each input a run -------------------------------------

export interface GroupCountsRecord {
  pending: number;
  running: number;
  completed: number;
  failed: number;
  stopped: number;
}

export interface GroupRecord {
  id: string;
  accountId: string;
  name: string | null;
  spec: TaskSpec;
  maxParallel: number;
  maxCreditsMicros: number | null;
  status: GroupStatus;
  /** Inputs received, duplicates included: the next input's index. */
  inputs: number;
  duplicates: number;
  counts: GroupCountsRecord;
  creditsUsedMicros: number;
  lastEventSeq: number;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  /** A scheduled group's schedule and next tick; all null otherwise. */
  cronExpression: string | null;
  cronTimezone: string | null;
  cronNextRunAt: string | null;
}

export type GroupPatch = Partial<Pick<GroupRecord, 'status' | 'inputs' | 'duplicates' | 'counts' | 'creditsUsedMicros' | 'maxCreditsMicros' | 'lastEventSeq' | 'updatedAt' | 'finishedAt' | 'cronNextRunAt'>>;

/** A group's input with what its run's task shows (GET /group/{id}/runs): none before the run first started. */
export interface GroupRunRecord {
  index: number;
  data: string;
  status: RunStatus;
  task: { id: string; creditsUsedMicros: number; updatedAt: string; lastTurn: LastTurnRecord | null } | null;
}

export interface GroupInputRecord {
  groupId: string;
  index: number;
  key: string | null;
  /** The input's fields as JSON (without `_key`). */
  data: string;
  status: RunStatus;
  /** The run's task once it started (its latest, after a retry). */
  taskId: string | null;
  /** The run's turn: only that turn's end ends the run. */
  turnId: string | null;
}

/** A merged row: one output row of one run, with its input. */
export interface GroupRowRecord {
  index: number;
  input: string;
  taskId: string;
  status: RunStatus;
  rowNumber: number;
  /** The row's stored JSON. */
  row: string;
}
// ---- provider limits: shared by every process (agent/providers/provider-gate.ts) --------------

/** A provider's shared pacing, in ms since the epoch: when its next request and next token may go. */
export interface ProviderLimitState {
  nextRequestAt: number;
  nextTokenAt: number;
  /** Nothing is sent before this time (a 429's Retry-After, a spent limit's reset). */
  blockedUntil: number;
  /** The limits the provider's headers stated, null until one did. */
  learnedRpm: number | null;
  learnedTpm: number | null;
}
