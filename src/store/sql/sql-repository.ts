/**
 * What every repository of sql/ stands on: the Kysely handle (the root, or one transaction), the
 * dialect profile, and runCompiled, the one way to run a hot statement.
 */
import { isDeepStrictEqual } from 'node:util';
import { sql, type Compilable, type CompiledQuery, type Kysely, type QueryResult, type Transaction, type Updateable } from 'kysely';
import type { Database } from '../database.js';
import type { DialectProfile } from './dialect-profile.js';

/** A handle statements run on: the store's root (each statement on its own) or a transaction. */
export type SqlHandle = Kysely<Database> | Transaction<Database>;

/**
 * Runs compiled SQL on the connection a transaction holds, synchronously and without Kysely's
 * executor (its connection hand-off, plugins and result transform cost about 3.5 µs a
 * statement, as much as a one-row statement itself). SQLite's: its transactions have the one
 * writer connection to themselves, so a statement run on it straight away runs inside the
 * transaction and nothing else can interleave.
 */
export type RunInTransaction = <R>(sql: string, parameters: readonly unknown[]) => QueryResult<R>;

/**
 * Ends a statement whose best plan depends on how many rows its tables hold at that moment
 * (a walk of every waiting turn of an account, or none): PostgreSQL plans it on each run instead of
 * keeping a plan made while the tables were small (src/store/postgres/prepared-statements.ts).
 */
export const PLANNED_EACH_RUN = '/* planned each run */';

const COMPILED_SHAPES_MAX = 256;
/** The statements of runCompiled, by dialect and shape, shared by every repository and transaction. */
const compiledByDialect: Partial<Record<DialectProfile['kind'], Map<string, CompiledQuery>>> = {};

export abstract class SqlRepository {
  // Declared and assigned by hand, not as parameter properties: those compile to class fields
  // (ES2022), and a transaction builds every repository, where field set-up showed in profiles.
  protected declare readonly db: SqlHandle;
  protected declare readonly profile: DialectProfile;
  /** Set when `db` is a transaction whose statements may run straight on its connection. */
  private declare readonly runInTransaction: RunInTransaction | undefined;

  constructor(db: SqlHandle, profile: DialectProfile, runInTransaction?: RunInTransaction) {
    this.db = db;
    this.profile = profile;
    this.runInTransaction = runInTransaction;
  }

  /**
   * Runs a hot statement (the /state poll, output pages, the create-and-turn path). Kysely
   * builds and compiles it once per `shape` (a name plus whatever changes its SQL, such as the
   * columns set); later calls reuse that SQL with their own `parameters`: the values `build`
   * binds, in the order it binds them. For one-row statements, building costs as much CPU as the
   * database's own work. The first build of each shape checks the order, so a mismatch fails the
   * first test that runs it.
   */
  protected async runCompiled<R>(shape: string, parameters: readonly unknown[], build: () => Compilable<R>): Promise<QueryResult<R>> {
    const compiledByShape = (compiledByDialect[this.profile.kind] ??= new Map());
    let compiled = compiledByShape.get(shape) as CompiledQuery<R> | undefined;
    if (!compiled) {
      compiled = build().compile();
      if (!isDeepStrictEqual(compiled.parameters, parameters)) throw new Error(`statement "${shape}": its parameters are not the values it binds`);
      // Shapes are few (column sets the code uses, small event batches); the cap bounds the rest.
      if (compiledByShape.size < COMPILED_SHAPES_MAX) compiledByShape.set(shape, compiled);
    }
    if (this.runInTransaction) return this.runInTransaction<R>(compiled.sql, parameters);
    return this.db.executeQuery<R>({ ...compiled, parameters });
  }

  /**
   * Sets the columns of `row` on the row `id` of `table` (a task or a turn, changed a few columns
   * at a time): one compiled statement per set of columns. `raised` names a counter column the
   * same statement adds one to (a task's version). Nothing to set runs nothing.
   */
  protected async updateById<T extends 'tasks' | 'turns'>(table: T, id: string, row: Updateable<Database[T]>, raised?: 'version'): Promise<void> {
    const columns = Object.keys(row);
    if (columns.length === 0) return;
    // Kysely types a statement over one table known when it is written; the row was typed
    // against its own table by the caller, so the statement is typed as if on tasks.
    const sameShape = this.db as Kysely<Database>;
    await this.runCompiled(`${table}.update:${columns}${raised ? `:+${raised}` : ''}`, [...Object.values(row), id], () => {
      const set = sameShape.updateTable(table as 'tasks').set(row as Updateable<Database['tasks']>);
      return (raised ? set.set(raised, (eb) => eb(raised, '+', sql.lit(1))) : set).where('id', '=', id);
    });
  }
}
