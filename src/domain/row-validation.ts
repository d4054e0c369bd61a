/**
 * Checks the rows an agent writes to an output (the `write_rows` tool) and makes the one stored
 * JSON form of a row. A call is all-or-nothing: one bad row rejects the whole call, and the
 * errors name every problem so the agent can fix them all in its next attempt.
 */
import type { ErrorObject } from 'ajv';
import { schemaValidator } from './json-schema.js';
import { charactersOver, CONFIDENCE_LEVELS, MAX_JSON_DEPTH, NUL_PROBLEM, type CellSupport, type ColumnDecl, type ColumnType, type FieldBasis, type OutputDecl, type RowSource } from '../contract/index.js';

export const MAX_ROWS_PER_CALL = 5000;
export const MAX_STRING_LENGTH = 100_000;
/** Call-level sources are copied onto every row of the call, so their number is bounded per row. */
export const MAX_SOURCES_PER_ROW = 50;
const MAX_TITLE_LENGTH = 500;
const MAX_QUOTE_LENGTH = 2000;
/** As for the spec's `inputs`. */
const MAX_UPLOAD_ID_LENGTH = 64;
const MAX_LISTED_ERRORS = 20;
const MAX_LISTED_COLUMNS = 20;
const SCHEMA_CACHE_SIZE = 256;

/** Per column: how sure the agent is, and why. */
export type RowBasis = Record<string, FieldBasis>;
const MAX_REASONING_LENGTH = 2000;

export interface ValidRow {
  /**
   * Tables: every declared column (absent as null), in declared order but for integer-like names,
   * which JavaScript puts first. Reports: heading, markdown. Records: the row without `_sources`.
   */
  values: Record<string, unknown>;
  sources: RowSource[];
  /** `_basis`, when the call gave one for this row. */
  basis?: RowBasis;
  /** `_support`, once the row's cells were checked against its quotes (decisions §17.1). */
  support?: Record<string, CellSupport>;
}

export interface RowError {
  /** 0-based position in `rows`; null for problems with the call itself (`rows`, `sources`). */
  index: number | null;
  /** The row key or argument path at fault, e.g. `price`, `_sources[0].url`, `sources`. */
  field?: string;
  /** What is wrong with `field` (else with the row or call), e.g. `must be a number, got "abc"`. */
  message: string;
}

export type RowValidation = { ok: true; rows: ValidRow[]; unsourced: number } | { ok: false; errors: RowError[] };

export interface CompiledRecordSchema {
  /** Null when the row satisfies the schema, else a short error such as `/price must be number`. */
  validate?: (row: unknown) => string | null;
  /** Why the schema does not compile. */
  error?: string;
}

type Report = (field: string | undefined, message: string) => void;
type RowCheck = (row: Record<string, unknown>, report: Report) => Record<string, unknown>;
type Conversion = { value: unknown } | { error: string };

/** One Ajv instance for every records schema. */
const ajv = schemaValidator('records');

/** Compiled schemas by JSON text, least recently used first. */
const schemaCache = new Map<string, CompiledRecordSchema>();

/**
 * What makes free-form JSON (a records schema, a row's values) unfit to store, else null: nesting
 * deeper than MAX_JSON_DEPTH (JSON.parse takes any depth, but JSON.stringify, Ajv and every other
 * recursive walk would run out of stack), NUL in a key or string (PostgreSQL cannot store it, so
 * neither database does), or a number that is not finite (1e400 parses as Infinity and would be
 * stored as null). Walks with its own stack, so the walk itself cannot overflow.
 */
export function freeJsonProblem(value: unknown, maxDepth = MAX_JSON_DEPTH): string | null {
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [item, depth] = pending.pop()!;
    if (typeof item === 'string') {
      if (item.includes('\u0000')) return NUL_PROBLEM;
    } else if (typeof item === 'number') {
      if (!Number.isFinite(item)) return `must hold finite numbers only, got ${item}`;
    } else if (typeof item === 'object' && item !== null) {
      if (depth >= maxDepth) return `must not nest deeper than ${maxDepth} levels of objects and arrays`;
      if (Array.isArray(item)) {
        for (const member of item) pending.push([member, depth + 1]);
      } else {
        for (const [key, member] of Object.entries(item)) {
          if (key.includes('\u0000')) return NUL_PROBLEM;
          pending.push([member, depth + 1]);
        }
      }
    }
  }
  return null;
}

export function compileRecordSchema(schema: Record<string, unknown>): CompiledRecordSchema {
  const key = JSON.stringify(schema);
  let compiled = schemaCache.get(key);
  if (compiled) {
    schemaCache.delete(key);
  } else {
    compiled = compileUncached(schema);
    if (schemaCache.size >= SCHEMA_CACHE_SIZE) schemaCache.delete(schemaCache.keys().next().value!);
  }
  schemaCache.set(key, compiled);
  return compiled;
}

function compileUncached(schema: Record<string, unknown>): CompiledRecordSchema {
  // Ajv keeps every schema it compiles in a cache keyed by object identity, without bound; and
  // removing one from that cache also unregisters whatever its $id names, which could be one of
  // Ajv's own meta-schemas. So each schema is compiled from a private copy without its top-level
  // $id (references within it are then relative to the schema itself), and the copy is dropped
  // from Ajv's cache right after: the bounded cache above is the only one.
  const copy = { ...schema };
  delete copy.$id;
  try {
    const check = ajv.compile(copy);
    // An async schema's validator answers with a promise, which would pass every row.
    if ('$async' in check) return { error: '$async schemas are not supported' };
    return { validate: (row) => (check(row) ? null : describeSchemaError(check.errors?.[0])) };
  } catch (err) {
    return { error: (err as Error).message };
  } finally {
    ajv.removeSchema(copy);
  }
}

function describeSchemaError(error: ErrorObject | undefined): string {
  if (!error) return 'does not match the schema';
  let message = error.message ?? 'is invalid';
  if (error.keyword === 'additionalProperties') message += ` ("${String(error.params.additionalProperty)}")`;
  if (error.keyword === 'enum') message += `: ${JSON.stringify(error.params.allowedValues)}`;
  return error.instancePath ? `${error.instancePath} ${message}` : message;
}

/** Keeps the first MAX_LISTED_ERRORS errors of a call and counts the rest. */
class ErrorList {
  private readonly listed: RowError[] = [];
  private unlisted = 0;

  get empty(): boolean {
    return this.listed.length === 0;
  }

  add(index: number | null, field: string | undefined, message: string): void {
    if (this.listed.length === MAX_LISTED_ERRORS) {
      this.unlisted++;
      return;
    }
    this.listed.push(field === undefined ? { index, message } : { index, field, message });
  }

  toArray(): RowError[] {
    if (this.unlisted === 0) return [...this.listed];
    return [...this.listed, { index: null, message: `…and ${this.unlisted} more errors not listed` }];
  }
}

/**
 * Validates one `write_rows` call: `rows` for `output`, with `sources` applying to every row that
 * carries no `_sources` of its own, and `basis` (one entry per row, or null) saying how sure the
 * agent is of each column. Values are converted to their column types.
 */
export function validateRows(output: OutputDecl, rows: unknown, sources?: unknown, basis?: unknown): RowValidation {
  if (!Array.isArray(rows)) return rejectCall('rows', `must be an array of row objects, got ${describe(rows)}`);
  if (rows.length === 0) return rejectCall('rows', 'must not be empty: send at least one row');
  if (rows.length > MAX_ROWS_PER_CALL) {
    return rejectCall('rows', `has ${rows.length} rows, more than ${MAX_ROWS_PER_CALL} per call: split it into several calls`);
  }
  const rowValues = valueChecker(output);
  if (typeof rowValues === 'string') return rejectCall(undefined, rowValues);

  const errors = new ErrorList();
  const sourceColumns = output.kind === 'table' ? new Set((output.columns ?? []).map((c) => c.name)) : null;
  const callSources =
    sources == null ? [] : parseSources(sources, 'sources', sourceColumns, (field, message) => errors.add(null, field, message));
  if (basis != null && (!Array.isArray(basis) || basis.length !== rows.length)) {
    errors.add(null, 'basis', `must be an array with one entry (or null) per row: ${rows.length}, got ${Array.isArray(basis) ? `${basis.length} entries` : describe(basis)}`);
  }
  const basisOf = (index: number): unknown => (Array.isArray(basis) ? basis[index] : undefined);

  const valid: ValidRow[] = [];
  let unsourced = 0;
  rows.forEach((row: unknown, index) => {
    const report: Report = (field, message) => errors.add(index, field, message);
    if (!isObject(row)) {
      report(undefined, `must be an object, got ${describe(row)}`);
      return;
    }
    for (const key of Object.keys(row)) {
      if (key.startsWith('_') && key !== '_sources') {
        report(key, 'is not allowed: keys starting with "_" are reserved, and "_sources" is the only one a row may send');
      }
    }
    const ownSources = ownValue(row, '_sources');
    const rowSources = ownSources == null ? callSources : parseSources(ownSources, '_sources', sourceColumns, report);
    const values = rowValues(row, report);
    if (rowSources.length === 0) unsourced++;
    const rowBasis = basisOf(index);
    valid.push({ values, sources: rowSources, ...(rowBasis == null ? {} : { basis: parseBasis(rowBasis, `basis[${index}]`, sourceColumns, report) }) });
  });
  return errors.empty ? { ok: true, rows: valid, unsourced } : { ok: false, errors: errors.toArray() };
}

function rejectCall(field: string | undefined, message: string): RowValidation {
  return { ok: false, errors: [field === undefined ? { index: null, message } : { index: null, field, message }] };
}

/**
 * Checks one input of a group against its input columns: every key a declared column (or
 * `_key`, a string), every value converted to its column's type. Returns the values in declared
 * order (absent ones left out) and the key, or the problems, each naming its column.
 */
export function checkInputRecord(columns: ColumnDecl[], record: Record<string, unknown>): { values: Record<string, unknown>; key: string | null } | { errors: { field?: string; message: string }[] } {
  const errors: { field?: string; message: string }[] = [];
  const report: Report = (field, message) => errors.push(field === undefined ? { message } : { field, message });
  const declared = new Set(columns.map((c) => c.name));
  for (const key of Object.keys(record)) {
    if (key !== '_key' && !declared.has(key)) report(key, `is not a declared input column (${declaredColumnsHint(columns)})`);
  }
  const rawKey = ownValue(record, '_key');
  let key: string | null = null;
  if (rawKey != null) {
    if (typeof rawKey !== 'string' && typeof rawKey !== 'number') report('_key', `must be a string, got ${describe(rawKey)}`);
    else if (String(rawKey).length > 256 || String(rawKey).includes('\u0000')) report('_key', 'must be at most 256 characters, without NUL');
    else key = String(rawKey);
  }
  const values: Record<string, unknown> = {};
  for (const column of columns) {
    const value = columnValue(column, record, report);
    if (value !== null) values[column.name] = value;
  }
  return errors.length > 0 ? { errors } : { values, key };
}

/** The stored JSON text of a row: `{"_row": n, ...values, "_sources": [...], "_basis": {...}}` (`_basis` when given). */
export function serializeRow(rowNumber: number, row: ValidRow): string {
  // Built member by member because an object literal would move integer-like keys (a column
  // named "2024") ahead of `_row`. Undefined values are left out, as JSON.stringify would.
  const members = Object.entries(row.values)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `,${JSON.stringify(key)}:${JSON.stringify(value)}`);
  const basis = row.basis ? `,"_basis":${JSON.stringify(row.basis)}` : '';
  const support = row.support ? `,"_support":${JSON.stringify(row.support)}` : '';
  return `{"_row":${rowNumber}${members.join('')},"_sources":${JSON.stringify(row.sources)}${basis}${support}}`;
}

/** One row's basis: `{<column>: {confidence, reasoning?}}`; tables name declared columns only. */
function parseBasis(value: unknown, path: string, columns: Set<string> | null, report: Report): RowBasis {
  const basis: RowBasis = {};
  if (!isObject(value)) {
    report(path, `must be an object of {<column>: {confidence, reasoning}}, got ${describe(value)}`);
    return basis;
  }
  for (const [column, entry] of Object.entries(value)) {
    const at = `${path}.${column}`;
    if (columns && !columns.has(column)) {
      report(at, 'is not a declared column');
      continue;
    }
    if (!isObject(entry)) {
      report(at, `must be {confidence, reasoning}, got ${describe(entry)}`);
      continue;
    }
    const confidence = ownValue(entry, 'confidence');
    if (!CONFIDENCE_LEVELS.includes(confidence as FieldBasis['confidence'])) {
      report(`${at}.confidence`, `must be one of ${CONFIDENCE_LEVELS.join(', ')}, got ${describe(confidence)}`);
      continue;
    }
    const reasoning = ownValue(entry, 'reasoning');
    const problem = reasoning == null ? null : typeof reasoning === 'string' ? lengthProblem(reasoning, MAX_REASONING_LENGTH) : `must be a string, got ${describe(reasoning)}`;
    if (problem) report(`${at}.reasoning`, problem);
    else basis[column] = { confidence: confidence as FieldBasis['confidence'], ...(typeof reasoning === 'string' ? { reasoning } : {}) };
  }
  return basis;
}

/**
 * The check that turns a row (an object) into its stored values, by output kind; a string when
 * the output itself cannot take rows.
 */
function valueChecker(output: OutputDecl): RowCheck | string {
  switch (output.kind) {
    case 'table': {
      const columns = output.columns ?? [];
      const declared = new Set(columns.map((c) => c.name));
      const hint = declaredColumnsHint(columns);
      return (row, report) => {
        for (const key of Object.keys(row)) {
          if (!key.startsWith('_') && !declared.has(key)) report(key, `is not a declared column (${hint})`);
        }
        return Object.fromEntries(columns.map((column) => [column.name, columnValue(column, row, report)]));
      };
    }
    case 'report':
      return (row, report) => {
        for (const key of Object.keys(row)) {
          if (!key.startsWith('_') && key !== 'heading' && key !== 'markdown') {
            report(key, 'is not allowed: a report row has only "heading" and "markdown"');
          }
        }
        return { heading: reportText(row, 'heading', report), markdown: reportText(row, 'markdown', report) };
      };
    case 'records': {
      const compiled = output.schema ? compileRecordSchema(output.schema) : {};
      if (compiled.error) return `the schema of output "${output.id}" does not compile: ${compiled.error}`;
      return (row, report) => {
        const values = Object.fromEntries(Object.entries(row).filter(([key]) => key !== '_sources'));
        const unfit = freeJsonProblem(values);
        if (unfit) {
          report(undefined, unfit);
          return values;
        }
        const problem = compiled.validate?.(values);
        if (problem) report(undefined, `does not match the output's schema: ${problem}`);
        return values;
      };
    }
  }
}

function declaredColumnsHint(columns: ColumnDecl[]): string {
  const names = columns.slice(0, MAX_LISTED_COLUMNS).map((c) => c.name);
  const more = columns.length > MAX_LISTED_COLUMNS ? `, … (${columns.length} in all)` : '';
  return `declared columns: ${names.join(', ')}${more}`;
}

function columnValue(column: ColumnDecl, row: Record<string, unknown>, report: Report): unknown {
  const value = ownValue(row, column.name);
  if (value == null) {
    if (column.required) report(column.name, 'is required');
    return null;
  }
  const converted = CONVERT[column.type](value);
  if ('error' in converted) {
    report(column.name, converted.error);
    return null;
  }
  return converted.value;
}

function reportText(row: Record<string, unknown>, key: 'heading' | 'markdown', report: Report): string {
  const value = ownValue(row, key);
  if (typeof value !== 'string') {
    report(key, `is required and must be a string, got ${describe(value)}`);
    return '';
  }
  const problem = lengthProblem(value, MAX_STRING_LENGTH);
  if (problem) report(key, problem);
  return value;
}

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;
const INTEGER = /^[+-]?\d+$/;

/** Converts a non-null value to a column type, or says why it cannot. */
const CONVERT: Record<ColumnType, (value: unknown) => Conversion> = {
  string(value) {
    if (typeof value === 'number' || typeof value === 'boolean') return { value: String(value) };
    if (typeof value !== 'string') return { error: `must be a string, got ${describe(value)}` };
    return limitedString(value);
  },
  number(value) {
    const number = typeof value === 'string' && DECIMAL.test(value.trim()) ? Number(value) : value;
    if (typeof number === 'number' && Number.isFinite(number)) return { value: number };
    return { error: `must be a number, got ${describe(value)}` };
  },
  integer(value) {
    const number = typeof value === 'string' && INTEGER.test(value.trim()) ? Number(value) : value;
    // Larger integers would silently lose digits as JSON numbers.
    if (Number.isSafeInteger(number)) return { value: number };
    return { error: `must be an integer between -${Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}, got ${describe(value)}` };
  },
  boolean(value) {
    if (typeof value === 'boolean') return { value };
    const text = typeof value === 'string' ? value.trim().toLowerCase() : null;
    if (text === 'true' || text === 'false') return { value: text === 'true' };
    return { error: `must be a boolean (true or false), got ${describe(value)}` };
  },
  date(value) {
    if (typeof value === 'string' && isIsoDate(value)) return { value };
    return { error: `must be an ISO 8601 date or date-time string such as 2024-05-31 or 2024-05-31T14:00:00Z, got ${describe(value)}` };
  },
  url(value) {
    if (typeof value !== 'string' || !isHttpUrl(value)) return { error: `must be an absolute http(s) URL, got ${describe(value)}` };
    return limitedString(value);
  },
  json(value) {
    const problem = freeJsonProblem(value);
    return problem ? { error: problem } : { value };
  },
};

function limitedString(value: string): Conversion {
  const problem = lengthProblem(value, MAX_STRING_LENGTH);
  return problem ? { error: problem } : { value };
}

/** A string longer than `max` characters (code points, as the API counts them), or holding NUL. */
function lengthProblem(value: string, max: number): string | null {
  const chars = charactersOver(value, max);
  if (chars !== null) return `must be at most ${max} characters, got ${chars}`;
  return value.includes('\u0000') ? NUL_PROBLEM : null;
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-](\d{2}):?(\d{2}))?)?$/i;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** YYYY-MM-DD, optionally with THH:MM[:SS[.fff]] and a zone (Z or ±HH:MM), naming a real day and time. */
function isIsoDate(text: string): boolean {
  const match = ISO_DATE.exec(text);
  if (!match) return false;
  const [year, month, day, hour, minute, second, zoneHour, zoneMinute] = match.slice(1).map((part) => Number(part ?? 0));
  if (month < 1 || month > 12) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
  return day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59 && zoneHour <= 23 && zoneMinute <= 59;
}

function isHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/** Reads a list of sources; `path` (`sources` or `_sources`) prefixes error fields. */
function parseSources(value: unknown, path: string, columns: Set<string> | null, report: Report): RowSource[] {
  if (!Array.isArray(value)) {
    report(path, `must be an array of sources, got ${describe(value)}`);
    return [];
  }
  if (value.length > MAX_SOURCES_PER_ROW) {
    report(path, `has ${value.length} sources; a row may cite at most ${MAX_SOURCES_PER_ROW}`);
  }
  return value.map((source: unknown, i) => parseSource(source, `${path}[${i}]`, columns, report));
}

/**
 * Reads one source, keeping only the known keys. Null counts as absent, since models often send
 * every key with null for the unused ones.
 */
function parseSource(value: unknown, path: string, columns: Set<string> | null, report: Report): RowSource {
  const source: RowSource = {};
  if (!isObject(value)) {
    report(path, `must be an object with "url" or "upload_id", got ${describe(value)}`);
    return source;
  }
  const url = ownValue(value, 'url');
  const uploadId = ownValue(value, 'upload_id');
  if ((url == null) === (uploadId == null)) {
    report(path, 'must have exactly one of "url" or "upload_id"');
  } else if (url != null) {
    const converted = CONVERT.url(url);
    if ('error' in converted) report(`${path}.url`, converted.error);
    else source.url = converted.value as string;
  } else if (typeof uploadId === 'string' && uploadId.length > 0 && !lengthProblem(uploadId, MAX_UPLOAD_ID_LENGTH)) {
    source.upload_id = uploadId;
  } else {
    report(`${path}.upload_id`, `must be a non-empty string of at most ${MAX_UPLOAD_ID_LENGTH} characters, got ${describe(uploadId)}`);
  }

  for (const [key, max] of [['title', MAX_TITLE_LENGTH], ['quote', MAX_QUOTE_LENGTH]] as const) {
    const text = ownValue(value, key);
    if (text == null) continue;
    const problem = typeof text === 'string' ? lengthProblem(text, max) : `must be a string, got ${describe(text)}`;
    if (problem) report(`${path}.${key}`, problem);
    else source[key] = text as string;
  }

  const fields = ownValue(value, 'fields');
  if (fields != null) {
    if (!Array.isArray(fields) || !fields.every((f) => typeof f === 'string')) {
      report(`${path}.fields`, `must be an array of column names, got ${describe(fields)}`);
    } else {
      const undeclared = columns ? fields.filter((f) => !columns.has(f)) : [];
      if (undeclared.length > 0) report(`${path}.fields`, `names undeclared columns: ${undeclared.map((f) => `"${f}"`).join(', ')}`);
      else source.fields = fields;
    }
  }
  return source;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An own property only: a row's `constructor` key must not find Object.prototype.constructor. */
function ownValue(object: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/** A short description of a value for error messages: strings quoted and cut, objects by kind. */
function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  return String(value);
}
