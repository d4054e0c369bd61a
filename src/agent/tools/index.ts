import type { Sandbox } from '../../sandbox/sandbox.js';
import { createWebTools, type WebToolsOptions } from '../web/index.js';
import { createRunCodeTool } from './run-code.js';
import { readSourceTool } from './read-source.js';
import { defineTool, type AgentTool } from './tool.js';
import { updateSpecTool } from './update-spec.js';
import { writeRowsTool } from './write-rows.js';

export type AgentTools = ReadonlyMap<string, AgentTool<unknown>>;

/** Every tool the agent can be given, by name, built from the server's configuration. */
export function createAgentTools(opts: WebToolsOptions & { sandbox: Sandbox }): AgentTools {
  const tools = [defineTool(updateSpecTool), defineTool(writeRowsTool), ...createWebTools(opts), defineTool(createRunCodeTool(opts.sandbox)), defineTool(readSourceTool)];
  return new Map(tools.map((t) => [t.name, t]));
}
