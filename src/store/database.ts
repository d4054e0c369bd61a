import type { ColumnType } from 'kysely';

/**
 * Table shapes as Kysely sees them. Both databases store the same columns with the same
 * meaning: times are ISO-8601 UTC text (they sort as text), booleans are 0/1 integers,
 * JSON is text, credits are integers of micro-credits. Keeping the types identical keeps one
 * query code path for both.
 *
 * Micro-credits live in bigint columns: SQLite returns them as numbers, pg as strings (it does
 * not narrow int8), so reads go through `fromStoredMicros`.
 */
export type MicrosColumn = ColumnType<number | string, number, number>;

export interface AccountsTable {
  id: string;
  name: string;
  balance_micros: MicrosColumn;
  credits_used_micros: MicrosColumn;
  created_at: string;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  key_hash: string;
  created_at: string;
  revoked_at: string | null;
}

export interface TasksTable {
  id: string;
  account_id: string;
  name: string | null;
  type: string;
  status: string;
  phase: string | null;
  activity: string | null;
  spec: string;
  pinned: number;
  cron_expression: string | null;
  cron_timezone: string | null;
  cron_next_run_at: string | null;
  active_output: string | null;
  credits_used_micros: MicrosColumn;
  last_event_seq: number;
  last_error_seq: number | null;
  current_turn_id: string | null;
  queued_count: number;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  /** A group's run: its group, its input's index there and the input (JSON); null for single tasks. */
  group_id: ColumnType<string | null, string | null | undefined, string | null>;
  group_input_idx: ColumnType<number | null, number | null | undefined, number | null>;
  group_input: ColumnType<string | null, string | null | undefined, string | null>;
  /** Cells of the task's rows a source supports, and cells checked and supported by none (decisions §17.1). */
  supported_cells: ColumnType<number, number | undefined, number>;
  unsupported_cells: ColumnType<number, number | undefined, number>;
  /** Raised by every change of the row: the list's cached views are of one version. */
  version: ColumnType<number, number | undefined, number>;
  /** When a deleted task's data was purged (src/pruner.ts); null before. */
  purged_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** The event retention dropped the task's events up to this seq. */
  events_pruned_seq: ColumnType<number, number | undefined, number>;
  /** The last ended turn (records.ts LastTurnRecord as JSON) and its outcome; null before the first ends. */
  last_turn: ColumnType<string | null, string | null | undefined, string | null>;
  last_outcome: ColumnType<string | null, string | null | undefined, string | null>;
  /** The spec's prompt, for the list's text search: written with every spec. */
  prompt: ColumnType<string | null, string | null | undefined, string | null>;
  /** What a running turn waits on (`model_rate_limit`, `search_rate_limit`); null otherwise. */
  waiting: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface GroupsTable {
  id: string;
  account_id: string;
  name: string | null;
  spec: string;
  max_parallel: number;
  max_credits_micros: MicrosColumn | null;
  status: string;
  inputs: number;
  duplicates: number;
  pending: number;
  running: number;
  completed: number;
  failed: number;
  stopped: number;
  credits_used_micros: MicrosColumn;
  last_event_seq: number;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  cron_expression: ColumnType<string | null, string | null | undefined, string | null>;
  cron_timezone: ColumnType<string | null, string | null | undefined, string | null>;
  cron_next_run_at: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface GroupInputsTable {
  group_id: string;
  idx: number;
  key: string | null;
  data: string;
  status: string;
  task_id: string | null;
  turn_id: string | null;
}

export interface TurnsTable {
  id: string;
  task_id: string;
  account_id: string;
  kind: string;
  status: string;
  input: string | null;
  plan_only: number;
  offline: number;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  lease_owner: string | null;
  lease_expires_at: string | null;
  credits_used_micros: MicrosColumn;
  tokens_in: number;
  tokens_in_cached: number;
  tokens_out: number;
  tool_calls: number;
  compactions: number;
  error: string | null;
  rows_written: ColumnType<number, number | undefined, number>;
  verified_rows: ColumnType<number, number | undefined, number>;
  /** The line the turn waits in (migration 000014): its group's id, or its account's for a single task. */
  line: ColumnType<string, string | undefined, never>;
  /** The turn's place among waiting turns, given when it becomes pending (bigint: PostgreSQL reads it as a string). */
  fair_key: ColumnType<number | string, number | undefined, number>;
  /** Text of the reply under way is stored, and no checkpoint holds the reply (migration 000019). */
  reply_text_stored: ColumnType<number, number | undefined, number>;
  changes_added: ColumnType<number, number | undefined, number>;
  changes_changed: ColumnType<number, number | undefined, number>;
  changes_unconfirmed: ColumnType<number, number | undefined, number>;
  /** What the model call under way of a capped group's run may cost at most (migration 000014). */
  model_reserve_micros: ColumnType<MicrosColumn, number | undefined, number>;
}

export interface TurnStepsTable {
  turn_id: string;
  step: number;
  data: string;
  created_at: string;
}

export interface EventsTable {
  task_id: string;
  seq: number;
  type: string;
  turn_id: string | null;
  data: string;
}

export interface OutputsTable {
  task_id: string;
  output_id: string;
  row_count: number;
  verified_count: ColumnType<number, number | undefined, number>;
  supported_cells: ColumnType<number, number | undefined, number>;
  unsupported_cells: ColumnType<number, number | undefined, number>;
  unchecked_cells: ColumnType<number, number | undefined, number>;
  updated_at: string;
}

export interface RowsTable {
  task_id: string;
  output_id: string;
  row_num: number;
  data: string;
  row_key: ColumnType<string | null, string | null | undefined, string | null>;
  turn_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface RowChangesTable {
  id: string;
  task_id: string;
  turn_id: string;
  output_id: string;
  change: string;
  at: string;
  data: string;
}

export interface RowBatchesTable {
  task_id: string;
  write_key: string;
  output_id: string;
  first_row: number;
  row_count: number;
}

export interface UploadsTable {
  id: string;
  account_id: string;
  filename: string;
  content_type: string;
  declared_bytes: number;
  size_bytes: number | null;
  sha256: string | null;
  storage_path: string | null;
  expires_at: string;
  created_at: string;
  completed_at: string | null;
}

export interface IdempotencyTable {
  account_id: string;
  key: string;
  request_hash: string;
  status: number;
  body: string;
  created_at: string;
}

export interface RateWindowsTable {
  key_id: string;
  window_start: string;
  hits: number;
}

/** A provider's shared limits (migration 000015); times in ms since the epoch. */
export interface ProviderLimitsTable {
  provider: string;
  next_request_at: ColumnType<number | string, number | undefined, number>;
  next_token_at: ColumnType<number | string, number | undefined, number>;
  blocked_until: ColumnType<number | string, number | undefined, number>;
  learned_rpm: ColumnType<number | null, number | null | undefined, number | null>;
  learned_tpm: ColumnType<number | null, number | null | undefined, number | null>;
}

/** A provider call in flight, under a lease (QUARRY_MODEL_CONCURRENCY). */
export interface ProviderCallsTable {
  provider: string;
  call_id: string;
  expires_at: ColumnType<number | string, number, number>;
}

export interface UploadChunksTable {
  upload_id: string;
  chunk: number;
  data: string;
}

export interface SettingsTable {
  key: string;
  value: string;
}

export interface WebhookEndpointsTable {
  id: string;
  account_id: string;
  url: string;
  events: string;
  description: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  created_at: string;
}

/** One attempt to send a delivery, recorded as it ends (migration 000017). */
export interface WebhookAttemptsTable {
  delivery_id: string;
  attempt: number;
  at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  response_excerpt: string | null;
}

export interface WebhookDeliveriesTable {
  id: string;
  endpoint_id: string;
  event: string;
  payload: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  retry_since: string;
  created_at: string;
  delivered_at: string | null;
}

export interface SourceSnapshotsTable {
  id: string;
  task_id: string;
  url: string;
  final_url: string;
  upload_id: string | null;
  title: string | null;
  fetched_at: string;
  sha256: string;
  bytes: number;
  text: string;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  tasks: TasksTable;
  turns: TurnsTable;
  turn_steps: TurnStepsTable;
  events: EventsTable;
  outputs: OutputsTable;
  rows: RowsTable;
  row_batches: RowBatchesTable;
  row_changes: RowChangesTable;
  uploads: UploadsTable;
  idempotency: IdempotencyTable;
  settings: SettingsTable;
  rate_windows: RateWindowsTable;
  provider_limits: ProviderLimitsTable;
  provider_calls: ProviderCallsTable;
  upload_chunks: UploadChunksTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  source_snapshots: SourceSnapshotsTable;
  groups: GroupsTable;
  group_inputs: GroupInputsTable;
}

