/** Small pieces every page uses. */
import type { ComponentChildren, RefObject } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { Task } from './api.js';
import type { PagedList } from './hooks.js';

/** A failure, in the API's words; announced to screen readers as it appears. */
export function ErrorNote(props: { message: string | undefined }) {
  if (!props.message) return null;
  return <p class="error" role="alert">{props.message}</p>;
}

/**
 * The page's heading. It takes the focus when a page opens, so a keyboard or screen-reader user
 * starts at the new page's top rather than on a link of the old one.
 */
export function PageTitle(props: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return <h1 tabIndex={-1} ref={ref}>{props.children}</h1>;
}

/** What a task is doing: `thinking`, `executing`, … while a turn runs; else `idle` or `deleted`. */
export function taskActivity(task: Pick<Task, 'status' | 'activity'>): string {
  if (task.status === 'deleted') return 'deleted';
  return task.activity ?? 'idle';
}

export function StatusBadge(props: { status: string }) {
  return <span class={`badge badge-${props.status}`}>{props.status}</span>;
}

/** A time as the reader's locale writes it, with the exact time in the element. */
export function Time(props: { at: string | null | undefined }) {
  if (!props.at) return <span>—</span>;
  const date = new Date(props.at);
  return <time dateTime={props.at} title={props.at}>{date.toLocaleString()}</time>;
}

export { credits } from './credits.js';

/** A JSON value as one cell's text. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Previous/next through rows `offset`…, `perPage` at a time, of `total`. */
export function Pager(props: { offset: number; perPage: number; total: number; onChange: (offset: number) => void }) {
  const { offset, perPage, total, onChange } = props;
  if (total <= perPage) return null;
  return (
    <div class="pager">
      <button type="button" class="secondary" disabled={offset === 0} onClick={() => onChange(Math.max(0, offset - perPage))}>Previous rows</button>
      <span>{offset + 1}–{Math.min(offset + perPage, total)} of {total}</span>
      <button type="button" class="secondary" disabled={offset + perPage >= total} onClick={() => onChange(offset + perPage)}>Next rows</button>
    </div>
  );
}

/**
 * Under a list paged by the API: how many items are shown, and "Show more" while the API has
 * more. The focus then moves to the first item read, so a keyboard user reads on where the list
 * grew rather than from a button that may be gone.
 */
export function ShowMore(props: { list: PagedList<unknown>; cards: RefObject<HTMLElement>; noun: string }) {
  const { list, cards, noun } = props;
  const count = list.items?.length ?? 0;
  /** Where the items read by the last "Show more" begin, until they are shown. */
  const firstNew = useRef<number | null>(null);
  useEffect(() => {
    if (firstNew.current === null || list.loadingMore) return;
    const from = firstNew.current;
    firstNew.current = null;
    if (count > from) cards.current?.children[from]?.querySelector('a')?.focus();
  }, [count, list.loadingMore]);
  if (count === 0) return null;
  return (
    <div class="pager">
      <span class="hint">{count} {noun} shown</span>
      {list.more && (
        <button
          type="button"
          class="secondary"
          aria-busy={list.loadingMore}
          onClick={() => {
            firstNew.current = count;
            list.showMore();
          }}
        >
          Show more<span class="visually-hidden"> {noun}</span>
        </button>
      )}
    </div>
  );
}
