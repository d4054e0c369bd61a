/**
 * What the per-key rate limit costs a request, per take: the in-memory token buckets (one node,
 * SQLite) and the shared limiter on PostgreSQL (the test database), whose common request is let
 * through on a token the node holds. BENCH_RATE_TAKES takes (default 1,000,000) of one key, under
 * a limit high enough never to refuse (as the throughput benches set it), then under 600 a
 * minute with 600 takes one at a time (every one let through; over the minute's last half each asks the store).
 *
 *   npm run bench:rate-limit
 */
import { MemoryRateLimiter, StoreRateLimiter } from '../src/http/rate-limiter.js';
import { openPostgresStore } from '../src/store/postgres/postgres-store.js';
import { dropSchemas, TEST_DATABASE_URL } from '../test/kit/postgres.js';

const TAKES = Number(process.env.BENCH_RATE_TAKES ?? 1_000_000);

async function timeTakes(take: () => number | Promise<number>, n: number): Promise<{ nsPerTake: number; writes: number }> {
  let writes = 0;
  const began = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const wait = take();
    if (typeof wait !== 'number') {
      writes++;
      await wait;
    }
  }
  return { nsPerTake: Number(process.hrtime.bigint() - began) / n, writes };
}

async function main(): Promise<void> {
  const memory = new MemoryRateLimiter(1_000_000_000);
  const mem = await timeTakes(() => memory.take('key_mem'), TAKES);
  const schema = `b_rate_${process.pid}`;
  const store = await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema });
  try {
    await store.migrate();
    const shared = new StoreRateLimiter(store.cluster, 1_000_000_000);
    const pg = await timeTakes(() => shared.take(`key_pg_${process.pid}`), TAKES);
    const tight = new StoreRateLimiter(store.cluster, 600);
    const full = await timeTakes(() => tight.take(`key_tight_${process.pid}`), 600);
    console.log(`rate-limit bench: ${TAKES} takes of one key`);
    console.log(`  in memory (one node): ${mem.nsPerTake.toFixed(0)} ns a take`);
    console.log(`  shared on PostgreSQL, limit never reached: ${pg.nsPerTake.toFixed(0)} ns a take, ${pg.writes} of them waited on a store write`);
    console.log(`  shared on PostgreSQL, 600 takes under a limit of 600: ${(full.nsPerTake / 1000).toFixed(0)} µs a take on average, ${full.writes} store writes`);
  } finally {
    await store.close();
    await dropSchemas(schema);
  }
}

await main();
