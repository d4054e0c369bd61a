/**
 * The port between a running turn and its task: everything the agent loop and its tools may read
 * from or do to the task, declared once. The turn runner implements it against the task service
 * (`TaskTurnPort`); tests implement it in memory. Tools see a narrow view of it (`ToolContext` in
 * tools/tool.ts), derived from this interface by type.
 */
import type { RowTally, SourceSnapshotRecord } from '../domain/records.js';
import type { TaskActivity, TaskPhase, TaskWait, TurnKind } from '../contract/index.js';
import type { TaskSpec } from '../contract/index.js';
import type { ModelToolCall } from './providers/model-provider.js';
import type { EventPayload } from '../contract/index.js';

/** One input of the task, resolved to its stored file. */
export interface InputFile {
  upload_id: string;
  /** The name the spec gives it, else the upload's file name. */
  name: string;
  /** Where the finished upload is stored. */
  path: string;
  /** The content type declared when the upload was made. */
  contentType: string;
}

/** A checkpointed step, as stored. */
export type StoredStep =
  /** `system`: the system message, on the turn's first model step, so that a resumed turn sends the same prefix. */
  | { type: 'model'; text: string; toolCalls: ModelToolCall[]; phase: TaskPhase; system?: string }
  /** The result of one tool call, stored as the call ended. */
  | { type: 'tool'; callId: string; name: string; content: string }
  /** The results of all calls of a reply, as turns stored them before each call got a step of its own. */
  | { type: 'tools'; results: { callId: string; name: string; content: string }[] }
  /** A user message of the engine's own; `check`: the one listing what the outputs lack (at most one a turn). */
  | { type: 'nudge'; content: string; check?: true }
  /** A step of a sub-researcher (`agent`: "<research call_id>/<task index>"), with what it had written and read by then. */
  | { type: 'sub'; agent: string; step: StoredStep; tally: SubTally }
  /** A sub-researcher ended: what its research call reports of it. */
  | { type: 'sub_end'; agent: string; result: ResearchTaskResult };

/** What a sub-researcher wrote and read so far. */
export interface SubTally {
  rows_written: number;
  verified_rows: number;
  sources: string[];
}

/** What the lead's research call reports of one of its tasks (decisions §16.2). */
export interface ResearchTaskResult extends SubTally {
  objective: string;
  outcome: 'completed' | 'failed' | 'limit_reached';
  /** The sub-researcher's last answer, cut to 4,000 characters. */
  summary: string;
}

/** The payload of a `tool` event. */
export type ToolEvent = EventPayload<'tool'>;

/** Where the task's work stands, as clients see it: `plan`/`planning`, `execute`/`thinking`, `execute`/`executing`. */
export interface TurnState {
  phase?: TaskPhase;
  activity?: TaskActivity;
}

/** What a checkpointed step used: priced by the port, charged once however often it is stored. */
export interface StepUsage {
  /** All input tokens, cached ones included. */
  tokensIn: number;
  /** Of tokensIn, those the provider read from its prompt cache. */
  tokensInCached: number;
  tokensOut: number;
  toolCalls: number;
  /** Compactions of the conversation before this step's model call (decisions §16.3). */
  compactions: number;
}

/** The account's balance after a charge, and what this turn has cost so far. */
export interface Charge {
  balance: number;
  turnCredits: number;
}

/** What a tool read, to keep as a snapshot of the task (fetch_url's page, read_input's input). */
export interface ReadSource {
  /** The URL asked for; an input's is `upload:<upload_id>` (outputs/citations.ts uploadUrl). */
  url: string;
  finalUrl: string;
  uploadId: string | null;
  title: string | null;
  /** The readable text as read: what quotes are checked against. */
  text: string;
}

/** Builds one stored row from the row number it gets (rows are numbered when appended). */
export type RowWriter = (rowNumber: number) => string;

/**
 * The rows of a call to a keyed table output (decisions §19), in order: each one's key (the JSON
 * array of its key columns' values) and whether every source of it is verified.
 */
export interface RowKeys {
  keys: string[];
  verified: boolean[];
}

export interface TurnPort {
  // ---- the turn -----------------------------------------------------------------------------
  readonly turnId: string;
  /** The task's id: the key of its conversation in the provider's prompt cache. */
  readonly taskId: string;
  readonly kind: TurnKind;
  /** The request asked for a plan only: the turn ends when planning does. */
  readonly planOnly: boolean;
  /** Offline (decisions §17.2): web_search is not offered and fetch_url reads only the task's snapshots. */
  readonly offline: boolean;
  /** Fires when the turn is stopped, times out or is lost; every model call and tool honours it. */
  readonly signal: AbortSignal;
  /** Earlier steps of this turn (non-empty when the turn is taken up again). */
  readonly steps: readonly StoredStep[];
  /** The user messages of the task so far: its prompt, then each message and instruction. */
  readonly userMessages: readonly string[];

  // ---- the task's spec, rows and files --------------------------------------------------------
  spec(): TaskSpec;
  updateSpec(spec: TaskSpec): Promise<void>;
  /** Rows written so far, by output id. */
  rowCounts(): Promise<Map<string, number>>;
  /** An output's stored rows (the JSON the API returns), in order. */
  readRows(outputId: string): AsyncIterable<string>;
  /**
   * Appends rows once per write key: a replayed call with the same key writes nothing and gets
   * the first answer. `tally` is what they add to the outputs' and the task's counts: rows with
   * every source verified, cells by support.
   */
  appendRows(writeKey: string, outputId: string, rows: RowWriter[], tally?: RowTally, keys?: RowKeys): Promise<{ firstRow: number; count: number }>;
  /** Keeps what a tool read as a snapshot of the task; returns its source_id (the same URL and text read again keep the first). */
  recordSource(source: ReadSource): Promise<string>;
  /** The task's snapshots, with their text, that these URLs (asked for or arrived at) or uploads name. */
  citedSources(urls: string[], uploadIds: string[]): Promise<SourceSnapshotRecord[]>;
  /** One snapshot of this task, with its text, by source_id. */
  source(sourceId: string): Promise<SourceSnapshotRecord | undefined>;
  /** The task spec's inputs, resolved to local files of finished uploads of the task's account. */
  inputs(): Promise<InputFile[]>;
  /** The task's workspace directory on this node (<data dir>/workspaces/<task id>), made on first use. */
  workspaceDir(): Promise<string>;

  // ---- progress -------------------------------------------------------------------------------
  /** Moves the task's phase and activity; asking for the state it is already in does nothing. */
  setState(state: TurnState): Promise<void>;
  /**
   * A call of the turn waits long on a provider's limits: the task shows `waiting` until every
   * such wait of the turn has called the function returned.
   */
  waitingOn(wait: TaskWait): () => void;
  /** Streamed model text; the port may coalesce it before storing. */
  text(delta: string): void;
  /**
   * The model reply whose text was streamed since the last checkpoint failed part-way: its text
   * is withdrawn, so that the retry's text does not follow a copy of it. Text not yet stored is
   * dropped; text already stored is followed by a `text` event with `restart: true`.
   */
  withdrawText(): Promise<void>;
  tool(event: ToolEvent): Promise<void>;
  /** Stores a step and charges its usage, once per step number. */
  checkpoint(step: number, data: StoredStep, usage: StepUsage): Promise<Charge>;
}
