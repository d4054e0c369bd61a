import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { Pruner } from '../src/pruner.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { task, turn } from './store/store-cases.js';

test('a pass purges a deleted task only after its grace, and keeps old turns’ events until retention is set', async () => {
  const store = openSqliteStore(fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-prune-')));
  await store.migrate();
  const accountId = 'acct_prune';
  await store.accounts.insert({ id: accountId, name: 'a', balanceMicros: 0, creditsUsedMicros: 0, createdAt: '2030-01-01T00:00:00.000Z' });
  const deletedAt = '2030-01-01T00:00:00.000Z';
  const gone = task(accountId, { status: 'deleted', deletedAt, lastEventSeq: 150 });
  const live = task(accountId, { lastEventSeq: 150 });
  for (const t of [gone, live]) {
    await store.tasks.insert(t);
    const r = turn(t.id, accountId, { status: 'completed', endedAt: deletedAt });
    await store.turns.insert(r);
    await store.events.insert(Array.from({ length: 150 }, (_, i) => ({ taskId: t.id, seq: i + 1, type: 'text', turnId: r.id, data: '{}' })));
  }
  let now = Date.parse(deletedAt) + 23 * 3600_000;
  const pruner = (env: Record<string, string>) => new Pruner({ store, config: loadConfig(env).prune, requestTimeoutMs: 300_000, logger: pino({ level: 'silent' }), now: () => now });

  assert.equal((await pruner({}).pass()).purgedTasks, 0, 'inside the 24 h grace');
  assert.equal((await store.events.list(gone.id, 0, 1000)).length, 150);

  now += 2 * 3600_000;
  const counts = await pruner({}).pass();
  assert.equal(counts.purgedTasks, 1);
  assert.equal((await store.events.list(gone.id, 0, 1000)).length, 100, 'the deleted task keeps the events its body shows');
  assert.equal((await store.tasks.get(gone.id))?.status, 'deleted');
  assert.equal((await store.events.list(live.id, 0, 1000)).length, 150, 'a live task keeps every event while retention is off');

  now += 30 * 24 * 3600_000;
  assert.equal((await pruner({ QUARRY_EVENT_RETENTION_DAYS: '7' }).pass()).events, 50);
  assert.deepEqual((await store.events.list(live.id, 0, 1)).map((e) => e.seq), [51], 'a resume from before starts at the oldest kept event');
  await store.close();
});
