/**
 * The shape of an agent tool. A tool validates nothing itself: the loop checks the arguments
 * against `parameters` first and sends problems back to the model as a tool error.
 */
import type { TaskSpec } from '../../tasks/spec.js';
import type { InputFile } from './read-input.js';

export interface ToolContext {
  readonly signal: AbortSignal;
  /** Unique per (turn, step, call): row writes under it happen once however often a turn is replayed. */
  readonly writeKey: string;
  spec(): TaskSpec;
  updateSpec(spec: TaskSpec): Promise<void>;
  rowCounts(): Promise<Map<string, number>>;
  appendRows(outputId: string, rows: ((rowNumber: number) => string)[]): Promise<{ firstRow: number; count: number }>;
  /** The task spec's inputs, resolved to local files of finished uploads of the task's account. */
  inputs(): Promise<InputFile[]>;
  /** The task's workspace directory on this node (<data dir>/workspaces/<task id>), made on first use. */
  workspaceDir(): Promise<string>;
}

export interface ToolResult {
  /** What the model reads. */
  content: string;
  /** One line for the `tool` event. */
  summary: string;
  /** A failed call: the model is told and may try again. */
  isError?: boolean;
}

export interface AgentTool<Args = never> {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: object;
  run(args: Args, ctx: ToolContext): Promise<ToolResult>;
}

/** Erases a tool's argument type so tools of different shapes sit in one registry. */
export function defineTool<Args>(tool: AgentTool<Args>): AgentTool<unknown> {
  return tool as AgentTool<unknown>;
}
