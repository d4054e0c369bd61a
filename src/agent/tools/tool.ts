/**
 * The shape of an agent tool. A tool validates nothing itself: the loop checks the arguments
 * against `parameters` first and sends problems back to the model as a tool error.
 */
import type { TurnPort } from '../turn-port.js';

/** The part of the turn's port a tool may use as it is; state, events and checkpoints stay the loop's. */
const TOOL_METHODS = ['spec', 'updateSpec', 'rowCounts', 'inputs', 'workspaceDir', 'recordSource', 'citedSources', 'source', 'waitingOn'] as const;
type ToolMethod = (typeof TOOL_METHODS)[number];

/** A port method with its leading write key bound, so a tool cannot write under another call's key. */
type KeyBound<F> = F extends (writeKey: string, ...rest: infer Args) => infer R ? (...rest: Args) => R : never;

/** What a tool call sees of its turn: a view of the TurnPort, with row writes bound to the call's write key. */
export type ToolContext = Pick<TurnPort, 'signal' | 'offline' | ToolMethod> & {
  /** Unique per (turn, step, call): row writes under it happen once however often a turn is replayed. */
  readonly writeKey: string;
  /** The model's id of the call. */
  readonly callId: string;
  appendRows: KeyBound<TurnPort['appendRows']>;
};

/** The view of `port` one tool call gets. */
export function toolContext(port: Pick<TurnPort, 'signal' | 'offline' | 'appendRows' | ToolMethod>, writeKey: string, callId: string): ToolContext {
  const methods = Object.fromEntries(TOOL_METHODS.map((name) => [name, port[name].bind(port)])) as Pick<TurnPort, ToolMethod>;
  return { ...methods, signal: port.signal, offline: port.offline, writeKey, callId, appendRows: (outputId, rows, tally, keys) => port.appendRows(writeKey, outputId, rows, tally, keys) };
}

export interface ToolResult {
  /** What the model reads. */
  content: string;
  /** One line for the `tool` event. */
  summary: string;
  /** A failed call: the model is told and may try again. */
  isError?: boolean;
  /** Rows the call wrote (write_rows): carried by the `tool` event for clients that follow rows as they come. */
  rows?: { output: string; first_row: number; count: number; verified: number };
}

export interface AgentTool<Args = never> {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: object;
  /**
   * The call only reads (it changes nothing a later call of the same reply could see): the calls
   * of one reply that are run at once, before the others (docs/agent.md, "Tool step").
   */
  concurrent?: boolean;
  run(args: Args, ctx: ToolContext): Promise<ToolResult>;
}

/** Erases a tool's argument type so tools of different shapes sit in one registry. */
export function defineTool<Args>(tool: AgentTool<Args>): AgentTool<unknown> {
  return tool as AgentTool<unknown>;
}
