/**
 * Quarry's wire contract: every body, query, answer, event and route, declared once with TypeBox.
 * The server validates and serializes with these schemas, /openapi.json is generated from them,
 * and the client's types are generated from that document.
 */
export * from './common.js';
export * from './errors.js';
export * from './spec.js';
export * from './task.js';
export * from './events.js';
export * from './outputs.js';
export * from './changes.js';
export * from './sources.js';
export * from './uploads.js';
export * from './webhooks.js';
export * from './groups.js';
export * from './mcp.js';
export * from './admin.js';
export * from './requests.js';
export * from './meta.js';
export * from './routes.js';
