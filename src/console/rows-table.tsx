/**
 * Rows as a table, each cell marked with the sources that support it (a source with `fields`
 * supports those columns; one without supports the whole row): ✓ when every one is verified,
 * ! when one is not. The mark's title shows the quotes on hover; pressing it opens the
 * sources with their quotes, checks and links. Columns may come in labelled groups (a group's
 * input columns, then its output's), set apart by a line.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { RowSource } from './api.js';
import { cellText } from './ui.js';

/** Whether a cell's value is in a verified source's quote (decisions §17.1). */
export type CellSupport = 'supported' | 'unsupported' | 'unchecked';

/** A row as both task outputs and group rows give it. */
export interface SourcedRow {
  _sources?: RowSource[];
  /** Per non-null column: whether a verified source's quote holds the value. */
  _support?: Record<string, CellSupport>;
  _basis?: Record<string, { confidence: string; reasoning?: string | null }>;
  [field: string]: unknown;
}

/** One column: the row's field `key`, shown as its text unless `render` shows it otherwise. */
export interface TableColumn {
  key: string;
  /** Whether the row's sources mark this column's cells (default: a field not starting with `_`). */
  sourced?: boolean;
  render?: (row: SourcedRow) => ComponentChildren;
}

/**
 * Columns shown together. With a `label`, they sit under that heading; without one, each
 * column's own heading spans the table's header rows. `class` goes on the group's `<colgroup>`.
 */
export interface ColumnGroup {
  label?: string;
  class?: string;
  columns: TableColumn[];
}

/** Plain columns, one unlabelled group: a task's rows. */
export function plainColumns(keys: string[]): ColumnGroup[] {
  return [{ columns: keys.map((key) => ({ key })) }];
}

/** What a source's quote says of one value: it holds it, it does not, or it was not checked. */
function supportsOf(source: RowSource, column: string): boolean | null | undefined {
  return source.supports?.[column];
}

const SUPPORT_WORDS: Record<CellSupport, string> = {
  supported: 'value found in a quote',
  unsupported: 'value in no quote',
  unchecked: 'value not checked',
};

const CHECK_LABELS: Record<string, string> = {
  quote_found: 'quote found in the page read',
  page_read: 'page read (no quote given)',
  quote_not_found: 'quote not found in the page read',
  not_read: 'never read in this task',
};

function sourcesFor(row: SourcedRow, column: string): RowSource[] {
  return (row._sources ?? []).filter((s) => !s.fields || s.fields.includes(column));
}

/**
 * Where the sources panel opens: under its mark, or above it when there is more room there, and
 * always wholly inside the window (on a phone too): its height is capped by the room it has, and
 * it scrolls within. The table may scroll sideways beneath it.
 */
function panelPlace(mark: HTMLElement): { top?: string; bottom?: string; left: string; width: string; maxHeight: string } {
  const box = mark.getBoundingClientRect();
  const margin = 8;
  const width = Math.min(384, window.innerWidth - 2 * margin);
  const left = Math.max(margin, Math.min(box.left - 16, window.innerWidth - width - margin));
  const below = window.innerHeight - box.bottom - 4 - margin;
  const above = box.top - 4 - margin;
  if (below >= Math.min(240, above)) return { top: `${box.bottom + 4}px`, left: `${left}px`, width: `${width}px`, maxHeight: `${Math.max(below, 80)}px` };
  return { bottom: `${window.innerHeight - box.top + 4}px`, left: `${left}px`, width: `${width}px`, maxHeight: `${above}px` };
}

function SourceMark(props: { column: string; sources: RowSource[]; basis: { confidence: string; reasoning?: string | null } | undefined; support: CellSupport | undefined }) {
  const { column, sources, basis, support } = props;
  const [place, setPlace] = useState<ReturnType<typeof panelPlace> | null>(null);
  const panel = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  const open = place !== null;
  useEffect(() => {
    if (!open) return;
    const close = (e: Event) => {
      if (e instanceof KeyboardEvent && e.key !== 'Escape') return;
      if (e instanceof MouseEvent && (panel.current?.contains(e.target as Node) || button.current?.contains(e.target as Node))) return;
      setPlace(null);
      if (e instanceof KeyboardEvent) button.current?.focus();
    };
    // The panel stays where it opened: moving the page closes it rather than leaving it behind.
    const moved = (e: Event) => {
      // A resize comes from the window, which no panel contains.
      if (!(e.target instanceof Node) || !panel.current?.contains(e.target)) setPlace(null);
    };
    document.addEventListener('keydown', close);
    document.addEventListener('mousedown', close);
    window.addEventListener('scroll', moved, true);
    window.addEventListener('resize', moved);
    return () => {
      document.removeEventListener('keydown', close);
      document.removeEventListener('mousedown', close);
      window.removeEventListener('scroll', moved, true);
      window.removeEventListener('resize', moved);
    };
  }, [open]);
  const verified = sources.filter((s) => s.verified).length;
  const allVerified = verified === sources.length;
  const supportWords = support && support !== 'unchecked' ? `, ${SUPPORT_WORDS[support]}` : '';
  const label = `${column}: ${sources.length} source${sources.length === 1 ? '' : 's'}, ${allVerified ? 'verified' : `${sources.length - verified} not verified`}${supportWords}`;
  // A verified source whose quote does not hold the value is not a ✓: the value is in doubt.
  const look = !allVerified ? { mark: '!', tone: 'mark-unverified' } : support === 'unsupported' ? { mark: '≠', tone: 'mark-unsupported' } : { mark: '✓', tone: 'mark-verified' };
  const hover = sources.map((s) => (s.quote ? `“${s.quote}”` : (s.title ?? s.url ?? s.upload_id))).join('\n');
  return (
    <>
      <button
        ref={button}
        type="button"
        class={`mark ${look.tone}`}
        aria-label={label}
        aria-expanded={open}
        title={hover}
        onClick={() => setPlace(open ? null : panelPlace(button.current!))}
      >
        {look.mark}
      </button>
      {place && (
        <div ref={panel} class="sources" role="group" aria-label={`Sources of ${column}`} style={place}>
          {basis && <p class="basis">Confidence: <strong>{basis.confidence}</strong>{basis.reasoning ? ` — ${basis.reasoning}` : ''}</p>}
          <ul>
            {sources.map((s, i) => (
              <li key={i}>
                <span class={s.verified ? 'ok' : 'warn'}>{s.verified ? 'Verified' : 'Not verified'}</span>
                {s.check && <span class="hint"> · {CHECK_LABELS[s.check] ?? s.check}</span>}
                {supportsOf(s, column) === true && <span class="ok"> · holds this value</span>}
                {supportsOf(s, column) === false && <span class="bad"> · does not hold this value</span>}
                <div>
                  {s.url ? <a href={s.url} target="_blank" rel="noopener noreferrer">{s.title ?? s.url}</a> : <span>{s.title ?? `upload ${s.upload_id}`}</span>}
                </div>
                {s.quote && <blockquote>{s.quote}</blockquote>}
              </li>
            ))}
          </ul>
        </div>
      )}
    </>
  );
}

/** A cell's value: a web address as a link (it opens in a new tab), anything else as its text. */
function CellValue(props: { value: unknown }) {
  const text = cellText(props.value);
  if (typeof props.value === 'string' && /^https?:\/\/\S+$/.test(props.value)) return <a href={props.value} target="_blank" rel="noopener noreferrer">{text}</a>;
  return <>{text}</>;
}

export function RowsTable(props: { groups: ColumnGroup[]; rows: SourcedRow[]; caption: string; rowKey: (row: SourcedRow, index: number) => string; empty?: string }) {
  const { groups, rows } = props;
  const labelled = groups.some((g) => g.label);
  /** Each column with whether it opens a group after the first (drawn with a line before it). */
  const columns = groups.flatMap((group, g) => group.columns.map((column, i) => ({ ...column, starts: labelled && g > 0 && i === 0 })));
  const edge = (starts: boolean) => (starts ? 'group-start' : undefined);
  return (
    <div class="table-scroll" tabIndex={0} role="region" aria-label={props.caption}>
      <table>
        <caption class="visually-hidden">{props.caption}</caption>
        {groups.map((group, g) => <colgroup key={g} span={group.columns.length} class={group.class} />)}
        <thead>
          {labelled && (
            <tr>
              {groups.map((group, g) => group.label
                ? <th key={g} scope="colgroup" colSpan={group.columns.length} class={edge(g > 0)}>{group.label}</th>
                : group.columns.map((column, i) => <th key={column.key} scope="col" rowSpan={2} class={edge(g > 0 && i === 0)}>{column.key}</th>))}
            </tr>
          )}
          <tr>
            {groups.flatMap((group, g) => (labelled && !group.label ? [] : group.columns.map((column, i) => (
              <th key={column.key} scope="col" class={edge(labelled && g > 0 && i === 0)}>{column.key}</th>
            ))))}
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 && props.empty && (
            <tr>
              <td colSpan={columns.length} class="hint">{props.empty}</td>
            </tr>
          )}
          {rows.map((row, i) => (
            <tr key={props.rowKey(row, i)}>
              {columns.map((column) => {
                const sources = (column.sourced ?? !column.key.startsWith('_')) ? sourcesFor(row, column.key) : [];
                return (
                  <td key={column.key} class={edge(column.starts)}>
                    <span class="cell">{column.render ? column.render(row) : <CellValue value={row[column.key]} />}</span>
                    {sources.length > 0 && <SourceMark column={column.key} sources={sources} basis={row._basis?.[column.key]} support={row._support?.[column.key]} />}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
