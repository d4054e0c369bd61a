import { createWebTools, type WebToolsOptions } from '../web/index.js';
import { defineTool, type AgentTool } from './tool.js';
import { updateSpecTool } from './update-spec.js';
import { writeRowsTool } from './write-rows.js';

export type AgentTools = ReadonlyMap<string, AgentTool<unknown>>;

/** Every tool the agent can be given, by name, built from the server's configuration. */
export function createAgentTools(opts: WebToolsOptions = {}): AgentTools {
  return new Map([defineTool(updateSpecTool), defineTool(writeRowsTool), ...createWebTools(opts)].map((t) => [t.name, t]));
}
