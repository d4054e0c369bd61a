/**
 * The storage benchmark (`npm run bench:storage`): does the database stop growing once data
 * expires? BENCH_STORAGE_TURNS turns (default 20,000) are written straight into a store, on
 * SQLite and on PostgreSQL (BENCH_STORAGE_DBS, default both), in the shape turns leave: monitor
 * tasks of 20 turns, each turn with 10 events, 2 steps, 2 rows, an idempotency record, a
 * rate-limit window and a delivered webhook delivery; one source snapshot per task. Everything is
 * backdated 30 days but each live task's last turn; half the tasks are deleted 30 days ago.
 * Then one pruner pass runs with QUARRY_EVENT_RETENTION_DAYS=7, and the database's size is
 * compared with a fresh database holding only the rows that remain.
 *
 * Size: SQLite counts the pages in use (page_count - freelist_count, times page_size: the file
 * keeps freed pages until VACUUM); PostgreSQL sums pg_total_relation_size of the schema's tables
 * after VACUUM (which frees dead rows for reuse; only VACUUM FULL gives disk back).
 *
 * Results: a table on stdout and .bench/storage.json.
 */
import pino from 'pino';
import { sql, type Kysely } from 'kysely';
import { loadConfig } from '../src/config.js';
import { Pruner } from '../src/pruner.js';
import { openPostgresStore } from '../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import { emptySpec } from '../src/tasks/spec.js';
import { dropSchemas, TEST_DATABASE_URL } from '../test/helpers/postgres.js';
import { freshDataDir, log, round, table, writeReport } from './lib.js';

const TURNS = Number(process.env.BENCH_STORAGE_TURNS ?? 20_000);
const DBS = (process.env.BENCH_STORAGE_DBS ?? 'sqlite,postgres').split(',');
const TURNS_PER_TASK = 20;
const EVENTS_PER_TURN = 10;
const DAY = 24 * 60 * 60 * 1000;
const TABLES = ['accounts', 'tasks', 'turns', 'turn_steps', 'events', 'outputs', 'rows', 'row_batches', 'idempotency', 'rate_windows',
  'webhook_endpoints', 'webhook_deliveries', 'source_snapshots', 'uploads', 'upload_chunks', 'settings', 'groups', 'group_inputs'] as const;

interface Side {
  store: Store;
  /** The database's bytes in use, measured as the header says. */
  size(): Promise<number>;
  /** The bytes once rewritten compactly (SQLite VACUUM, PostgreSQL VACUUM FULL): what the kept rows themselves take. */
  compacted(): Promise<number>;
  close(): Promise<void>;
}

function kysely(store: Store): Kysely<Record<string, Record<string, unknown>>> {
  // The bench reads whole tables by name: the store's own handle, untyped.
  return (store as unknown as { root: Kysely<Record<string, Record<string, unknown>>> }).root;
}

async function openSide(kind: string, label: string): Promise<Side> {
  if (kind === 'sqlite') {
    const dir = freshDataDir(`storage-${label}`);
    const store = openSqliteStore(dir);
    await store.migrate();
    const side: Side = {
      store,
      async size() {
        const db = kysely(store);
        await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db);
        const one = async (p: string) => Number(Object.values((await sql.raw(`pragma ${p}`).execute(db)).rows[0] as object)[0]);
        return (await one('page_count') - await one('freelist_count')) * await one('page_size');
      },
      async compacted() {
        await sql`vacuum`.execute(kysely(store));
        return side.size();
      },
      close: () => store.close(),
    };
    return side;
  }
  const schema = `bench_storage_${label}_${process.pid}`;
  await dropSchemas(schema);
  const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema });
  await store.migrate();
  const side: Side = {
    store,
    async size() {
      const db = kysely(store);
      for (const t of TABLES) await sql`vacuum ${sql.table(`${schema}.${t}`)}`.execute(db);
      const r = await sql<{ n: string }>`select coalesce(sum(pg_total_relation_size(c.oid)), 0) as n from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = ${schema} and c.relkind = 'r'`.execute(db);
      return Number(r.rows[0]!.n);
    },
    async compacted() {
      for (const t of TABLES) await sql`vacuum full ${sql.table(`${schema}.${t}`)}`.execute(kysely(store));
      return side.size();
    },
    async close() {
      await store.close();
      await dropSchemas(schema);
    },
  };
  return side;
}

async function populate(store: Store, now: number): Promise<void> {
  const old = (ms: number) => new Date(now - 30 * DAY + ms).toISOString();
  const accountId = 'acct_bench';
  await store.accounts.insert({ id: accountId, name: 'bench', balanceMicros: 1e12, creditsUsedMicros: 0, createdAt: old(0) });
  const endpoint = { id: 'wh_bench', accountId, url: 'https://hooks.example.com/q', events: ['task.turn_completed' as const], description: null, secret: 'whsec_x', previousSecret: null, previousSecretExpiresAt: null, createdAt: old(0) };
  await store.webhooks.insertEndpoint(endpoint);
  const tasks = Math.ceil(TURNS / TURNS_PER_TASK);
  const text = 'The plant’s capacity rose to 1,200 MW in 2024, a record for the region. '.repeat(4);
  for (let t = 0; t < tasks; t++) {
    const taskId = `tsk_bench_${String(t).padStart(6, '0')}`;
    const deleted = t % 2 === 1;
    await store.transaction(async (tx) => {
      await tx.tasks.insert({
        id: taskId, accountId, name: null, type: 'research', status: deleted ? 'deleted' : 'plan', phase: deleted ? null : 'plan', activity: deleted ? null : 'idle',
        spec: emptySpec('watch the plant'), pinned: false, cronExpression: null, cronTimezone: null, cronNextRunAt: null, activeOutput: 'facts', creditsUsedMicros: 0,
        lastEventSeq: TURNS_PER_TASK * EVENTS_PER_TURN, currentTurnId: null, queuedCount: 0, createdAt: old(0), updatedAt: old(0), deletedAt: deleted ? old(DAY) : null,
      });
      for (let k = 0; k < TURNS_PER_TASK; k++) {
        const turnId = `turn_bench_${t}_${k}`;
        const at = k === TURNS_PER_TASK - 1 && !deleted ? new Date(now).toISOString() : old(k * 60_000);
        await tx.turns.insert({ id: turnId, taskId, accountId, kind: 'execute', status: 'completed', input: 'check again', planOnly: false, createdAt: at, startedAt: at, endedAt: at, leaseOwner: null, leaseExpiresAt: null, creditsUsedMicros: 0, tokensIn: 0, tokensOut: 0, toolCalls: 0, error: null });
        for (let s = 1; s <= 2; s++) await tx.steps.insert(turnId, s, JSON.stringify({ reply: text }), at);
        await tx.events.insert(Array.from({ length: EVENTS_PER_TURN }, (_, e) => {
          const seq = k * EVENTS_PER_TURN + e + 1;
          return { taskId, seq, type: 'text', turnId, data: JSON.stringify({ seq, type: 'text', task_id: taskId, turn_id: turnId, at, text }) };
        }));
        await tx.rows.append(taskId, 'facts', `${turnId}:1`, [0, 1].map(() => (n: number) => JSON.stringify({ _row: n, plant: 'North', capacity_mw: 1200 })), at);
        await tx.idempotency.put(accountId, `key-${t}-${k}`, { requestHash: 'h'.repeat(64), status: 200, body: JSON.stringify({ task_id: taskId }), createdAt: at });
        await tx.cluster.hitRateWindow(`key_${t}`, at);
        await tx.webhooks.insertDeliveries([{ id: `msg_${t}_${k}`, endpointId: endpoint.id, event: 'task.turn_completed', payload: JSON.stringify({ type: 'task.turn_completed', data: { task_id: taskId } }), status: 'delivered', attempts: 1, lastStatusCode: 204, lastError: null, nextAttemptAt: null, retrySince: at, createdAt: at, deliveredAt: at }]);
      }
      await tx.sources.record({ id: `src_bench_${t}`, taskId, url: 'https://energy.example.com/plants', finalUrl: 'https://energy.example.com/plants', uploadId: null, title: 'Plants', fetchedAt: old(0), sha256: 'a'.repeat(64), bytes: text.length, text });
    });
  }
}

/** Copies every row that remains into a fresh database of the same kind: what the live data needs. */
async function copyInto(from: Store, to: Store): Promise<void> {
  const src = kysely(from);
  const dst = kysely(to);
  for (const t of TABLES) {
    if (t === 'accounts' || t === 'webhook_endpoints' || t === 'settings') await dst.deleteFrom(t).execute();
    const rows = await src.selectFrom(t).selectAll().execute();
    for (let i = 0; i < rows.length; i += 200) await dst.insertInto(t).values(rows.slice(i, i + 200)).execute();
  }
}

async function run(kind: string): Promise<Record<string, unknown>> {
  const now = Date.now();
  const side = await openSide(kind, 'pruned');
  log(`${kind}: writing ${TURNS} turns`);
  const t0 = performance.now();
  await populate(side.store, now);
  const writeS = (performance.now() - t0) / 1000;
  const before = await side.size();
  const config = loadConfig({ QUARRY_EVENT_RETENTION_DAYS: '7' }).prune;
  const pruner = new Pruner({ store: side.store, config, requestTimeoutMs: 300_000, logger: pino({ level: 'silent' }), now: () => now });
  const t1 = performance.now();
  const counts = await pruner.pass();
  const pruneS = (performance.now() - t1) / 1000;
  const after = await side.size();
  const fresh = await openSide(kind, 'fresh');
  await copyInto(side.store, fresh.store);
  const live = await fresh.size();
  const afterCompacted = await side.compacted();
  const liveCompacted = await fresh.compacted();
  await side.close();
  await fresh.close();
  return { db: kind, turns: TURNS, write_s: round(writeS), prune_s: round(pruneS), pruned: counts, bytes_before: before, bytes_after: after, bytes_live: live, after_over_live: round(after / live, 3), bytes_after_compacted: afterCompacted, bytes_live_compacted: liveCompacted, compacted_over_live: round(afterCompacted / liveCompacted, 3) };
}

const results = [];
for (const kind of DBS) results.push(await run(kind));
const MB = (n: unknown) => `${round(Number(n) / 1e6, 1)} MB`;
console.log(table([
  ['db', 'turns', 'before', 'after prune', 'live only', 'after / live', 'compacted: after', 'live', 'after / live', 'prune s'],
  ...results.map((r) => [String(r.db), String(r.turns), MB(r.bytes_before), MB(r.bytes_after), MB(r.bytes_live), String(r.after_over_live),
    MB(r.bytes_after_compacted), MB(r.bytes_live_compacted), String(r.compacted_over_live), String(r.prune_s)]),
]));
writeReport('storage.json', { results });
process.exit(0);
