/**
 * A scripted researcher behind the fake OpenAI server (test/kit/fake-openai-server.ts): not a
 * fixed transcript but a policy that reads each request (system message, tools offered, tool
 * results so far) and decides the next reply, as a model would. For each subtopic (a company of
 * test/kit/research-web.ts) it searches, fetches several pages in one reply, searches again,
 * fetches again, then writes one row whose sources quote sentences copied from the page text it
 * was sent. When the tools offered include `research` (decisions §16.2) the lead delegates every
 * subtopic in one `research` call and ends after its result; a request without `update_spec`
 * among its tools is a sub-researcher's, which researches the one company its objective names.
 *
 * Each reply waits a provider-like delay (`latencyMs` times `scale`), and the usage it reports
 * counts tokens as characters / 4 and cached tokens by OpenAI's documented prefix rule: a prompt
 * that shares a prefix of at least 1,024 tokens with an earlier request has that prefix cached,
 * rounded down to 128-token steps (`usage.prompt_tokens_details.cached_tokens`). A prompt is
 * cached once it has been answered, so requests sent at the same time do not hit each other.
 *
 * With `holdSubReplies` the sub-researchers' requests are counted as they arrive but answered
 * only after `release()`, so a test can act while every sub-researcher waits on the model.
 */
import { createHash } from 'node:crypto';
import { startFakeOpenAI, type FakeReply, type FakeRequestBody, type FakeToolCall } from './fake-openai-server.js';
import { delayFor, RESEARCH_COMPANIES, type ResearchCompany } from './research-web.js';

const CHARS_PER_TOKEN = 4;
/** OpenAI caches prompts in steps of 128 tokens, from 1,024 on. */
const CACHE_BLOCK_TOKENS = 128;
const CACHE_MIN_TOKENS = 1024;

export interface ResearcherStats {
  calls: number;
  /** Requests of sub-researchers (no update_spec offered). */
  sub_calls: number;
  input_tokens: number;
  cached_tokens: number;
  output_tokens: number;
  largest_request_chars: number;
  largest_request_tokens: number;
  /** Whether any request offered the `research` tool. */
  research_offered: boolean;
  research_calls: number;
  /** Replies that asked for more than one tool call. */
  multi_call_replies: number;
  /** The most requests this model was answering at once. */
  max_in_flight: number;
  /**
   * Per request in order of arrival: its tokens, cached tokens, whether a sub-researcher sent it,
   * and the company a sub-researcher's objective names.
   */
  requests: { tokens: number; cached: number; sub: boolean; company?: string }[];
}

export interface ResearcherModel {
  /** Base URL, ending in `/v1`. */
  readonly url: string;
  stats(): ResearcherStats;
  /** Answers the held sub-researcher requests, and holds no more. */
  release(): void;
  /** Forgets the counts and the prompt cache (between runs that must not share a cache). */
  reset(): void;
  close(): Promise<void>;
}

export interface ResearcherModelOptions {
  /** The output rows are written to. */
  output: string;
  /** Delay of each reply, drawn per request between these (ms); default [1000, 2000]. */
  latencyMs?: [number, number];
  /** Multiplies every delay; default 1. */
  scale?: number;
  /** Hold every sub-researcher's reply until `release()`; default false. */
  holdSubReplies?: boolean;
}

/** OpenAI-style prompt cache: the hash of every 128-token-aligned prefix of the prompts answered so far. */
class PrefixCache {
  private readonly seen = new Set<string>();
  private readonly blockChars = CACHE_BLOCK_TOKENS * CHARS_PER_TOKEN;

  /** The hashes of `prompt`'s block-aligned prefixes, shortest first (each chains the one before). */
  private prefixes(prompt: string): string[] {
    const hashes: string[] = [];
    let hash = '';
    for (let end = this.blockChars; end <= prompt.length; end += this.blockChars) {
      hash = createHash('sha1').update(hash).update(prompt.slice(end - this.blockChars, end)).digest('hex');
      hashes.push(hash);
    }
    return hashes;
  }

  /** Cached tokens of `prompt`: its longest prefix an answered prompt shared, from 1,024 tokens on. */
  lookup(prompt: string): number {
    const hashes = this.prefixes(prompt);
    let blocks = 0;
    while (blocks < hashes.length && this.seen.has(hashes[blocks]!)) blocks++;
    const tokens = blocks * CACHE_BLOCK_TOKENS;
    return tokens >= CACHE_MIN_TOKENS ? tokens : 0;
  }

  /** Caches `prompt` once it is answered: requests still in flight alongside it do not hit it. */
  remember(prompt: string): void {
    for (const hash of this.prefixes(prompt)) this.seen.add(hash);
  }

  clear(): void {
    this.seen.clear();
  }
}

function emptyStats(): ResearcherStats {
  return {
    calls: 0, sub_calls: 0, input_tokens: 0, cached_tokens: 0, output_tokens: 0, largest_request_chars: 0, largest_request_tokens: 0,
    research_offered: false, research_calls: 0, multi_call_replies: 0, max_in_flight: 0, requests: [],
  };
}

export async function startResearcherModel(opts: ResearcherModelOptions): Promise<ResearcherModel> {
  const fake = await startFakeOpenAI();
  const cache = new PrefixCache();
  const latency = opts.latencyMs ?? [1000, 2000];
  const scale = opts.scale ?? 1;
  let stats = emptyStats();
  let inFlight = 0;
  let holding = opts.holdSubReplies === true;
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });

  fake.setResponder(async (body) => {
    // The prompt as the provider sees it: tools, then the messages in order.
    const prompt = JSON.stringify({ tools: body.tools ?? [], messages: body.messages ?? [] });
    const promptTokens = Math.ceil(prompt.length / CHARS_PER_TOKEN);
    const cached = cache.lookup(prompt);
    const tools = new Set((body.tools ?? []).map((t) => t.function.name));
    const reply = decide(body, tools, opts.output);
    const outputChars = (reply.text?.length ?? 0) + (reply.toolCalls ?? []).reduce((n, c) => n + c.name.length + JSON.stringify(c.arguments).length, 0);
    const completionTokens = Math.ceil(outputChars / CHARS_PER_TOKEN);

    stats.calls++;
    if (!tools.has('update_spec')) stats.sub_calls++;
    stats.input_tokens += promptTokens;
    stats.cached_tokens += cached;
    stats.output_tokens += completionTokens;
    stats.largest_request_chars = Math.max(stats.largest_request_chars, prompt.length);
    stats.largest_request_tokens = Math.max(stats.largest_request_tokens, promptTokens);
    const sub = !tools.has('update_spec');
    stats.requests.push({ tokens: promptTokens, cached, sub, ...(sub ? { company: subjectOf(body.messages ?? [])?.name } : {}) });
    stats.research_offered ||= tools.has('research');
    stats.research_calls += (reply.toolCalls ?? []).filter((c) => c.name === 'research').length;
    if ((reply.toolCalls ?? []).length > 1) stats.multi_call_replies++;
    inFlight++;
    stats.max_in_flight = Math.max(stats.max_in_flight, inFlight);
    if (sub && holding) await released;
    // The wait stands in for the provider's time to answer (drawn from the prompt's end, so the
    // same request waits the same in every run).
    await new Promise((resolve) => setTimeout(resolve, delayFor(prompt.slice(-400), latency, scale)));
    inFlight--;
    cache.remember(prompt);
    // Not a fresh literal: the usage carries OpenAI's prompt_tokens_details, which FakeReply does not declare.
    const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, prompt_tokens_details: { cached_tokens: cached } };
    return { ...reply, usage };
  });

  return {
    url: fake.url,
    stats: () => ({ ...stats, requests: [...stats.requests] }),
    release() {
      holding = false;
      release();
    },
    reset() {
      stats = emptyStats();
      cache.clear();
    },
    close: fake.close,
  };
}

// ---- the policy ----------------------------------------------------------------------------------

/** One tool call of an earlier reply, with the result the engine sent back (undefined: none yet). */
interface PastCall {
  name: string;
  args: Record<string, unknown>;
  result: string | undefined;
}

function pastCalls(messages: Record<string, unknown>[]): PastCall[] {
  const results = new Map<string, string>();
  for (const m of messages) if (m.role === 'tool') results.set(String(m.tool_call_id), typeof m.content === 'string' ? m.content : JSON.stringify(m.content));
  const calls: PastCall[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant' || !Array.isArray(m.tool_calls)) continue;
    for (const c of m.tool_calls as { id: string; function: { name: string; arguments: string } }[]) {
      let args: Record<string, unknown> = {};
      try {
        args = JSON.parse(c.function.arguments) as Record<string, unknown>;
      } catch {
        // a malformed call of its own is no use to the policy
      }
      calls.push({ name: c.function.name, args, result: results.get(c.id) });
    }
  }
  return calls;
}

function textOf(m: Record<string, unknown>): string {
  return typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '');
}

/** The companies a text names, in the fixture's order. */
function companiesIn(text: string): ResearchCompany[] {
  return RESEARCH_COMPANIES.filter((c) => text.includes(c.name));
}

/** The company a sub-researcher's objective (its one user message, else its system message) names. */
function subjectOf(messages: Record<string, unknown>[]): ResearchCompany | undefined {
  const users = messages.filter((m) => m.role === 'user').map(textOf);
  return companiesIn(users.join('\n'))[0] ?? companiesIn(messages.filter((m) => m.role === 'system').map(textOf).join('\n'))[0];
}

function decide(body: FakeRequestBody, tools: Set<string>, output: string): FakeReply {
  const messages = body.messages ?? [];
  const calls = pastCalls(messages);
  const users = messages.filter((m) => m.role === 'user').map(textOf);
  if (!tools.has('update_spec')) {
    const company = subjectOf(messages);
    if (!company) return { text: 'The objective names no company I can research.' };
    return research([company], calls, output, tools) ?? { text: summary([company], calls) };
  }
  const companies = companiesIn(users[0] ?? '');
  if (tools.has('research')) {
    if (!calls.some((c) => c.name === 'research')) return { toolCalls: delegate(companies, body, output) };
    return { text: `Delegated ${companies.length} companies to sub-researchers; their rows are in ${output}.` };
  }
  return research(companies, calls, output, tools) ?? { text: summary(companies, calls) };
}

/** One `research` call per `maxItems` tasks (all of them in one call when the tool allows it). */
function delegate(companies: ResearchCompany[], body: FakeRequestBody, output: string): FakeToolCall[] {
  const tool = (body.tools ?? []).find((t) => t.function.name === 'research');
  const params = tool?.function.parameters as { properties?: { tasks?: { maxItems?: number } } } | undefined;
  const perCall = Math.max(1, params?.properties?.tasks?.maxItems ?? companies.length);
  const tasks = companies.map((c) => ({
    objective: `Find the headquarters city, founding year, employee count and chief executive of ${c.name}, and write one row for it.`,
    output,
    context: `Company: ${c.name}. Cite each fact with a quote copied from the page that states it.`,
  }));
  const out: FakeToolCall[] = [];
  for (let i = 0; i < tasks.length; i += perCall) out.push({ name: 'research', arguments: { tasks: tasks.slice(i, i + perCall) } });
  return out;
}

function summary(companies: ResearchCompany[], calls: PastCall[]): string {
  const written = calls.filter((c) => c.name === 'write_rows').map((c) => c.result ?? '').filter((r) => r.startsWith('Wrote'));
  return `Researched ${companies.map((c) => c.name).join(', ')}: ${written.length} write_rows calls succeeded.`;
}

const profileQuery = (c: ResearchCompany) => `${c.name} company profile headquarters employees`;
const leadershipQuery = (c: ResearchCompany) => `${c.name} chief executive leadership`;

/**
 * The next step of researching `companies` one after the other, or undefined when every one has
 * had its row written: search, fetch three results at once, search for the leadership, fetch two
 * results at once, write the row.
 */
function research(companies: ResearchCompany[], calls: PastCall[], output: string, tools: Set<string>): FakeReply | undefined {
  const fetchName = tools.has('fetch_url') ? 'fetch_url' : undefined;
  // Companies are taken in order: one the conversation shows work on means those before it are
  // done, even when a compaction has dropped their calls.
  const latest = Math.max(-1, ...calls.map((k) => companies.findIndex((c) => concerns(k, c))));
  for (const [i, c] of companies.entries()) {
    if (i < latest || calls.some((k) => k.name === 'write_rows' && concerns(k, c))) continue;
    const fetched = new Set(calls.filter((k) => k.name === 'fetch_url').map((k) => String(k.args.url)));
    const steps: [string, number][] = [[profileQuery(c), 3], [leadershipQuery(c), 2]];
    for (const [query, pages] of steps) {
      const search = calls.find((k) => k.name === 'web_search' && k.args.query === query);
      if (!search) return { text: `Searching for ${c.name}.`, toolCalls: [{ name: 'web_search', arguments: { query } }] };
      const urls = resultUrls(search.result ?? '', c).slice(0, pages);
      if (fetchName && urls.length > 0 && !urls.every((u) => fetched.has(u))) {
        return { toolCalls: urls.filter((u) => !fetched.has(u)).map((url) => ({ name: fetchName, arguments: { url } })) };
      }
    }
    return { toolCalls: [{ name: 'write_rows', arguments: rowFor(c, calls, output) }] };
  }
  return undefined;
}

/** Whether a call was made for company `c`: its search, a fetch of one of its pages, or its row. */
function concerns(call: PastCall, c: ResearchCompany): boolean {
  if (call.name === 'web_search') return String(call.args.query).startsWith(c.name);
  if (call.name === 'fetch_url') return String(call.args.url).includes(`/${c.slug}/`);
  if (call.name === 'write_rows') return (call.args.rows as { company?: string }[] | undefined)?.some((r) => r.company === c.name) ?? false;
  return false;
}

/** The URLs of a web_search result whose title names the company, in rank order. */
function resultUrls(result: string, c: ResearchCompany): string[] {
  const lines = result.split('\n');
  const urls: string[] = [];
  lines.forEach((line, i) => {
    const title = /^\d+\. (.*)$/.exec(line.trim());
    const url = lines[i + 1]?.trim();
    if (title && title[1]!.includes(c.name) && url && /^https?:\/\//.test(url)) urls.push(url);
  });
  return urls;
}

const FACTS: { column: 'hq_city' | 'founded' | 'employees' | 'ceo'; pattern: (name: string) => RegExp; value: (m: RegExpExecArray) => string | number }[] = [
  { column: 'hq_city', pattern: (n) => new RegExp(`${n} is headquartered in ([^,.\\n]+)[^.\\n]*\\.`), value: (m) => m[1]! },
  { column: 'founded', pattern: (n) => new RegExp(`${n} was founded in (\\d{4})[^.\\n]*\\.`), value: (m) => Number(m[1]) },
  { column: 'employees', pattern: (n) => new RegExp(`[^.\\n]*${n} employed ([\\d,]+) people[^.\\n]*\\.`), value: (m) => Number(m[1]!.replace(/,/g, '')) },
  { column: 'ceo', pattern: (n) => new RegExp(`The chief executive officer of ${n} is ([A-Z][a-z]+ [A-Z][a-z]+)[^.\\n]*\\.`), value: (m) => m[1]! },
];

/**
 * The row for `c` from the page texts this conversation holds: each fact with the sentence that
 * states it as the quote, from the page it was read on. A fact no page text here states is null.
 */
function rowFor(c: ResearchCompany, calls: PastCall[], output: string): Record<string, unknown> {
  const row: Record<string, unknown> = { company: c.name, hq_city: null, founded: null, employees: null, ceo: null };
  const sources: { url: string; title?: string; quote: string; fields: string[] }[] = [];
  const pages = calls.filter((k) => (k.name === 'fetch_url' || k.name === 'read_source') && k.result !== undefined && !k.result.startsWith('Error'));
  const name = c.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  for (const fact of FACTS) {
    for (const page of pages) {
      const m = fact.pattern(name).exec(page.result!);
      if (!m) continue;
      const url = /^URL: (\S+)$/m.exec(page.result!)?.[1] ?? String(page.args.url);
      const title = /^Title: (.*)$/m.exec(page.result!)?.[1];
      row[fact.column] = fact.value(m);
      sources.push({ url, ...(title ? { title } : {}), quote: m[0].trim(), fields: [fact.column] });
      break;
    }
  }
  return { output, rows: [row], sources };
}
