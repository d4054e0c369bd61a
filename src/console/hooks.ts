import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { messageOf, type CursorPage } from './api.js';

export interface Loaded<T> {
  data: T | undefined;
  /** The API's message when the last load failed. */
  error: string | undefined;
  reload: () => void;
}

/**
 * Loads `load()` when `deps` change, again every `refreshMs` when given (the page's live view),
 * and on `reload()`. A load that is overtaken by another is dropped, so answers never arrive out
 * of order.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], refreshMs?: number): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const latest = useRef(0);
  const run = useCallback(() => {
    const ticket = ++latest.current;
    load().then(
      (value) => {
        if (ticket !== latest.current) return;
        setData(value);
        setError(undefined);
      },
      (err: unknown) => {
        if (ticket === latest.current) setError(messageOf(err));
      },
    );
  }, deps);
  // The last answer stays shown while the next loads: a live view does not flicker.
  useEffect(() => {
    run();
    if (!refreshMs) return () => void latest.current++;
    const timer = setInterval(run, refreshMs);
    return () => {
      clearInterval(timer);
      latest.current++;
    };
  }, [run, refreshMs]);
  return { data, error, reload: run };
}

/** Runs an action a button started: busy while it runs, the API's message if it fails. */
export function useAction(): { busy: boolean; error: string | undefined; run: (action: () => Promise<unknown>) => Promise<boolean>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const run = useCallback(async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      return true;
    } catch (err) {
      setError(messageOf(err));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(undefined) };
}

/** The API's largest page (`limit` of `GET /task` and `GET /group`). */
const MAX_PAGE = 200;

export interface PagedList<T> {
  /** The items shown, in the API's order; undefined until the first page has arrived. */
  items: T[] | undefined;
  /** The API's message when the last read failed. */
  error: string | undefined;
  /** Whether the API has items after the last one shown. */
  more: boolean;
  /** Whether a "Show more" is being read. */
  loadingMore: boolean;
  showMore: () => void;
  reload: () => void;
}

/** The items in order, each key once (the first time it comes). */
function unique<T>(items: T[], keyOf: (item: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const key = keyOf(item);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * A list the API pages by cursor (`X-Next-Cursor`), shown `pageSize` items at first: `showMore()`
 * reads the page after the last item shown, and every `refreshMs` the list is read again from
 * its top, as many items as are shown (in pages of up to 200). Reading from the top rather than
 * page by page keeps a live list true to the API's order: an item that moved up (a task just
 * updated or pinned) is shown once, in its new place, and the cursor for the next "Show more" is
 * the one after the last item shown.
 */
export function usePagedList<T>(
  fetchPage: (limit: number, cursor: string | undefined) => Promise<CursorPage<T>>,
  keyOf: (item: T) => string,
  deps: unknown[],
  options: { pageSize: number; refreshMs: number },
): PagedList<T> {
  const { pageSize, refreshMs } = options;
  const [list, setList] = useState<{ items: T[]; next: string | null } | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loadingMore, setLoadingMore] = useState(false);
  /** How many items the reader asked to see: the first page, and a page more for each "Show more". */
  const wanted = useRef(pageSize);
  const shown = useRef(list);
  shown.current = list;
  const latest = useRef(0);
  const moreInFlight = useRef(false);

  const refresh = useCallback(() => {
    // A "Show more" being read lands first; the next refresh reads its page again with the rest.
    if (moreInFlight.current) return;
    const ticket = ++latest.current;
    const read = async () => {
      const items: T[] = [];
      let next: string | null = null;
      do {
        const page: CursorPage<T> = await fetchPage(Math.min(MAX_PAGE, wanted.current - items.length), next ?? undefined);
        items.push(...page.data);
        next = page.nextCursor;
      } while (next !== null && items.length < wanted.current);
      return { items: unique(items, keyOf), next };
    };
    read().then(
      (value) => {
        if (ticket !== latest.current) return;
        setList(value);
        setError(undefined);
      },
      (err: unknown) => {
        if (ticket === latest.current) setError(messageOf(err));
      },
    );
  }, deps);

  const showMore = useCallback(() => {
    const current = shown.current;
    if (!current?.next || moreInFlight.current) return;
    moreInFlight.current = true;
    setLoadingMore(true);
    // A refresh still in flight was asked for fewer items: its answer is dropped.
    const ticket = ++latest.current;
    fetchPage(pageSize, current.next)
      .then(
        (page) => {
          if (ticket !== latest.current) return;
          const items = unique([...current.items, ...page.data], keyOf);
          wanted.current = Math.max(pageSize, items.length);
          setList({ items, next: page.nextCursor });
          setError(undefined);
        },
        (err: unknown) => {
          if (ticket === latest.current) setError(messageOf(err));
        },
      )
      .finally(() => {
        moreInFlight.current = false;
        setLoadingMore(false);
      });
  }, [...deps, pageSize]);

  useEffect(() => {
    refresh();
    const timer = setInterval(refresh, refreshMs);
    return () => {
      clearInterval(timer);
      latest.current++;
    };
  }, [refresh, refreshMs]);

  return { items: list?.items, error, more: Boolean(list?.next), loadingMore, showMore, reload: refresh };
}

/**
 * A wait that the page can cut short: a live view sleeps between polls, and an action taken on
 * the page (a turn started, a group retried) wakes it to follow at once.
 */
export class Sleeper {
  private wakeUp: () => void = () => {};

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  wake(): void {
    this.wakeUp();
  }
}
