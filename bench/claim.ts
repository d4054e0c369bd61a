/**
 * The cost of a claim, with fair keys (ORDER BY fair_key, id on turns_fair) and as it was before
 * (ORDER BY id on turns_status), on one store in the same run, interleaved: a backlog of waiting
 * turns in many lines (a large group's runs, other groups, single tasks) and running turns, then
 * rounds of "claim `limit`, hand the leases back", each claim timed. Also the cost of making a
 * turn pending, in a transaction as the task service does (its insert places it by its fair key),
 * and of a line of the account beginning to wait beside the backlog: new lines (the account's
 * waiting turns are spaced again for its new count of lines), then one line again and again
 * once its turn ended (the spacing holds already: the respace reads, moves nothing).
 *
 *   npm run bench:claim                           SQLite
 *   QUARRY_TEST_STORE=postgres npm run bench:claim  PostgreSQL (the test database, a schema of its own)
 *
 * BENCH_CLAIM_BACKLOG (default 5000 waiting turns), BENCH_CLAIM_ROUNDS (default 2000 per claim kind and limit).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { openPostgresStore } from '../src/store/postgres/postgres-store.js';
import type { Database } from '../src/store/database.js';
import type { Store } from '../src/store/store.js';
import { group, task, turn } from '../test/store/store-cases.js';
import { dropSchemas, TEST_DATABASE_URL } from '../test/kit/postgres.js';
import { percentile } from './lib.js';

const BACKLOG = Number(process.env.BENCH_CLAIM_BACKLOG ?? 5000);
const ROUNDS = Number(process.env.BENCH_CLAIM_ROUNDS ?? 2000);
const postgres = process.env.QUARRY_TEST_STORE === 'postgres';

/** The claim of pending turns as it was before fair keys: oldest first. */
async function oldClaim(db: Kysely<Database>, skipLocked: boolean, owner: string, limit: number, leaseUntil: string): Promise<number> {
  let ready = db.selectFrom('turns').select('id').where('status', '=', 'pending').orderBy('id').limit(limit);
  if (skipLocked) ready = ready.forUpdate().skipLocked();
  const rows = await db.with('ready', () => ready).updateTable('turns').set({ status: 'running', lease_owner: owner, lease_expires_at: leaseUntil })
    .where('id', 'in', (eb) => eb.selectFrom('ready').select('id')).returningAll().execute();
  return rows.length;
}

async function main(): Promise<void> {
  const schema = `b_claim_${process.pid}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-bench-claim-'));
  const store: Store = postgres ? await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema }) : openSqliteStore(dataDir);
  // The bench reaches past the Store for the old statement only.
  const db = (store as unknown as { root: Kysely<Database> }).root;
  try {
    await store.migrate();
    const accountId = 'acct_bench';
    await store.accounts.insert({ id: accountId, name: 'bench', balanceMicros: 1e12, creditsUsedMicros: 0, createdAt: new Date().toISOString() });
    // Lines: one large group (80%), 20 small groups, and single tasks.
    const big = group(accountId);
    const small = Array.from({ length: 20 }, () => group(accountId));
    for (const g of [big, ...small]) await store.groups.insert(g);
    const insertMs: number[] = [];
    for (let i = 0; i < BACKLOG; i++) {
      const line = i % 5 !== 0 ? big.id : i % 10 === 0 ? small[(i / 10) % 20]!.id : accountId;
      const t = task(accountId);
      await store.tasks.insert(t);
      const began = performance.now();
      await store.transaction((tx) => tx.turns.insert(turn(t.id, accountId, { line })));
      insertMs.push(performance.now() - began);
    }
    // The statistics autovacuum gathers once a table has grown: until then PostgreSQL may keep the
    // plans it made for the empty table, which for the respace join every turn with every other.
    if (postgres) await sql`analyze turns`.execute(db);
    // Some turns running, as on a busy worker.
    await store.turns.claim('w_running', 256, new Date().toISOString(), new Date(Date.now() + 3_600_000).toISOString());
    const leaseUntil = new Date(Date.now() + 3_600_000).toISOString();
    const us = (v: number[], p: number) => (percentile(v, p) * 1000).toFixed(0);
    const results: string[] = [];
    for (const limit of [1, 16]) {
      const fresh: number[] = [];
      const old: number[] = [];
      const fairClaim = () => store.turns.claim('w_bench', limit, new Date().toISOString(), leaseUntil, { takeOverExpired: false });
      const byIdClaim = () => oldClaim(db, postgres, 'w_bench', limit, leaseUntil);
      for (let r = 0; r < ROUNDS; r++) {
        // Each goes first in every other round: the claim right after a hand-back is not always the same one.
        const order: [() => Promise<unknown>, number[]][] = r % 2 === 0 ? [[fairClaim, fresh], [byIdClaim, old]] : [[byIdClaim, old], [fairClaim, fresh]];
        for (const [claim, times] of order) {
          const began = performance.now();
          await claim();
          times.push(performance.now() - began);
          await store.turns.releaseLeases('w_bench');
        }
      }
      results.push(`limit ${limit}: fair claim p50 ${us(fresh, 50)} µs p90 ${us(fresh, 90)} µs; old claim p50 ${us(old, 50)} µs p90 ${us(old, 90)} µs`);
    }
    // New groups of the account, each beginning to wait beside the whole backlog.
    const beginMs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const g = group(accountId);
      await store.groups.insert(g);
      const t = task(accountId);
      await store.tasks.insert(t);
      const began = performance.now();
      await store.transaction((tx) => tx.turns.insert(turn(t.id, accountId, { line: g.id })));
      beginMs.push(performance.now() - began);
    }
    // One more line, again and again once its turn ended: its account's turns are spaced for it already, nothing moves.
    const againMs: number[] = [];
    const again = group(accountId);
    await store.groups.insert(again);
    for (let i = 0; i < 6; i++) {
      const t = task(accountId);
      await store.tasks.insert(t);
      const made = turn(t.id, accountId, { line: again.id });
      const began = performance.now();
      await store.transaction((tx) => tx.turns.insert(made));
      if (i > 0) againMs.push(performance.now() - began);
      await store.turns.end(made.id, { status: 'completed', endedAt: new Date().toISOString(), error: null });
    }
    console.log(`claim bench on ${postgres ? 'PostgreSQL' : 'SQLite'}: ${BACKLOG} waiting turns, 256 running, ${ROUNDS} rounds per claim kind and limit`);
    for (const line of results) console.log(`  ${line}`);
    console.log(`  making a turn pending (a transaction: its insert with its fair key), over the backlog's growth: p50 ${us(insertMs, 50)} µs p90 ${us(insertMs, 90)} µs`);
    console.log(`  the same for a line beginning to wait beside the backlog, 5 times: p50 ${us(beginMs, 50)} µs max ${us(beginMs, 100)} µs`);
    console.log(`  a line beginning to wait again once its turn ended (nothing moves), 5 times: p50 ${us(againMs, 50)} µs max ${us(againMs, 100)} µs`);
  } finally {
    await store.close();
    if (postgres) await dropSchemas(schema);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
