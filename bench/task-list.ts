/**
 * The task list benchmark (`npm run bench:task-list`): how long a filtered page of GET /task takes
 * the database in an account of 100,000 tasks (BENCH_LIST_TASKS), on SQLite and on PostgreSQL
 * (BENCH_LIST_DBS, default both). The store is opened in this process, migrated, and filled
 * with tasks in bulk: a year of creation times, 1% running, last outcomes 85% completed, 5%
 * failed, 5% stopped (the rest none yet), 0.1% pinned, names and prompts of ~300 characters
 * where each of 20 topic words appears in 5% of tasks and one word in a single task.
 *
 * Each case reads the first page (limit 50) and the page after it (its cursor) BENCH_LIST_READS
 * times (default 30) through store.tasks.listPage, the statement GET /task runs, and reports the
 * median and p95 in milliseconds. PostgreSQL is ANALYZEd after the fill, as autovacuum would;
 * SQLite is not (Quarry runs no ANALYZE).
 *
 * Results: a table on stdout and .bench/task-list.json.
 */
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { openPostgresStore } from '../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import type { TaskListFilter } from '../src/domain/records.js';
import { dropSchemas, TEST_DATABASE_URL } from '../test/kit/postgres.js';
import { freshDataDir, log, percentile, round, startWatchdog, table, writeReport } from './lib.js';

const TASKS = Number(process.env.BENCH_LIST_TASKS ?? 100_000);
const READS = Number(process.env.BENCH_LIST_READS ?? 30);
const DBS = (process.env.BENCH_LIST_DBS ?? 'sqlite,postgres').split(',');
const ACCOUNT = 'acct_bench';
const TOPICS = ['battery', 'solar', 'wind', 'hydro', 'nickel', 'lithium', 'cobalt', 'graphite', 'copper', 'silicon',
  'biotech', 'fintech', 'robotics', 'shipping', 'aviation', 'rail', 'grid', 'storage', 'fusion', 'carbon'];
const RARE = 'zeppelin';
const YEAR_MS = 365 * 24 * 3600 * 1000;
const START = Date.parse('2026-01-01T00:00:00.000Z');
const BATCH = 500;

type AnyDb = Kysely<Record<string, Record<string, unknown>>>;

function kysely(store: Store): AnyDb {
  // Rows go in by the thousand: the store's own handle, untyped.
  return (store as unknown as { root: AnyDb }).root;
}

/** A deterministic spread, so both databases hold the same tasks. */
function taskRow(i: number): Record<string, unknown> {
  const topic = TOPICS[i % TOPICS.length]!;
  const created = START + Math.floor((i / TASKS) * YEAR_MS);
  const updated = created + (i * 7919) % (30 * 24 * 3600 * 1000);
  const running = i % 100 === 0;
  const outcomeDraw = (i * 31) % 100;
  const outcome = outcomeDraw < 85 ? 'completed' : outcomeDraw < 90 ? 'failed' : outcomeDraw < 95 ? 'stopped' : null;
  const prompt = `Find every company working on ${topic} in region ${i % 37}. ${i === Math.floor(TASKS / 2) ? `${RARE} ` : ''}`
    + 'List each with its headquarters, founding year, headcount and a source for every field. '.repeat(3);
  return {
    id: `tsk_${String(i).padStart(26, '0')}`, account_id: ACCOUNT, name: `${topic} companies ${i}`, type: 'research',
    status: running ? 'execute' : 'plan', phase: running ? 'execute' : 'plan', activity: running ? 'executing' : 'idle',
    spec: '{"outputs":[]}', pinned: i % 1000 === 0 ? 1 : 0, created_at: new Date(created).toISOString(), updated_at: new Date(updated).toISOString(),
    credits_used_micros: 0, last_event_seq: 0, queued_count: 0, version: 1,
    last_outcome: outcome, last_turn: null, prompt,
  };
}

async function fill(store: Store): Promise<number> {
  const db = kysely(store);
  const began = performance.now();
  for (let i = 0; i < TASKS; i += BATCH) {
    const rows = Array.from({ length: Math.min(BATCH, TASKS - i) }, (_, k) => taskRow(i + k));
    await db.insertInto('tasks').values(rows).execute();
  }
  return performance.now() - began;
}

const CASES: [string, TaskListFilter][] = [
  ['no filter', {}],
  ['state=running', { state: 'running' }],
  ['state=idle', { state: 'idle' }],
  ['outcome=failed', { outcome: 'failed' }],
  ['outcome=completed', { outcome: 'completed' }],
  ['created in one week', { createdAfter: '2026-06-01T00:00:00.000Z', createdBefore: '2026-06-08T00:00:00.000Z' }],
  ['created_after (last 6 months)', { createdAfter: '2026-07-01T00:00:00.000Z' }],
  ['q=battery (5%)', { q: 'battery' }],
  [`q=${RARE} (1 task)`, { q: RARE }],
  ['q=absent (no task)', { q: 'no such text' }],
  ['state=idle&outcome=stopped&q=solar', { state: 'idle', outcome: 'stopped', q: 'solar' }],
  ['state=running&outcome=failed', { state: 'running', outcome: 'failed' }],
];

interface CaseResult { case: string; first_p50_ms: number; first_p95_ms: number; next_p50_ms: number; next_p95_ms: number; rows: number }

async function measure(store: Store): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const [name, filter] of CASES) {
    const first: number[] = [];
    const next: number[] = [];
    let rows = 0;
    for (let r = 0; r < READS; r++) {
      let t = performance.now();
      const page = await store.tasks.listPage(ACCOUNT, 50, undefined, filter);
      first.push(performance.now() - t);
      rows = page.tasks.length;
      if (page.next) {
        t = performance.now();
        await store.tasks.listPage(ACCOUNT, 50, page.next, filter);
        next.push(performance.now() - t);
      }
    }
    const ms = (values: number[], p: number) => (values.length ? round(percentile(values, p), 2) : 0);
    results.push({ case: name, first_p50_ms: ms(first, 50), first_p95_ms: ms(first, 95), next_p50_ms: ms(next, 50), next_p95_ms: ms(next, 95), rows });
  }
  return results;
}

async function run(db: string): Promise<{ db: string; fill_s: number; cases: CaseResult[] }> {
  if (db === 'sqlite') {
    const store = openSqliteStore(freshDataDir('task-list'));
    try {
      await store.migrate();
      const filled = await fill(store);
      log(`sqlite: ${TASKS} tasks in ${round(filled / 1000)} s`);
      return { db, fill_s: round(filled / 1000), cases: await measure(store) };
    } finally {
      await store.close();
    }
  }
  const schema = `bench_list_${randomUUID().slice(0, 8)}`;
  const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema });
  try {
    await store.migrate();
    const filled = await fill(store);
    await sql`analyze ${sql.table(`${schema}.tasks`)}`.execute(kysely(store));
    log(`postgres: ${TASKS} tasks in ${round(filled / 1000)} s`);
    return { db, fill_s: round(filled / 1000), cases: await measure(store) };
  } finally {
    await store.close();
    await dropSchemas(schema);
  }
}

startWatchdog('task-list', 180_000);
const results = [];
for (const db of DBS) results.push(await run(db));
console.log(table([
  ['db', 'case', 'rows', 'first p50 ms', 'first p95 ms', 'next p50 ms', 'next p95 ms'],
  ...results.flatMap((r) => r.cases.map((c) => [r.db, c.case, String(c.rows), String(c.first_p50_ms), String(c.first_p95_ms), String(c.next_p50_ms), String(c.next_p95_ms)])),
]));
writeReport('task-list.json', { tasks: TASKS, reads: READS, results });
process.exit(0);
