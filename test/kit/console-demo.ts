/**
 * A research turn and a task group worth looking at, for the console's browser test and its
 * screenshots (scripts/console-screenshots.ts). In the turn, the fake model plans a table, reads
 * a page that a loopback server serves, writes one row whose quote that page holds (verified)
 * and one citing a page it never read (not verified), and says so in streamed text. In the
 * group, each run finds its company's plant, most by reading the company's page. Quarry must run
 * with QUARRY_FETCH_ALLOW_PRIVATE=1 to read the loopback pages.
 */
import { parseRunMessage } from '../../src/domain/run-message.js';
import type { FakeReply, FakeRequestBody } from './fake-openai-server.js';
import { startLoopbackServer, type LoopbackServer } from './loopback-server.js';

export const PLANT_PAGE_TITLE = 'Northvolt Ett, Skellefteå';
export const VERIFIED_QUOTE = '16 GWh of annual capacity';
export const UNREAD_URL = 'https://example.com/acc-billy-berclau';
/** The last words the model streams in the research turn. */
export const CLOSING_TEXT = 'Found two plants: Northvolt Ett, checked on its own page, and ACC, whose page I have not read yet.';

const PLANT_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${PLANT_PAGE_TITLE}</title></head><body>
<main><article><h1>${PLANT_PAGE_TITLE}</h1>
<p>Northvolt Ett in Skellefteå, Sweden, makes lithium-ion cells. The plant has ${VERIFIED_QUOTE} and is being expanded.</p>
</article></main></body></html>`;

/** Serves the plant's page at `/northvolt-ett`, and the page of each company of the group at `/plants/<input index>`. */
export function startPlantPages(): Promise<LoopbackServer> {
  return startLoopbackServer((req, res) => {
    const company = /^\/plants\/(\d+)$/.exec(req.url ?? '');
    const plant = company ? GROUP_PLANTS[Number(company[1])] : undefined;
    if (req.url === '/northvolt-ett' || plant) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(plant ? plantPage(plant) : PLANT_PAGE);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
}

/** The model's replies for one turn from a prompt: plan, read, write, report (the text streamed slowly enough to watch). */
export function researchTurn(pagesUrl: string): FakeReply[] {
  const page = `${pagesUrl}/northvolt-ett`;
  return [
    {
      text: 'I will keep a table of plants, then read the operators\u2019 pages.',
      toolCalls: [{
        name: 'update_spec',
        arguments: {
          name: 'EU battery plants',
          outputs: [{
            id: 'plants', kind: 'table', description: 'Li-ion cell plants in the EU',
            columns: [{ name: 'company', type: 'string', required: true }, { name: 'country', type: 'string' }, { name: 'capacity_gwh', type: 'number' }],
          }],
        },
      }],
    },
    { toolCalls: [{ name: 'fetch_url', arguments: { url: page } }] },
    {
      toolCalls: [{
        name: 'write_rows',
        arguments: {
          output: 'plants',
          rows: [
            { company: 'Northvolt', country: 'SE', capacity_gwh: 16, _sources: [{ url: page, title: PLANT_PAGE_TITLE, quote: VERIFIED_QUOTE, fields: ['capacity_gwh'] }, { url: page, title: PLANT_PAGE_TITLE, fields: ['company', 'country'] }] },
            { company: 'ACC', country: 'FR', capacity_gwh: 13.4, _sources: [{ url: UNREAD_URL, title: 'ACC Billy-Berclau', quote: '13.4 GWh in its first block' }] },
          ],
          basis: [{ capacity_gwh: { confidence: 'high', reasoning: 'Stated on the operator\u2019s own page.' } }, null],
        },
      }],
    },
    { text: CLOSING_TEXT, chunkDelayMs: 40 },
  ];
}

// ---- a task group ---------------------------------------------------------------------------

export interface Plant {
  company: string;
  plant: string;
  country: string;
  capacity_gwh: number;
}

/** The group's inputs (their companies) and what each run finds. */
export const GROUP_PLANTS: Plant[] = [
  { company: 'Northvolt', plant: 'Northvolt Ett', country: 'SE', capacity_gwh: 16 },
  { company: 'ACC', plant: 'Billy-Berclau', country: 'FR', capacity_gwh: 13.4 },
  { company: 'Verkor', plant: 'Dunkirk', country: 'FR', capacity_gwh: 16 },
  { company: 'CATL', plant: 'Arnstadt', country: 'DE', capacity_gwh: 14 },
  { company: 'Samsung SDI', plant: 'Göd', country: 'HU', capacity_gwh: 40 },
  { company: 'LG Energy Solution', plant: 'Wrocław', country: 'PL', capacity_gwh: 86 },
  { company: 'SK On', plant: 'Iváncsa', country: 'HU', capacity_gwh: 30 },
  { company: 'Envision AESC', plant: 'Sunderland', country: 'GB', capacity_gwh: 12 },
  { company: 'Freyr', plant: 'Mo i Rana', country: 'NO', capacity_gwh: 29 },
  { company: 'PowerCo', plant: 'Salzgitter', country: 'DE', capacity_gwh: 40 },
  { company: 'InoBat', plant: 'Voderady', country: 'SK', capacity_gwh: 4 },
  { company: 'Basquevolt', plant: 'Vitoria-Gasteiz', country: 'ES', capacity_gwh: 10 },
];

/** The group's spec: one input column, one table. */
export const GROUP_TASK = {
  prompt: 'Find the company\'s battery cell plant in Europe, its country and its capacity in GWh.',
  input_columns: [{ name: 'company', type: 'string', required: true }],
  outputs: [{
    id: 'plants', kind: 'table',
    columns: [{ name: 'plant', type: 'string' }, { name: 'country', type: 'string' }, { name: 'capacity_gwh', type: 'number' }],
  }],
};

const capacityQuote = (p: Plant) => `${p.capacity_gwh} GWh of annual capacity`;

function plantPage(p: Plant): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${p.company}: ${p.plant}</title></head><body>
<main><article><h1>${p.plant}</h1><p>${p.company} makes lithium-ion cells at ${p.plant} (${p.country}), with ${capacityQuote(p)}.</p></article></main></body></html>`;
}

/** Whether a run reads its company's page before citing it: two in three do; the others cite a page they never read. */
export const runReadsPage = (index: number) => index % 3 !== 2;

/**
 * The fake model's answers: a group's run reads its company's page (see runReadsPage), writes
 * the plant citing it (the capacity by its quote), and says it is done; any other turn just
 * answers. `hold`, when given, holds each run's first answer until it resolves, to watch a
 * group while its runs wait.
 */
export function groupResponder(pagesUrl: string, hold?: (index: number) => Promise<void>): (body: FakeRequestBody) => Promise<FakeReply> {
  return async (body) => {
    const users = (body.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
    const run = users.map(parseRunMessage).find((r) => r !== null);
    if (!run) return { text: 'Noted.' };
    const p = GROUP_PLANTS[run.index % GROUP_PLANTS.length]!;
    const reads = runReadsPage(run.index);
    const step = (body.messages ?? []).filter((m) => m.role === 'assistant').length;
    if (step === 0) await hold?.(run.index);
    const page = `${pagesUrl}/plants/${run.index}`;
    if (reads && step === 0) return { toolCalls: [{ name: 'fetch_url', arguments: { url: page } }] };
    if (step === (reads ? 1 : 0)) {
      const sources = reads
        ? [{ url: page, title: `${p.company}: ${p.plant}`, quote: capacityQuote(p), fields: ['capacity_gwh'] }, { url: page, title: `${p.company}: ${p.plant}`, fields: ['plant', 'country'] }]
        : [{ url: `https://example.com/plants/${encodeURIComponent(p.company)}`, title: `${p.company} plants` }];
      return { toolCalls: [{ name: 'write_rows', arguments: { output: run.outputId, rows: [{ plant: p.plant, country: p.country, capacity_gwh: p.capacity_gwh, _sources: sources }] } }] };
    }
    return { text: `Found ${p.company}'s plant: ${p.plant}.` };
  };
}
