/**
 * PostgreSQL only: the pool's connections run each parameterized statement as a named prepared
 * statement, so the server parses and plans a statement's text once per connection instead of on
 * every run. Quarry's statements are a small set of texts (Kysely binds every value as a
 * parameter, and runCompiled reuses the SQL of each shape); measured here, a one-row UPDATE or
 * SELECT cost PostgreSQL about 30 µs of CPU less a run (75–79 µs against 106–112 µs), and a turn
 * runs some twenty of them.
 *
 * The names are shared by every connection of the process and capped: texts past the cap (an
 * `IN` list of a length never seen before, say) run unnamed as before, and so do texts that end
 * with PLANNED_EACH_RUN (their best plan changes with their tables' size). A prepared statement whose
 * table changed shape under it (another process migrated the schema) fails with "cached plan must
 * not change result type"; that failure clears the names, so the next run of any statement
 * prepares it afresh under a new name.
 */
import pg from 'pg';
import { PLANNED_EACH_RUN } from '../sql/sql-repository.js';

/** Distinct statement texts given a name; beyond it, statements run unnamed. */
const MAX_NAMED = 1000;

class StatementNames {
  private names = new Map<string, string>();
  private generation = 0;

  nameOf(text: string): string | undefined {
    let name = this.names.get(text);
    if (name === undefined && this.names.size < MAX_NAMED) {
      name = `quarry_${this.generation}_${this.names.size}`;
      this.names.set(text, name);
    }
    return name;
  }

  /** Forgets every name: each text is prepared again, under a name no connection has used. */
  reset(): void {
    this.names = new Map();
    this.generation++;
  }
}

const statementNames = new StatementNames();

/** The plan PostgreSQL kept for a prepared statement no longer fits its table (feature_not_supported). */
function isStalePlan(err: unknown): boolean {
  return (err as { code?: string }).code === '0A000' && /cached plan must not change result type/.test((err as Error).message);
}

/**
 * A pg client that names what Kysely runs (`query(text, values)`, values bound). Other calls (a
 * config object, a callback, text without values such as BEGIN) go through unchanged.
 */
export class PreparingClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    // pg's query() has a dozen overloads; this wraps them all rather than redeclaring them.
    const query = this.query.bind(this) as (...args: unknown[]) => unknown;
    this.query = ((...args: unknown[]) => {
      const [text, values, callback] = args;
      if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0 || callback !== undefined) return query(...args);
      const name = text.endsWith(PLANNED_EACH_RUN) ? undefined : statementNames.nameOf(text);
      return (query(name === undefined ? { text, values } : { name, text, values }) as Promise<unknown>).catch((err: unknown) => {
        if (isStalePlan(err)) statementNames.reset();
        throw err;
      });
    }) as pg.Client['query'];
  }
}
