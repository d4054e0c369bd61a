/**
 * web_search {query, max_results?}: asks the configured search provider (SearXNG, Brave or
 * Tavily; src/agent/web/search.ts) and lists the results as title, URL and snippet. Without a
 * configured provider the tool says so, and the model can still fetch pages it knows.
 */
import { Type } from 'typebox';
import { domainPolicy } from '../../net/domain-policy.js';
import { SearchError, type SearchProvider } from '../web/search.js';
import type { AgentTool } from './tool.js';
import { ProviderWaitTooLong, type ProviderGate } from '../providers/provider-gate.js';

interface WebSearchArgs {
  query: string;
  max_results?: number;
}

export const DEFAULT_MAX_RESULTS = 8;
/**
 * The longest a search waits for its place (a provider's Retry-After included), as long as a
 * model call waits for a Retry-After. Past it the model is told at once and goes on without
 * search: waiting would spend the turn's time, and a turn can often go on from pages it has.
 */
export const MAX_SEARCH_WAIT_MS = 60_000;
export const MAX_RESULTS = 20;

const parameters = Type.Object({
  query: Type.String({ minLength: 1, maxLength: 1000, description: 'What to search for, as you would type it into a search engine.' }),
  max_results: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RESULTS, description: `How many results to return (default ${DEFAULT_MAX_RESULTS}).` })),
});

export function createWebSearchTool(provider: SearchProvider | undefined, gate?: ProviderGate): AgentTool<WebSearchArgs> {
  return {
    name: 'web_search',
    concurrent: true,
    description: 'Search the web. Returns a numbered list of results (title, URL, snippet); read a result with fetch_url before citing it.',
    parameters,
    async run(args, ctx) {
      const query = args.query.trim();
      if (!provider) {
        return {
          isError: true,
          content:
            'web_search is not available: no search provider is configured on this Quarry server (the operator sets QUARRY_SEARCH_PROVIDER to searxng, brave or tavily). ' +
            'Do not call web_search again in this turn; use fetch_url on pages you know, or the task inputs.',
          summary: 'no search provider configured',
        };
      }
      if (query === '') return { isError: true, content: 'The query is empty.', summary: 'empty query' };
      const max = args.max_results ?? DEFAULT_MAX_RESULTS;
      let results;
      // A 429 is no failure: the search waits its place again (every turn's searches slow down),
      // for up to MAX_SEARCH_WAIT_MS; a longer hold is told to the model at once.
      const deadline = Date.now() + MAX_SEARCH_WAIT_MS;
      for (;;) {
        let permit;
        try {
          permit = await gate?.acquire({ tokens: () => 0, signal: ctx.signal, deadline, onLongWait: () => ctx.waitingOn('search_rate_limit') });
        } catch (err) {
          if (!(err instanceof ProviderWaitTooLong)) throw err;
          const seconds = Math.ceil(err.waitMs / 1000);
          return {
            isError: true,
            content:
              `web_search is held by the search provider's rate limit for about ${seconds} s, longer than a search waits. ` +
              'Go on without searching for now: read pages you already found with fetch_url, or use the task inputs; search again later if the task still needs it.',
            summary: `search rate-limited (${seconds} s)`,
          };
        }
        try {
          results = await provider.search(query, max, ctx.signal, gate?.onRateLimits);
          break;
        } catch (err) {
          if (ctx.signal.aborted || !(err instanceof SearchError)) throw err;
          if (gate && err.status === 429) {
            await gate.learn(err.rateLimits ?? {}, { retryAfterMs: err.retryAfterMs }).catch(() => undefined);
            continue;
          }
          return { isError: true, content: `The search failed: ${err.message}`, summary: `search failed (${provider.name})` };
        } finally {
          permit?.release();
        }
      }
      // The task's source policy is enforced here, not left to the prompt.
      const policy = domainPolicy(ctx.spec().sources);
      const found = results.length;
      results = results.filter((r) => policy.refuses(r.url) === undefined);
      const dropped = found - results.length;
      const droppedNote = dropped > 0 ? ` ${dropped} result${dropped === 1 ? ' was' : 's were'} left out: outside the task's source policy.` : '';
      if (results.length === 0) {
        return { content: `No results for "${query}" (${provider.name}).${droppedNote} Try other words, fewer words, or another language.`, summary: `no results for "${short(query)}"` };
      }
      const lines = [`Results for "${query}" (${provider.name}, ${results.length}):${droppedNote}`];
      results.forEach((r, i) => {
        lines.push('', `${i + 1}. ${r.title}`, `   ${r.url}`);
        if (r.snippet) lines.push(`   ${r.snippet}`);
      });
      return { content: lines.join('\n'), summary: `${results.length} result${results.length === 1 ? '' : 's'} for "${short(query)}"` };
    },
  };
}

/** web_search with no provider: answers that none is configured. */
export const webSearchTool = createWebSearchTool(undefined);

function short(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
