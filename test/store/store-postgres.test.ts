import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Kysely } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import type { Agent } from '../../src/agent/agent-loop.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createQuarry } from '../../src/server.js';
import { EventBus } from '../../src/events/event-bus.js';
import { Accounts } from '../../src/accounts/accounts.js';
import { emptySpec } from '../../src/domain/spec.js';
import { TaskService } from '../../src/tasks/task-service.js';
import { LeaseLost, TurnWrites } from '../../src/tasks/turn-writes.js';
import { TurnRunner } from '../../src/engine/turn-runner.js';
import { TurnQueries } from '../../src/tasks/turn-queries.js';
import { TurnQueue } from '../../src/tasks/turn-queue.js';
import { SourceSnapshots } from '../../src/outputs/source-snapshots.js';
import { UnitsOfWork } from '../../src/tasks/unit-of-work.js';
import type { Uploads } from '../../src/uploads/uploads.js';
import { OwnSchemaDialect } from '../../src/store/postgres/own-schema-dialect.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { PostgresLink } from '../../src/store/postgres/postgres-link.js';
import { PreparingClient } from '../../src/store/postgres/prepared-statements.js';
import type { EventRecord } from '../../src/domain/records.js';
import type { Store } from '../../src/store/store.js';
import { ClusterRelay } from '../../src/events/cluster-relay.js';
import { StoreRateLimiter } from '../../src/http/rate-limiter.js';
import { until, within } from '../kit/bounded-waits.js';
import { connectClient, dropSchemas, skipWithoutPostgres, TEST_DATABASE_URL } from '../kit/postgres.js';
import { makeDataDir, removeDataDir } from '../kit/process.js';
import { runStoreCases } from './store-cases.js';

const schema = `t_store_${process.pid}_${Date.now()}`;
const skip = await skipWithoutPostgres();

runStoreCases('postgres', async () => openPostgresStore({ connectionString: TEST_DATABASE_URL, schema }), () => dropSchemas(schema), { skip });

/** `fn` with a migrated store on schema `own` and another connection to the database; then both are closed and the schema dropped. */
async function withOwnStore(own: string, fn: (store: Store, other: pg.Client) => Promise<void>): Promise<void> {
  const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema: own });
  const other = await connectClient();
  try {
    await store.migrate();
    await fn(store, other);
  } finally {
    await other.end();
    await store.close();
    await dropSchemas(own);
  }
}

test('installs in two schemas of one database each hold their own named lock (each runs its own cron scheduler)', { skip }, async () => {
  const schemas = [`t_lock_a_${process.pid}`, `t_lock_b_${process.pid}`];
  const stores = await Promise.all(schemas.map((s) => openPostgresStore({ connectionString: TEST_DATABASE_URL, schema: s })));
  try {
    const locks = await Promise.all(stores.map((s) => s.cluster.tryLock('quarry:cron-scheduler')));
    assert.ok(locks[0]?.held, 'the first install got its lock');
    assert.ok(locks[1]?.held, 'the second install got its lock although the first holds a lock of the same name');
    assert.equal(await stores[0]!.cluster.tryLock('quarry:cron-scheduler'), null, 'within one install the lock is still exclusive');
    for (const lock of locks) await lock?.release();
  } finally {
    for (const store of stores) await store.close();
    await dropSchemas(...schemas);
  }
});

test('statements run prepared; when another process changes a table under them, one statement fails at most, then they prepare again', { skip }, async () => {
  const own = `t_prep_${process.pid}`;
  await withOwnStore(own, async (store, other) => {
    const id = 'acct_prepared';
    await store.accounts.insert({ id, name: 'p', balanceMicros: 5_000_000, creditsUsedMicros: 0, createdAt: new Date().toISOString() });
    for (let i = 0; i < 3; i++) assert.equal((await store.accounts.get(id))?.balanceMicros, 5_000_000);
    // What the store's connections do, on a connection of the same kind: a statement with bound
    // values is prepared once, under a name, and run by name from then on.
    const client = new PreparingClient({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    try {
      for (let i = 0; i < 2; i++) assert.equal((await client.query('select $1::int + 1 as n', [i])).rows[0].n, i + 1);
      const named = await client.query(`select name, statement from pg_prepared_statements`);
      assert.deepEqual(named.rows.map((r) => r.statement), ['select $1::int + 1 as n']);
      assert.match(named.rows[0].name, /^quarry_/);
    } finally {
      await client.end();
    }

    // Another version of Quarry migrating the schema: the prepared `select *` no longer fits.
    await other.query(`alter table "${own}".accounts add column extra int`);
    const outcomes: string[] = [];
    for (let i = 0; i < 4; i++) {
      outcomes.push(await store.accounts.get(id).then((a) => String(a?.balanceMicros), (err: Error) => `failed: ${err.message}`));
    }
    assert.ok(outcomes.filter((o) => o.startsWith('failed')).length <= 1, outcomes.join('\n'));
    assert.deepEqual(outcomes.slice(1), ['5000000', '5000000', '5000000']);
  });
});

test('a store migrates while other schemas of the same database are being created and dropped', { skip }, async () => {
  // Another application's DDL in the same database: Quarry's migrations must not read (and trip
  // over) the catalog of schemas and tables that are dropped while they run.
  const churners = await Promise.all([connectClient(), connectClient()]);
  let churning = true;
  const churned = churners.map(async (client, c) => {
    for (let i = 0; churning; i++) {
      const other = `t_churn_${process.pid}_${c}_${i}`;
      await client.query(`create schema "${other}"; create table "${other}".t (id serial primary key, a int, b text)`);
      await client.query(`drop schema "${other}" cascade`);
    }
  });
  const opened: string[] = [];
  try {
    for (let i = 0; i < 30; i++) {
      const mine = `t_migrate_${process.pid}_${i % 15}`;
      if (i < 15) opened.push(mine);
      // The second pass finds the migration tables it made in the first and has nothing to do.
      const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema: mine });
      try {
        await store.migrate();
      } finally {
        await store.close();
      }
    }
  } finally {
    churning = false;
    await Promise.all(churned);
    await Promise.all(churners.map((client) => client.end()));
    await dropSchemas(...opened);
  }
});

test('a text search (q) seeks rare text by trigram index, and reads its case and LIKE characters as plain text', { skip }, async () => {
  const mine = `t_trgm_${process.pid}`;
  await withOwnStore(mine, async (store, admin) => {
    const acct = 'acct_trgm';
    // 50,000 tasks of one account, one of which holds the rare text (the planner seeks by index only where scanning costs more).
    await admin.query(`insert into "${mine}".tasks (id, account_id, name, type, status, phase, activity, spec, pinned, created_at, updated_at, credits_used_micros, last_event_seq, queued_count, version, prompt)
      select 'tsk_trgm_' || lpad(i::text, 5, '0'), '${acct}', 'battery makers ' || i, 'research', 'plan', 'plan', 'idle', '{"outputs":[]}', 0,
        to_char(timestamp '2030-01-01' + i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), to_char(timestamp '2030-01-01' + i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 0, 0, 0, 1,
        case when i = 1234 then 'Where are the Zeppelin hangars? Report 100%_done.' else 'Find battery makers in region ' || (i % 37) || '.' end
      from generate_series(0, 49999) as i`);
    await admin.query(`analyze "${mine}".tasks`);
    const found = async (q: string) => (await store.tasks.listPage(acct, 50, undefined, { q })).tasks.map((t) => t.id);
    assert.deepEqual(await found('zePPelin'), ['tsk_trgm_01234']);
    assert.deepEqual(await found('100%_d'), ['tsk_trgm_01234']);
    assert.deepEqual(await found('100x_d'), []);
    assert.equal((await found('battery')).length, 50);

    // The list statement for a rare text starts at the trigram index, not at every task of the account.
    await admin.query(`set search_path to "${mine}"`);
    const plan = (await admin.query(`explain select id from tasks where account_id = 'acct_trgm' and group_id is null and deleted_at is null
      and (name ilike '%zeppelin%' escape '\\' or prompt ilike '%zeppelin%' escape '\\') order by pinned desc, updated_at desc, id desc limit 51`)).rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.match(plan, /tasks_prompt_trgm/, plan);
  });
});

test('the introspector of a store reads its own schema only', { skip }, async () => {
  const mine = `t_introspect_${process.pid}`;
  const other = `t_introspect_other_${process.pid}`;
  const admin = await connectClient();
  const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
  const db = new Kysely<unknown>({ dialect: new OwnSchemaDialect({ pool }, mine) });
  try {
    await admin.query(`create schema "${mine}"; create table "${mine}".jobs (id serial primary key, note text not null default '')`);
    await admin.query(`create schema "${other}"; create table "${other}".elsewhere (id int)`);
    await admin.query(`comment on column "${mine}".jobs.note is 'free text'`);
    const tables = await db.introspection.getTables();
    assert.deepEqual(tables.map((t) => `${t.schema}.${t.name}`), [`${mine}.jobs`]);
    assert.deepEqual(tables[0]!.columns.map(({ name, dataType, isAutoIncrementing, isNullable, hasDefaultValue, comment }) => ({ name, dataType, isAutoIncrementing, isNullable, hasDefaultValue, comment })), [
      { name: 'id', dataType: 'int4', isAutoIncrementing: true, isNullable: false, hasDefaultValue: true, comment: undefined },
      { name: 'note', dataType: 'text', isAutoIncrementing: false, isNullable: false, hasDefaultValue: true, comment: 'free text' },
    ]);
  } finally {
    await db.destroy();
    await admin.end();
    await dropSchemas(mine, other);
  }
});

test('a start that fails half way (here: a migration) closes the database connections it opened', { skip }, async () => {
  const broken = `t_broken_${process.pid}_${Date.now()}`;
  const workerId = `broken-start-${process.pid}`;
  const admin = await connectClient();
  const dataDir = makeDataDir('quarry-broken-');
  try {
    // A view where the first migration creates a table: that migration fails.
    await admin.query(`create schema "${broken}"; create view "${broken}".tasks as select 1 as one`);
    const config = loadConfig({ QUARRY_DATA_DIR: dataDir, QUARRY_DATABASE_URL: TEST_DATABASE_URL, QUARRY_DATABASE_SCHEMA: broken, QUARRY_WORKER_ID: workerId, QUARRY_SANDBOX: 'off' });
    await assert.rejects(createQuarry(config, { logger: pino({ level: 'silent' }) }), /tasks/);
    // A closed connection's backend leaves pg_stat_activity a moment later; an idle pooled
    // connection that was never closed would stay for the pool's 10 s idle timeout.
    await until('no connection of the failed start is left open', async () => {
      const open = await admin.query('select count(*)::int as n from pg_stat_activity where application_name = $1', [`quarry ${workerId}`]);
      return open.rows[0].n === 0;
    }, { timeoutMs: 3000 });
  } finally {
    await admin.end();
    await dropSchemas(broken);
    removeDataDir(dataDir);
  }
});

/**
 * `target` (the store, or one of its repositories) with `method` held at its start until
 * `release()`: a worker can then be stopped while that call is under way. Only the first call is
 * held; `finished` settles when it has returned.
 */
function heldAt<T extends object>(target: T, method: keyof T & string): { held: T; entered: Promise<void>; release: () => void; finished: Promise<void> } {
  const held = Object.create(target) as T;
  const call = (target[method] as (...args: unknown[]) => Promise<unknown>).bind(target);
  let enter!: () => void;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  let first = true;
  (held as Record<string, unknown>)[method] = async (...args: unknown[]) => {
    if (!first) return call(...args);
    first = false;
    enter();
    await released;
    try {
      return await call(...args);
    } finally {
      finish();
    }
  };
  return { held, entered, release, finished };
}

/** The task service and the turns' writes on `store`, over one unit of work, as a process builds them. */
function taskServices(store: Store, config: Config): { tasks: TaskService; writes: TurnWrites } {
  const units = new UnitsOfWork({ store, bus: new EventBus(), origin: config.workerId });
  return { tasks: new TaskService({ store, units, config }), writes: new TurnWrites({ units, config }) };
}

/**
 * Starts a worker on `store` with one of the store's methods held (the scheduler lock, or the
 * claim of turns), stops it while that call is under way, and waits for the call to finish:
 * the state the worker leaves behind is then final.
 */
async function stopWhileBusy(
  store: Store,
  slowed: 'cluster.tryLock' | 'turns.claim',
  opts: { cronIntervalMs: number; agent?: Agent },
): Promise<void> {
  const gate = slowed === 'turns.claim' ? heldAt(store.turns, 'claim') : heldAt(store.cluster, 'tryLock');
  const slowStore = slowed === 'turns.claim'
    ? Object.assign(Object.create(store) as Store, { turns: gate.held })
    : Object.assign(Object.create(store) as Store, { cluster: gate.held });
  const dataDir = makeDataDir('quarry-stop-');
  try {
    const config = loadConfig({ QUARRY_DATA_DIR: dataDir });
    const runner = new TurnRunner({
      queue: new TurnQueue(slowStore),
      queries: new TurnQueries(slowStore),
      sources: new SourceSnapshots(slowStore),
      locks: slowStore.cluster,
      ...taskServices(slowStore, config),
      // Unless the test gives one, no turn may run: the agent is never called. No turn has inputs.
      agent: opts.agent ?? ({} as Agent),
      uploads: {} as Uploads,
      config,
      logger: pino({ level: 'silent' }),
      pollIntervalMs: 60_000,
      cronIntervalMs: opts.cronIntervalMs,
    });
    await runner.start();
    await within(gate.entered, 5000, `the worker's call of ${slowed}`);
    // The stop is asked for first, so the held call returns to a worker that is stopping.
    const stopping = runner.shutdown();
    gate.release();
    await stopping;
    // Had the stop not waited for the call, what it took (a lock, turns) would still be held now.
    await gate.finished;
  } finally {
    removeDataDir(dataDir);
  }
}

test('a worker that stops while it is taking the scheduler lock lets go of the lock', { skip }, async () => {
  const lockSchema = `t_sched_${process.pid}`;
  const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema: lockSchema });
  const other = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema: lockSchema });
  try {
    await store.migrate();
    await stopWhileBusy(store, 'cluster.tryLock', { cronIntervalMs: 20 });
    const lock = await other.cluster.tryLock('quarry:cron-scheduler');
    assert.ok(lock?.held, 'the scheduler lock is free once the worker has stopped');
    await lock.release();
  } finally {
    await store.close();
    await other.close();
    await dropSchemas(lockSchema);
  }
});

test('a worker that stops while it is claiming turns starts none of them and leaves them pending', { skip }, async () => {
  const claimSchema = `t_claim_${process.pid}`;
  const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema: claimSchema });
  try {
    await store.migrate();
    const { tasks } = taskServices(store, loadConfig({}));
    const accountId = (await new Accounts(store).createAccount('claims', 100)).account.id;
    const created = await tasks.create(accountId, { spec: emptySpec('wait for a worker'), kind: 'plan' });
    let agentCalls = 0;
    const agent = { runTurn: async () => { agentCalls++; return { outcome: 'completed' }; } } as unknown as Agent;
    await stopWhileBusy(store, 'turns.claim', { cronIntervalMs: 0, agent });
    const turn = await store.turns.get(created.turnId!);
    assert.equal(turn?.status, 'pending', 'the claimed turn was handed back');
    assert.equal(turn?.startedAt, null, 'and never started');
    assert.equal(agentCalls, 0);
  } finally {
    await store.close();
    await dropSchemas(claimSchema);
  }
});

test('a write under a turn\'s lease holds the turn: a takeover claim made meanwhile passes it by, and takes it once the write commits', { skip }, async () => {
  const leaseSchema = `t_lease_hold_${process.pid}`;
  const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema: leaseSchema });
  let finishWrite = () => {};
  try {
    await store.migrate();
    const { tasks, writes } = taskServices(store, loadConfig({}));
    const accountId = (await new Accounts(store).createAccount('leases', 100)).account.id;
    const { turnId } = await tasks.create(accountId, { spec: emptySpec('Lease held by a write'), kind: 'plan' });
    const soon = new Date(Date.now() + 60_000).toISOString();
    const [first] = await store.transaction((tx) => tx.turns.claim('first', 1, new Date().toISOString(), soon));
    assert.equal(first?.id, turnId);
    // After the first worker's lease ran out: a claim then may take the turn over.
    const takeOver = () => store.transaction((tx) => tx.turns.claim('second', 1, new Date(Date.now() + 120_000).toISOString(), '2999-01-01T00:00:00.000Z'));
    let writing!: () => void;
    const inWrite = new Promise<void>((resolve) => (writing = resolve));
    const writeMayEnd = new Promise<void>((resolve) => (finishWrite = resolve));
    // The first worker's write, held open after its lease check (the step's usage is the write under way).
    const write = store.transaction(async (tx) => {
      assert.equal((await tx.tasks.getForLeasedTurn(first!.taskId, turnId!, 'first'))?.leased, true);
      writing();
      await writeMayEnd;
      await tx.turns.addUsage(turnId!, { creditsMicros: 1, tokensIn: 1, tokensInCached: 0, tokensOut: 1, toolCalls: 0, compactions: 0 });
    });
    await within(inWrite, 5000, 'the write under the lease');
    assert.deepEqual(await takeOver(), [], 'the turn is passed by while the write holds it');
    finishWrite();
    await write;
    assert.deepEqual((await takeOver()).map((t) => [t.id, t.leaseOwner]), [[turnId, 'second']]);
    await assert.rejects(writes.toolEvent(first!, { call_id: 'late', name: 'web_search', state: 'started', input: { query: 'granite' }, summary: null, duration_ms: null }), LeaseLost);
  } finally {
    // A failed assertion leaves the write open: it ends before the store closes.
    finishWrite();
    await store.close();
    await dropSchemas(leaseSchema);
  }
});

test('a second claim of an idempotency key waits on the first one\'s uncommitted claim, and loses once that commits', { skip }, async () => {
  const claimSchema = `t_key_claim_${process.pid}`;
  const applicationName = `quarry-key-claim-${process.pid}`;
  const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema: claimSchema, applicationName });
  const admin = await connectClient();
  try {
    await store.migrate();
    const now = new Date();
    const expiredBefore = new Date(now.getTime() - 24 * 60 * 60 * 1000).toISOString();
    const record = (requestHash: string) => ({ requestHash, status: 200, body: `made by ${requestHash}`, createdAt: now.toISOString() });
    let endFirst!: () => void;
    const firstMayEnd = new Promise<void>((resolve) => (endFirst = resolve));
    let firstClaimed!: (won: boolean) => void;
    const claimedByFirst = new Promise<boolean>((resolve) => (firstClaimed = resolve));
    const first = store.transaction(async (tx) => {
      firstClaimed(await tx.idempotency.claim('acct_1', 'key', record('first'), expiredBefore));
      await firstMayEnd;
    });
    assert.equal(await claimedByFirst, true);
    const second = store.transaction((tx) => tx.idempotency.claim('acct_1', 'key', record('second'), expiredBefore));
    await until('the second claim waits on the lock of the first one\'s row', async () => {
      const waiting = await admin.query(`select count(*)::int as n from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'`, [applicationName]);
      return waiting.rows[0].n === 1;
    });
    endFirst();
    await first;
    assert.equal(await second, false, 'the key went to the first claim');
    assert.equal((await store.idempotency.get('acct_1', 'key', expiredBefore))!.requestHash, 'first');
  } finally {
    await admin.end();
    await store.close();
    await dropSchemas(claimSchema);
  }
});

test('notices are sent once their transactions commit, packed into few notifications, none for a rollback', { skip }, async () => {
  const noticeSchema = `t_notice_${process.pid}_${Date.now()}`;
  const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema: noticeSchema });
  const channel = `t_notices_${process.pid}`;
  const raw = await connectClient();
  try {
    const received: string[] = [];
    await store.cluster.listen(channel, (notice) => received.push(notice));
    const notifications: string[] = [];
    raw.on('notification', (msg) => notifications.push(msg.payload ?? ''));
    await raw.query(`LISTEN ${channel}`);
    // One transaction with 300 notices of about 100 bytes; 50 more transactions at once, one notice
    // each; and one that rolls back.
    const together = Array.from({ length: 300 }, (_, i) => `${'x'.repeat(90)} ${i}`);
    const apart = Array.from({ length: 50 }, (_, i) => `apart ${i}`);
    const rolledBack = store.transaction(async (tx) => {
      await tx.cluster.notify(channel, 'never sent');
      throw new Error('rolled back');
    }).catch((err: Error) => err.message);
    await store.transaction(async (tx) => {
      for (const payload of together) await tx.cluster.notify(channel, payload);
    });
    await until('the notices of one transaction', () => received.length >= together.length);
    assert.deepEqual(received, together, 'in the order sent');
    assert.ok(notifications.length <= 5, `packed: ${notifications.length} notifications for 30 kB of notices`);
    for (const payload of notifications) assert.ok(Buffer.byteLength(payload) <= 7900, 'each under the NOTIFY limit');
    await Promise.all([...apart.map((payload) => store.transaction((tx) => tx.cluster.notify(channel, payload))), rolledBack]);
    assert.equal(await rolledBack, 'rolled back');
    // A notice committed after all of them: whatever else was to come came before it.
    await store.transaction((tx) => tx.cluster.notify(channel, 'last'));
    await until('the last notice', () => received.includes('last'));
    assert.equal(received.at(-1), 'last');
    assert.deepEqual(received.slice(together.length, -1).sort(), [...apart].sort(), 'each notice once, and nothing of the rollback');
  } finally {
    await raw.end();
    await store.close();
    await dropSchemas(noticeSchema);
  }
});

test('events whose notice was lost still reach this process\'s listeners: the relay compares streams with the store', { skip }, async () => {
  const relaySchema = `t_relay_${process.pid}_${Date.now()}`;
  const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema: relaySchema });
  const bus = new EventBus();
  const relay = new ClusterRelay({ store, bus, origin: 'here', logger: pino({ level: 'silent' }), onControl: () => {}, sweepIntervalMs: 100 });
  try {
    await store.migrate();
    await relay.start();
    const streamId = `tsk_relay_${process.pid}`;
    const event = (seq: number): EventRecord => ({ taskId: streamId, seq, type: 'text', turnId: null, data: JSON.stringify({ seq, type: 'text' }) });
    const got: number[] = [];
    bus.subscribe(streamId, (e) => got.push(e.seq));
    bus.publish([event(1)]);
    // Stored by "another process" whose notices never came: no notify at all.
    await store.events.insert([event(1), event(2), event(3)]);
    await until('the events stored without a notice', () => got.length >= 3);
    assert.deepEqual(got, [1, 2, 3], 'each once, in order');
  } finally {
    await relay.stop();
    await store.close();
    await dropSchemas(relaySchema);
  }
});

test('a shared rate limit hands out tokens from the store: nodes together never let more than the limit through', { skip }, async () => {
  const limitSchema = `t_limit_${process.pid}_${Date.now()}`;
  const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema: limitSchema });
  const count = (key: string) => store.cluster.hitRateWindow(key, '2030-01-01T00:00:00.000Z', 0);
  try {
    await store.migrate();
    // Every request below falls in one window of the limiters' clock.
    let now = Date.parse('2030-01-01T00:00:30.000Z');
    const node = new StoreRateLimiter(store.cluster, 5, () => now);
    const other = new StoreRateLimiter(store.cluster, 5, () => now);
    // Twelve requests at once, alternating between the nodes: five get through, wherever they arrive.
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? node : other).take('key_1')));
    assert.equal(answers.filter((w) => w === 0).length, 5, `five of twelve let through (${answers.join(', ')})`);
    assert.ok(answers.filter((w) => w > 0).every((w) => w === 30), 'the rest told to wait for the next minute');
    assert.equal(await count('key_1'), 5, 'the store counts the tokens handed out, never above the limit');
    now += 1000;
    assert.equal(await node.take('key_1'), 29, 'still full a second later');

    // A large limit: a node takes a batch (an eighth of the minute at first) and lets requests through on it without asking.
    const big = new StoreRateLimiter(store.cluster, 800, () => now);
    assert.equal(await big.take('key_2'), 0);
    assert.equal(await count('key_2'), 100, 'one batch of 100 taken');
    for (let i = 0; i < 99; i++) assert.equal(big.take('key_2'), 0, 'the batch\'s tokens: no promise, no write');
    assert.equal(await count('key_2'), 100);
    // Idle for a second: its unused tokens go back, so another node may have them.
    assert.equal(await big.take('key_2'), 0);
    now += 1500;
    await until('the idle node\'s tokens given back', async () => (await count('key_2')) === 101, { timeoutMs: 10_000 });
  } finally {
    await store.close();
    await dropSchemas(limitSchema);
  }
});

// ---- the cluster link's own connections --------------------------------------------------------

/** The connections open under `applicationName`, as PostgreSQL counts them. */
async function openConnections(admin: pg.Client, applicationName: string): Promise<number> {
  const r = await admin.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where application_name = $1', [applicationName]);
  return r.rows[0]!.n;
}

/** A link whose connections the test sees as they are made, and changes with `prepare` (the nth, from 1) before the link uses them. */
function watchedLink(applicationName: string, prepare: (client: pg.Client, n: number) => void = () => {}) {
  const clients: pg.Client[] = [];
  const link = new PostgresLink({ connectionString: TEST_DATABASE_URL, application_name: applicationName }, 'public', {
    reconnectMs: 0,
    newClient: (config) => {
      const client = new pg.Client(config);
      clients.push(client);
      prepare(client, clients.length);
      return client;
    },
  });
  return { link, clients };
}

/** Makes `client` wait for `released` before it connects; `connected` settles once it has. */
function heldUntil(client: pg.Client, released: Promise<void>, connected: (outcome: Promise<unknown>) => void): void {
  const connect = client.connect.bind(client);
  client.connect = (() => {
    const outcome = released.then(() => connect());
    connected(outcome);
    return outcome;
  }) as unknown as typeof client.connect;
}

/** Ends the backends of `applicationName`'s connections, as an administrator (or a restart) would. */
async function terminate(admin: pg.Client, applicationName: string): Promise<void> {
  await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [applicationName]);
}

const noneLeftOpen = (admin: pg.Client, applicationName: string) =>
  until(`no connection of ${applicationName} left open`, async () => (await openConnections(admin, applicationName)) === 0, { timeoutMs: 3000 });

/** A test of the link on a connection of the test's own (`admin`), the link's named `applicationName`. */
function linkCase(title: string, tag: string, body: (admin: pg.Client, applicationName: string) => Promise<void>): void {
  test(title, { skip }, async () => {
    const admin = await connectClient();
    try {
      await body(admin, `quarry link ${tag} ${process.pid}`);
    } finally {
      await admin.end();
    }
  });
}

linkCase('the cluster link closed while its listening connection is being set up leaves no connection open', 'setup', async (admin, applicationName) => {
  const { link } = watchedLink(applicationName);
  const listening = link.listen('quarry_link_setup', () => {});
  await link.close();
  await assert.rejects(listening, /closed/);
  await noneLeftOpen(admin, applicationName);
});

linkCase('the cluster link closed while it reconnects after losing its listening connection leaves no connection open', 'reconnect', async (admin, applicationName) => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let reconnected: Promise<unknown> | undefined;
  const { link, clients } = watchedLink(applicationName, (client, n) => n === 2 && heldUntil(client, released, (outcome) => (reconnected = outcome)));
  await link.listen('quarry_link_reconnect', () => {});
  assert.equal(await openConnections(admin, applicationName), 1);
  await terminate(admin, applicationName);
  await until('the link to reconnect', () => clients.length === 2);
  // Closed while the new connection is on its way, which then arrives.
  const closing = link.close();
  release();
  await closing;
  await reconnected;
  await noneLeftOpen(admin, applicationName);
});

linkCase('the cluster link closed after losing its listening connection does not reconnect', 'lost', async (admin, applicationName) => {
  let closing = false;
  let madeAfterClose = 0;
  const { link, clients } = watchedLink(applicationName, () => void (closing && madeAfterClose++));
  await link.listen('quarry_link_lost', () => {});
  const lost = new Promise((resolve) => {
    clients[0]!.once('error', resolve);
    clients[0]!.once('end', resolve);
  });
  await terminate(admin, applicationName);
  // The link heard of the loss in the same emit, before this: its reconnect (after 0 ms) is due,
  // or, on a busy machine, already begun (the close must then end that connection).
  await lost;
  closing = true;
  await link.close();
  // A timer set after the link's fires after it: by then a reconnect would have begun.
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(madeAfterClose, 0, 'no connection made after the close');
  await noneLeftOpen(admin, applicationName);
});

linkCase('the cluster link ends a listening connection whose LISTEN failed, and takes no lock once closed', 'failed', async (admin, applicationName) => {
  const { link } = watchedLink(applicationName, (client) => {
    const query = client.query.bind(client);
    client.query = ((text: string) => (/^LISTEN/.test(text) ? Promise.reject(new Error('LISTEN refused')) : query(text))) as typeof query;
  });
  await assert.rejects(link.listen('quarry_link_failed', () => {}), /LISTEN refused/);
  await noneLeftOpen(admin, applicationName);

  await link.close();
  assert.equal(await link.tryLock('quarry:after-close'), null);
  await noneLeftOpen(admin, applicationName);
});

test('a shared rate limit whose store write failed holds no request as still waiting: in the minute\'s last half a node then takes one token for one request', { skip }, async () => {
  await withOwnStore(`t_limit_fail_${process.pid}`, async (store) => {
    const now = Date.parse('2030-01-01T00:00:30.000Z');
    // Other nodes' requests this minute.
    await store.cluster.hitRateWindow('key_f', '2030-01-01T00:00:00.000Z', 43);
    const asked: number[] = [];
    let failNext = false;
    const counts = {
      hitRateWindow(keyId: string, windowStart: string, hits: number): Promise<number> {
        if (failNext) {
          failNext = false;
          return Promise.reject(new Error('the store is down'));
        }
        asked.push(hits);
        return store.cluster.hitRateWindow(keyId, windowStart, hits);
      },
    };
    const node = new StoreRateLimiter(counts, 100, () => now);
    // A batch of 12 (an eighth of what is left, squared), then its tokens: 55 of 100 used.
    assert.equal(await node.take('key_f'), 0);
    for (let i = 0; i < 11; i++) assert.equal(node.take('key_f'), 0);
    assert.deepEqual(asked, [12]);
    failNext = true;
    await assert.rejects(Promise.resolve(node.take('key_f')), /the store is down/);
    assert.equal(await node.take('key_f'), 0);
    assert.deepEqual(asked, [12, 1], 'past half the minute, one request waiting takes one token');
  });
});
