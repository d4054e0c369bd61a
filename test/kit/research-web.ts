/**
 * A small web for a research task of eight subtopics, on loopback: eight fictional companies,
 * each with five pages (profile, annual report, press, leadership, board) of realistic length,
 * and a SearXNG-compatible search (`GET /search?q=…&format=json`, as src/agent/web/search.ts
 * reads it) that ranks those pages for a query. Each fact a table needs is stated in exactly one
 * sentence of one page, so a row can quote it; the rest of a page is filler that states none of
 * them. Pages and searches answer after a delay drawn from `latencyMs` (times `scale`), the same
 * for the same request, so runs compare. Quarry must run with QUARRY_FETCH_ALLOW_PRIVATE=1 to
 * read the pages.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startLoopbackServer } from './loopback-server.js';

export interface ResearchCompany {
  name: string;
  slug: string;
  hq_city: string;
  country: string;
  founded: number;
  employees: number;
  ceo: string;
}

export const RESEARCH_COMPANIES: readonly ResearchCompany[] = [
  { name: 'Arvella Robotics', slug: 'arvella', hq_city: 'Tampere', country: 'Finland', founded: 1998, employees: 2140, ceo: 'Marta Kivinen' },
  { name: 'Brenholt Cement', slug: 'brenholt', hq_city: 'Aalborg', country: 'Denmark', founded: 1911, employees: 5310, ceo: 'Jonas Brenholt' },
  { name: 'Caldera Lithium', slug: 'caldera', hq_city: 'Porto', country: 'Portugal', founded: 2016, employees: 870, ceo: 'Ines Carvalho' },
  { name: 'Dunmore Glassworks', slug: 'dunmore', hq_city: 'Sunderland', country: 'United Kingdom', founded: 1874, employees: 1620, ceo: 'Patrick Dunne' },
  { name: 'Elsterwerk Steel', slug: 'elsterwerk', hq_city: 'Leipzig', country: 'Germany', founded: 1952, employees: 9480, ceo: 'Sabine Vogt' },
  { name: 'Fiorano Ceramics', slug: 'fiorano', hq_city: 'Modena', country: 'Italy', founded: 1963, employees: 3075, ceo: 'Luca Ferraris' },
  { name: 'Gdansk Hydrogen Works', slug: 'gdansk-hydrogen', hq_city: 'Gdansk', country: 'Poland', founded: 2019, employees: 415, ceo: 'Agnieszka Nowak' },
  { name: 'Halvorsen Paper', slug: 'halvorsen', hq_city: 'Drammen', country: 'Norway', founded: 1889, employees: 2760, ceo: 'Erik Halvorsen' },
];

/** The pages of each company; `keywords` is what the search matches besides the title. */
const PAGES = [
  { page: 'profile', title: 'company profile', keywords: 'company profile overview headquarters history founded' },
  { page: 'annual-report', title: 'annual report', keywords: 'annual report company profile headquarters employees results workforce' },
  { page: 'press', title: 'press releases', keywords: 'press news company profile announcement' },
  { page: 'leadership', title: 'leadership team', keywords: 'leadership chief executive management team' },
  { page: 'board', title: 'board of directors', keywords: 'board directors chief executive governance' },
] as const;

/** The sentence that states each fact, as it stands on its page. */
/** The output the research spec declares, which the researcher model writes to. */
export const RESEARCH_OUTPUT = 'companies';

/**
 * The research task of the bench and the research process tests: one row per company, every
 * fact cited; `limits` are the spec's (the bench's long turn, the tests' sub-researcher count).
 */
export function researchSpec(name: string, companies: readonly ResearchCompany[], limits: Record<string, number>) {
  return {
    name,
    prompt:
      `For each of these companies, find the city of its headquarters, the year it was founded, its number of employees and its chief executive: ${companies.map((c) => c.name).join('; ')}. ` +
      'Write one row per company and cite every fact with a quote from the page that states it.',
    outputs: [{
      id: RESEARCH_OUTPUT,
      kind: 'table',
      columns: [
        { name: 'company', type: 'string', required: true },
        { name: 'hq_city', type: 'string' },
        { name: 'founded', type: 'integer' },
        { name: 'employees', type: 'integer' },
        { name: 'ceo', type: 'string' },
      ],
    }],
    tools: ['web_search', 'fetch_url'],
    limits,
  };
}

export function factSentences(c: ResearchCompany): { hq_city: string; founded: string; employees: string; ceo: string } {
  return {
    hq_city: `${c.name} is headquartered in ${c.hq_city}, ${c.country}.`,
    founded: `${c.name} was founded in ${c.founded} as a family business.`,
    employees: `At the end of the year ${c.name} employed ${c.employees.toLocaleString('en-US')} people across its sites.`,
    ceo: `The chief executive officer of ${c.name} is ${c.ceo}, who took the role three years ago.`,
  };
}

/** Characters of filler around the facts on each page: pages of a real site are long. */
const FILLER_CHARS = 6500;

const FILLER_WORDS = (
  'the plant line output quarter market customers supplier energy logistics shipment contract process quality safety audit ' +
  'investment capacity kiln furnace warehouse rail port demand pricing margin maintenance shift training apprentices region ' +
  'community emissions water recycling certification project expansion upgrade order backlog partner research pilot trial'
).split(' ');

/** Deterministic filler paragraphs: sentences that state none of the facts a row needs. */
function filler(seed: string, chars: number): string[] {
  let state = createHash('sha256').update(seed).digest().readUInt32LE(0) || 1;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  const paragraphs: string[] = [];
  let total = 0;
  while (total < chars) {
    const sentences: string[] = [];
    for (let s = 0; s < 5; s++) {
      const words = Array.from({ length: 10 + Math.floor(next() * 12) }, () => FILLER_WORDS[Math.floor(next() * FILLER_WORDS.length)]!);
      const text = words.join(' ');
      sentences.push(`${text[0]!.toUpperCase()}${text.slice(1)}.`);
    }
    const paragraph = sentences.join(' ');
    paragraphs.push(paragraph);
    total += paragraph.length;
  }
  return paragraphs;
}

function pageHtml(c: ResearchCompany, page: (typeof PAGES)[number]['page']): string {
  const facts = factSentences(c);
  const stated: Record<string, string[]> = {
    profile: [`${facts.hq_city} ${facts.founded}`],
    'annual-report': [facts.employees],
    press: [],
    leadership: [facts.ceo],
    board: [],
  };
  const title = `${c.name} ${PAGES.find((p) => p.page === page)!.title}`;
  const paragraphs = filler(`${c.slug}/${page}`, FILLER_CHARS);
  // The facts sit in the middle of the page, as they do on real sites.
  paragraphs.splice(Math.floor(paragraphs.length / 2), 0, ...stated[page]!);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body>
<header><nav><a href="/${c.slug}/profile.html">Profile</a> <a href="/${c.slug}/press.html">Press</a></nav></header>
<main><article><h1>${title}</h1>
${paragraphs.map((p) => `<p>${p}</p>`).join('\n')}
</article></main><footer><p>© ${c.name}</p></footer></body></html>`;
}

export interface ResearchWeb {
  /** `http://127.0.0.1:<port>`: pages at `/<slug>/<page>.html`, the search at `/search`. */
  readonly url: string;
  readonly pageRequests: () => number;
  /** Requests per page path (`/<slug>/<page>.html`). */
  readonly pageRequestsByPath: () => Map<string, number>;
  readonly searchRequests: () => number;
  close(): Promise<void>;
}

export interface ResearchWebOptions {
  /** Delay of each answer, drawn per request between these (ms); default [300, 1000]. */
  latencyMs?: [number, number];
  /** Multiplies every delay (0 answers at once); default 1. */
  scale?: number;
}

/** A delay in [min, max] that depends only on `key`. */
export function delayFor(key: string, [min, max]: [number, number], scale: number): number {
  const unit = createHash('sha256').update(key).digest().readUInt32LE(0) / 2 ** 32;
  return Math.round((min + unit * (max - min)) * scale);
}

export async function startResearchWeb(opts: ResearchWebOptions = {}): Promise<ResearchWeb> {
  const latency = opts.latencyMs ?? [300, 1000];
  const scale = opts.scale ?? 1;
  const pages = new Map<string, { title: string; html: string; keywords: string; company: ResearchCompany }>();
  for (const c of RESEARCH_COMPANIES) {
    for (const p of PAGES) pages.set(`/${c.slug}/${p.page}.html`, { title: `${c.name} ${p.title}`, html: pageHtml(c, p.page), keywords: p.keywords, company: c });
  }
  let pageRequests = 0;
  const byPath = new Map<string, number>();
  let searchRequests = 0;
  let base = '';

  const server = await startLoopbackServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://research-web');
    req.resume();
    const answer = (status: number, type: string, body: string) => {
      const wait = delayFor(`${url.pathname}?${url.search}`, latency, scale);
      void sleep(wait).then(() => {
        res.writeHead(status, { 'content-type': type });
        res.end(body);
      });
    };
    if (url.pathname === '/search') {
      searchRequests++;
      if (url.searchParams.get('format') !== 'json') return answer(403, 'text/html', '<html><body>Forbidden</body></html>');
      const q = url.searchParams.get('q') ?? '';
      const results = rank(q, pages).slice(0, 8).map(([path, p]) => ({
        url: `${base}${path}`, title: p.title, content: `${p.title}: ${p.keywords}.`, engine: 'bench', engines: ['bench'], score: 1,
      }));
      return answer(200, 'application/json', JSON.stringify({ query: q, number_of_results: results.length, results, answers: [], suggestions: [] }));
    }
    const page = pages.get(url.pathname);
    if (!page) return answer(404, 'text/plain', 'not found');
    pageRequests++;
    byPath.set(url.pathname, (byPath.get(url.pathname) ?? 0) + 1);
    answer(200, 'text/html; charset=utf-8', page.html);
  });
  base = server.url;
  return { url: server.url, pageRequests: () => pageRequests, pageRequestsByPath: () => new Map(byPath), searchRequests: () => searchRequests, close: server.close };
}

/** Pages by how well they match the query: the company named first, then the words of its title and keywords. */
function rank(query: string, pages: Map<string, { title: string; keywords: string; company: ResearchCompany }>): [string, { title: string; keywords: string; company: ResearchCompany }][] {
  const words = query.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
  const score = (p: { title: string; keywords: string; company: ResearchCompany }) => {
    const name = p.company.name.toLowerCase().split(' ');
    const text = new Set(`${p.title} ${p.keywords}`.toLowerCase().split(/[^a-z0-9]+/));
    return words.reduce((n, w) => n + (name.includes(w) ? 10 : 0) + (text.has(w) && !name.includes(w) ? 1 : 0), 0);
  };
  return [...pages.entries()].map((e) => [e, score(e[1])] as const).filter(([, s]) => s > 0).sort((a, b) => b[1] - a[1]).map(([e]) => e);
}
