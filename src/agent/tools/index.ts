import { defineTool, type AgentTool } from './tool.js';
import { updateSpecTool } from './update-spec.js';
import { writeRowsTool } from './write-rows.js';

/** Every tool the agent can be given, by name. */
export const AGENT_TOOLS: ReadonlyMap<string, AgentTool<unknown>> = new Map(
  [defineTool(updateSpecTool), defineTool(writeRowsTool)].map((t) => [t.name, t]),
);
