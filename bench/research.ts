/**
 * The research engine's benchmark (`npm run bench:research`; decisions §16): one research task of
 * eight subtopics, run twice on `quarry serve` from the build, each on a fresh store:
 *
 *   A  the engine as built (tool calls of one reply at once, the `research` tool where it exists);
 *   B  the same engine made sequential: QUARRY_TOOL_CONCURRENCY=1 and `limits.max_subagents: 0`
 *      (no research tool).
 *
 * Everything talks over 127.0.0.1: a web of 40 pages on eight fictional companies with a
 * SearXNG-compatible search (test/kit/research-web.ts, 0.3–1 s an answer), and a scripted
 * researcher model behind the OpenAI wire protocol (test/kit/researcher-model.ts, 1–2 s a reply,
 * cached tokens by OpenAI's prefix rule). The researcher searches, fetches several pages in one
 * reply and writes one row per company quoting the sentences it read; offered `research`, the
 * lead delegates the eight companies in one call. Per run: wall time, model calls, input, cached
 * input and output tokens (from Quarry's `done` event, else its admin usage route, else the fake
 * model's own count; the report says which), the largest request, verified and correct rows, and
 * the ratios A/B next to the engine's goals.
 *
 * Results: a table on stdout and .bench/research.json. Environment knobs (all optional):
 *   BENCH_LATENCY_SCALE=1               multiplies every model, page and search delay (0.1: a quick run)
 *   BENCH_RESEARCH_CONTEXT_TOKENS=32000  QUARRY_MODEL_CONTEXT_TOKENS of both runs (the context budget)
 *   BENCH_RESEARCH_ONLY=A,B             run one of the two
 */
import { RESEARCH_COMPANIES, RESEARCH_OUTPUT, researchSpec, startResearchWeb, type ResearchWeb } from '../test/kit/research-web.js';
import { startResearcherModel, type ResearcherModel, type ResearcherStats } from '../test/kit/researcher-model.js';
import { fetchJson, httpClient, waitIdle } from '../test/kit/http.js';
import {
  expectOk, fetchEvents, freshDataDir, loadAverage, log, noteLoad, reportHeader, round, startQuarry, startWatchdog, table, writeReport,
} from './lib.js';

const SCALE = Number(process.env.BENCH_LATENCY_SCALE ?? 1);
const CONTEXT_TOKENS = Number(process.env.BENCH_RESEARCH_CONTEXT_TOKENS ?? 32_000);
const ONLY = new Set((process.env.BENCH_RESEARCH_ONLY ?? 'A,B').split(',').map((s) => s.trim()));
const ADMIN_KEY = 'bench-research-admin-key-0123456789';
const OUTPUT = RESEARCH_OUTPUT;

/** Engine goals (decisions §16) printed next to the figures. */
const GOALS = { wallRatio: 0.3, cachedShare: 0.7 };

const SPEC = researchSpec('Eight companies (benchmark)', RESEARCH_COMPANIES, { max_steps: 400, max_turn_seconds: 1800, max_credits_per_turn: 1e6 });

interface RunResult {
  label: 'A' | 'B';
  description: string;
  env: Record<string, string>;
  notes: string[];
  outcome: string;
  wall_s: number;
  model_calls: number;
  sub_researcher_calls: number;
  research_offered: boolean;
  research_calls: number;
  multi_call_replies: number;
  max_model_requests_in_flight: number;
  tokens_in: number;
  tokens_in_cached: number;
  tokens_out: number;
  /** Where the token counts come from. */
  tokens_from: { tokens_in: string; tokens_in_cached: string; tokens_out: string };
  cached_share: number;
  largest_request_chars: number;
  largest_request_tokens: number;
  rows: number;
  verified_rows: number;
  correct_rows: number;
  page_fetches: number;
  searches: number;
  fake_model: ResearcherStats;
}

/** The first number among `candidates` that is one, with the name of where it came from. */
function firstNumber(candidates: [string, unknown][]): [number, string] {
  for (const [from, value] of candidates) if (typeof value === 'number') return [value, from];
  return [NaN, 'none'];
}

async function runOnce(label: 'A' | 'B', web: ResearchWeb, model: ResearcherModel): Promise<RunResult> {
  const sequential = label === 'B';
  const env: Record<string, string> = {
    QUARRY_ADMIN_KEY: ADMIN_KEY,
    QUARRY_SEARCH_PROVIDER: 'searxng',
    QUARRY_SEARCH_URL: web.url,
    QUARRY_FETCH_ALLOW_PRIVATE: '1',
    QUARRY_MODEL_CONTEXT_TOKENS: String(CONTEXT_TOKENS),
    ...(sequential ? { QUARRY_TOOL_CONCURRENCY: '1' } : {}),
  };
  const notes: string[] = [];
  model.reset();
  const pagesBefore = web.pageRequests();
  const searchesBefore = web.searchRequests();
  const q = await startQuarry({ dataDir: freshDataDir(`research-${label}`), modelUrl: model.url, label: `quarry-research-${label}`, env });
  try {
    const account = await expectOk('POST', `${q.url}/admin/accounts`, { key: ADMIN_KEY, body: { name: `bench research ${label}`, credits: 1e6 } });
    const accountId = account.body.account_id as string;
    const key = account.body.api_key as string;

    let spec: Record<string, unknown> = sequential ? { ...SPEC, limits: { ...SPEC.limits, max_subagents: 0 } } : SPEC;
    const started = Date.now();
    let created = await fetchJson('POST', `${q.url}/task/start`, { key, body: { task: spec } });
    if (sequential && created.status >= 400 && created.text.includes('max_subagents')) {
      notes.push(`limits.max_subagents refused by this build (${created.status}); run without it (no research tool exists to remove)`);
      spec = SPEC;
      created = await fetchJson('POST', `${q.url}/task/start`, { key, body: { task: spec } });
    }
    if (created.status !== 200) throw new Error(`${label}: POST /task/start answered ${created.status}: ${created.text.slice(0, 500)}`);
    const taskId = created.body.task_id as string;
    await waitIdle(httpClient(q.url, key), taskId, { timeoutMs: 1_800_000 });
    const idleAt = Date.now();

    const events = await fetchEvents({ url: q.url, key }, taskId, 0);
    const done = events.filter((e) => e.type === 'done').at(-1) as (Record<string, unknown> & { at: string }) | undefined;
    const endedAt = done ? Date.parse(done.at) : idleAt;
    const usage = await expectOk('GET', `${q.url}/admin/accounts/${encodeURIComponent(accountId)}/usage`, { key: ADMIN_KEY });
    const turn = (usage.body.turns as Record<string, unknown>[]).find((t) => t.task_id === taskId) ?? {};
    const stats = model.stats();

    const [tokensIn, inFrom] = firstNumber([['done event', done?.tokens_in], ['admin usage', turn.tokens_in], ['fake model', stats.input_tokens]]);
    const [cached, cachedFrom] = firstNumber([['done event', done?.tokens_in_cached], ['admin usage', turn.tokens_in_cached], ['fake model', stats.cached_tokens]]);
    const [tokensOut, outFrom] = firstNumber([['done event', done?.tokens_out], ['admin usage', turn.tokens_out], ['fake model', stats.output_tokens]]);
    // A cached share over two sources would mean nothing: when Quarry does not report cached
    // tokens, both figures of the share are the fake model's.
    const shareIn = cachedFrom === 'fake model' ? stats.input_tokens : tokensIn;

    const outputs = await expectOk('GET', `${q.url}/task/${taskId}/outputs`, { key });
    const out = (outputs.body.outputs as { id: string; row_count: number; verified_rows: number }[]).find((o) => o.id === OUTPUT);
    const rows = await expectOk('GET', `${q.url}/task/${taskId}/output?output=${OUTPUT}&limit=1000`, { key });
    const correct = (rows.body.rows as Record<string, unknown>[]).filter((r) => RESEARCH_COMPANIES.some((c) =>
      c.name === r.company && c.hq_city === r.hq_city && c.founded === r.founded && c.employees === r.employees && c.ceo === r.ceo)).length;

    if (!stats.research_offered && !sequential) notes.push('research tool not offered: A ran without sub-researchers');
    return {
      label,
      description: sequential ? 'sequential: QUARRY_TOOL_CONCURRENCY=1, limits.max_subagents: 0' : 'engine as built',
      env,
      notes,
      outcome: typeof done?.outcome === 'string' ? done.outcome : 'unknown',
      wall_s: round((endedAt - started) / 1000, 2),
      model_calls: stats.calls,
      sub_researcher_calls: stats.sub_calls,
      research_offered: stats.research_offered,
      research_calls: stats.research_calls,
      multi_call_replies: stats.multi_call_replies,
      max_model_requests_in_flight: stats.max_in_flight,
      tokens_in: tokensIn,
      tokens_in_cached: cached,
      tokens_out: tokensOut,
      tokens_from: { tokens_in: inFrom, tokens_in_cached: cachedFrom, tokens_out: outFrom },
      cached_share: round(cached / shareIn, 3),
      largest_request_chars: stats.largest_request_chars,
      largest_request_tokens: stats.largest_request_tokens,
      rows: out?.row_count ?? 0,
      verified_rows: out?.verified_rows ?? 0,
      correct_rows: correct,
      page_fetches: web.pageRequests() - pagesBefore,
      searches: web.searchRequests() - searchesBefore,
      fake_model: stats,
    };
  } finally {
    await q.child.stop('SIGTERM').catch(() => undefined);
  }
}

const pct = (x: number) => `${round(x * 100)}%`;
const ratio = (a: number, b: number) => (b > 0 ? `${round(a / b, 2)}×` : '');
const met = (ok: boolean) => (ok ? 'met' : 'NOT met');

function report(a: RunResult | undefined, b: RunResult | undefined): string {
  const cell = (r: RunResult | undefined, f: (r: RunResult) => string) => (r ? f(r) : '—');
  const both = (f: (r: RunResult) => number) => (a && b ? ratio(f(a), f(b)) : '');
  const lines: string[][] = [['measure', 'A: as built', 'B: sequential', 'A/B', 'goal']];
  lines.push(
    ['outcome', cell(a, (r) => r.outcome), cell(b, (r) => r.outcome), '', ''],
    ['wall time, s', cell(a, (r) => String(r.wall_s)), cell(b, (r) => String(r.wall_s)), both((r) => r.wall_s),
      a && b ? `A ≤ ${GOALS.wallRatio}× B: ${met(a.wall_s <= GOALS.wallRatio * b.wall_s)}` : `A ≤ ${GOALS.wallRatio}× B`],
    ['model calls (sub-researchers\')', cell(a, (r) => `${r.model_calls} (${r.sub_researcher_calls})`), cell(b, (r) => `${r.model_calls} (${r.sub_researcher_calls})`), both((r) => r.model_calls), ''],
    ['input tokens', cell(a, (r) => `${r.tokens_in} (${r.tokens_from.tokens_in})`), cell(b, (r) => `${r.tokens_in} (${r.tokens_from.tokens_in})`), both((r) => r.tokens_in), ''],
    ['cached input tokens', cell(a, (r) => `${r.tokens_in_cached} = ${pct(r.cached_share)} (${r.tokens_from.tokens_in_cached})`),
      cell(b, (r) => `${r.tokens_in_cached} = ${pct(r.cached_share)} (${r.tokens_from.tokens_in_cached})`), both((r) => r.tokens_in_cached),
      `≥ ${pct(GOALS.cachedShare)} cached: A ${cell(a, (r) => met(r.cached_share >= GOALS.cachedShare))}, B ${cell(b, (r) => met(r.cached_share >= GOALS.cachedShare))}`],
    ['output tokens', cell(a, (r) => `${r.tokens_out} (${r.tokens_from.tokens_out})`), cell(b, (r) => `${r.tokens_out} (${r.tokens_from.tokens_out})`), both((r) => r.tokens_out), ''],
    ['largest request, chars (est. tokens)', cell(a, (r) => `${r.largest_request_chars} (${r.largest_request_tokens})`), cell(b, (r) => `${r.largest_request_chars} (${r.largest_request_tokens})`),
      both((r) => r.largest_request_tokens),
      `≤ ${CONTEXT_TOKENS} tokens: A ${cell(a, (r) => met(r.largest_request_tokens <= CONTEXT_TOKENS))}, B ${cell(b, (r) => met(r.largest_request_tokens <= CONTEXT_TOKENS))}`],
    ['verified rows / rows (correct)', cell(a, (r) => `${r.verified_rows} / ${r.rows} (${r.correct_rows})`), cell(b, (r) => `${r.verified_rows} / ${r.rows} (${r.correct_rows})`), '',
      a && b ? `same, all ${RESEARCH_COMPANIES.length}: ${met(a.verified_rows === b.verified_rows && a.verified_rows === RESEARCH_COMPANIES.length)}` : 'same in A and B'],
    ['replies with several tool calls', cell(a, (r) => String(r.multi_call_replies)), cell(b, (r) => String(r.multi_call_replies)), '', ''],
    ['most model requests at once', cell(a, (r) => String(r.max_model_requests_in_flight)), cell(b, (r) => String(r.max_model_requests_in_flight)), '', ''],
    ['research tool offered (calls)', cell(a, (r) => `${r.research_offered ? 'yes' : 'no'} (${r.research_calls})`), cell(b, (r) => `${r.research_offered ? 'yes' : 'no'} (${r.research_calls})`), '', 'A: yes; B: no'],
    ['page fetches / searches', cell(a, (r) => `${r.page_fetches} / ${r.searches}`), cell(b, (r) => `${r.page_fetches} / ${r.searches}`), '', ''],
  );
  const notes = [a, b].flatMap((r) => (r ? r.notes.map((n) => `note (${r.label}): ${n}`) : []));
  return [table(lines), ...notes].join('\n');
}

async function main(): Promise<void> {
  startWatchdog('bench:research', 60 * 60_000);
  const started = new Date();
  const load = loadAverage();
  noteLoad(load);
  const web = await startResearchWeb({ scale: SCALE });
  const model = await startResearcherModel({ output: OUTPUT, scale: SCALE });
  const results: Partial<Record<'A' | 'B', RunResult>> = {};
  try {
    for (const label of ['A', 'B'] as const) {
      if (!ONLY.has(label)) continue;
      log(`run ${label}: starting`);
      const r = await runOnce(label, web, model);
      log(`run ${label}: ${r.outcome} in ${r.wall_s} s, ${r.model_calls} model calls, ${r.verified_rows}/${r.rows} verified rows`);
      results[label] = r;
    }
    process.stdout.write(`\n${report(results.A, results.B)}\n`);
    writeReport('research.json', {
      ...reportHeader(started, load),
      settings: { latency_scale: SCALE, context_tokens: CONTEXT_TOKENS, companies: RESEARCH_COMPANIES.length, goals: GOALS },
      runs: results,
      ratios: results.A && results.B ? {
        wall: round(results.A.wall_s / results.B.wall_s, 3),
        model_calls: round(results.A.model_calls / results.B.model_calls, 3),
        tokens_in: round(results.A.tokens_in / results.B.tokens_in, 3),
        tokens_in_cached: results.B.tokens_in_cached > 0 ? round(results.A.tokens_in_cached / results.B.tokens_in_cached, 3) : null,
        tokens_out: round(results.A.tokens_out / results.B.tokens_out, 3),
        largest_request: round(results.A.largest_request_tokens / results.B.largest_request_tokens, 3),
      } : null,
    });
  } finally {
    await model.close();
    await web.close();
  }
  process.exit(0);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:research failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
