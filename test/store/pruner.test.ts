import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { Pruner } from '../../src/pruner.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { startHarness } from '../kit/harness.js';
import { waitIdle } from '../kit/http.js';
import { dropSchemas, TEST_DATABASE_URL, testStoreEnv } from '../kit/postgres.js';
import { fakeModel } from '../kit/task-api.js';
import { task, turn } from './store-cases.js';

/** A migrated store of the kind the suite runs on (QUARRY_TEST_STORE), and how to remove it. */
async function openTestStore(): Promise<{ store: Store; remove(): Promise<void> }> {
  const { schema } = testStoreEnv('t_prune');
  const store = schema === undefined
    ? openSqliteStore(fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-prune-')))
    : await openPostgresStore({ connectionString: TEST_DATABASE_URL, schema });
  await store.migrate();
  return {
    store,
    async remove() {
      await store.close();
      if (schema !== undefined) await dropSchemas(schema);
    },
  };
}

test('a pass purges a deleted task only after its grace, and keeps old turns’ events until retention is set', async () => {
  const { store, remove } = await openTestStore();
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
  assert.deepEqual((await store.events.list(gone.id, 0, 1000)).map((e) => e.seq), [150], 'the deleted task keeps its last event');
  assert.equal((await store.tasks.get(gone.id))?.status, 'deleted');
  assert.equal((await store.events.list(live.id, 0, 1000)).length, 150, 'a live task keeps every event while retention is off');

  now += 30 * 24 * 3600_000;
  assert.equal((await pruner({ QUARRY_EVENT_RETENTION_DAYS: '7' }).pass()).events, 50);
  assert.deepEqual((await store.events.list(live.id, 0, 1)).map((e) => e.seq), [51], 'a resume from before starts at the oldest kept event');
  await remove();
});

test('GET /task/{task_id} of a deleted task still shows it deleted, with its spec and its deleted event, after its data is purged', async () => {
  const h = await startHarness();
  try {
    // A row written, then enough failing tool calls that the task has more events than its body shows.
    fakeModel(h).setResponder((_body, index) => {
      if (index === 0) return { text: 'Writing.', toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows: [{ plant: 'North' }] } }] };
      if (index <= 40) return { text: `Check ${index}.`, toolCalls: [{ name: 'no_such_tool', arguments: {} }] };
      return { text: 'Done.' };
    });
    const spec = { prompt: 'Watch the plants.', limits: { max_steps: 100 }, outputs: [{ id: 'facts', kind: 'table', columns: [{ name: 'plant' }] }] };
    const created = await h.request('POST', '/task/start', { body: { task: spec } });
    assert.equal(created.status, 200, created.text);
    const id = created.body.task_id as string;
    await waitIdle(h.request, id, { timeoutMs: 30_000 });
    assert.equal((await h.request('DELETE', `/task/${id}`)).status, 200);
    const before = await h.request('GET', `/task/${id}`);
    assert.equal(before.status, 200);
    assert.equal(before.body.events.length, 100, 'the task has more events than its body shows');

    const pruner = new Pruner({ store: h.quarry.store, config: loadConfig({}).prune, requestTimeoutMs: 300_000, logger: pino({ level: 'silent' }), now: () => Date.now() + 25 * 3600_000 });
    const counts = await pruner.pass();
    assert.equal(counts.purgedTasks, 1);
    assert.ok(counts.deletedTaskRows > 0, 'its turns, steps, older events and rows were deleted');

    const after = await h.request('GET', `/task/${id}`);
    assert.equal(after.status, 200);
    const { events: keptEvents, ...task } = after.body;
    const { events: bodyEvents, ...taskBefore } = before.body;
    assert.deepEqual(task, taskBefore, 'the task, its status and its spec as they were');
    assert.equal(task.status, 'deleted');
    assert.deepEqual(keptEvents, [bodyEvents.at(-1)], 'its last event, the deleted snapshot, kept');
    assert.equal(keptEvents[0].reason, 'deleted');
    assert.equal((await h.request('GET', `/task/${id}/output`)).status, 404, 'every other route answers 404 as before');
  } finally {
    await h.close();
  }
});

test('the pruning settings take fractions and zero, and refuse anything else naming the setting', () => {
  const prune = loadConfig({ QUARRY_PRUNE_INTERVAL_S: '0.5', QUARRY_DELETED_TASK_GRACE_HOURS: '0', QUARRY_EVENT_RETENTION_DAYS: '0.25', QUARRY_WEBHOOK_DELIVERY_RETENTION_DAYS: '0.5' }).prune;
  assert.deepEqual(prune, { intervalMs: 500, deletedTaskGraceMs: 0, eventRetentionMs: 6 * 3600_000, deliveryRetentionMs: 12 * 3600_000 });
  const tiny = loadConfig({ QUARRY_PRUNE_INTERVAL_S: '0.0000001', QUARRY_EVENT_RETENTION_DAYS: '0.0000000001' }).prune;
  assert.deepEqual([tiny.intervalMs, tiny.eventRetentionMs], [1, 1], 'a tiny setting is not 0, which would turn pruning or retention off');
  for (const name of ['QUARRY_PRUNE_INTERVAL_S', 'QUARRY_DELETED_TASK_GRACE_HOURS', 'QUARRY_EVENT_RETENTION_DAYS', 'QUARRY_WEBHOOK_DELIVERY_RETENTION_DAYS']) {
    for (const bad of ['-1', 'soon', 'Infinity']) assert.throws(() => loadConfig({ [name]: bad }), new RegExp(`^Error: ${name} must be a number >= 0`));
  }
});
