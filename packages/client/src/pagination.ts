/**
 * Pages of a list and the promise of the first one. A {@link PagePromise} is awaited for one
 * page, or iterated with `for await` for every item of every page, fetching the next page only
 * when the items of the current one are used up.
 */

/**
 * One page of a list. Iterating it with `for await` yields its items and then those of every
 * following page.
 *
 * @example
 * ```ts
 * let page = await client.tasks.list({ limit: 50 });
 * console.log(page.data.length);
 * while (page.hasNextPage()) page = await page.getNextPage();
 * ```
 */
export class Page<T> implements AsyncIterable<T> {
  /** @internal */
  constructor(
    /** The items of this page. */
    readonly data: T[],
    private readonly loadNext: (() => Promise<Page<T>>) | null,
  ) {}

  /** Whether another page follows. */
  hasNextPage(): boolean {
    return this.loadNext !== null;
  }

  /**
   * Fetches the next page; throws when there is none (check {@link Page.hasNextPage} first).
   *
   * @example
   * ```ts
   * const second = first.hasNextPage() ? await first.getNextPage() : undefined;
   * ```
   */
  getNextPage(): Promise<this> {
    if (!this.loadNext) return Promise.reject(new Error('This is the last page: check hasNextPage() first.'));
    return this.loadNext() as Promise<this>;
  }

  /**
   * This page, then every following page.
   *
   * @example
   * ```ts
   * for await (const page of (await client.tasks.list({ limit: 200 })).iterPages()) console.log(page.data.length);
   * ```
   */
  async *iterPages(): AsyncGenerator<this> {
    yield this;
    let page = this.hasNextPage() ? await this.getNextPage() : undefined;
    while (page) {
      yield page;
      page = page.hasNextPage() ? await page.getNextPage() : undefined;
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for await (const page of this.iterPages()) yield* page.data;
  }
}

/**
 * A page of a list paged by `X-Next-Cursor` (`GET /task`, a webhook's deliveries): `nextCursor`
 * is the cursor the server sent (null on the last page).
 *
 * @example
 * ```ts
 * const page = await client.tasks.list({ limit: 20 });
 * const again = await client.tasks.list({ limit: 20, cursor: page.nextCursor ?? undefined });
 * ```
 */
export class CursorPage<T> extends Page<T> {
  /** @internal */
  constructor(data: T[], readonly nextCursor: string | null, loadNext: (() => Promise<CursorPage<T>>) | null) {
    super(data, loadNext);
  }
}

/**
 * The page of `GET /task`: a {@link CursorPage}, under the name it had before other lists were
 * paged by cursor.
 *
 * @example
 * ```ts
 * const page: TaskPage<Task> = await client.tasks.list();
 * ```
 */
export const TaskPage = CursorPage;
export type TaskPage<T> = CursorPage<T>;

/**
 * @internal The first page of a list paged by `X-Next-Cursor`, not yet fetched: `fetchPage`
 * sends one request for the page at `cursor` (undefined: the first) and says its items and
 * the `X-Next-Cursor` it got.
 */
export function cursorPages<T>(
  fetchPage: (cursor: string | undefined) => Promise<{ data: T[]; nextCursor: string | null }>,
  cursor?: string,
): PagePromise<CursorPage<T>, T> {
  const load = async (at: string | undefined): Promise<CursorPage<T>> => {
    const { data, nextCursor } = await fetchPage(at);
    return new CursorPage(data, nextCursor, nextCursor ? () => load(nextCursor) : null);
  };
  return new PagePromise(() => load(cursor));
}

/**
 * A page of rows: `total` rows in the output, this page starting at `offset`.
 *
 * @example
 * ```ts
 * const page = await client.tasks.rows(taskId, { output: 'makers', pageSize: 500 });
 * console.log(`${page.data.length} of ${page.total} rows of ${page.output?.id}`);
 * ```
 */
export class RowPage<T, O> extends Page<T> {
  /** @internal */
  constructor(data: T[], readonly total: number, readonly offset: number, readonly output: O, loadNext: (() => Promise<RowPage<T, O>>) | null) {
    super(data, loadNext);
  }
}

/**
 * A page of the event history: `nextAfter` is the `after` of the next page (null when this page
 * was not full).
 *
 * @example
 * ```ts
 * for await (const event of client.tasks.events(taskId, { after: 0 })) console.log(event.seq, event.type);
 * ```
 */
export class EventPage<T> extends Page<T> {
  /** @internal */
  constructor(data: T[], readonly nextAfter: number | null, loadNext: (() => Promise<EventPage<T>>) | null) {
    super(data, loadNext);
  }
}

/**
 * The first page of a list, not yet fetched: `await` it for the page, or `for await` over it for
 * every item of every page. Nothing is sent until one of the two happens.
 *
 * @example
 * ```ts
 * for await (const task of client.tasks.list({ limit: 200 })) console.log(task.task_id);
 * const firstPage = await client.tasks.list();
 * ```
 */
export class PagePromise<P extends Page<T>, T> implements Promise<P>, AsyncIterable<T> {
  private loaded: Promise<P> | undefined;
  readonly [Symbol.toStringTag] = 'PagePromise';

  /** @internal */
  constructor(private readonly load: () => Promise<P>) {}

  private page(): Promise<P> {
    this.loaded ??= this.load();
    return this.loaded;
  }

  then<R1 = P, R2 = never>(onfulfilled?: ((value: P) => R1 | PromiseLike<R1>) | null, onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null): Promise<R1 | R2> {
    return this.page().then(onfulfilled, onrejected);
  }

  catch<R = never>(onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null): Promise<P | R> {
    return this.page().catch(onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<P> {
    return this.page().finally(onfinally);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    yield* await this.page();
  }
}
