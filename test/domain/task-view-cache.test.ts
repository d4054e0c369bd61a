/**
 * The list's view cache (src/tasks/task-view-cache.ts), without HTTP or a database: a page is
 * rebuilt exactly when one of its tasks changed version, only the changed tasks are read, and a
 * cron task's view, whose poll_after_s counts down, is never served from the cache.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TaskViewCache } from '../../src/tasks/task-view-cache.js';
import type { TaskRecord } from '../../src/domain/records.js';
import { task } from '../store/store-cases.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

/** A store stand-in: the records it holds, and the ids each read asked for. */
function records(...tasks: TaskRecord[]) {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const reads: string[][] = [];
  return { byId, reads, read: async (ids: string[]) => (reads.push([...ids].sort()), ids.flatMap((id) => byId.get(id) ?? [])) };
}

describe('TaskViewCache', () => {
  it('sends the kept page while its tasks keep their versions, and reads only a changed task again', async () => {
    const cache = new TaskViewCache();
    const [a, b] = [task('acct_1', { name: 'a' }), task('acct_1', { name: 'b' })];
    const store = records(a, b);
    const entries = [{ id: a.id, version: 0 }, { id: b.id, version: 0 }];
    const first = await cache.pageBody('acct_1 50', entries, store.read);
    assert.deepEqual(JSON.parse(first.toString()).map((t: any) => t.name), ['a', 'b']);
    assert.equal(await cache.pageBody('acct_1 50', entries.map((e) => ({ ...e })), store.read), first, 'the same tasks at the same versions: the same body');
    assert.deepEqual(store.reads, [[a.id, b.id].sort()]);

    store.byId.set(b.id, { ...b, name: 'b renamed' });
    const changed = await cache.pageBody('acct_1 50', [entries[0]!, { id: b.id, version: 1 }], store.read);
    assert.deepEqual(JSON.parse(changed.toString()).map((t: any) => t.name), ['a', 'b renamed']);
    assert.deepEqual(store.reads.at(-1), [b.id], 'only the changed task is read');

    // Another request (a cursor, another limit) with a held task builds its page from the held view.
    const other = await cache.pageBody('acct_1 1', [entries[0]!], store.read);
    assert.deepEqual(JSON.parse(other.toString()).map((t: any) => t.name), ['a']);
    assert.equal(store.reads.length, 2);
  });

  it('leaves out a task deleted between the two reads, and keeps no such page', async () => {
    const cache = new TaskViewCache();
    const a = task('acct_1');
    const store = records(a);
    const entries = [{ id: a.id, version: 0 }, { id: 'tsk_gone', version: 3 }];
    assert.deepEqual(JSON.parse((await cache.pageBody('p', entries, store.read)).toString()).map((t: any) => t.task_id), [a.id]);
    await cache.pageBody('p', entries, store.read);
    assert.deepEqual(store.reads.at(-1), ['tsk_gone'], 'the page was built again');
  });

  it('builds a cron task\'s view at every read: its poll_after_s counts down to the next run', async (t) => {
    const cache = new TaskViewCache();
    const nextRun = Date.now() + 100_000;
    const cron = task('acct_1', { cronExpression: '0 * * * *', cronTimezone: 'UTC', cronNextRunAt: new Date(nextRun).toISOString() });
    const store = records(cron);
    const entries = [{ id: cron.id, version: 0 }];
    t.mock.timers.enable({ apis: ['Date'], now: nextRun - 100_000 });
    const before = JSON.parse((await cache.pageBody('p', entries, store.read)).toString())[0].poll_after_s;
    t.mock.timers.tick(40_000);
    const later = JSON.parse((await cache.pageBody('p', entries, store.read)).toString())[0].poll_after_s;
    assert.deepEqual([before, later], [100, 60]);
    assert.equal(store.reads.length, 2);
  });
});
