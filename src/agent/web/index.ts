/**
 * The agent's tools that reach outside the task (web_search, fetch_url, read_input), built from
 * the server's configuration. src/agent/tools/index.ts registers them next to update_spec and
 * write_rows.
 */
import { createFetchUrlTool, type FetchUrlToolOptions } from '../tools/fetch-url.js';
import { readInputTool } from '../tools/read-input.js';
import { defineTool, type AgentTool } from '../tools/tool.js';
import { createWebSearchTool } from '../tools/web-search.js';
import type { SearchConfig } from '../../config.js';
import { createSearchProvider, type SearchProvider } from './search.js';
import type { ProviderGate } from '../providers/provider-gate.js';

export interface WebToolsOptions {
  /** A search configuration (QUARRY_SEARCH_*) or a ready provider; undefined = web_search says none is configured. */
  search?: SearchConfig | SearchProvider;
  /** fetch_url settings; `allowPrivate` comes from QUARRY_FETCH_ALLOW_PRIVATE=1. */
  fetch?: FetchUrlToolOptions;
  /** Where each search waits its place under the search provider's limits (QUARRY_SEARCH_RPM, its 429s). */
  searchGate?: ProviderGate;
}

export function createWebTools(opts: WebToolsOptions = {}): AgentTool<unknown>[] {
  const search = opts.search === undefined ? undefined : 'search' in opts.search ? opts.search : createSearchProvider(opts.search);
  return [defineTool(createWebSearchTool(search, opts.searchGate)), defineTool(createFetchUrlTool(opts.fetch)), defineTool(readInputTool)];
}

export { createSearchProvider, type SearchProvider, type SearchResult } from './search.js';
export { extractText, detectKind, type ExtractedText, type ContentKind } from './extract.js';
