/**
 * A group's inputs as a request brings them: inline objects, or the records of an uploaded CSV
 * or JSON Lines file, each checked against the spec's input columns. Files are read as streams,
 * one record at a time, so a file of any size is never held in memory; a bad record is a 422
 * naming its index and column, and is found before anything is stored (the caller reads the
 * file once to check it, and again to store it).
 */
import fs from 'node:fs';
import readline from 'node:readline';
import { parse as parseCsv } from 'csv-parse';
import type { ColumnDecl } from '../contract/index.js';
import { QuarryError } from '../errors.js';
import { checkInputRecord, freeJsonProblem } from '../domain/row-validation.js';
import type { UploadRecord } from '../domain/records.js';

/** An input as stored: its `_key` (or null) and its values as JSON. */
export interface CheckedInput {
  key: string | null;
  data: string;
}

export type InputFileFormat = 'csv' | 'jsonl';

/** Longest CSV record or JSON line taken, in characters. */
const MAX_RECORD_CHARS = 1 << 20;

/** How an upload's records are read: by its content type, else by its file name's extension. */
export function inputFileFormat(upload: UploadRecord): InputFileFormat {
  const type = upload.contentType.toLowerCase();
  const name = upload.filename.toLowerCase();
  if (type.includes('csv') || name.endsWith('.csv')) return 'csv';
  if (type.includes('ndjson') || type.includes('jsonl') || type.includes('json-seq') || /\.(jsonl|ndjson)$/.test(name)) return 'jsonl';
  throw QuarryError.validation('input_upload_id', `input_upload_id "${upload.id}" is neither a CSV file nor JSON Lines (content type ${upload.contentType}, file ${upload.filename}): upload a .csv or .jsonl file`);
}

/** One input checked, or a 422 whose param is `<where>[<index>].<column>`. */
function checkOne(columns: ColumnDecl[], record: unknown, index: number, where: string, line?: number): CheckedInput {
  const at = line === undefined ? `${where}[${index}]` : `${where} record ${index} (line ${line})`;
  const loc = ['body', where, index];
  if (typeof record !== 'object' || record === null || Array.isArray(record)) {
    throw QuarryError.validation(`${where}[${index}]`, `${at} must be an object of input columns`, [{ type: 'value_error', loc, msg: 'must be an object' }]);
  }
  const unfit = freeJsonProblem(record);
  if (unfit) throw QuarryError.validation(`${where}[${index}]`, `${at} ${unfit}`, [{ type: 'value_error', loc, msg: unfit }]);
  const checked = checkInputRecord(columns, record as Record<string, unknown>);
  if ('errors' in checked) {
    const [first] = checked.errors;
    const all = checked.errors.map((e) => `${e.field ?? 'input'} ${e.message}`).join('; ');
    return refuse(`${where}[${index}]${first?.field ? `.${first.field}` : ''}`, `${at}: ${all}`, checked.errors.map((e) => ({ type: 'value_error', loc: e.field ? [...loc, e.field] : loc, msg: e.message })));
  }
  return { key: checked.key, data: JSON.stringify(checked.values) };
}

function refuse(param: string, message: string, detail: { type: string; loc: (string | number)[]; msg: string }[]): never {
  throw QuarryError.validation(param, message, detail);
}

/** Inline inputs, all checked. */
export function checkInlineInputs(columns: ColumnDecl[], inputs: unknown[]): CheckedInput[] {
  return inputs.map((input, i) => checkOne(columns, input, i, 'inputs'));
}

/** The records of an uploaded file, checked one by one as they are read. */
export async function* readInputFile(file: string, format: InputFileFormat, columns: ColumnDecl[]): AsyncGenerator<CheckedInput> {
  const where = 'input_upload_id';
  if (format === 'csv') {
    const parser = fs.createReadStream(file).pipe(parseCsv({ columns: true, bom: true, skip_empty_lines: true, max_record_size: MAX_RECORD_CHARS, info: true }));
    let index = 0;
    try {
      for await (const { record, info } of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number } }>) {
        // An empty cell is a value left out, as in a spreadsheet.
        const present = Object.fromEntries(Object.entries(record).filter(([, value]) => value !== ''));
        yield checkOne(columns, present, index, where, info.lines);
        index++;
      }
    } catch (err) {
      if (err instanceof QuarryError) throw err;
      throw QuarryError.validation(where, `${where} is not a CSV file Quarry can read (after ${index} records): ${(err as Error).message}`);
    }
    return;
  }
  const lines = readline.createInterface({ input: fs.createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  let index = 0;
  let line = 0;
  for await (const text of lines) {
    line++;
    if (text.trim() === '') continue;
    if (text.length > MAX_RECORD_CHARS) refuse(`${where}[${index}]`, `${where} record ${index} (line ${line}) is longer than ${MAX_RECORD_CHARS} characters`, [{ type: 'value_error', loc: ['body', where, index], msg: 'too long' }]);
    let record: unknown;
    try {
      record = JSON.parse(text);
    } catch {
      refuse(`${where}[${index}]`, `${where} record ${index} (line ${line}) is not JSON: each line of a JSON Lines file is one object`, [{ type: 'json_invalid', loc: ['body', where, index], msg: 'not JSON' }]);
    }
    yield checkOne(columns, record, index, where, line);
    index++;
  }
}
