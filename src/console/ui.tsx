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
 * starts at the new page's top rather than on a link of the old one. The tab's title says the
 * page too (`tabTitle`, else the heading's text).
 */
export function PageTitle(props: { children: ComponentChildren; tabTitle?: string }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useTitle(props.tabTitle ?? (typeof props.children === 'string' ? props.children : undefined));
  useEffect(() => ref.current?.focus(), []);
  return <h1 tabIndex={-1} ref={ref}>{props.children}</h1>;
}

/**
 * The five states every page shows in one way (docs/console.md, "Design rules"): each has one
 * colour, and its word is always written, so no state is told by colour alone.
 */
export type Tone = 'completed' | 'failed' | 'stopped' | 'running' | 'waiting' | 'neutral';

const RUNNING_ACTIVITIES = new Set(['thinking', 'executing', 'planning']);

/** What a task is doing while a turn runs (`thinking` …), `queued` before a worker takes it; else null. */
export function taskActivity(task: Pick<Task, 'status' | 'activity'>): string | null {
  if (task.status === 'deleted') return 'deleted';
  if (task.status !== 'execute') return null;
  return task.activity && task.activity !== 'idle' ? task.activity : 'waiting';
}

/**
 * A task's word: what its turn is doing while one runs, else how its last turn ended (`planned`
 * for a plan never executed, `new` before any turn ended).
 */
export function taskState(task: Task, planned = false): string {
  const activity = taskActivity(task);
  if (activity) return activity;
  const outcome = task.last_turn?.outcome;
  if (planned && outcome === 'completed') return 'planned';
  return outcome ?? 'new';
}

/** A word's colour: outcomes as they are, activities as running, the rest as waiting or neutral. */
export function toneOf(word: string): Tone {
  if (word === 'completed' || word === 'finished' || word === 'delivered') return 'completed';
  if (word === 'failed' || word === 'dead' || word === 'refused') return 'failed';
  if (word === 'stopped') return 'stopped';
  if (RUNNING_ACTIVITIES.has(word) || word === 'running') return 'running';
  if (word === 'waiting' || word === 'pending' || word === 'queued' || word === 'retrying') return 'waiting';
  return 'neutral';
}

/** A state: its word in its colour (`tone` when the word alone does not say it). */
export function StatusBadge(props: { status: string; tone?: Tone; label?: string }) {
  return <span class={`badge tone-${props.tone ?? toneOf(props.status)}`} aria-label={props.label}>{props.status}</span>;
}

/** A time: the clock today, the date too on another day; the exact time on hover. */
export function Time(props: { at: string | null | undefined; seconds?: boolean }) {
  if (!props.at) return <span>—</span>;
  const date = new Date(props.at);
  const today = new Date().toDateString() === date.toDateString();
  const clock: Intl.DateTimeFormatOptions = { hour: '2-digit', minute: '2-digit', ...(props.seconds ? { second: '2-digit' } : {}) };
  const text = today ? date.toLocaleTimeString(undefined, clock) : date.toLocaleString(undefined, { dateStyle: 'medium', ...clock });
  return <time dateTime={props.at} title={date.toLocaleString()}>{text}</time>;
}

export { duration } from './duration.js';

/** The tab's title while a page is shown: what the page is, then Quarry. */
export function useTitle(title: string | undefined): void {
  useEffect(() => {
    if (title) document.title = `${title} · Quarry`;
  }, [title]);
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
    if (count > from) cards.current?.children[from]?.querySelector<HTMLElement>('a, button')?.focus();
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
