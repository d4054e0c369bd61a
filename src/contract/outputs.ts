/** Rows and outputs (interface §2.2, §2.3, decisions §3, §8). */
import { Type, type Static } from 'typebox';
import { component, Nullable, OUTPUT_ID_PATTERN, StringEnum, Timestamp } from './common.js';
import { ColumnDecl, OutputKindSchema } from './spec.js';

/** What the server found when it checked a source against what the task read (decisions §15.1). */
export const SOURCE_CHECKS = ['quote_found', 'page_read', 'quote_not_found', 'not_read'] as const;
export type SourceCheck = (typeof SOURCE_CHECKS)[number];

export const RowSource = component('RowSource', Type.Object({
  url: Type.Optional(Type.String()),
  upload_id: Type.Optional(Type.String()),
  title: Type.Optional(Type.String()),
  quote: Type.Optional(Type.String()),
  fields: Type.Optional(Type.Array(Type.String(), { description: 'The columns this source supports; absent: the whole row.' })),
  verified: Type.Optional(Type.Boolean({ description: 'true for quote_found and page_read. Absent on rows written before sources were checked.' })),
  check: Type.Optional(StringEnum([...SOURCE_CHECKS], {
    description: 'quote_found: the quote is in the snapshot of that URL or the text of that upload; page_read: no quote, but it was read in this task; quote_not_found: read, but the quote is not in it; not_read: never read in this task (or outside its source policy).',
  })),
  source_id: Type.Optional(Type.String({ description: 'The snapshot (GET /task/{task_id}/sources/{source_id}) the source was matched against.' })),
  supports: Type.Optional(Type.Record(Type.String(), Nullable(Type.Boolean()), {
    description: 'quote_found sources: per column the source backs (its fields, else every non-null column), whether the quote holds the value after normalizing; null: not checked (booleans, json, prose).',
  })),
}, { additionalProperties: true }));
export type RowSource = Static<typeof RowSource>;

/** A cell's support (decisions §17.1). */
export const CELL_SUPPORT = ['supported', 'unsupported', 'unchecked'] as const;
export type CellSupport = (typeof CELL_SUPPORT)[number];

export const CONFIDENCE_LEVELS = ['high', 'medium', 'low'] as const;
export const FieldBasis = component('FieldBasis', Type.Object({
  confidence: StringEnum([...CONFIDENCE_LEVELS]),
  reasoning: Type.Optional(Type.String()),
}));
export type FieldBasis = Static<typeof FieldBasis>;

export const Row = component('Row', Type.Object({
  _row: Type.Integer({ minimum: 1, description: '1-based position in the output.' }),
  _sources: Type.Array(RowSource),
  _basis: Type.Optional(Type.Record(Type.String(), FieldBasis, { description: 'Per column: how sure the agent is and why (when it said).' })),
  _support: Type.Optional(Type.Record(Type.String(), StringEnum([...CELL_SUPPORT]), {
    description: 'Per non-null column: supported (a verified source\'s quote holds the value), unsupported (checked, and no quote holds it) or unchecked. Absent on rows written before cells were checked, until a recheck.',
  })),
}, { additionalProperties: true, description: 'One row: the output\'s columns (or report/records fields) plus _row, _sources, _support and, when given, _basis.' }));
export type Row = Static<typeof Row>;

export const OutputRef = component('OutputRef', Type.Object({ id: Type.String(), kind: OutputKindSchema, path: Type.String() }));
export type OutputRef = Static<typeof OutputRef>;

export const OutputPage = component('OutputPage', Type.Object({
  total: Type.Integer({ minimum: 0, description: 'Rows in the output, counted before offset and limit.' }),
  rows: Type.Array(Row),
  output: Nullable(OutputRef),
}));
export type OutputPage = Static<typeof OutputPage>;

export const OutputInfo = component('OutputInfo', Type.Object({
  id: Type.String(),
  kind: OutputKindSchema,
  path: Type.String(),
  description: Nullable(Type.String()),
  columns: Type.Optional(Type.Array(ColumnDecl, { description: 'Tables only: the normalized columns.' })),
  row_count: Type.Integer({ minimum: 0 }),
  verified_rows: Type.Integer({ minimum: 0, description: 'Rows with at least one source, every one of them verified.' }),
  unverified_rows: Type.Integer({ minimum: 0, description: 'The other rows: row_count - verified_rows.' }),
  supported_cells: Type.Integer({ minimum: 0, description: 'Cells a verified source\'s quote holds.' }),
  unsupported_cells: Type.Integer({ minimum: 0, description: 'Cells checked against at least one quote that none holds.' }),
  unchecked_cells: Type.Integer({ minimum: 0, description: 'Non-null cells no quote was checked for.' }),
  updated_at: Nullable(Timestamp()),
}));
export type OutputInfo = Static<typeof OutputInfo>;

export const OutputList = component('OutputList', Type.Object({ outputs: Type.Array(OutputInfo) }));

export const EXPORT_FORMATS = ['json', 'csv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const OutputQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50_000, default: 100, description: 'Rows per page.' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 })),
  output: Type.Optional(Type.String({ pattern: OUTPUT_ID_PATTERN, description: 'A named output to read instead of the active one.' })),
  format: Type.Optional(StringEnum([...EXPORT_FORMATS], { description: 'csv or jsonl streams the whole output as a file (also Accept: text/csv).' })),
});
export type OutputQuery = Static<typeof OutputQuery>;
