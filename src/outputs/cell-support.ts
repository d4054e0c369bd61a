/**
 * Cell-level support (decisions §17.1): which of a row's values its verified quotes hold. Each
 * `quote_found` source gets `supports: {<column>: true|false|null}` for the columns it backs (its
 * `fields`, else every non-null column), and the row gets `_support` for its non-null columns:
 *
 * - supported: some source's quote holds the value (src/domain/value-match.ts);
 * - unsupported: checked against at least one quote, and no quote holds it;
 * - unchecked: no quote was checked for it (no quote_found source backs it, or the value is a
 *   boolean or json, or a report's prose).
 *
 * Tables check each column as declared; records check each top-level string and number as text
 * and number; reports' heading and markdown are prose, never looked for in a quote.
 */
import type { CellSupport, ColumnType, OutputDecl, RowSource } from '../contract/index.js';
import type { CellCounts } from '../domain/records.js';
import { serializeRow, type RowBasis, type ValidRow } from '../domain/row-validation.js';
import { valueInQuote } from '../domain/value-match.js';
import type { CheckedSource, CitationChecker } from './citations.js';

export interface SupportedRow {
  sources: CheckedSource[];
  /** Per non-null column. */
  support: Record<string, CellSupport>;
}

/** How an output's values are checked: a column's type, or null where they are not. */
export type ColumnTypeOf = (column: string, value: unknown) => ColumnType | null;

export function columnTypes(output: OutputDecl): ColumnTypeOf {
  if (output.kind === 'report') return () => null;
  if (output.kind === 'table') {
    const types = new Map((output.columns ?? []).map((c) => [c.name, c.type]));
    return (column) => types.get(column) ?? null;
  }
  return (_column, value) => (typeof value === 'string' ? 'string' : typeof value === 'number' ? 'number' : null);
}

/** The row's sources with `supports` on each quote_found one (any earlier `supports` replaced), and its `_support`. */
export function supportRow(values: Record<string, unknown>, sources: readonly CheckedSource[], typeOf: ColumnTypeOf): SupportedRow {
  const present = Object.keys(values).filter((column) => values[column] !== null && values[column] !== undefined);
  const found = new Set<string>();
  const checked = new Set<string>();
  const checkedSources = sources.map((source): CheckedSource => {
    const { supports: _earlier, ...plain } = source;
    if (plain.check !== 'quote_found' || plain.quote === undefined) return plain;
    const supports: Record<string, boolean | null> = {};
    for (const column of plain.fields ?? present) {
      if (!(column in values)) continue;
      const value = values[column];
      const type = value === null || value === undefined ? null : typeOf(column, value);
      const holds = type === null ? null : valueInQuote(value, plain.quote, type);
      supports[column] = holds;
      if (holds !== null) checked.add(column);
      if (holds === true) found.add(column);
    }
    return { ...plain, supports };
  });
  const support: Record<string, CellSupport> = {};
  for (const column of present) support[column] = found.has(column) ? 'supported' : checked.has(column) ? 'unsupported' : 'unchecked';
  return { sources: checkedSources, support };
}

export function emptyCounts(): CellCounts {
  return { supported: 0, unsupported: 0, unchecked: 0 };
}

/** Adds a row's `_support` to counts. */
export function countCells(counts: CellCounts, support: Record<string, CellSupport>): void {
  for (const verdict of Object.values(support)) counts[verdict]++;
}

/** What the checks leave on a stored source: a recheck drops them and checks it afresh. */
const VERDICT_KEYS = new Set(['verified', 'check', 'source_id', 'supports']);

/** A stored row (its JSON) read back as the row it was written from: its values, its sources as cited, and its basis. */
export function storedRow(data: string): { rowNumber: number; row: ValidRow } {
  const { _row, _sources, _basis, _support: _checked, ...values } = JSON.parse(data) as Record<string, unknown>;
  const sources = (Array.isArray(_sources) ? _sources : []).map((s) => Object.fromEntries(Object.entries(s as Record<string, unknown>).filter(([k]) => !VERDICT_KEYS.has(k))) as RowSource);
  return { rowNumber: Number(_row), row: { values, sources, ...(_basis === undefined ? {} : { basis: _basis as RowBasis }) } };
}

/** Checks a stored row again: its sources against the snapshots, its cells against their quotes. */
export function recheckRow(data: string, checker: CitationChecker, typeOf: ColumnTypeOf): { rowNumber: number; row: ValidRow; data: string } {
  const { rowNumber, row } = storedRow(data);
  const { sources, support } = supportRow(row.values, row.sources.map((s) => checker.check(s)), typeOf);
  const checked: ValidRow = { ...row, sources, support };
  return { rowNumber, row: checked, data: serializeRow(rowNumber, checked) };
}
