/**
 * SQLite only: the hottest reads (the /state poll, the list's keys and output pages) run
 * synchronously on a second, read-only connection. PostgreSQL needs no such thing: its pool already reads beside
 * transactions in progress, and other processes write to it, so there is no commit this process
 * could count on to tell when a cached read goes stale.
 *
 * Writes (and every read inside a transaction) go through Kysely on the writing connection. WAL
 * gives the read connection the last committed snapshot, so it neither waits behind a
 * transaction in progress nor sees one's uncommitted writes, and it skips Kysely's per-query
 * promises.
 *
 * /state records are also kept in memory (the last error parsed) until the next change: this
 * process is the only writer of an embedded database, and every commit (and every write outside
 * a transaction) empties the cache, so a cached record is never older than the last commit.
 * Between commits, polls cost no query and no parse at all.
 */
import { isDeepStrictEqual } from 'node:util';
import type SQLite from 'better-sqlite3';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';
import type { DialectProfile } from '../sql/dialect-profile.js';
import { rowsQuery, SqlRows } from '../sql/rows.js';
import { SqlTasks, taskListQuery, taskListShape, taskStateQuery, toTaskState, type StateRow } from '../sql/tasks.js';
import type { TaskListFilter, TaskStateRecord } from '../../domain/records.js';
import type { TaskListCursor, TaskListEntry, TaskListPage } from '../store.js';

/** How many /state rows are kept between writes. */
const STATE_CACHE_SIZE = 10_000;

export class SqliteReads {
  private statements: { state: SQLite.Statement; rows: SQLite.Statement } | undefined;
  private readonly states = new Map<string, TaskStateRecord | null>();
  /** The list's statements by shape (first page or after a cursor; single tasks or a group's runs). */
  private readonly listStatements = new Map<string, SQLite.Statement>();

  constructor(
    private readonly reader: SQLite.Database,
    /** The writing connection's Kysely: it compiles the statements, so both connections run the same SQL. */
    readonly root: Kysely<Database>,
    readonly profile: DialectProfile,
  ) {}

  /** Called whenever a change may have become visible to the read connection. */
  forget(): void {
    if (this.states.size > 0) this.states.clear();
  }

  /** Prepared on first use: the tables exist only once migrations ran. The SQL is the repositories' own. */
  private prepared() {
    return (this.statements ??= {
      state: this.reader.prepare(taskStateQuery(this.root, '').compile().sql),
      rows: this.reader.prepare(rowsQuery(this.root, this.profile, '', '', 0, 0).compile().sql).pluck(),
    });
  }

  /** The state as read at the last commit: shared between polls, so read, never changed. */
  taskState(id: string): Readonly<TaskStateRecord> | undefined {
    let state = this.states.get(id);
    if (state === undefined) {
      const row = this.prepared().state.get(id) as StateRow | undefined;
      state = row ? toTaskState(row) : null;
      if (this.states.size >= STATE_CACHE_SIZE) this.states.clear();
      this.states.set(id, state);
    }
    return state ?? undefined;
  }

  /**
   * better-sqlite3 builds a JS string for every text value it returns, and those were most of
   * a page's cost: each row comes back as one string of its four values (the list's ids and
   * timestamps hold no spaces), which cut the statement from about 57 µs to 22 µs a page.
   */
  taskListPage(accountId: string, limit: number, after?: TaskListCursor, filter: TaskListFilter = {}): TaskListPage {
    const { shape, parameters } = taskListShape(accountId, limit + 1, after, filter);
    let statement = this.listStatements.get(shape);
    if (!statement) {
      const compiled = taskListQuery(this.root, this.profile, accountId, limit + 1, after, filter)
        .select(sql<string>`version || ' ' || pinned || ' ' || updated_at || ' ' || id`.as('packed')).compile();
      if (!isDeepStrictEqual(compiled.parameters, parameters)) throw new Error(`statement "${shape}": its parameters are not the values it binds`);
      statement = this.reader.prepare(compiled.sql).pluck();
      this.listStatements.set(shape, statement);
    }
    const packed = statement.all(...parameters) as string[];
    const page = packed.length > limit ? packed.slice(0, limit) : packed;
    const last = page[page.length - 1];
    return { tasks: page.map(entryOf), ...(packed.length > limit && last ? { next: cursorOf(last) } : {}) };
  }

  rows(taskId: string, outputId: string, offset: number, limit: number): Buffer[] {
    return this.prepared().rows.all(taskId, outputId, offset, offset + limit) as Buffer[];
  }

  close(): void {
    this.reader.close();
  }
}

/** A packed list row's id and version (`version pinned updated_at id`). */
function entryOf(packed: string): TaskListEntry {
  return { id: packed.slice(packed.lastIndexOf(' ') + 1), version: Number(packed.slice(0, packed.indexOf(' '))) };
}

/** Where the page after a packed list row starts. */
function cursorOf(packed: string): TaskListCursor {
  const [, pinned, updatedAt, id] = packed.split(' ');
  return { pinned: pinned === '1', updatedAt: updatedAt!, id: id! };
}

/** `store.tasks` outside transactions: the /state poll and the list's pages from the read connection. */
export class SqliteTasks extends SqlTasks {
  constructor(private readonly reads: SqliteReads) {
    super(reads.root, reads.profile);
  }

  override getState(id: string): TaskStateRecord | undefined {
    return this.reads.taskState(id);
  }

  override async listPage(accountId: string, limit: number, after?: TaskListCursor, filter?: TaskListFilter): Promise<TaskListPage> {
    return this.reads.taskListPage(accountId, limit, after, filter);
  }
}

/** `store.rows` outside transactions: output pages (and so exports) from the read connection. */
export class SqliteRows extends SqlRows {
  constructor(private readonly reads: SqliteReads) {
    super(reads.root, reads.profile);
  }

  override async read(taskId: string, outputId: string, offset: number, limit: number): Promise<Buffer[]> {
    return this.reads.rows(taskId, outputId, offset, limit);
  }
}
