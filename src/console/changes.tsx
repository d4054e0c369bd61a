/**
 * What a task's turns changed in its keyed table outputs (decisions §19, `GET /task/{id}/changes`):
 * each added or changed row by its key, every changed cell with its value before and after, and
 * the quotes behind the row before and after. Newest turns' changes are read again when a turn ends.
 */
import { useRef } from 'preact/hooks';
import type { RowChange, RowSource } from './api.js';
import { usePagedList } from './hooks.js';
import { useSession } from './session.js';
import { cellText, ErrorNote, ShowMore, StatusBadge, Time } from './ui.js';

const CHANGES_PER_PAGE = 50;
/** How often the changes are read again while the page is open: a cron tick may add some. */
const REFRESH_MS = 10_000;

/** The quotes of a row's sources (or their pages' titles when they gave no quote). */
function Quotes(props: { sources: RowSource[] | null }) {
  if (!props.sources || props.sources.length === 0) return <span class="hint">none</span>;
  return (
    <ul class="quotes">
      {props.sources.map((s, i) => (
        <li key={i}>
          {s.quote ? <q>{s.quote}</q> : <span class="hint">no quote</span>}{' '}
          {s.url ? <a href={s.url} target="_blank" rel="noopener noreferrer">{s.title ?? s.url}</a> : <span>{s.title ?? s.upload_id}</span>}
        </li>
      ))}
    </ul>
  );
}

export function Changes(props: { taskId: string; version: number }) {
  const { client } = useSession();
  const list = usePagedList(
    (limit, cursor) => client.tasks.changes(props.taskId, { limit, cursor }),
    (change) => `${change.turn_id}/${change.output}/${JSON.stringify(change.key)}`,
    [client, props.taskId, props.version],
    { pageSize: CHANGES_PER_PAGE, refreshMs: REFRESH_MS },
  );
  const body = useRef<HTMLTableSectionElement>(null);
  return (
    <>
      <ErrorNote message={list.error} />
      {list.items && list.items.length === 0 && <p class="hint">No changes yet: a turn that adds or changes a keyed row is listed here.</p>}
      {list.items && list.items.length > 0 && (
        <div class="table-scroll" role="region" aria-label="Changes" tabIndex={0}>
          <table class="changes">
            <caption class="visually-hidden">Changes</caption>
            <thead>
              <tr><th scope="col">When</th><th scope="col">Row</th><th scope="col">Change</th><th scope="col">Cells, before → after</th><th scope="col">Quotes before</th><th scope="col">Quotes after</th></tr>
            </thead>
            <tbody ref={body}>
              {list.items.map((change: RowChange) => (
                <tr key={`${change.turn_id}/${change.output}/${JSON.stringify(change.key)}`}>
                  <td><Time at={change.at} /></td>
                  <td><span class="mono">{change.output}</span> {Object.entries(change.key).map(([k, v]) => `${k} ${cellText(v)}`).join(', ')}</td>
                  <td><StatusBadge status={change.change} tone={change.change === 'added' ? 'completed' : change.change === 'changed' ? 'running' : 'waiting'} /></td>
                  <td>
                    {Object.keys(change.fields).length === 0 ? <span class="hint">not written again by this run</span> : (
                      <ul class="cell-changes">
                        {Object.entries(change.fields).map(([column, f]) => (
                          <li key={column}>
                            <span class="mono">{column}</span>: {change.change === 'added' ? '' : <><del>{cellText(f.before) || '—'}</del> → </>}<ins>{cellText(f.after) || '—'}</ins>
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                  <td><Quotes sources={change.sources.before} /></td>
                  <td><Quotes sources={change.sources.after} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ShowMore list={list} cards={body} noun="changes" />
    </>
  );
}
