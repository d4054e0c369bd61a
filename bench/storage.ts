/**
 * The storage benchmark (`npm run bench:storage`): does the database stop growing once data
 * expires? `quarry serve` runs from the build, on SQLite and on PostgreSQL (BENCH_STORAGE_DBS,
 * default both), with a model in its own process that answers every turn with two rows and a
 * final answer (bench/instant-model.ts --rows), a webhook endpoint taking every turn's end
 * (bench/webhook-receiver.ts), and every expiry forced: deleted tasks purged at once
 * (QUARRY_DELETED_TASK_GRACE_HOURS=0), events of ended turns dropped after a second
 * (QUARRY_EVENT_RETENTION_DAYS), delivered deliveries dropped at once, a pass every second.
 *
 * BENCH_STORAGE_CYCLES cycles (default 8) of about BENCH_STORAGE_TURNS turns each (default 2,500),
 * TASKS_IN_FLIGHT tasks at a time. Short-lived tasks of TURNS_PER_TASK turns are each created over
 * HTTP with an Idempotency-Key, then sent messages one after the other, every turn run to `done`.
 * BENCH_STORAGE_WORKLOAD picks what stays:
 * - `steady` (default): the live data stays about the same, as in a service that runs for a year.
 *   MONITORS long-lived tasks, created before the first cycle, get one more turn every cycle, a
 *   turn that writes no rows (the model's NO_NEW_ROWS); every short-lived task is deleted at the
 *   end of its cycle. What the live data still gains per cycle: the monitors' new turn records
 *   and the idempotency records of the cycle's creates (kept 24 h).
 * - `growing`: every second short-lived task is deleted, the others kept, so the live data grows
 *   every cycle.
 * After each cycle, once the pruner has caught up, the database's size is measured and every row
 * it holds is copied into a fresh database of the same kind ("live only": what the live data needs).
 *
 * Size: SQLite counts the pages in use (page_count - freelist_count, times page_size: the file
 * keeps freed pages on its free list for new rows) and the file itself; PostgreSQL sums
 * pg_total_relation_size of the schema's tables after a plain VACUUM (which makes dead rows'
 * space reusable but does not shrink the files). On a PostgreSQL with autovacuum off, the bench
 * runs a plain VACUUM every minute during the soak, as autovacuum would.
 *
 * Results: a table on stdout and .bench/storage.json (storage-<db>.json when BENCH_STORAGE_DBS names one).
 */
import fs from 'node:fs';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import { openPostgresStore } from '../src/store/postgres/postgres-store.js';
import { openSqliteStore, SQLITE_FILE } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import { within } from '../test/kit/bounded-waits.js';
import { dropSchemas, TEST_DATABASE_URL } from '../test/kit/postgres.js';
import { spawnNode } from '../test/kit/process.js';
import {
  expectOk, freshDataDir, log, mapLimit, reportHeader, loadAverage, round, sleep, startInstantModel, startQuarry, startWatchdog, table, waitIdle, writeReport, type QuarryProcess,
} from './lib.js';

const CYCLES = Number(process.env.BENCH_STORAGE_CYCLES ?? 8);
const TURNS = Number(process.env.BENCH_STORAGE_TURNS ?? 2500);
const DBS = (process.env.BENCH_STORAGE_DBS ?? 'sqlite,postgres').split(',');
const WORKLOAD = process.env.BENCH_STORAGE_WORKLOAD ?? 'steady';
if (WORKLOAD !== 'steady' && WORKLOAD !== 'growing') throw new Error(`BENCH_STORAGE_WORKLOAD: steady or growing, not ${WORKLOAD}`);
const MONITORS = WORKLOAD === 'steady' ? 50 : 0;
/** In a message, tells bench/instant-model.ts to write no rows in that turn. */
const NO_NEW_ROWS = '[nothing new]';
/** Past the 100 events a task always keeps, so event retention has old turns' events to drop. */
const TURNS_PER_TASK = 20;
const TASKS_IN_FLIGHT = 32;
const PRUNE_INTERVAL_S = 1;
/** PostgreSQL's default autovacuum_naptime. */
const AUTOVACUUM_NAPTIME_S = 60;
const QUARRY_ENV = {
  QUARRY_LOG_LEVEL: 'warn',
  QUARRY_FETCH_ALLOW_PRIVATE: '1',
  QUARRY_PRUNE_INTERVAL_S: String(PRUNE_INTERVAL_S),
  QUARRY_DELETED_TASK_GRACE_HOURS: '0',
  // About a second: every turn ended before the pass is past it.
  QUARRY_EVENT_RETENTION_DAYS: '0.00001',
  QUARRY_WEBHOOK_DELIVERY_RETENTION_DAYS: '0',
};
const SPEC = {
  prompt: 'Watch the capacity of the plants in the registry.',
  outputs: [{ id: 'facts', kind: 'table', columns: [{ name: 'plant', required: true }, { name: 'capacity_mw', type: 'number' }] }],
};
const TABLES = ['accounts', 'tasks', 'turns', 'turn_steps', 'events', 'outputs', 'rows', 'row_batches', 'idempotency', 'rate_windows',
  'webhook_endpoints', 'webhook_deliveries', 'source_snapshots', 'uploads', 'upload_chunks', 'settings', 'groups', 'group_inputs', 'api_keys'] as const;

type AnyDb = Kysely<Record<string, Record<string, unknown>>>;

function kysely(store: Store): AnyDb {
  // The bench reads whole tables by name: the store's own handle, untyped.
  return (store as unknown as { root: AnyDb }).root;
}

interface Side {
  store: Store;
  /** The bytes the database's data takes: pages in use (SQLite), tables after VACUUM (PostgreSQL). */
  size(): Promise<number>;
  /** The bytes on disk (SQLite: the file and its WAL); undefined on PostgreSQL (the tables are `size`). */
  fileSize(): number | undefined;
  close(): Promise<void>;
}

async function sqliteSide(dir: string): Promise<Side> {
  const store = openSqliteStore(dir);
  await store.migrate();
  const bytes = (file: string) => (fs.existsSync(file) ? fs.statSync(file).size : 0);
  return {
    store,
    async size() {
      const db = kysely(store);
      await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db);
      const one = async (p: string) => Number(Object.values((await sql.raw(`pragma ${p}`).execute(db)).rows[0] as object)[0]);
      return (await one('page_count') - await one('freelist_count')) * await one('page_size');
    },
    fileSize: () => bytes(path.join(dir, SQLITE_FILE)) + bytes(path.join(dir, `${SQLITE_FILE}-wal`)),
    close: () => store.close(),
  };
}

async function postgresSide(schema: string, opts: { drop: boolean }): Promise<Side> {
  const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema });
  await store.migrate();
  return {
    store,
    async size() {
      const db = kysely(store);
      for (const t of TABLES) await sql`vacuum ${sql.table(`${schema}.${t}`)}`.execute(db);
      const r = await sql<{ n: string }>`select coalesce(sum(pg_total_relation_size(c.oid)), 0) as n from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = ${schema} and c.relkind = 'r'`.execute(db);
      return Number(r.rows[0]!.n);
    },
    fileSize: () => undefined,
    async close() {
      await store.close();
      if (opts.drop) await dropSchemas(schema);
    },
  };
}

/** Copies every row into a fresh database of the same kind: what the live data needs. */
async function copyInto(from: Store, to: Store): Promise<void> {
  const src = kysely(from);
  const dst = kysely(to);
  for (const t of TABLES) {
    await dst.deleteFrom(t).execute();
    const rows = await src.selectFrom(t).selectAll().execute();
    for (let i = 0; i < rows.length; i += 200) await dst.insertInto(t).values(rows.slice(i, i + 200)).execute();
  }
}

async function liveOnly(kind: string, from: Store, label: string): Promise<number> {
  const schema = `bench_storage_live_${label}_${process.pid}`;
  if (kind === 'postgres') await dropSchemas(schema);
  const fresh = kind === 'sqlite' ? await sqliteSide(freshDataDir(`storage-live-${label}`)) : await postgresSide(schema, { drop: true });
  try {
    await copyInto(from, fresh.store);
    return await fresh.size();
  } finally {
    await fresh.close();
  }
}

async function turn(q: QuarryProcess, taskId: string, message: string): Promise<void> {
  // `wait` answers once this message's turn has ended.
  const res = await expectOk('POST', `${q.url}/task/${encodeURIComponent(taskId)}/continue`, { key: q.key, body: { message, wait: true } });
  if (res.status !== 200) throw new Error(`continue of ${taskId} answered ${res.status}: ${res.text.slice(0, 300)}`);
}

/** One task: created, then sent messages, every turn (`turns` in all) run to `done`; returns its id. */
async function runTask(q: QuarryProcess, name: string, turns: number): Promise<string> {
  const created = await expectOk('POST', `${q.url}/task/start`, { key: q.key, body: { task: { ...SPEC, name } }, headers: { 'idempotency-key': name } });
  const taskId = created.body.task_id as string;
  await waitIdle(q, taskId, 60_000);
  for (let k = 1; k < turns; k++) await turn(q, taskId, `Check again (${k}).`);
  return taskId;
}

/** Rows of what the pruner deletes: all zero (and events steady) once it has caught up. */
async function backlog(db: AnyDb): Promise<{ unpurged: number; deliveries: number; events: number }> {
  const count = async (q: Promise<{ n: unknown } | undefined>) => Number((await q)?.n ?? 0);
  return {
    unpurged: await count(db.selectFrom('tasks').select((eb) => eb.fn.countAll().as('n')).where('deleted_at', 'is not', null).where('purged_at', 'is', null).executeTakeFirst()),
    deliveries: await count(db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).executeTakeFirst()),
    events: await count(db.selectFrom('events').select((eb) => eb.fn.countAll().as('n')).executeTakeFirst()),
  };
}

/**
 * Waits until the pruner has caught up: every deleted task purged, every delivery (all delivered)
 * dropped, and the events left unchanged over three pass intervals (the pruner reports no end
 * of pass; a pass that drops nothing leaves the count as it is).
 */
async function prunerCaughtUp(db: AnyDb, receiverUrl: string, deliveries: number): Promise<void> {
  await within((async () => {
    while (Number((await expectOk('GET', `${receiverUrl}/_count`)).body.count) < deliveries) await sleep(200);
    let steady = 0;
    let last = -1;
    while (steady < 3) {
      const b = await backlog(db);
      steady = b.unpurged === 0 && b.deliveries === 0 && b.events === last ? steady + 1 : 0;
      last = b.events;
      await sleep(PRUNE_INTERVAL_S * 1000);
    }
  })(), 15 * 60_000, 'the pruner to catch up');
}

/**
 * Deployments run PostgreSQL with autovacuum on (its default), which makes the pruner's freed
 * space reusable while turns run. A server with it off (test databases often are) would keep
 * none for reuse until the end of the cycle: there the bench runs a plain VACUUM every
 * AUTOVACUUM_NAPTIME_S in its place. Returns the timer, or undefined when autovacuum is on.
 */
async function standInForAutovacuum(side: Side): Promise<NodeJS.Timeout | undefined> {
  const on = await sql<{ autovacuum: string }>`show autovacuum`.execute(kysely(side.store));
  if (on.rows[0]?.autovacuum === 'on') return undefined;
  let running = false;
  return setInterval(() => {
    if (running) return;
    running = true;
    void side.size().catch((err: unknown) => log(`vacuum failed: ${String(err)}`)).finally(() => (running = false));
  }, AUTOVACUUM_NAPTIME_S * 1000);
}

interface CycleResult {
  cycle: number;
  turns: number;
  live_tasks: number;
  deleted_tasks: number;
  live_rows: number;
  live_turns: number;
  soak_s: number;
  catch_up_s: number;
  bytes_in_use: number;
  bytes_file: number | undefined;
  bytes_live: number;
  in_use_over_live: number;
  /** The file (SQLite) or the tables after VACUUM (PostgreSQL) against the same at cycle 2: the plateau. */
  file_over_cycle_2: number | undefined;
}

async function run(kind: string): Promise<{ db: string; cycles: CycleResult[] }> {
  const dataDir = freshDataDir(`storage-${kind}`);
  const schema = `bench_storage_${process.pid}`;
  if (kind === 'postgres') await dropSchemas(schema);
  const storeEnv: Record<string, string> = kind === 'postgres' ? { QUARRY_DATABASE_URL: TEST_DATABASE_URL, QUARRY_DATABASE_SCHEMA: schema } : {};
  const model = await startInstantModel({ rowsOutput: 'facts' });
  const receiver = spawnNode('bench/webhook-receiver.ts', [], { name: 'receiver' });
  const receiverUrl = (await receiver.waitForLine(/^receiver listening on (http:\/\/\S+)/, 30_000))[1]!;
  const q = await startQuarry({ dataDir, modelUrl: model.url, label: `quarry-storage-${kind}`, env: { ...QUARRY_ENV, ...storeEnv } });
  const side = kind === 'sqlite' ? await sqliteSide(dataDir) : await postgresSide(schema, { drop: true });
  const cycles: CycleResult[] = [];
  try {
    await expectOk('POST', `${q.url}/webhooks`, { key: q.key, body: { url: `${receiverUrl}/hook`, events: ['task.turn_completed'] } });
    const monitors = await mapLimit(Array.from({ length: MONITORS }, (_, i) => i), TASKS_IN_FLIGHT, (i) => runTask(q, `storage-monitor-${i}`, 1));
    let turns = MONITORS;
    let live = MONITORS;
    let deleted = 0;
    let fileAtCycle2: number | undefined;
    const db = kysely(side.store);
    const count = async (t: 'rows' | 'turns') => Number((await db.selectFrom(t).select((eb) => eb.fn.countAll().as('n')).executeTakeFirst())?.n ?? 0);
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      const tasks = Math.ceil((TURNS - MONITORS) / TURNS_PER_TASK);
      log(`${kind}: cycle ${cycle}/${CYCLES}, ${MONITORS} monitor turns and ${tasks} tasks of ${TURNS_PER_TASK} turns`);
      const t0 = performance.now();
      const vacuuming = kind === 'postgres' ? await standInForAutovacuum(side) : undefined;
      await mapLimit(Array.from({ length: MONITORS + tasks }, (_, i) => i), TASKS_IN_FLIGHT, async (i) => {
        if (i < MONITORS) return turn(q, monitors[i]!, `Check again (cycle ${cycle}). ${NO_NEW_ROWS}`);
        const j = i - MONITORS;
        const taskId = await runTask(q, `storage-${cycle}-${j}`, TURNS_PER_TASK);
        if (WORKLOAD === 'steady' || j % 2 === 1) {
          await expectOk('DELETE', `${q.url}/task/${encodeURIComponent(taskId)}`, { key: q.key });
          deleted++;
        } else live++;
      });
      clearInterval(vacuuming);
      turns += MONITORS + tasks * TURNS_PER_TASK;
      const soakS = (performance.now() - t0) / 1000;
      const t1 = performance.now();
      await prunerCaughtUp(db, receiverUrl, turns);
      const catchUpS = (performance.now() - t1) / 1000;
      const inUse = await side.size();
      const file = side.fileSize() ?? inUse;
      if (cycle === 2) fileAtCycle2 = file;
      const liveBytes = await liveOnly(kind, side.store, String(cycle));
      const r: CycleResult = {
        cycle, turns, live_tasks: live, deleted_tasks: deleted, live_rows: await count('rows'), live_turns: await count('turns'),
        soak_s: round(soakS), catch_up_s: round(catchUpS), bytes_in_use: inUse, bytes_file: side.fileSize(), bytes_live: liveBytes,
        in_use_over_live: round(inUse / liveBytes, 3), file_over_cycle_2: fileAtCycle2 === undefined ? undefined : round(file / fileAtCycle2, 3),
      };
      log(`${kind}: ${JSON.stringify(r)}`);
      cycles.push(r);
    }
  } finally {
    await q.child.stop('SIGTERM');
    await model.child.stop('SIGTERM');
    await receiver.stop('SIGTERM');
    await side.close();
  }
  return { db: kind, cycles };
}

startWatchdog('bench:storage', 3 * 60 * 60_000);
const started = new Date();
const loadAtStart = loadAverage();
const results = [];
for (const kind of DBS) results.push(await run(kind));
const MB = (n: number | undefined) => (n === undefined ? '-' : `${round(n / 1e6, 1)} MB`);
console.log(table([
  ['db', 'cycle', 'turns', 'live tasks', 'deleted', 'live rows', 'live turns', 'in use', 'file', 'live only', 'in use / live', 'file / cycle 2', 'soak s', 'catch-up s'],
  ...results.flatMap((r) => r.cycles.map((c) => [r.db, String(c.cycle), String(c.turns), String(c.live_tasks), String(c.deleted_tasks), String(c.live_rows),
    String(c.live_turns), MB(c.bytes_in_use), MB(c.bytes_file), MB(c.bytes_live), String(c.in_use_over_live), String(c.file_over_cycle_2 ?? '-'),
    String(c.soak_s), String(c.catch_up_s)])),
]));
writeReport(DBS.length === 1 ? `storage-${DBS[0]}.json` : 'storage.json', {
  ...reportHeader(started, loadAtStart, { workload: WORKLOAD, monitors: MONITORS, cycles: CYCLES, turns_per_cycle: TURNS, turns_per_task: TURNS_PER_TASK, env: QUARRY_ENV }),
  results,
});
process.exit(0);
