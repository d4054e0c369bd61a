/**
 * A research turn worth looking at, for the console's browser test and its screenshots
 * (scripts/console-screenshots.ts): the fake model plans a table, reads a page that a loopback
 * server serves, writes one row whose quote that page holds (verified) and one citing a page it
 * never read (not verified), and says so in streamed text. Quarry must run with
 * QUARRY_FETCH_ALLOW_PRIVATE=1 to read the loopback page.
 */
import type { FakeReply } from '../fake-model/fake-openai-server.js';
import { startLoopbackServer, type LoopbackServer } from '../fake-model/loopback-server.js';

export const PLANT_PAGE_TITLE = 'Northvolt Ett, Skellefteå';
export const VERIFIED_QUOTE = '16 GWh of annual capacity';
export const UNREAD_URL = 'https://example.com/acc-billy-berclau';
/** The last words the model streams in the research turn. */
export const CLOSING_TEXT = 'Found two plants: Northvolt Ett, checked on its own page, and ACC, whose page I have not read yet.';

const PLANT_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${PLANT_PAGE_TITLE}</title></head><body>
<main><article><h1>${PLANT_PAGE_TITLE}</h1>
<p>Northvolt Ett in Skellefteå, Sweden, makes lithium-ion cells. The plant has ${VERIFIED_QUOTE} and is being expanded.</p>
</article></main></body></html>`;

/** Serves the plant's page at `/northvolt-ett`. */
export function startPlantPages(): Promise<LoopbackServer> {
  return startLoopbackServer((req, res) => {
    if (req.url === '/northvolt-ett') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(PLANT_PAGE);
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
