import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { exportContentType, exportFileName, exportRows, type ExportFormat } from '../../src/outputs/export.js';
import { serializeRow, validateRows } from '../../src/domain/row-validation.js';
import type { OutputDecl } from '../../src/contract/index.js';

const makers: OutputDecl = {
  id: 'makers',
  kind: 'table',
  path: 'outputs/makers.csv',
  columns: [
    { name: 'company', type: 'string', required: true },
    { name: 'capacity_gwh', type: 'number', required: false },
    { name: 'active', type: 'boolean', required: false },
    { name: 'extra', type: 'json', required: false },
  ],
};
const report: OutputDecl = { id: 'summary', kind: 'report', path: 'outputs/summary.md' };
const records: OutputDecl = { id: 'facts', kind: 'records', path: 'outputs/facts.jsonl' };

/** Stored row texts for `rows`, as write_rows would store them. */
function stored(output: OutputDecl, rows: unknown[], sources?: unknown[]): string[] {
  const result = validateRows(output, rows, sources);
  if (!result.ok) assert.fail(JSON.stringify(result.errors));
  return result.rows.map((row, i) => serializeRow(i + 1, row));
}

async function* from(texts: string[]): AsyncGenerator<string> {
  yield* texts;
}

async function exported(output: OutputDecl, texts: string[], format: ExportFormat): Promise<string> {
  let file = '';
  for await (const chunk of exportRows(output, from(texts), format)) file += chunk;
  return file;
}

describe('export metadata', () => {
  it('names the content type and file name', () => {
    assert.equal(exportContentType('csv'), 'text/csv; charset=utf-8');
    assert.equal(exportContentType('jsonl'), 'application/x-ndjson');
    assert.equal(exportFileName(makers, 'csv'), 'makers.csv');
    assert.equal(exportFileName(records, 'jsonl'), 'facts.jsonl');
  });
});

describe('CSV export', () => {
  it('writes a header and one CRLF-terminated line per table row', async () => {
    const texts = stored(makers, [{ company: 'Acme', capacity_gwh: 1.5, active: true, extra: { plants: [1, 2] } }, { company: 'Beta' }], [
      { url: 'https://a.example/x' },
      { upload_id: 'upl_1' },
    ]);
    assert.equal(
      await exported(makers, texts, 'csv'),
      '_row,company,capacity_gwh,active,extra,_sources\r\n' +
        '1,Acme,1.5,true,"{""plants"":[1,2]}",https://a.example/x upl_1\r\n' +
        '2,Beta,,,,https://a.example/x upl_1\r\n',
    );
    // Sources that write_rows checked (decisions §15.1) are followed by their verdict; the rows
    // above, stored unchecked, have none.
    const checked = '{"_row":1,"company":"Acme","_sources":[{"url":"https://a.example/x","quote":"Acme","verified":true,"check":"quote_found","source_id":"src_1"},{"upload_id":"upl_1","verified":false,"check":"not_read"}]}';
    assert.equal(await exported(makers, [checked], 'csv'), '_row,company,capacity_gwh,active,extra,_sources\r\n1,Acme,,,,https://a.example/x [quote_found] upl_1 [not_read]\r\n');
  });

  it('quotes fields with commas, quotes, CR or LF and doubles the quotes', async () => {
    const texts = stored(makers, [{ company: 'Acme, Inc.' }, { company: 'The "Best"' }, { company: 'two\nlines' }, { company: 'cr\rhere' }]);
    const lines = (await exported(makers, texts, 'csv')).split('\r\n');
    assert.deepEqual(lines.slice(1), ['1,"Acme, Inc.",,,,', '2,"The ""Best""",,,,', '3,"two\nlines",,,,', '4,"cr\rhere",,,,', '']);
  });

  it('guards string cells against formula injection, not numbers', async () => {
    const texts = stored(makers, [
      { company: '=HYPERLINK("http://evil.example")' },
      { company: '+1' },
      { company: '-2', capacity_gwh: -2 },
      { company: '@SUM(A1)' },
      { company: '\tx' },
      { company: '\r=1' },
      { company: 'safe = fine' },
    ]);
    const lines = (await exported(makers, texts, 'csv')).split('\r\n');
    assert.deepEqual(lines.slice(1, -1), [
      `1,"'=HYPERLINK(""http://evil.example"")",,,,`,
      "2,'+1,,,,",
      "3,'-2,-2,,,",
      "4,'@SUM(A1),,,,",
      "5,'\tx,,,,",
      `6,"'\r=1",,,,`,
      '7,safe = fine,,,,',
    ]);
  });

  it('guards the header and _sources cells too', async () => {
    const output: OutputDecl = { ...makers, columns: [{ name: '=cmd', type: 'string', required: false }] };
    const texts = stored(output, [{ '=cmd': 'x' }], [{ upload_id: '=upl' }]);
    assert.equal(await exported(output, texts, 'csv'), "_row,'=cmd,_sources\r\n1,x,'=upl\r\n");
  });

  it('leaves cells empty for columns a stored row lacks', async () => {
    assert.equal(await exported(makers, ['{"_row":1,"company":"Old","_sources":[]}'], 'csv'), '_row,company,capacity_gwh,active,extra,_sources\r\n1,Old,,,,\r\n');
  });

  it('writes report rows as heading and markdown', async () => {
    const texts = stored(report, [{ heading: 'Intro', markdown: '# Title\n\nBody, with "quotes".' }], [{ url: 'https://a.example/' }]);
    assert.equal(
      await exported(report, texts, 'csv'),
      '_row,heading,markdown,_sources\r\n1,Intro,"# Title\n\nBody, with ""quotes"".",https://a.example/\r\n',
    );
  });

  it('writes records as JSON text', async () => {
    const texts = stored(records, [{ name: 'x', tags: ['a', 'b'] }]);
    assert.equal(await exported(records, texts, 'csv'), '_row,record,_sources\r\n1,"{""name"":""x"",""tags"":[""a"",""b""]}",\r\n');
  });

  it('writes only the header for an empty output', async () => {
    assert.equal(await exported(report, [], 'csv'), '_row,heading,markdown,_sources\r\n');
  });
});

describe('JSONL export', () => {
  it('writes each stored row on its own line and round-trips', async () => {
    const texts = stored(records, [{ name: 'x', text: 'line\nbreak' }, { name: 'y', n: 2 }], [{ url: 'https://a.example/' }]);
    const file = await exported(records, texts, 'jsonl');
    assert.equal(file, `${texts.join('\n')}\n`);
    assert.deepEqual(
      file.trimEnd().split('\n').map((line) => JSON.parse(line) as unknown),
      [
        { _row: 1, name: 'x', text: 'line\nbreak', _sources: [{ url: 'https://a.example/' }] },
        { _row: 2, name: 'y', n: 2, _sources: [{ url: 'https://a.example/' }] },
      ],
    );
  });

  it('yields nothing for an empty output', async () => {
    assert.equal(await exported(records, [], 'jsonl'), '');
  });
});

describe('streaming', () => {
  const TOTAL = 100_000;

  /** A row source that records how many rows it has handed out. */
  function countingSource(): { rows: AsyncGenerator<string>; produced: () => number } {
    let produced = 0;
    async function* rows(): AsyncGenerator<string> {
      for (let n = 1; n <= TOTAL; n++) {
        produced = n;
        yield `{"_row":${n},"company":"Company ${n}","capacity_gwh":${n / 10},"active":null,"extra":null,"_sources":[{"url":"https://a.example/${n}"}]}`;
      }
    }
    return { rows: rows(), produced: () => produced };
  }

  for (const format of ['csv', 'jsonl'] as const) {
    it(`${format}: the first chunk arrives long before the source is exhausted`, async () => {
      const source = countingSource();
      let chunks = 0;
      let rowsAtFirstChunk = 0;
      let lines = 0;
      let largest = 0;
      for await (const chunk of exportRows(makers, source.rows, format)) {
        if (chunks === 0) rowsAtFirstChunk = source.produced();
        chunks++;
        largest = Math.max(largest, chunk.length);
        lines += chunk.split('\n').length - 1;
      }
      assert.ok(rowsAtFirstChunk > 0 && rowsAtFirstChunk < TOTAL / 10, `first chunk after ${rowsAtFirstChunk} rows`);
      assert.ok(chunks > 50, `${chunks} chunks`);
      assert.ok(largest < 128 * 1024, `largest chunk ${largest} characters`);
      assert.equal(lines, format === 'csv' ? TOTAL + 1 : TOTAL);
    });
  }

  it('stops reading the source when the consumer stops', async () => {
    const source = countingSource();
    for await (const chunk of exportRows(makers, source.rows, 'jsonl')) {
      assert.ok(chunk.length > 0);
      break;
    }
    assert.ok(source.produced() < TOTAL / 10);
  });
});
