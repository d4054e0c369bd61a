/**
 * Editors for the parts of a spec a person writes by hand: table columns and outputs. The task
 * form and the group form both use them.
 */
import type { ColumnSpec, ColumnType, OutputKind, OutputSpec } from './api.js';

/** Every column type, in the order offered (a Record, so a type the API adds fails to compile here). */
const COLUMN_TYPES: Record<ColumnType, string> = {
  string: 'text', number: 'number', integer: 'integer', boolean: 'yes/no', date: 'date', url: 'URL', json: 'JSON',
};
const OUTPUT_KINDS: Record<OutputKind, string> = { table: 'table (typed columns)', records: 'records (free objects)', report: 'report (sections)' };

export interface ColumnDraft {
  name: string;
  type: ColumnType;
  required: boolean;
}

export interface OutputDraft {
  id: string;
  kind: OutputKind;
  description: string;
  columns: ColumnDraft[];
}

export const newColumn = (): ColumnDraft => ({ name: '', type: 'string', required: false });
export const newOutput = (n: number): OutputDraft => ({ id: n === 0 ? 'results' : `results_${n + 1}`, kind: 'table', description: '', columns: [newColumn()] });

export function columnsOf(drafts: ColumnDraft[]): ColumnSpec[] {
  return drafts.filter((c) => c.name.trim()).map((c) => ({ name: c.name.trim(), type: c.type, required: c.required }));
}

export function outputOf(draft: OutputDraft): OutputSpec {
  return {
    id: draft.id.trim(),
    kind: draft.kind,
    ...(draft.description.trim() ? { description: draft.description.trim() } : {}),
    ...(draft.kind === 'table' ? { columns: columnsOf(draft.columns) } : {}),
  };
}

/** Columns as rows of fields; `idPrefix` keeps the labels' ids unique on the page. */
export function ColumnsEditor(props: { idPrefix: string; legend: string; columns: ColumnDraft[]; onChange: (columns: ColumnDraft[]) => void }) {
  const { idPrefix, columns, onChange } = props;
  const set = (i: number, patch: Partial<ColumnDraft>) => onChange(columns.map((c, j) => (j === i ? { ...c, ...patch } : c)));
  return (
    <fieldset class="columns">
      <legend>{props.legend}</legend>
      {columns.map((column, i) => (
        <div class="column-row" key={i}>
          <label for={`${idPrefix}-name-${i}`} class="visually-hidden">Column {i + 1} name</label>
          <input id={`${idPrefix}-name-${i}`} value={column.name} placeholder={`column ${i + 1}`} onInput={(e) => set(i, { name: e.currentTarget.value })} />
          <label for={`${idPrefix}-type-${i}`} class="visually-hidden">Column {i + 1} type</label>
          <select id={`${idPrefix}-type-${i}`} value={column.type} onChange={(e) => set(i, { type: e.currentTarget.value as ColumnType })}>
            {Object.entries(COLUMN_TYPES).map(([value, label]) => <option key={value} value={value}>{label}</option>)}
          </select>
          <label class="check">
            <input type="checkbox" checked={column.required} onChange={(e) => set(i, { required: e.currentTarget.checked })} /> required
          </label>
          <button type="button" class="secondary small" disabled={columns.length === 1} onClick={() => onChange(columns.filter((_, j) => j !== i))}>
            Remove<span class="visually-hidden"> column {i + 1}</span>
          </button>
        </div>
      ))}
      <button type="button" class="secondary small" onClick={() => onChange([...columns, newColumn()])}>Add column</button>
    </fieldset>
  );
}

export function OutputEditor(props: { index: number; output: OutputDraft; kinds?: OutputKind[]; onChange: (output: OutputDraft) => void; onRemove?: () => void }) {
  const { index, output, onChange } = props;
  const id = `output-${index}`;
  const kinds = props.kinds ?? (Object.keys(OUTPUT_KINDS) as OutputKind[]);
  return (
    <fieldset class="output">
      <legend>Output {index + 1}</legend>
      <div class="fields">
        <div>
          <label for={`${id}-id`}>Id</label>
          <input id={`${id}-id`} value={output.id} required pattern="[a-z][a-z0-9_\-]{0,63}" title="1-64 of a-z 0-9 _ -, starting with a letter" onInput={(e) => onChange({ ...output, id: e.currentTarget.value })} />
        </div>
        <div>
          <label for={`${id}-kind`}>Kind</label>
          <select id={`${id}-kind`} value={output.kind} onChange={(e) => onChange({ ...output, kind: e.currentTarget.value as OutputKind })}>
            {kinds.map((kind) => <option key={kind} value={kind}>{OUTPUT_KINDS[kind]}</option>)}
          </select>
        </div>
        <div class="wide">
          <label for={`${id}-description`}>Description</label>
          <input id={`${id}-description`} value={output.description} onInput={(e) => onChange({ ...output, description: e.currentTarget.value })} />
        </div>
      </div>
      {output.kind === 'table' && <ColumnsEditor idPrefix={id} legend="Columns" columns={output.columns} onChange={(columns) => onChange({ ...output, columns })} />}
      {props.onRemove && <button type="button" class="secondary small" onClick={props.onRemove}>Remove output {index + 1}</button>}
    </fieldset>
  );
}
