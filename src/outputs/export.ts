/**
 * Whole-output export as a CSV or JSONL file. Rows arrive as their stored JSON texts (see
 * serializeRow) and leave in chunks as they come, so an output of any size is never held in
 * memory at once.
 */
import type { OutputDecl, RowSource } from '../contract/index.js';

export type ExportFormat = 'csv' | 'jsonl';

/** Lines are gathered into chunks of about this many characters, so writes are neither tiny nor huge. */
const CHUNK_CHARS = 64 * 1024;

interface StoredRow extends Record<string, unknown> {
  _row: number;
  _sources: RowSource[];
}

export function exportContentType(format: ExportFormat): string {
  return format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson';
}

export function exportFileName(output: OutputDecl, format: ExportFormat): string {
  return `${output.id}.${format}`;
}

/** How a format writes the file's first line (if any) and each row's line. */
interface LineWriter {
  header: string;
  line: (storedRow: string) => string;
}

const JSONL_WRITER: LineWriter = { header: '', line: (storedRow) => `${storedRow}\n` };

/** The export file of `output`, in chunks; `rows` are the stored row JSON texts in row order. */
export function exportRows(output: OutputDecl, rows: AsyncIterable<string>, format: ExportFormat): AsyncGenerator<string> {
  return exportLines(format === 'csv' ? csvWriter(output) : JSONL_WRITER, rows);
}

/**
 * A group's merged table as a file (groups/group-view.ts makes the rows). CSV columns: `_input`,
 * the input columns, the table's columns, `_sources`, then the run's `_task_id` and `_run_status`.
 */
export function exportMergedRows(merged: { inputColumns: string[]; output: OutputDecl }, rows: AsyncIterable<string>, format: ExportFormat): AsyncGenerator<string> {
  if (format !== 'csv') return exportLines(JSONL_WRITER, rows);
  const names = [...merged.inputColumns, ...(merged.output.columns ?? []).map((c) => c.name)];
  return exportLines({
    header: csvLine(['_input', ...names, '_sources', '_task_id', '_run_status']),
    line: (mergedRow) => {
      const row = JSON.parse(mergedRow) as StoredRow & { _input: number; _run: { task_id: string; status: string } };
      return csvLine([row._input, ...names.map((name) => (Object.hasOwn(row, name) ? row[name] : null)), sourcesCell(row._sources), row._run.task_id, row._run.status]);
    },
  }, rows);
}

async function* exportLines(writer: LineWriter, rows: AsyncIterable<string>): AsyncGenerator<string> {
  let chunk = writer.header;
  for await (const row of rows) {
    chunk += writer.line(row);
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}

function csvWriter(output: OutputDecl): LineWriter {
  const layout = csvLayout(output);
  return {
    header: csvLine(['_row', ...layout.header, '_sources']),
    line: (storedRow) => {
      const row = JSON.parse(storedRow) as StoredRow;
      return csvLine([row._row, ...layout.cells(row), sourcesCell(row._sources)]);
    },
  };
}

/** The CSV columns between `_row` and `_sources`, by output kind. */
function csvLayout(output: OutputDecl): { header: string[]; cells: (row: StoredRow) => unknown[] } {
  switch (output.kind) {
    case 'table': {
      const names = (output.columns ?? []).map((c) => c.name);
      // A row stored before a column was added to the spec lacks it: the cell stays empty.
      return { header: names, cells: (row) => names.map((name) => (Object.hasOwn(row, name) ? row[name] : null)) };
    }
    case 'report':
      return { header: ['heading', 'markdown'], cells: (row) => [row.heading, row.markdown] };
    case 'records':
      return {
        header: ['record'],
        cells: (row) => {
          const record: Record<string, unknown> = { ...row };
          delete record._row;
          delete record._sources;
          return [JSON.stringify(record)];
        },
      };
  }
}

/** Each source as its URL or upload id, followed by the server's verdict in brackets once checked: `https://… [quote_found]`. */
function sourcesCell(sources: RowSource[] | undefined): string {
  return (sources ?? []).map((s) => `${s.url ?? s.upload_id}${s.check ? ` [${s.check}]` : ''}`).join(' ');
}

/** One CSV record (RFC 4180), CRLF-terminated. */
export function csvLine(values: unknown[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

function csvField(value: unknown): string {
  let text: string;
  if (value === null || value === undefined) text = '';
  else if (typeof value === 'number' || typeof value === 'boolean') text = String(value);
  else if (typeof value === 'string') text = defuseFormula(value);
  else text = JSON.stringify(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * Spreadsheets (Excel, LibreOffice, Google Sheets) run a cell that starts with = + - @ as a
 * formula, and some also after a leading tab or CR. Row text comes from web pages the agent read,
 * so a page could plant a formula that runs, or sends data away, when a user opens the export.
 * A leading apostrophe makes such a cell plain text. Numbers are written as numbers, unguarded.
 */
function defuseFormula(text: string): string {
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}
