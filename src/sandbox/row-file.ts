/**
 * Turns a CSV or JSONL file that code wrote to the workspace into rows for write_rows. Parsing
 * only: the rows are then validated by validateRows exactly like rows sent inline.
 */

export type RowFileFormat = 'csv' | 'jsonl';

export interface ParsedRows {
  rows: Record<string, unknown>[];
  /** 1-based line of the file where each row starts, for error messages. */
  lines: number[];
}

export class RowFileError extends Error {
  override name = 'RowFileError';
}

/** The format a file name says, or null. */
export function rowFileFormat(name: string): RowFileFormat | null {
  const lower = name.toLowerCase();
  if (lower.endsWith('.csv')) return 'csv';
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson')) return 'jsonl';
  return null;
}

export function parseRowFile(text: string, format: RowFileFormat): ParsedRows {
  return format === 'csv' ? parseCsvRows(text) : parseJsonlRows(text);
}

/** One JSON object per line; blank lines are skipped. */
export function parseJsonlRows(text: string): ParsedRows {
  const rows: Record<string, unknown>[] = [];
  const lines: number[] = [];
  text.replace(/^\uFEFF/, '').split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw new RowFileError(`line ${i + 1} is not valid JSON (${(err as Error).message})`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new RowFileError(`line ${i + 1} is not a JSON object`);
    rows.push(value as Record<string, unknown>);
    lines.push(i + 1);
  });
  return { rows, lines };
}

/** RFC 4180 records: quoted fields may hold commas, quotes ("") and line breaks. */
function csvRecords(text: string): { fields: string[]; quoted: boolean[]; line: number }[] {
  const records: { fields: string[]; quoted: boolean[]; line: number }[] = [];
  let fields: string[] = [];
  let quoted: boolean[] = [];
  let field = '';
  let isQuoted = false;
  let inQuotes = false;
  let line = 1;
  let recordLine = 1;
  let fieldStarted = false;
  const endField = () => {
    fields.push(field);
    quoted.push(isQuoted);
    field = '';
    isQuoted = false;
    fieldStarted = false;
  };
  const endRecord = () => {
    endField();
    // A blank line is no record.
    if (!(fields.length === 1 && fields[0] === '' && !quoted[0])) records.push({ fields, quoted, line: recordLine });
    fields = [];
    quoted = [];
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inQuotes) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else {
          inQuotes = false;
        }
      } else {
        if (ch === '\n') line++;
        field += ch;
      }
      continue;
    }
    if (ch === '"' && !fieldStarted) {
      inQuotes = true;
      isQuoted = true;
      fieldStarted = true;
    } else if (ch === ',') {
      endField();
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      endRecord();
      line++;
      recordLine = line;
    } else {
      field += ch;
      fieldStarted = true;
    }
  }
  if (inQuotes) throw new RowFileError(`line ${recordLine}: a quoted field is never closed`);
  if (field !== '' || fields.length > 0 || isQuoted) endRecord();
  return records;
}

/**
 * A CSV file whose first record names the columns. Empty cells are left out of the row (the
 * column reads as null); a `_sources` cell holding JSON is parsed, so rows can cite sources.
 */
export function parseCsvRows(text: string): ParsedRows {
  const records = csvRecords(text.replace(/^\uFEFF/, ''));
  if (records.length === 0) throw new RowFileError('the file is empty: the first line must name the columns');
  const header = records[0]!.fields.map((h) => h.trim());
  const seen = new Set<string>();
  header.forEach((name, i) => {
    if (!name) throw new RowFileError(`the header (line 1) has an empty column name at position ${i + 1}`);
    if (seen.has(name)) throw new RowFileError(`the header (line 1) names column "${name}" twice`);
    seen.add(name);
  });
  const rows: Record<string, unknown>[] = [];
  const lines: number[] = [];
  for (const record of records.slice(1)) {
    if (record.fields.length > header.length) {
      throw new RowFileError(`line ${record.line} has ${record.fields.length} fields but the header names ${header.length} columns`);
    }
    const row: Record<string, unknown> = {};
    record.fields.forEach((text, i) => {
      // Empty, quoted or not: CSV writers quote empty (null) cells too.
      if (text === '') return;
      const name = header[i]!;
      let value: unknown = text;
      if (name === '_sources') {
        try {
          value = JSON.parse(text);
        } catch {
          // Left as text: validation then says what a source must be.
        }
      }
      // defineProperty: a column named __proto__ is a plain key, as it would be from JSON.
      Object.defineProperty(row, name, { value, enumerable: true, writable: true, configurable: true });
    });
    rows.push(row);
    lines.push(record.line);
  }
  return { rows, lines };
}
