/**
 * The store contract as one suite of cases. Every database adapter runs all of them, so the
 * adapters cannot drift apart.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, it, before, after } from 'node:test';
import { newId } from '../../src/ids.js';
import { turnError } from '../../src/errors.js';
import type { DeliveryRecord, GroupInputRecord, UploadRecord, GroupRecord, SourceSnapshotRecord, TaskRecord, TurnRecord, WebhookEndpointRecord } from '../../src/domain/records.js';
import type { Repositories, Store, TaskListEntry } from '../../src/store/store.js';
import { emptySpec } from '../../src/domain/spec.js';
import { until } from '../kit/bounded-waits.js';
import { loadConfig } from '../../src/config.js';
import { EventBus } from '../../src/events/event-bus.js';
import { TaskService } from '../../src/tasks/task-service.js';
import { LeaseLost, TurnWrites } from '../../src/tasks/turn-writes.js';
import { UnitsOfWork } from '../../src/tasks/unit-of-work.js';

let counter = 0;
const uid = (p: string) => `${p}_${process.pid}_${Date.now()}_${++counter}`;

export function task(accountId: string, overrides: Partial<TaskRecord> = {}): TaskRecord {
  const now = new Date().toISOString();
  return {
    id: uid('tsk'), accountId, name: null, type: 'research', status: 'plan', phase: 'plan', activity: 'idle', spec: emptySpec('q'),
    pinned: false, cronExpression: null, cronTimezone: null, cronNextRunAt: null, activeOutput: null, creditsUsedMicros: 0, lastEventSeq: 0,
    currentTurnId: null, queuedCount: 0, createdAt: now, updatedAt: now, deletedAt: null, ...overrides,
  };
}

export function turn(taskId: string, accountId: string, overrides: Partial<TurnRecord> = {}): TurnRecord {
  return {
    id: uid('turn'), taskId, accountId, line: accountId, kind: 'continue', status: 'pending', input: 'hi', planOnly: false, offline: false, replyTextStored: false, createdAt: new Date().toISOString(),
    startedAt: null, endedAt: null, leaseOwner: null, leaseExpiresAt: null, creditsUsedMicros: 0, tokensIn: 0, tokensInCached: 0, tokensOut: 0, toolCalls: 0, compactions: 0, error: null, rowsWritten: 0, verifiedRows: 0, changes: { added: 0, changed: 0, unconfirmed: 0 }, ...overrides,
  };
}

/** An endpoint; ids are ULIDs (newId), so later ones sort after earlier ones as in the service. */
export function webhookEndpoint(accountId: string, overrides: Partial<WebhookEndpointRecord> = {}): WebhookEndpointRecord {
  return {
    id: newId('wh'), accountId, url: 'https://hooks.example.com/quarry', events: ['task.turn_completed'], description: null,
    secret: 'whsec_c2VjcmV0', previousSecret: null, previousSecretExpiresAt: null, createdAt: '2030-01-01T00:00:00.000Z', ...overrides,
  };
}

/** A pending delivery of `endpointId`, never attempted, due at `nextAttemptAt` (default: never in these cases). */
export function webhookDelivery(endpointId: string, overrides: Partial<DeliveryRecord> = {}): DeliveryRecord {
  return {
    id: newId('msg'), endpointId, event: 'task.turn_completed', payload: '{"type":"task.turn_completed","data":{"city":"Zürich 北京 🚀"}}',
    status: 'pending', attempts: 0, lastStatusCode: null, lastError: null, nextAttemptAt: '2999-01-01T00:00:00.000Z',
    retrySince: '2030-01-01T00:00:00.000Z', createdAt: '2030-01-01T00:00:00.000Z', deliveredAt: null, ...overrides,
  };
}

/**
 * A snapshot of a page `taskId` read; its sha256 and bytes are those of its text (as the turn
 * runner records them). Ids are ULIDs (newId), so later ones sort after earlier ones: reading order.
 */
export function sourceSnapshot(taskId: string, overrides: Partial<SourceSnapshotRecord> = {}): SourceSnapshotRecord {
  const text = overrides.text ?? 'Zürich 北京 🚀: the plant’s capacity rose to 1,200 MW — “a record”.';
  return {
    id: newId('src'), taskId, url: 'https://energy.example.com/plants', finalUrl: 'https://energy.example.com/plants', uploadId: null, title: 'Plants',
    fetchedAt: '2030-01-01T00:00:00.000Z', sha256: crypto.createHash('sha256').update(text).digest('hex'), bytes: Buffer.byteLength(text), ...overrides, text,
  };
}

/** A running group of `accountId` with no inputs yet; ids are ULIDs, so later groups sort after earlier ones. */
export function group(accountId: string, overrides: Partial<GroupRecord> = {}): GroupRecord {
  return {
    id: newId('grp'), accountId, name: 'Zürich 北京 🚀', spec: emptySpec('q'), maxParallel: 4, maxCreditsMicros: null, status: 'running', inputs: 0, duplicates: 0,
    counts: { pending: 0, running: 0, completed: 0, failed: 0, stopped: 0 }, creditsUsedMicros: 0, lastEventSeq: 0,
    createdAt: '2030-01-01T00:00:00.000Z', updatedAt: '2030-01-01T00:00:00.000Z', finishedAt: null, cronExpression: null, cronTimezone: null, cronNextRunAt: null, ...overrides,
  };
}

/** 'settled' once `p` has settled (either way), or 'timed out' after `ms`; leaves no timer behind. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<'settled' | 'timed out'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timed out'>((resolve) => (timer = setTimeout(() => resolve('timed out'), ms)));
  try {
    return await Promise.race([p.then(() => 'settled' as const, () => 'settled' as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function runStoreCases(name: string, open: () => Promise<Store>, dispose: () => Promise<void> = async () => {}, opts: { skip?: string | false } = {}): void {
  describe(`store contract: ${name}`, { skip: opts.skip }, () => {
    let store: Store;
    let accountId: string;

    before(async () => {
      store = await open();
      await store.migrate();
      accountId = uid('acct');
      await store.accounts.insert({ id: accountId, name: 'a', balanceMicros: 10_000_000, creditsUsedMicros: 0, createdAt: new Date().toISOString() });
    });
    after(async () => {
      await store.close();
      await dispose();
    });

    it('migrates idempotently', async () => {
      await store.migrate();
      assert.ok((await store.accounts.count()) >= 1);
    });

    it('charges and adjusts balances in whole micro-credits, never below zero', async () => {
      const id = uid('acct');
      await store.accounts.insert({ id, name: 'b', balanceMicros: 1_000_000, creditsUsedMicros: 0, createdAt: new Date().toISOString() });
      assert.equal(await store.accounts.charge(id, 250_000), 750_000);
      assert.equal(await store.accounts.charge(id, 5_000_000), 0);
      const charged = (await store.accounts.get(id))!;
      assert.equal(charged.balanceMicros, 0);
      assert.equal(charged.creditsUsedMicros, 5_250_000);
      assert.equal(await store.accounts.adjustBalance(id, 100_000), 100_000);
      assert.equal(await store.accounts.adjustBalance(id, 200_000), 300_000, '0.1 + 0.2 credits are 0.3 exactly');
      assert.equal(await store.accounts.adjustBalance(id, -300_000), 0, 'and taking 0.3 leaves exactly nothing');
      assert.equal(await store.accounts.adjustBalance(id, -10_000_000), 0);
      await assert.rejects(store.accounts.adjustBalance(id, 0.5), RangeError, 'a fraction of a micro-credit never reaches the store');
    });

    it('holds balances up to 2^53 micro-credits exactly', async () => {
      const id = uid('acct');
      const big = Number.MAX_SAFE_INTEGER - 1;
      await store.accounts.insert({ id, name: 'rich', balanceMicros: big, creditsUsedMicros: 0, createdAt: new Date().toISOString() });
      assert.equal((await store.accounts.get(id))!.balanceMicros, big);
      assert.equal(await store.accounts.charge(id, 1), big - 1);
      assert.equal((await store.accounts.get(id))!.creditsUsedMicros, 1);
    });

    it('stores and reads back the micro-credits of tasks and turns', async () => {
      const t = task(accountId, { creditsUsedMicros: 300_000 });
      await store.tasks.insert(t);
      // Completed, so the claim cases of the shared store never see it.
      const r = turn(t.id, accountId, { status: 'completed', creditsUsedMicros: 1 });
      await store.turns.insert(r);
      assert.equal((await store.tasks.get(t.id))!.creditsUsedMicros, 300_000);
      await store.tasks.update(t.id, { creditsUsedMicros: 300_001 });
      await store.turns.update(r.id, { creditsUsedMicros: 2 });
      assert.equal((await store.tasks.get(t.id))!.creditsUsedMicros, 300_001);
      assert.equal((await store.turns.get(r.id))!.creditsUsedMicros, 2);
    });

    it("adds a step's usage to a turn's totals and returns its credits used", async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      const r = turn(t.id, accountId, { status: 'completed', creditsUsedMicros: 5, tokensIn: 10, tokensInCached: 4, tokensOut: 20, toolCalls: 1, compactions: 1 });
      await store.turns.insert(r);
      assert.equal(await store.turns.addUsage(r.id, { creditsMicros: 3_000_000, tokensIn: 1000, tokensInCached: 900, tokensOut: 2000, toolCalls: 0, compactions: 1 }), 3_000_005);
      assert.equal(await store.turns.addUsage(r.id, { creditsMicros: 0, tokensIn: 0, tokensInCached: 0, tokensOut: 0, toolCalls: 2, compactions: 0 }), 3_000_005);
      const stored = (await store.turns.get(r.id))!;
      assert.deepEqual(
        [stored.creditsUsedMicros, stored.tokensIn, stored.tokensInCached, stored.tokensOut, stored.toolCalls, stored.compactions],
        [3_000_005, 1010, 904, 2020, 3, 2],
      );
      assert.equal(await store.turns.addUsage('turn_missing', { creditsMicros: 1, tokensIn: 0, tokensInCached: 0, tokensOut: 0, toolCalls: 0, compactions: 0 }), undefined);
    });

    it("adds rows a turn wrote to its counts", async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      const r = turn(t.id, accountId, { status: 'running' });
      await store.turns.insert(r);
      await store.turns.addRows(r.id, { written: 5, verified: 3 });
      await store.turns.addRows(r.id, { written: 2, verified: 2 });
      const stored = (await store.turns.get(r.id))!;
      assert.deepEqual([stored.rowsWritten, stored.verifiedRows], [7, 5]);
    });

    it('ends a turn: outcome, end time and error set, lease dropped, credits used returned', async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      // Held by a worker that is not claiming: the claim cases of the shared store take only expired or pending turns.
      const r = turn(t.id, accountId, { status: 'running', leaseOwner: 'w-end', leaseExpiresAt: '2999-01-01T00:00:00.000Z', creditsUsedMicros: 7_500_000 });
      await store.turns.insert(r);
      const error = turnError('limit_reached', 'The turn reached its limit.');
      assert.equal(await store.turns.end(r.id, { status: 'failed', endedAt: '2030-01-01T00:00:00.000Z', error }), 7_500_000);
      const ended = (await store.turns.get(r.id))!;
      assert.deepEqual([ended.status, ended.endedAt, ended.error, ended.leaseOwner, ended.leaseExpiresAt], ['failed', '2030-01-01T00:00:00.000Z', error, null, null]);
      assert.equal(await store.turns.end('turn_missing', { status: 'completed', endedAt: '2030-01-01T00:00:00.000Z', error: null }), undefined);
    });

    it('finds keys by hash and revokes them', async () => {
      const keyId = uid('key');
      await store.accounts.insertKey({ id: keyId, accountId, keyHash: `h-${keyId}`, createdAt: new Date().toISOString(), revokedAt: null });
      assert.equal((await store.accounts.findKeyByHash(`h-${keyId}`))!.accountId, accountId);
      const revoked = await store.accounts.revokeKey(accountId, keyId, '2030-01-01T00:00:00.000Z');
      assert.equal(revoked!.revokedAt, '2030-01-01T00:00:00.000Z');
      assert.equal((await store.accounts.findKeyByHash(`h-${keyId}`))!.revokedAt, '2030-01-01T00:00:00.000Z');
      assert.equal(await store.accounts.revokeKey('other', keyId, 'x'), undefined);
    });

    it('stores and updates tasks, spec as JSON', async () => {
      const t = task(accountId, { name: 'n' });
      await store.tasks.insert(t);
      await store.tasks.update(t.id, { pinned: true, activity: 'thinking', spec: { ...t.spec, name: 'x' } });
      const got = (await store.tasks.get(t.id))!;
      assert.equal(got.pinned, true);
      assert.equal(got.activity, 'thinking');
      assert.equal(got.spec.name, 'x');
      assert.equal(got.name, 'n');
    });

    it('lists tasks pinned first, then newest update, with keyset pages', async () => {
      const acct = uid('acct');
      const base = Date.parse('2030-01-01T00:00:00.000Z');
      const made: TaskRecord[] = [];
      for (let i = 0; i < 9; i++) {
        const at = new Date(base + (i % 3) * 1000).toISOString(); // ties on updated_at are broken by id
        made.push(task(acct, { updatedAt: at, createdAt: at, pinned: i === 4 }));
      }
      made.push(task(acct, { deletedAt: new Date().toISOString(), status: 'deleted' }));
      for (const t of made) await store.tasks.insert(t);
      const seen: TaskListEntry[] = [];
      let cursor;
      for (let pages = 0; pages < 10; pages++) {
        const page = await store.tasks.listPage(acct, 4, cursor);
        seen.push(...page.tasks);
        cursor = page.next;
        if (!cursor) break;
        assert.deepEqual(cursor.id, page.tasks[3]!.id, 'the next page starts after the last task of this one');
      }
      const expected = made
        .filter((t) => !t.deletedAt)
        .sort((a, b) => Number(b.pinned) - Number(a.pinned) || b.updatedAt.localeCompare(a.updatedAt) || b.id.localeCompare(a.id))
        .map((t) => ({ id: t.id, version: 0 }));
      assert.deepEqual(seen, expected);
      assert.equal((await store.tasks.listPage(acct, expected.length)).next, undefined, 'a page that ends the list has no next');
      assert.equal(await store.tasks.countListed(acct), expected.length, 'the count is of the tasks listed');
      assert.equal(await store.tasks.countListed(acct, new Date(base + 1000).toISOString()), 6, 'updated at or after the time');
      assert.equal(await store.tasks.countListed(uid('acct')), 0);
    });

    it('raises a task\'s version with every change of its row, and reads tasks by id', async () => {
      const acct = uid('acct');
      const [a, b] = [task(acct), task(acct)];
      for (const t of [a, b]) await store.tasks.insert(t);
      const versionOf = async (id: string) => (await store.tasks.listPage(acct, 10)).tasks.find((k) => k.id === id)?.version;
      assert.equal(await versionOf(a.id), 0);
      await store.tasks.update(a.id, { activity: 'thinking' });
      await store.transaction(async (tx) => tx.tasks.update(a.id, { queuedCount: 1, creditsUsedMicros: 5 }));
      assert.equal(await versionOf(a.id), 2, 'one step per change, whatever it sets');
      await store.tasks.update(a.id, {});
      assert.equal(await versionOf(a.id), 2, 'a change that sets nothing runs nothing');
      assert.equal(await versionOf(b.id), 0, 'other tasks keep theirs');
      const read = await store.tasks.getMany([b.id, a.id, uid('tsk')]);
      assert.deepEqual(read.map((t) => t.id).sort(), [a.id, b.id].sort(), 'unknown ids are left out');
      assert.equal(read.find((t) => t.id === a.id)!.queuedCount, 1);
      assert.deepEqual(await store.tasks.getMany([]), []);
    });

    it('claims pending turns oldest first and takes over expired leases', async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      const a = turn(t.id, accountId);
      const b = turn(t.id, accountId);
      const expired = turn(t.id, accountId, { status: 'running', leaseOwner: 'dead', leaseExpiresAt: '2000-01-01T00:00:00.000Z', startedAt: '2000-01-01T00:00:00.000Z' });
      const held = turn(t.id, accountId, { status: 'running', leaseOwner: 'alive', leaseExpiresAt: '2999-01-01T00:00:00.000Z' });
      for (const x of [a, b, expired, held]) await store.turns.insert(x);
      const now = new Date().toISOString();
      const pendingOnly = await store.transaction((tx) => tx.turns.claim('me', 1, now, '2999-01-01T00:00:00.000Z', { takeOverExpired: false }));
      assert.deepEqual(pendingOnly.map((c) => c.id), [a.id], 'asked not to, a claim leaves expired leases alone');
      await store.turns.releaseLeases('me');
      const claimed = await store.transaction((tx) => tx.turns.claim('me', 100, now, '2999-01-01T00:00:00.000Z'));
      const ids = claimed.map((c) => c.id);
      assert.ok(ids.includes(a.id) && ids.includes(b.id) && ids.includes(expired.id));
      assert.ok(!ids.includes(held.id));
      assert.ok(ids.indexOf(a.id) < ids.indexOf(b.id));
      const resumed = claimed.find((c) => c.id === expired.id)!;
      assert.equal(resumed.startedAt, '2000-01-01T00:00:00.000Z', 'a taken-over turn keeps its first start time');
      assert.equal(claimed.find((c) => c.id === a.id)!.startedAt, null, 'a fresh turn gets its start time when its start is recorded');
      assert.equal(await store.turns.renewLease(a.id, 'me', '2999-01-02T00:00:00.000Z'), true);
      assert.equal(await store.turns.renewLease(a.id, 'someone-else', '2999-01-02T00:00:00.000Z'), false);
      assert.ok((await store.turns.releaseLeases('me')) >= 3);
      assert.equal((await store.turns.get(a.id))!.status, 'pending');
    });

    it('keeps an offline turn offline when its expired lease is taken over', async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      const crashed = turn(t.id, accountId, { offline: true, status: 'running', leaseOwner: 'dead', leaseExpiresAt: '2000-01-01T00:00:00.000Z', startedAt: '2000-01-01T00:00:00.000Z' });
      const online = turn(t.id, accountId);
      for (const x of [crashed, online]) await store.turns.insert(x);
      const claimed = await store.transaction((tx) => tx.turns.claim('me', 100, new Date().toISOString(), '2999-01-01T00:00:00.000Z'));
      assert.equal(claimed.find((c) => c.id === crashed.id)?.offline, true);
      assert.equal(claimed.find((c) => c.id === online.id)?.offline, false);
      await store.turns.releaseLeases('me');
    });

    it('keeps a running turn\'s mark of stored reply text through a takeover of its lease, until it is cleared', async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      const crashed = turn(t.id, accountId, { status: 'running', leaseOwner: 'dead', leaseExpiresAt: '2000-01-01T00:00:00.000Z', startedAt: '2000-01-01T00:00:00.000Z' });
      await store.turns.insert(crashed);
      await store.transaction((tx) => tx.turns.update(crashed.id, { replyTextStored: true }));
      const claimed = await store.transaction((tx) => tx.turns.claim('me', 100, new Date().toISOString(), '2999-01-01T00:00:00.000Z'));
      assert.equal(claimed.find((c) => c.id === crashed.id)?.replyTextStored, true);
      await store.transaction((tx) => tx.turns.update(crashed.id, { replyTextStored: false }));
      assert.equal((await store.turns.get(crashed.id))?.replyTextStored, false);
      await store.turns.releaseLeases('me');
    });

    it('tells whether a worker still holds a running turn\'s lease', async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      const crashed = turn(t.id, accountId, { status: 'running', leaseOwner: 'gone', leaseExpiresAt: '2000-01-01T00:00:00.000Z', startedAt: '2000-01-01T00:00:00.000Z' });
      await store.turns.insert(crashed);
      const holds = async (owner: string) => {
        const read = await store.transaction((tx) => tx.tasks.getForLeasedTurn(t.id, crashed.id, owner));
        assert.equal(read?.task.id, t.id, 'the task is read whoever holds the lease');
        return read.leased;
      };
      assert.equal(await holds('gone'), true, 'a lease run out but not taken over is still its worker\'s');
      assert.equal(await holds('me'), false);
      await store.transaction((tx) => tx.turns.claim('me', 100, new Date().toISOString(), '2999-01-01T00:00:00.000Z'));
      assert.equal(await holds('gone'), false, 'taken over');
      assert.equal(await holds('me'), true);
      await store.turns.releaseLeases('me');
      assert.equal(await holds('me'), false, 'handed back: pending, no one\'s');
    });

    it('refuses the writes of a worker whose turn another worker took over, and keeps the new worker\'s', async () => {
      const config = loadConfig({});
      const units = new UnitsOfWork({ store, bus: new EventBus(), origin: 'test' });
      const tasks = new TaskService({ store, units, config });
      const writes = new TurnWrites({ units, config });
      const { task: { task_id: taskId }, turnId } = await tasks.create(accountId, { spec: emptySpec('Lease fencing'), kind: 'plan' });
      const claimAs = async (owner: string, now: string, until: string) => (await store.transaction((tx) => tx.turns.claim(owner, 100, now, until))).find((c) => c.id === turnId)!;
      const search = (callId: string) => ({ call_id: callId, name: 'web_search', state: 'started' as const, input: { query: 'granite' }, summary: null, duration_ms: null });
      const first = await claimAs('first', new Date().toISOString(), new Date(Date.now() + 60_000).toISOString());
      assert.ok(await writes.turnStarted(first, false));
      assert.equal(await writes.toolEvent(first, search('c1')), true);
      const eventsBefore = (await store.tasks.get(taskId))!.lastEventSeq;
      // The first worker's lease runs out unrenewed (a store partition); a claim after it takes the turn over.
      const second = await claimAs('second', new Date(Date.now() + 120_000).toISOString(), '2999-01-01T00:00:00.000Z');
      assert.equal(second.id, first.id);
      await assert.rejects(writes.toolEvent(first, search('c2')), LeaseLost);
      await assert.rejects(writes.replyText(first, 'Late text.', true), LeaseLost);
      await assert.rejects(writes.finishTurn(first, 'completed', null), LeaseLost);
      assert.equal((await store.tasks.get(taskId))!.lastEventSeq, eventsBefore, 'no event of the first worker after the takeover');
      assert.equal((await store.turns.get(first.id))?.status, 'running', 'the turn still runs, under the second worker');
      assert.equal(await writes.toolEvent(second, search('c3')), true);
      assert.equal(await writes.finishTurn(second, 'completed', null), true);
      assert.equal((await store.turns.get(first.id))?.status, 'completed');
      await assert.rejects(writes.toolEvent(first, search('c4')), LeaseLost, 'a turn the other worker ended is not "stopped" to the first');

      // A turn stopped while it ran is no lease lost: its writes are refused as before, and its end is not stored.
      const stopped = await tasks.create(accountId, { spec: emptySpec('Stopped while it runs'), kind: 'plan' });
      const running = (await store.transaction((tx) => tx.turns.claim('first', 100, new Date().toISOString(), '2999-01-01T00:00:00.000Z'))).find((c) => c.id === stopped.turnId)!;
      assert.ok(await writes.turnStarted(running, false));
      await tasks.stop(accountId, stopped.task.task_id, false);
      assert.equal(await writes.toolEvent(running, search('c5')), false);
      assert.equal(await writes.finishTurn(running, 'completed', null), false);
      assert.equal((await store.turns.get(running.id))?.status, 'stopped');
      // Other cases' pending turns these claims took go back to the queue.
      await store.turns.releaseLeases('first');
      await store.turns.releaseLeases('second');
    });

    it('keeps the queue FIFO and cancels it', async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      const q1 = turn(t.id, accountId, { status: 'queued', input: 'one' });
      const q2 = turn(t.id, accountId, { status: 'queued', input: 'two' });
      await store.turns.insert(q1);
      await store.turns.insert(q2);
      assert.equal((await store.turns.nextQueued(t.id))!.id, q1.id);
      assert.equal(await store.turns.cancelQueued(t.id, new Date().toISOString()), 2);
      assert.equal(await store.turns.nextQueued(t.id), undefined);
    });

    it('tells how the last ended turn ended, not counting cancelled messages', async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      assert.equal(await store.turns.lastOutcome(t.id), undefined, 'no turn has ended');
      const first = turn(t.id, accountId, { status: 'completed', endedAt: '2030-01-01T00:00:01.000Z' });
      const second = turn(t.id, accountId, { status: 'stopped', endedAt: '2030-01-01T00:00:02.000Z' });
      const cancelled = turn(t.id, accountId, { status: 'cancelled', endedAt: '2030-01-01T00:00:03.000Z' });
      const running = turn(t.id, accountId, { status: 'running' });
      for (const x of [first, second, cancelled, running]) await store.turns.insert(x);
      assert.equal(await store.turns.lastOutcome(t.id), 'stopped');
      await store.turns.update(running.id, { status: 'failed', endedAt: '2030-01-01T00:00:04.000Z' });
      assert.equal(await store.turns.lastOutcome(t.id), 'failed');
    });

    it('lists turn inputs in order and skips queued ones', async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      const first = turn(t.id, accountId, { status: 'completed', input: 'first' });
      const second = turn(t.id, accountId, { status: 'running', input: 'second' });
      const later = turn(t.id, accountId, { status: 'queued', input: 'later' });
      for (const x of [first, second, later]) await store.turns.insert(x);
      assert.deepEqual(await store.turns.listInputs(t.id, second.id), ['first', 'second']);
    });

    it('stores each step once', async () => {
      const id = uid('turn');
      assert.equal(await store.steps.insert(id, 1, '{"a":1}', new Date().toISOString()), true);
      assert.equal(await store.steps.insert(id, 1, '{"a":2}', new Date().toISOString()), false, 'a step stored already is kept as it was');
      assert.equal(await store.steps.insert(id, 2, '{"b":1}', new Date().toISOString()), true);
      assert.equal(await store.steps.get(id, 1), '{"a":1}');
      assert.equal(await store.steps.get(id, 3), undefined);
      assert.deepEqual(await store.steps.list(id), [{ step: 1, data: '{"a":1}' }, { step: 2, data: '{"b":1}' }]);
    });

    it('pages events by sequence number', async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      await store.events.insert([1, 2, 3, 4, 5].map((seq) => ({ taskId: t.id, seq, type: 'text', turnId: null, data: `{"seq":${seq}}` })));
      assert.deepEqual((await store.events.list(t.id, 2, 2)).map((e) => e.seq), [3, 4]);
      assert.deepEqual((await store.events.last(t.id, 2)).map((e) => e.seq), [4, 5]);
    });

    it('appends rows once per write key, numbered densely', async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      const rows = (n: number) => Array.from({ length: n }, () => (k: number) => `{"_row":${k},"city":"Zürich 北京 🚀"}`);
      const first = await store.transaction((tx) => tx.rows.append(t.id, 'out', 'k1', rows(3), new Date().toISOString()));
      const again = await store.transaction((tx) => tx.rows.append(t.id, 'out', 'k1', rows(3), new Date().toISOString()));
      const second = await store.transaction((tx) => tx.rows.append(t.id, 'out', 'k2', rows(2), new Date().toISOString()));
      assert.deepEqual(first, { firstRow: 1, count: 3, replayed: false });
      assert.deepEqual(again, { firstRow: 1, count: 3, replayed: true });
      assert.deepEqual(second, { firstRow: 4, count: 2, replayed: false });
      assert.equal((await store.rows.stats(t.id))[0]!.rowCount, 5);
      assert.deepEqual((await store.rows.read(t.id, 'out', 1, 2)).map(String), ['{"_row":2,"city":"Zürich 北京 🚀"}', '{"_row":3,"city":"Zürich 北京 🚀"}']);
      const all: string[] = [];
      for await (const r of store.rows.iterate(t.id, 'out')) all.push(r);
      assert.deepEqual(all.map((r) => JSON.parse(r)._row), [1, 2, 3, 4, 5]);
      assert.equal(JSON.parse(all[4]!).city, 'Zürich 北京 🚀');
    });

    it('counts verified rows and cells as rows are appended (not on a replay); a rewrite replaces rows and sets the counts; the task keeps its cell totals', async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      const row = (k: number) => `{"_row":${k}}`;
      const tally = { verified: 1, cells: { supported: 3, unsupported: 1, unchecked: 2 } };
      await store.transaction((tx) => tx.rows.append(t.id, 'out', 'k1', [row, row], '2030-01-01T00:00:00.000Z', tally));
      await store.transaction((tx) => tx.rows.append(t.id, 'out', 'k1', [row, row], '2030-01-01T00:00:00.000Z', tally));
      await store.transaction((tx) => tx.rows.append(t.id, 'out', 'k2', [row], '2030-01-01T00:00:00.000Z', { verified: 1, cells: { supported: 1, unsupported: 0, unchecked: 0 } }));
      const [stats] = await store.rows.stats(t.id);
      assert.deepEqual([stats!.rowCount, stats!.verifiedCount, stats!.cells], [3, 2, { supported: 4, unsupported: 1, unchecked: 2 }]);

      await store.transaction((tx) => tx.rows.rewrite(t.id, 'out', [{ rowNumber: 2, data: '{"_row":2,"again":true}' }], { verified: 3, cells: { supported: 5, unsupported: 0, unchecked: 1 } }));
      assert.deepEqual((await store.rows.read(t.id, 'out', 0, 10)).map(String), ['{"_row":1}', '{"_row":2,"again":true}', '{"_row":3}']);
      const [after] = await store.rows.stats(t.id);
      assert.deepEqual([after!.rowCount, after!.verifiedCount, after!.cells], [3, 3, { supported: 5, unsupported: 0, unchecked: 1 }]);

      assert.deepEqual([(await store.tasks.get(t.id))!.supportedCells, (await store.tasks.get(t.id))!.unsupportedCells], [0, 0]);
      await store.tasks.update(t.id, { supportedCells: 5, unsupportedCells: 2 });
      const stored = (await store.tasks.get(t.id))!;
      assert.deepEqual([stored.supportedCells, stored.unsupportedCells], [5, 2]);
    });

    it('rolls a transaction back when it throws', async () => {
      const t = task(accountId);
      await assert.rejects(store.transaction(async (tx) => {
        await tx.tasks.insert(t);
        throw new Error('boom');
      }), /boom/);
      assert.equal(await store.tasks.get(t.id), undefined);
    });

    it('refuses a statement through repositories kept past their transaction, and stores nothing of it', async () => {
      const t = task(accountId, { activity: 'idle' });
      await store.tasks.insert(t);
      let kept: Repositories | undefined;
      await store.transaction(async (tx) => {
        kept = tx;
      });
      await assert.rejects(kept!.tasks.update(t.id, { activity: 'thinking' }));
      // Nor may it land in the next transaction, whatever that one is doing.
      await store.transaction(async (tx) => {
        await assert.rejects(kept!.tasks.update(t.id, { activity: 'thinking' }));
        await tx.tasks.update(t.id, { pinned: true });
      });
      const got = (await store.tasks.get(t.id))!;
      assert.equal(got.activity, 'idle');
      assert.equal(got.pinned, true);
    });

    it('reads a task with its current turn in one go', async () => {
      const t = task(accountId);
      const r = turn(t.id, accountId, { status: 'running', kind: 'execute', startedAt: '2030-01-01T00:00:00.000Z' });
      await store.tasks.insert({ ...t, currentTurnId: r.id });
      await store.turns.insert(r);
      const state = (await store.tasks.getState(t.id))!;
      assert.equal(state.currentTurnId, r.id);
      assert.equal(state.accountId, accountId);
      assert.equal(state.turn!.id, r.id);
      assert.equal(state.turn!.kind, 'execute');
      assert.equal(state.turn!.startedAt, '2030-01-01T00:00:00.000Z');
    });

    it('reads each committed change of a task and its turn in the next state read, never an uncommitted one', async () => {
      const t = task(accountId);
      const r = turn(t.id, accountId, { status: 'pending', kind: 'plan' });
      await store.tasks.insert({ ...t, currentTurnId: r.id });
      await store.turns.insert(r);
      assert.equal((await store.tasks.getState(t.id))!.activity, t.activity);
      assert.equal((await store.tasks.getState(t.id))!.turn!.startedAt, null);
      await store.transaction(async (tx) => {
        await tx.tasks.update(t.id, { activity: 'thinking', queuedCount: 2 });
        // Not committed yet: a state read outside the transaction still sees the old row.
        if (store.kind === 'sqlite') assert.equal((await store.tasks.getState(t.id))!.activity, t.activity);
        await tx.turns.update(r.id, { startedAt: '2030-01-01T00:00:00.000Z' });
      });
      const after = (await store.tasks.getState(t.id))!;
      assert.equal(after.activity, 'thinking');
      assert.equal(after.queuedCount, 2);
      assert.equal(after.turn!.startedAt, '2030-01-01T00:00:00.000Z');
      await store.tasks.update(t.id, { activity: 'idle', currentTurnId: null });
      const idle = (await store.tasks.getState(t.id))!;
      assert.equal(idle.activity, 'idle');
      assert.equal(idle.turn, null);
      await assert.rejects(store.transaction(async (tx) => {
        await tx.tasks.update(t.id, { activity: 'executing' });
        throw new Error('rolled back');
      }));
      assert.equal((await store.tasks.getState(t.id))!.activity, 'idle');
    });

    it('reads a transaction\'s own writes inside it, the state poll and row pages too', async () => {
      const t = task(accountId);
      await store.tasks.insert(t);
      await store.transaction(async (tx) => {
        await tx.tasks.update(t.id, { activity: 'thinking' });
        assert.equal((await tx.tasks.getState(t.id))!.activity, 'thinking');
        await tx.rows.append(t.id, 'out', 'k', [(n) => `{"_row":${n}}`], new Date().toISOString());
        assert.deepEqual((await tx.rows.read(t.id, 'out', 0, 10)).map(String), ['{"_row":1}']);
      });
    });

    it('counts requests per key and window', async () => {
      const key = uid('key');
      assert.equal(await store.cluster.hitRateWindow(key, '2030-01-01T00:00:00.000Z'), 1);
      assert.equal(await store.cluster.hitRateWindow(key, '2030-01-01T00:00:00.000Z'), 2);
      assert.equal(await store.cluster.hitRateWindow(key, '2030-01-01T00:01:00.000Z'), 1);
    });

    it('stores upload contents in chunks and streams them back', async () => {
      const id = uid('upl');
      const parts = [Buffer.from('hello '), Buffer.alloc(70_000, 7), Buffer.from([0, 255, 10])];
      for (const [i, part] of parts.entries()) await store.uploads.putChunk(id, i, part);
      const back: Buffer[] = [];
      for await (const chunk of store.uploads.readChunks(id)) back.push(chunk);
      assert.deepEqual(Buffer.concat(back), Buffer.concat(parts));
      await store.uploads.deleteChunks(id);
      for await (const _ of store.uploads.readChunks(id)) assert.fail('chunks remain after delete');
    });

    it('delivers notifications on commit only, when shared', async () => {
      const got: string[] = [];
      const stop = await store.cluster.listen('quarry_test', (p) => got.push(p));
      await store.transaction(async (tx) => tx.cluster.notify('quarry_test', 'committed'));
      await assert.rejects(store.transaction(async (tx) => {
        await tx.cluster.notify('quarry_test', 'rolled back');
        throw new Error('rollback');
      }));
      await store.transaction(async (tx) => tx.cluster.notify('quarry_test', 'last'));
      if (store.shared) {
        // Notices arrive in commit order: once the last one is here, a rolled-back one would be too.
        await until('the last notice', () => got.includes('last'));
        assert.deepEqual(got, ['committed', 'last']);
      } else {
        assert.deepEqual(got, [], 'an embedded store has no other process to tell');
      }
      await stop();
    });

    it('grants a named lock to one holder at a time when shared', async () => {
      const name = uid('lock');
      const first = await store.cluster.tryLock(name);
      assert.ok(first?.held);
      const second = await store.cluster.tryLock(name);
      if (store.shared) {
        assert.equal(second, null);
        await first!.release();
        const third = await store.cluster.tryLock(name);
        assert.ok(third?.held);
        await third!.release();
      } else {
        await second?.release();
        await first!.release();
      }
    });

    it('keeps idempotency records inside their window and settings by key', async () => {
      await store.idempotency.put(accountId, 'k', { requestHash: 'h', status: 200, body: '{}', createdAt: '2030-01-01T00:00:00.000Z' });
      assert.equal((await store.idempotency.get(accountId, 'k', '2029-12-31T00:00:00.000Z'))!.requestHash, 'h');
      assert.equal(await store.idempotency.get(accountId, 'k', '2030-01-02T00:00:00.000Z'), undefined);
      await store.cluster.setSetting('s', '1');
      await store.cluster.setSetting('s', '2');
      assert.equal(await store.cluster.getSetting('s'), '2');
    });

    describe('idempotency claims', () => {
      const window = { createdAt: '2030-01-01T00:00:00.000Z', expiredBefore: '2029-12-31T00:00:00.000Z' };
      const record = (requestHash: string, createdAt = window.createdAt) => ({ requestHash, status: 200, body: `made by ${requestHash}`, createdAt });

      it('gives a key to the first claim; a rolled-back claim leaves nothing; a record past its window is taken over', async () => {
        const key = uid('key');
        await assert.rejects(store.transaction(async (tx) => {
          assert.equal(await tx.idempotency.claim(accountId, key, record('refused'), window.expiredBefore), true);
          throw new Error('the change was refused');
        }), /refused/);
        assert.equal(await store.idempotency.get(accountId, key, window.expiredBefore), undefined, 'the refused change released its claim');

        assert.equal(await store.transaction((tx) => tx.idempotency.claim(accountId, key, record('first'), window.expiredBefore)), true);
        assert.equal(await store.transaction((tx) => tx.idempotency.claim(accountId, key, record('second'), window.expiredBefore)), false);
        assert.deepEqual(await store.idempotency.get(accountId, key, window.expiredBefore), record('first'));

        const otherAccount = uid('acct');
        assert.equal(await store.idempotency.claim(otherAccount, key, record('other account'), window.expiredBefore), true, 'keys are per account');

        // A day and a half later the first record is past its 24 h window: the key is new again.
        const later = { createdAt: '2030-01-02T12:00:00.000Z', expiredBefore: '2030-01-01T12:00:00.000Z' };
        assert.equal(await store.idempotency.claim(accountId, key, record('later', later.createdAt), later.expiredBefore), true);
        assert.deepEqual(await store.idempotency.get(accountId, key, later.expiredBefore), record('later', later.createdAt));
      });

      for (const firstCommits of [true, false]) {
        it(`gives a key claimed by overlapping transactions to one of them (the first one ${firstCommits ? 'commits' : 'rolls back'})`, async () => {
          const key = uid('key');
          let endFirst!: () => void;
          const firstMayEnd = new Promise<void>((resolve) => (endFirst = resolve));
          let firstClaimed!: (won: boolean) => void;
          const claimedByFirst = new Promise<boolean>((resolve) => (firstClaimed = resolve));
          const first = store.transaction(async (tx) => {
            firstClaimed(await tx.idempotency.claim(accountId, key, record('first'), window.expiredBefore));
            await firstMayEnd;
            if (!firstCommits) throw new Error('the first change was refused');
          });
          assert.equal(await claimedByFirst, true);
          // PostgreSQL runs the second beside the first, its claim waiting on the first's row;
          // SQLite runs it once the first has ended.
          const second = store.transaction((tx) => tx.idempotency.claim(accountId, key, record('second'), window.expiredBefore));
          endFirst();
          if (firstCommits) await first;
          else await assert.rejects(first, /refused/);
          assert.equal(await second, !firstCommits);
          assert.equal((await store.idempotency.get(accountId, key, window.expiredBefore))!.requestHash, firstCommits ? 'first' : 'second');
        });
      }
    });

    /*
     * claimDue and nextDue look at every endpoint's deliveries. So that the cases cannot see each
     * other's: deliveries that are not claimed here are due in 2999; each case that claims uses
     * its own era long past (every `now` below lies before 2000), and deletes its endpoint (and so
     * its deliveries) when it ends.
     */
    describe('webhooks', () => {
      const CLAIM_UNTIL = '2999-06-01T00:00:00.000Z';

      /** Deletes the endpoints (their deliveries with them) whatever the case's outcome. */
      async function withEndpoints(endpoints: WebhookEndpointRecord[], fn: () => Promise<void>): Promise<void> {
        for (const e of endpoints) await store.webhooks.insertEndpoint(e);
        try {
          await fn();
        } finally {
          for (const e of endpoints) await store.webhooks.deleteEndpoint(e.id);
        }
      }

      it('stores endpoints, lists an account\'s newest first, counts them, replaces a secret only if it is still the one read', async () => {
        const acct = uid('acct');
        const other = uid('acct');
        const first = webhookEndpoint(acct, { events: ['task.turn_completed', 'task.turn_failed', 'task.turn_stopped', 'group.finished'], description: 'Zürich 北京 🚀' });
        const second = webhookEndpoint(acct, { url: 'https://hooks.example.com/two?x=1' });
        const third = webhookEndpoint(acct);
        const elsewhere = webhookEndpoint(other);
        for (const e of [first, second, elsewhere, third]) await store.webhooks.insertEndpoint(e);

        assert.deepEqual(await store.webhooks.getEndpoint(first.id), first, 'read back as written, events and description included');
        assert.equal(await store.webhooks.getEndpoint('wh_nope'), undefined);
        assert.deepEqual((await store.webhooks.listEndpoints(acct)).map((e) => e.id), [third.id, second.id, first.id], 'newest first, this account\'s only');
        assert.deepEqual(await store.webhooks.listEndpoints(other), [elsewhere]);
        assert.deepEqual(await store.webhooks.listEndpoints(uid('acct')), []);
        assert.equal(await store.webhooks.countEndpoints(acct), 3);
        assert.equal(await store.webhooks.countEndpoints(other), 1);
        assert.equal(await store.webhooks.countEndpoints(uid('acct')), 0);

        const rotated = { secret: 'whsec_bmV3', previousSecret: second.secret, previousSecretExpiresAt: '2030-01-02T00:00:00.000Z' };
        assert.equal(await store.webhooks.replaceSecret(second.id, second.secret, rotated), true);
        assert.deepEqual(await store.webhooks.getEndpoint(second.id), { ...second, ...rotated });
        assert.deepEqual(await store.webhooks.getEndpoint(first.id), first, 'other endpoints keep their secrets');
        // A second rotation that read the secret before the first one: it loses, and changes nothing.
        assert.equal(await store.webhooks.replaceSecret(second.id, second.secret, { secret: 'whsec_bG9zdA', previousSecret: second.secret, previousSecretExpiresAt: '2030-01-03T00:00:00.000Z' }), false);
        assert.deepEqual(await store.webhooks.getEndpoint(second.id), { ...second, ...rotated });
        assert.equal(await store.webhooks.replaceSecret('wh_nope', second.secret, rotated), false, 'no such endpoint');
        assert.equal(await store.transaction((tx) => tx.webhooks.replaceSecret(second.id, 'whsec_bmV3', { secret: 'whsec_bGFzdA', previousSecret: null, previousSecretExpiresAt: null })), true);
        assert.deepEqual(await store.webhooks.getEndpoint(second.id), { ...second, secret: 'whsec_bGFzdA' });

        await store.webhooks.deleteEndpoint(second.id);
        assert.equal(await store.webhooks.getEndpoint(second.id), undefined);
        assert.deepEqual((await store.webhooks.listEndpoints(acct)).map((e) => e.id), [third.id, first.id]);
        assert.equal(await store.webhooks.countEndpoints(acct), 2);
        for (const e of [first, third, elsewhere]) await store.webhooks.deleteEndpoint(e.id);
        assert.equal(await store.webhooks.countEndpoints(acct), 0);
      });

      it('stores deliveries, lists an endpoint\'s newest first in keyset pages, and deletes them with their endpoint', async () => {
        const acct = uid('acct');
        const endpoint = webhookEndpoint(acct);
        const neighbour = webhookEndpoint(acct);
        await withEndpoints([endpoint, neighbour], async () => {
          const made = Array.from({ length: 7 }, (_, i) => webhookDelivery(endpoint.id, { event: i % 2 ? 'task.turn_failed' : 'task.turn_completed' }));
          const theirs = webhookDelivery(neighbour.id);
          // Inserted as one batch (as a turn's end does), and one at a time.
          await store.transaction((tx) => tx.webhooks.insertDeliveries([...made.slice(0, 4), theirs]));
          for (const d of made.slice(4)) await store.webhooks.insertDeliveries([d]);
          await store.webhooks.insertDeliveries([]);
          const finished = webhookDelivery(endpoint.id, {
            status: 'delivered', attempts: 2, lastStatusCode: 204, nextAttemptAt: null, deliveredAt: '2030-01-01T00:01:00.000Z',
          });
          const dead = webhookDelivery(endpoint.id, { status: 'dead', attempts: 9, lastStatusCode: null, lastError: 'timed out', nextAttemptAt: null });
          await store.webhooks.insertDeliveries([finished, dead]);
          const all = [...made, finished, dead];

          for (const d of all) assert.deepEqual(await store.webhooks.getDelivery(endpoint.id, d.id), d, 'read back as written');
          assert.equal(await store.webhooks.getDelivery(neighbour.id, made[0]!.id), undefined, 'a delivery is found under its own endpoint only');
          assert.equal(await store.webhooks.getDelivery(endpoint.id, theirs.id), undefined);
          assert.equal(await store.webhooks.getDelivery(endpoint.id, 'msg_nope'), undefined);

          const newestFirst = all.map((d) => d.id).reverse();
          assert.deepEqual((await store.webhooks.listDeliveries(endpoint.id, 100)).map((d) => d.id), newestFirst);
          const seen: string[] = [];
          let before: string | undefined;
          for (let page = 0; page < 10; page++) {
            const rows = await store.webhooks.listDeliveries(endpoint.id, 4, before);
            seen.push(...rows.map((r) => r.id));
            if (rows.length < 4) break;
            before = rows[rows.length - 1]!.id;
          }
          assert.deepEqual(seen, newestFirst, 'pages of 4 by `before` give each delivery once, in order');
          assert.deepEqual(await store.webhooks.listDeliveries(endpoint.id, 10, all[0]!.id), [], 'nothing is older than the first');
          assert.deepEqual(await store.webhooks.listDeliveries(neighbour.id, 10), [theirs]);

          await store.webhooks.deleteEndpoint(endpoint.id);
          assert.deepEqual(await store.webhooks.listDeliveries(endpoint.id, 100), [], 'the endpoint\'s deliveries went with it');
          for (const d of all) assert.equal(await store.webhooks.getDelivery(endpoint.id, d.id), undefined);
          assert.deepEqual(await store.webhooks.listDeliveries(neighbour.id, 10), [theirs], 'another endpoint\'s deliveries stay');
        });
      });

      it('claims pending deliveries due at `now` for one attempt each, earliest due first', async () => {
        const endpoint = webhookEndpoint(uid('acct'));
        await withEndpoints([endpoint], async () => {
          const now = '1990-01-01T00:00:10.000Z';
          const early = webhookDelivery(endpoint.id, { nextAttemptAt: '1990-01-01T00:00:01.000Z' });
          const onTime = webhookDelivery(endpoint.id, { nextAttemptAt: now });
          const retry = webhookDelivery(endpoint.id, { nextAttemptAt: '1990-01-01T00:00:05.000Z', attempts: 3, lastStatusCode: 503, lastError: 'HTTP 503' });
          const later = webhookDelivery(endpoint.id, { nextAttemptAt: '1990-01-01T00:00:10.001Z' });
          const delivered = webhookDelivery(endpoint.id, { status: 'delivered', attempts: 1, lastStatusCode: 200, nextAttemptAt: null, deliveredAt: '1990-01-01T00:00:00.000Z' });
          const dead = webhookDelivery(endpoint.id, { status: 'dead', attempts: 12, lastError: 'refused', nextAttemptAt: null });
          // A dead or delivered row whose next_attempt_at was left behind is still never claimed.
          const deadWithTime = webhookDelivery(endpoint.id, { status: 'dead', attempts: 12, nextAttemptAt: '1990-01-01T00:00:00.000Z' });
          await store.webhooks.insertDeliveries([early, onTime, retry, later, delivered, dead, deadWithTime]);

          const firstClaim = await store.webhooks.claimDue(now, CLAIM_UNTIL, 1);
          assert.deepEqual(firstClaim.map((d) => d.id), [early.id], 'the earliest due first');
          const claimed = [...firstClaim, ...await store.webhooks.claimDue(now, CLAIM_UNTIL, 10)];
          assert.deepEqual(claimed.map((d) => d.id).sort(), [early.id, onTime.id, retry.id].sort(), 'pending ones due at now, nothing else');
          for (const d of [early, onTime, retry]) {
            const expected = { ...d, attempts: d.attempts + 1, nextAttemptAt: CLAIM_UNTIL };
            assert.deepEqual(claimed.find((c) => c.id === d.id), expected, 'the claim answers the row as claimed: the attempt counted, due when the claim runs out');
            assert.deepEqual(await store.webhooks.getDelivery(endpoint.id, d.id), expected);
          }
          for (const d of [later, delivered, dead, deadWithTime]) assert.deepEqual(await store.webhooks.getDelivery(endpoint.id, d.id), d, 'untouched');

          assert.deepEqual(await store.webhooks.claimDue(now, CLAIM_UNTIL, 10), [], 'a second claim at the same now gets nothing');
          assert.deepEqual((await store.webhooks.claimDue('1990-01-01T00:00:11.000Z', CLAIM_UNTIL, 10)).map((d) => d.id), [later.id], 'a later now takes what fell due since');
          // A sender that died: its claim runs out, and the delivery is taken again, for the next attempt.
          const retaken = await store.webhooks.claimDue(CLAIM_UNTIL, '2999-06-02T00:00:00.000Z', 10);
          assert.deepEqual(retaken.map((d) => [d.id, d.attempts]).sort(), [[early.id, 2], [onTime.id, 2], [retry.id, 5], [later.id, 2]].sort(), 'claims that ran out are taken again');
        });
      });

      it('records an attempt only under its own attempt number, on a pending delivery', async () => {
        const endpoint = webhookEndpoint(uid('acct'));
        await withEndpoints([endpoint], async () => {
          const now = '1980-01-01T00:00:00.000Z';
          const retried = webhookDelivery(endpoint.id, { nextAttemptAt: now });
          const dying = webhookDelivery(endpoint.id, { nextAttemptAt: now });
          await store.webhooks.insertDeliveries([retried, dying]);
          assert.equal((await store.webhooks.claimDue(now, CLAIM_UNTIL, 10)).length, 2);

          // Attempt 1 fails: pending, due again at the next time of the schedule.
          const failed = { delivered: false as const, statusCode: 500, error: 'the receiver answered HTTP 500', nextAttemptAt: '1980-01-01T00:00:05.000Z' };
          assert.equal(await store.webhooks.recordAttempt({ id: retried.id, attempts: 1, nextAttemptAt: CLAIM_UNTIL }, failed), true);
          const afterFirst = { ...retried, attempts: 1, status: 'pending' as const, lastStatusCode: 500, lastError: failed.error, nextAttemptAt: failed.nextAttemptAt };
          assert.deepEqual(await store.webhooks.getDelivery(endpoint.id, retried.id), afterFirst);
          assert.equal(await store.webhooks.recordAttempt({ id: retried.id, attempts: 0, nextAttemptAt: CLAIM_UNTIL }, { delivered: true, statusCode: 200, at: now }), false, 'an attempt number that never was');
          assert.equal(await store.webhooks.recordAttempt({ id: 'msg_nope', attempts: 1, nextAttemptAt: CLAIM_UNTIL }, { delivered: true, statusCode: 200, at: now }), false, 'no such delivery');
          assert.deepEqual(await store.webhooks.getDelivery(endpoint.id, retried.id), afterFirst);

          // Attempt 2 is claimed; a late record of attempt 1 (a sender whose claim ran out) changes nothing.
          assert.deepEqual((await store.webhooks.claimDue('1980-01-01T00:00:05.000Z', CLAIM_UNTIL, 10)).map((d) => d.id), [retried.id]);
          const claimedAgain = { ...afterFirst, attempts: 2, nextAttemptAt: CLAIM_UNTIL };
          assert.equal(await store.webhooks.recordAttempt({ id: retried.id, attempts: 1, nextAttemptAt: CLAIM_UNTIL }, { delivered: true, statusCode: 200, at: '1980-01-01T00:00:06.000Z' }), false);
          assert.equal(await store.webhooks.recordAttempt({ id: retried.id, attempts: 1, nextAttemptAt: CLAIM_UNTIL }, { delivered: false, statusCode: null, error: 'late', nextAttemptAt: null }), false);
          assert.deepEqual(await store.webhooks.getDelivery(endpoint.id, retried.id), claimedAgain, 'the stale records changed nothing');

          // Attempt 2 is delivered.
          assert.equal(await store.webhooks.recordAttempt({ id: retried.id, attempts: 2, nextAttemptAt: CLAIM_UNTIL }, { delivered: true, statusCode: 204, at: '1980-01-01T00:00:07.000Z' }), true);
          const done = { ...claimedAgain, status: 'delivered' as const, lastStatusCode: 204, lastError: null, nextAttemptAt: null, deliveredAt: '1980-01-01T00:00:07.000Z' };
          assert.deepEqual(await store.webhooks.getDelivery(endpoint.id, retried.id), done);
          assert.equal(await store.webhooks.recordAttempt({ id: retried.id, attempts: 2, nextAttemptAt: CLAIM_UNTIL }, { delivered: false, statusCode: 500, error: 'again', nextAttemptAt: '1980-01-01T00:01:00.000Z' }), false, 'a delivered one is recorded once');
          assert.deepEqual(await store.webhooks.getDelivery(endpoint.id, retried.id), done);

          // The last attempt fails with no retry left: dead.
          assert.equal(await store.webhooks.recordAttempt({ id: dying.id, attempts: 1, nextAttemptAt: CLAIM_UNTIL }, { delivered: false, statusCode: null, error: 'connection refused', nextAttemptAt: null }), true);
          const deadRow = { ...dying, attempts: 1, status: 'dead' as const, lastStatusCode: null, lastError: 'connection refused', nextAttemptAt: null };
          assert.deepEqual(await store.webhooks.getDelivery(endpoint.id, dying.id), deadRow);
          assert.equal(await store.webhooks.recordAttempt({ id: dying.id, attempts: 1, nextAttemptAt: CLAIM_UNTIL }, { delivered: true, statusCode: 200, at: now }), false, 'a dead one is recorded once');
          assert.deepEqual(await store.webhooks.getDelivery(endpoint.id, dying.id), deadRow);
          assert.deepEqual(await store.webhooks.claimDue(CLAIM_UNTIL, CLAIM_UNTIL, 10), [], 'delivered and dead ones are never claimed');
        });
      });

      it('redelivers a delivered or dead delivery: pending, due now, its retries counted from now', async () => {
        const endpoint = webhookEndpoint(uid('acct'));
        await withEndpoints([endpoint], async () => {
          const now = '1970-06-01T00:00:00.000Z';
          const delivered = webhookDelivery(endpoint.id, { status: 'delivered', attempts: 1, lastStatusCode: 200, nextAttemptAt: null, deliveredAt: '1970-01-01T00:00:01.000Z', retrySince: '1970-01-01T00:00:00.000Z' });
          const dead = webhookDelivery(endpoint.id, { status: 'dead', attempts: 11, lastStatusCode: 502, lastError: 'HTTP 502', nextAttemptAt: null, retrySince: '1970-01-01T00:00:00.000Z' });
          await store.webhooks.insertDeliveries([delivered, dead]);
          await store.webhooks.redeliver(delivered.id, now);
          await store.transaction((tx) => tx.webhooks.redeliver(dead.id, now));
          assert.deepEqual(await store.webhooks.getDelivery(endpoint.id, delivered.id), { ...delivered, status: 'pending', nextAttemptAt: now, retrySince: now, deliveredAt: null }, 'the attempt count and last answer stay');
          assert.deepEqual(await store.webhooks.getDelivery(endpoint.id, dead.id), { ...dead, status: 'pending', nextAttemptAt: now, retrySince: now });

          const claimed = await store.webhooks.claimDue(now, CLAIM_UNTIL, 10);
          assert.deepEqual(claimed.map((d) => [d.id, d.attempts]).sort(), [[delivered.id, 2], [dead.id, 12]].sort(), 'due now: the next claim takes both, as new attempts');
          assert.equal(await store.webhooks.recordAttempt({ id: delivered.id, attempts: 2, nextAttemptAt: CLAIM_UNTIL }, { delivered: true, statusCode: 200, at: '1970-06-01T00:00:01.000Z' }), true);
          assert.equal((await store.webhooks.getDelivery(endpoint.id, delivered.id))!.deliveredAt, '1970-06-01T00:00:01.000Z');
        });
      });

      it('a redelivery makes the record of an attempt in flight stale', async () => {
        const endpoint = webhookEndpoint(uid('acct'));
        await withEndpoints([endpoint], async () => {
          const now = '1965-01-01T00:00:00.000Z';
          const d = webhookDelivery(endpoint.id, { nextAttemptAt: now });
          await store.webhooks.insertDeliveries([d]);
          assert.equal((await store.webhooks.claimDue(now, CLAIM_UNTIL, 10)).length, 1);
          // While attempt 1 is in flight, the delivery is redelivered (due now); then attempt 1 fails for good.
          await store.webhooks.redeliver(d.id, '1965-01-01T00:00:01.000Z');
          const recorded = await store.webhooks.recordAttempt({ id: d.id, attempts: 1, nextAttemptAt: CLAIM_UNTIL }, { delivered: false, statusCode: null, error: 'timed out', nextAttemptAt: null });
          const row = (await store.webhooks.getDelivery(endpoint.id, d.id))!;
          assert.deepEqual({ recorded, status: row.status, nextAttemptAt: row.nextAttemptAt }, { recorded: false, status: 'pending', nextAttemptAt: '1965-01-01T00:00:01.000Z' },
            'the redelivery stands: the interface says recordAttempt is false when "a later claim or a redelivery has taken it since"');
        });
      });

      it('tells when the next pending delivery falls due', async () => {
        const endpoint = webhookEndpoint(uid('acct'));
        await withEndpoints([endpoint], async () => {
          const first = webhookDelivery(endpoint.id, { nextAttemptAt: '1960-01-01T00:00:02.000Z' });
          const second = webhookDelivery(endpoint.id, { nextAttemptAt: '1960-01-01T00:00:03.000Z' });
          const deadEarlier = webhookDelivery(endpoint.id, { status: 'dead', nextAttemptAt: '1960-01-01T00:00:00.000Z' });
          const deliveredEarlier = webhookDelivery(endpoint.id, { status: 'delivered', nextAttemptAt: '1960-01-01T00:00:01.000Z', deliveredAt: '1960-01-01T00:00:01.000Z' });
          await store.webhooks.insertDeliveries([second, deadEarlier, first, deliveredEarlier]);
          assert.equal(await store.webhooks.nextDue(), first.nextAttemptAt, 'the earliest pending one; dead and delivered ones do not count');
          assert.deepEqual((await store.webhooks.claimDue('1960-01-01T00:00:02.500Z', CLAIM_UNTIL, 10)).map((d) => d.id), [first.id]);
          assert.equal(await store.webhooks.nextDue(), second.nextAttemptAt, 'a claimed one is due when its claim runs out');
          await store.webhooks.deleteEndpoint(endpoint.id);
          const after = await store.webhooks.nextDue();
          assert.ok(after === undefined || after >= '2999', `the deleted endpoint's deliveries are not due (got ${after})`);
        });
      });

      it('gives each due delivery to one of several claims running side by side (SKIP LOCKED), when shared', async (t) => {
        if (!store.shared) {
          t.skip('one process owns an embedded store; its transactions run one at a time');
          return;
        }
        const endpoint = webhookEndpoint(uid('acct'));
        await withEndpoints([endpoint], async () => {
          const now = '1950-01-01T00:00:00.000Z';
          const due = Array.from({ length: 24 }, (_, i) => webhookDelivery(endpoint.id, { nextAttemptAt: new Date(Date.parse(now) - i * 1000).toISOString() }));
          await store.webhooks.insertDeliveries(due);

          // A claim that holds its rows (its transaction still open) does not hold up another claim,
          // which takes other deliveries at once.
          let endFirst!: () => void;
          const firstMayEnd = new Promise<void>((resolve) => (endFirst = resolve));
          let firstClaimed!: (ids: string[]) => void;
          const claimedByFirst = new Promise<string[]>((resolve) => (firstClaimed = resolve));
          const first = store.transaction(async (tx) => {
            firstClaimed((await tx.webhooks.claimDue(now, CLAIM_UNTIL, 4)).map((d) => d.id));
            await firstMayEnd;
          });
          let second: Promise<string[]> | undefined;
          let waited = true;
          try {
            assert.equal((await claimedByFirst).length, 4);
            second = store.transaction(async (tx) => (await tx.webhooks.claimDue(now, CLAIM_UNTIL, 4)).map((d) => d.id));
            waited = (await settlesWithin(second, 5000)) === 'timed out';
          } finally {
            endFirst();
            await first;
          }
          const firstIds = await claimedByFirst;
          const secondIds = await second;
          assert.equal(waited, false, 'the second claim did not wait for the first one\'s transaction to end');
          assert.equal(secondIds.length, 4);
          assert.deepEqual(firstIds.filter((id) => secondIds.includes(id)), [], 'the claims share no delivery');

          // Many claims at once, each in its own transaction: every delivery goes to one of them.
          const rounds = await Promise.all(Array.from({ length: 8 }, () => store.transaction((tx) => tx.webhooks.claimDue(now, CLAIM_UNTIL, 3))));
          const rest = await store.webhooks.claimDue(now, CLAIM_UNTIL, 100);
          const all = [...firstIds, ...secondIds, ...rounds.flat().map((d) => d.id), ...rest.map((d) => d.id)];
          assert.equal(new Set(all).size, all.length, 'no delivery was claimed twice');
          assert.deepEqual([...all].sort(), due.map((d) => d.id).sort(), 'and every due delivery was claimed');
          for (const d of due) assert.equal((await store.webhooks.getDelivery(endpoint.id, d.id))!.attempts, 1, 'each counted one attempt');
        });
      });
    });

    describe('sources', () => {
      /** The snapshot as list answers it: everything but its text. */
      const info = ({ text: _text, ...rest }: SourceSnapshotRecord) => rest;

      it('records a snapshot once per task, URL and text: the same again keeps the first id, changed text or another task gets its own', async () => {
        const taskId = uid('tsk');
        const first = sourceSnapshot(taskId);
        assert.equal(await store.sources.record(first), first.id);
        // The same page read again unchanged, or the fetch replayed after a crash: the first snapshot stays.
        const again = sourceSnapshot(taskId, { fetchedAt: '2030-01-02T00:00:00.000Z', title: 'Plants, read again' });
        assert.equal(await store.sources.record(again), first.id, 'same task, URL and text: the first id');
        assert.equal(await store.transaction((tx) => tx.sources.record(sourceSnapshot(taskId))), first.id, 'in a transaction too');
        assert.equal(await store.sources.get(taskId, again.id), undefined, 'the repeat was not stored');
        assert.deepEqual(await store.sources.get(taskId, first.id), first, 'the first one is kept as it was');

        const changed = sourceSnapshot(taskId, { text: 'Zürich 北京 🚀: the plant’s capacity fell to 900 MW.' });
        assert.equal(await store.sources.record(changed), changed.id, 'the page changed: a new snapshot');
        const elsewhere = sourceSnapshot(taskId, { url: 'https://mirror.example.com/plants', finalUrl: 'https://mirror.example.com/plants' });
        assert.equal(await store.sources.record(elsewhere), elsewhere.id, 'the same text at another URL: a new snapshot');
        const otherTask = uid('tsk');
        const theirs = sourceSnapshot(otherTask);
        assert.equal(await store.sources.record(theirs), theirs.id, 'the same URL and text read by another task: its own snapshot');
        assert.equal(await store.sources.record(sourceSnapshot(otherTask)), theirs.id);

        assert.deepEqual((await store.sources.list(taskId, 100, 0)).sources.map((s) => s.id), [first.id, changed.id, elsewhere.id]);
        assert.deepEqual((await store.sources.list(otherTask, 100, 0)).sources.map((s) => s.id), [theirs.id]);
      });

      it('lists a task\'s snapshots in reading order, in pages, with the total and without their text', async () => {
        const taskId = uid('tsk');
        const read = Array.from({ length: 5 }, (_, i) => sourceSnapshot(taskId, {
          url: `https://energy.example.com/plants?page=${i}`, finalUrl: `https://www.energy.example.com/plants?page=${i}`, title: i % 2 ? null : `Page ${i}`, text: `page ${i}: ${'x'.repeat(i * 1000)}`,
        }));
        read.push(sourceSnapshot(taskId, { url: 'upload:upl_list', finalUrl: 'upload:upl_list', uploadId: 'upl_list', title: 'plants.csv' }));
        for (const s of read) await store.sources.record(s);
        await store.sources.record(sourceSnapshot(uid('tsk')));

        const all = await store.sources.list(taskId, 100, 0);
        assert.equal(all.total, 6);
        assert.deepEqual(all.sources, read.map(info), 'in the order read, every field but the text');
        for (const s of all.sources) assert.equal('text' in s, false, 'no text in a listing');
        const pages = [];
        for (let offset = 0; offset < 8; offset += 4) pages.push(await store.sources.list(taskId, 4, offset));
        assert.deepEqual(pages.map((p) => p.total), [6, 6], 'each page tells the total');
        assert.deepEqual(pages.map((p) => p.sources.map((s) => s.id)), [read.slice(0, 4).map((s) => s.id), read.slice(4).map((s) => s.id)]);
        assert.deepEqual(await store.sources.list(taskId, 10, 6), { total: 6, sources: [] }, 'past the end');
        assert.deepEqual(await store.sources.list(uid('tsk'), 10, 0), { total: 0, sources: [] }, 'a task that read nothing');
      });

      it('gets a snapshot with its text, only under its own task', async () => {
        const taskId = uid('tsk');
        const otherTask = uid('tsk');
        const big = sourceSnapshot(taskId, { text: `${'Zürich 北京 🚀 — “quoted”\n'.repeat(20_000)}the end` });
        const theirs = sourceSnapshot(otherTask, { url: 'https://other.example.com/' });
        for (const s of [big, theirs]) await store.sources.record(s);
        assert.deepEqual(await store.sources.get(taskId, big.id), big, 'read back whole, text included');
        assert.deepEqual(await store.transaction((tx) => tx.sources.get(otherTask, theirs.id)), theirs);
        assert.equal(await store.sources.get(otherTask, big.id), undefined, 'another task\'s snapshot is not found');
        assert.equal(await store.sources.get(taskId, theirs.id), undefined);
        assert.equal(await store.sources.get(taskId, 'src_nope'), undefined);
      });

      it('finds the snapshots rows cite by URL asked for, URL arrived at, or upload, within the task', async () => {
        const taskId = uid('tsk');
        const otherTask = uid('tsk');
        const redirected = sourceSnapshot(taskId, { url: 'https://a.example.com/old', finalUrl: 'https://a.example.com/new', text: 'first read of a' });
        const plain = sourceSnapshot(taskId, { url: 'https://b.example.com/', finalUrl: 'https://b.example.com/', text: 'b' });
        const input = sourceSnapshot(taskId, { url: 'upload:upl_cited', finalUrl: 'upload:upl_cited', uploadId: 'upl_cited', title: 'plants.pdf', text: 'the input' });
        const reread = sourceSnapshot(taskId, { url: 'https://a.example.com/old', finalUrl: 'https://a.example.com/new', text: 'a, changed since' });
        // A page whose final URL is another page's requested URL: citing that URL finds both.
        const landed = sourceSnapshot(taskId, { url: 'https://c.example.com/', finalUrl: 'https://a.example.com/old', text: 'c landed on a' });
        const theirs = [
          sourceSnapshot(otherTask, { url: 'https://a.example.com/old', finalUrl: 'https://a.example.com/new', text: 'their a' }),
          sourceSnapshot(otherTask, { url: 'upload:upl_cited', finalUrl: 'upload:upl_cited', uploadId: 'upl_cited', text: 'their input' }),
        ];
        for (const s of [redirected, plain, input, reread, landed, ...theirs]) await store.sources.record(s);

        const ids = (list: SourceSnapshotRecord[]) => list.map((s) => s.id);
        assert.deepEqual(await store.sources.cited(taskId, ['https://a.example.com/old'], []), [redirected, reread, landed], 'by URL asked for or arrived at, every read, in reading order, text included');
        assert.deepEqual(ids(await store.sources.cited(taskId, ['https://a.example.com/new'], [])), ids([redirected, reread]), 'by the URL a redirect arrived at');
        assert.deepEqual(ids(await store.sources.cited(taskId, [], ['upl_cited'])), ids([input]), 'by upload');
        assert.deepEqual(ids(await store.sources.cited(taskId, ['https://b.example.com/', 'https://a.example.com/new'], ['upl_cited'])), ids([redirected, plain, input, reread]), 'any of them, each once');
        assert.deepEqual(ids(await store.transaction((tx) => tx.sources.cited(taskId, ['https://b.example.com/'], []))), ids([plain]));
        assert.deepEqual(await store.sources.cited(taskId, ['upload:upl_cited'], []), [input], 'an upload\'s snapshot URL is a URL too');
        assert.deepEqual(await store.sources.cited(taskId, ['upl_cited'], ['https://b.example.com/']), [], 'an upload id is not a URL, nor a URL an upload id');
        assert.deepEqual(await store.sources.cited(taskId, ['https://nope.example.com/'], ['upl_nope']), []);
        assert.deepEqual(await store.sources.cited(taskId, [], []), []);
        assert.deepEqual(await store.sources.cited(otherTask, ['https://a.example.com/old', 'https://b.example.com/'], ['upl_cited']), theirs, 'another task finds its own only');
        assert.deepEqual(await store.sources.cited(uid('tsk'), ['https://a.example.com/old'], ['upl_cited']), []);
      });
    });

    describe('pruning', () => {
      // Rows of these cases are backdated to 2001; every other case's rows are younger than 2002.
      const OLD = '2001-06-01T00:00:00.000Z';
      const CUTOFF = '2002-01-01T00:00:00.000Z';
      const RECENT = '2003-01-01T00:00:00.000Z';

      it('deletes idempotency records older than their window, a bounded batch at a time', async () => {
        const acct = uid('acct');
        const rec = (createdAt: string) => ({ requestHash: 'h', status: 200, body: '{}', createdAt });
        for (let i = 0; i < 5; i++) await store.idempotency.put(acct, `old-${i}`, rec(OLD));
        await store.idempotency.put(acct, 'recent', rec(RECENT));
        assert.equal(await store.prune.idempotency(CUTOFF, 2), 2, 'at most the batch');
        while ((await store.prune.idempotency(CUTOFF, 2)) > 0);
        for (let i = 0; i < 5; i++) assert.equal(await store.idempotency.get(acct, `old-${i}`, '1970-01-01T00:00:00.000Z'), undefined);
        assert.equal((await store.idempotency.get(acct, 'recent', '1970-01-01T00:00:00.000Z'))?.createdAt, RECENT);
        assert.equal(await store.prune.idempotency(CUTOFF, 100), 0, 'a second pass finds nothing');
      });

      it('deletes rate windows that started before the cutoff and keeps the counts of later ones', async () => {
        const key = uid('key');
        await store.cluster.hitRateWindow(key, OLD, 7);
        await store.cluster.hitRateWindow(key, RECENT, 3);
        assert.ok((await store.prune.rateWindows(CUTOFF, 100)) >= 1);
        assert.equal(await store.cluster.hitRateWindow(key, OLD), 1, 'the old window starts again from nothing');
        assert.equal(await store.cluster.hitRateWindow(key, RECENT), 4, 'the later window kept its count');
      });

      it('deletes delivered and dead deliveries past their retention, never pending ones', async () => {
        const e = webhookEndpoint(accountId);
        await store.webhooks.insertEndpoint(e);
        const ended = { nextAttemptAt: null, attempts: 1 };
        const delivered = webhookDelivery(e.id, { ...ended, status: 'delivered', retrySince: OLD, createdAt: OLD, deliveredAt: OLD });
        const dead = webhookDelivery(e.id, { ...ended, status: 'dead', retrySince: OLD, createdAt: OLD });
        const pending = webhookDelivery(e.id, { retrySince: OLD, createdAt: OLD });
        const redelivered = webhookDelivery(e.id, { ...ended, status: 'delivered', retrySince: RECENT, createdAt: OLD, deliveredAt: RECENT });
        await store.webhooks.insertDeliveries([delivered, dead, pending, redelivered]);
        assert.equal(await store.prune.deliveries(CUTOFF, 100), 2);
        assert.deepEqual((await store.webhooks.listDeliveries(e.id, 10)).map((d) => d.id).sort(), [pending.id, redelivered.id].sort());
      });

      it('deletes uploads never finished once their URL expired, with their stored contents', async () => {
        const upload = (overrides: Partial<UploadRecord>): UploadRecord => ({
          id: uid('upl'), accountId, filename: 'a.txt', contentType: 'text/plain', declaredBytes: 3, sizeBytes: null, sha256: null, storagePath: null,
          expiresAt: OLD, createdAt: OLD, completedAt: null, ...overrides,
        });
        const unfinished = upload({});
        const finished = upload({ sizeBytes: 3, sha256: 'x', completedAt: OLD });
        const live = upload({ expiresAt: RECENT });
        for (const u of [unfinished, finished, live]) {
          await store.uploads.insert(u);
          await store.uploads.putChunk(u.id, 0, Buffer.from('abc'));
        }
        assert.equal(await store.prune.uploads(CUTOFF, 100), 1);
        assert.equal(await store.uploads.get(unfinished.id), undefined);
        const chunks: Buffer[] = [];
        for await (const c of store.uploads.readChunks(unfinished.id)) chunks.push(c);
        assert.deepEqual(chunks, []);
        assert.ok(await store.uploads.get(finished.id));
        assert.ok(await store.uploads.get(live.id));
      });

      /** A deleted task with 150 events, two turns with steps, rows, a snapshot. */
      async function deletedTask(overrides: Partial<TaskRecord> = {}): Promise<{ t: TaskRecord; turns: TurnRecord[] }> {
        const t = task(accountId, { status: 'deleted', phase: null, activity: null, lastEventSeq: 150, deletedAt: OLD, ...overrides });
        await store.tasks.insert(t);
        const turns = [turn(t.id, accountId, { status: 'completed', endedAt: OLD }), turn(t.id, accountId, { status: 'stopped', endedAt: OLD })];
        for (const r of turns) {
          await store.turns.insert(r);
          await store.steps.insert(r.id, 1, '{}', OLD);
          await store.steps.insert(r.id, 2, '{}', OLD);
        }
        await store.events.insert(Array.from({ length: 150 }, (_, i) => ({ taskId: t.id, seq: i + 1, type: 'text', turnId: turns[i < 75 ? 0 : 1]!.id, data: `{"seq":${i + 1}}` })));
        await store.rows.append(t.id, 'facts', 'k1', [(n) => `{"_row":${n}}`, (n) => `{"_row":${n}}`], OLD);
        await store.rows.insertChanges([{ id: uid('chg'), taskId: t.id, turnId: turns[0]!.id, outputId: 'facts', change: 'added', at: OLD, data: '{"key":{},"fields":{},"sources":{"before":null,"after":[]}}' }]);
        await store.sources.record(sourceSnapshot(t.id));
        return { t, turns };
      }

      async function purge(taskId: string, keepRows: boolean): Promise<void> {
        let statements = 0;
        while ((await store.prune.purgeTask(taskId, { keepEvents: 100, keepRows, limit: 40, now: RECENT })) > 0) statements++;
        assert.ok(statements > 1, 'in several bounded batches');
      }

      it('purges a deleted task’s data after its grace, keeping the task and its last events as GET /task shows them', async () => {
        const { t, turns } = await deletedTask();
        const kept = await store.events.last(t.id, 100);
        const recent = task(accountId, { status: 'deleted', deletedAt: RECENT });
        await store.tasks.insert(recent);
        const due = (await store.prune.deletedTasks(CUTOFF, 1000)).map((d) => d.id);
        assert.ok(due.includes(t.id));
        assert.ok(!due.includes(recent.id), 'inside its grace');
        await purge(t.id, false);
        assert.deepEqual(await store.tasks.get(t.id), await store.tasks.get(t.id));
        assert.equal((await store.tasks.get(t.id))?.status, 'deleted');
        assert.deepEqual(await store.events.last(t.id, 100), kept);
        assert.equal((await store.events.list(t.id, 0, 1000)).length, 100);
        for (const r of turns) {
          assert.equal(await store.turns.get(r.id), undefined);
          assert.deepEqual(await store.steps.list(r.id), []);
        }
        assert.deepEqual(await store.rows.read(t.id, 'facts', 0, 10), []);
        assert.deepEqual(await store.rows.stats(t.id), []);
        assert.equal((await store.sources.list(t.id, 10, 0)).total, 0);
        assert.deepEqual(await store.rows.changes(t.id, { limit: 10 }), [], 'its changes go with its rows');
        assert.ok(!(await store.prune.deletedTasks(CUTOFF, 1000)).some((d) => d.id === t.id), 'a purged task is not listed again');
      });

      it('keeps the rows of a deleted group run, which its group still shows', async () => {
        const g = group(accountId);
        await store.groups.insert(g);
        const { t } = await deletedTask({ group: { id: g.id, inputIndex: 0, input: '{}' } });
        assert.deepEqual((await store.prune.deletedTasks(CUTOFF, 1000)).find((d) => d.id === t.id), { id: t.id, groupRun: true });
        await purge(t.id, true);
        assert.equal((await store.rows.read(t.id, 'facts', 0, 10)).length, 2);
        assert.equal((await store.rows.stats(t.id))[0]?.rowCount, 2);
      });

      it('drops a range of events but the one to keep, and reads on from where it stopped', async () => {
        const t = task(accountId, { lastEventSeq: 130, lastErrorSeq: 3 });
        await store.tasks.insert(t);
        const old = turn(t.id, accountId, { status: 'failed', endedAt: OLD });
        const late = turn(t.id, accountId, { status: 'completed', endedAt: RECENT });
        const open = turn(t.id, accountId, { status: 'running' });
        for (const r of [old, late, open]) await store.turns.insert(r);
        await store.events.insert(Array.from({ length: 130 }, (_, i) => ({ taskId: t.id, seq: i + 1, type: 'text', turnId: i < 10 ? old.id : i === 10 ? null : late.id, data: '{}' })));
        assert.ok((await store.prune.retentionCandidates(null, 100, 100_000)).some((c) => c.id === t.id && c.prunedSeq === 0 && c.lastErrorSeq === 3));
        assert.deepEqual((await store.prune.eventTurns(t.id, 9, 2)), [{ seq: 10, turnId: old.id }, { seq: 11, turnId: null }]);
        assert.deepEqual([...await store.prune.turnsEndedBefore([old.id, late.id, open.id], CUTOFF)], [old.id]);
        assert.equal(await store.prune.dropEvents(t.id, 0, 10, 3), 9);
        assert.deepEqual((await store.events.list(t.id, 0, 3)).map((e) => e.seq), [3, 11, 12]);
        assert.ok(!(await store.prune.retentionCandidates(null, 120, 100_000)).some((c) => c.id === t.id), 'with 10 dropped, 120 remain to keep');
        assert.equal(await store.prune.dropEvents(t.id, 0, 5, 3), 0, 'a range dropped before');
        assert.ok((await store.prune.retentionCandidates(null, 100, 100_000)).some((c) => c.id === t.id && c.prunedSeq === 10), 'never moved back');
      });
    });

    describe('groups', () => {
      const input = (groupId: string, index: number, overrides: Partial<GroupInputRecord> = {}): GroupInputRecord => ({
        groupId, index, key: null, data: `{"company":"Firm ${index}"}`, status: 'pending', taskId: null, turnId: null, ...overrides,
      });

      it('stores a group, reads it back as written, updates counts and lists an account\'s groups newest first', async () => {
        const owner = uid('acct');
        const first = group(owner, { maxCreditsMicros: 2_500_000 });
        const second = group(owner);
        const theirs = group(uid('acct'));
        for (const g of [first, second, theirs]) await store.groups.insert(g);
        assert.deepEqual(await store.groups.get(first.id), first);
        const patch = { status: 'finished' as const, inputs: 3, duplicates: 1, counts: { pending: 0, running: 0, completed: 1, failed: 1, stopped: 0 }, creditsUsedMicros: 1_234_567, lastEventSeq: 9, updatedAt: '2030-01-02T00:00:00.000Z', finishedAt: '2030-01-02T00:00:00.000Z' };
        await store.transaction(async (tx) => {
          assert.ok(await tx.groups.get(first.id, { lock: true }));
          await tx.groups.update(first.id, patch);
        });
        assert.deepEqual(await store.groups.get(first.id), { ...first, ...patch });
        assert.deepEqual((await store.groups.list(owner, 10)).map((g) => g.id), [second.id, first.id]);
        assert.deepEqual((await store.groups.list(owner, 10, second.id)).map((g) => g.id), [first.id], 'after a cursor: older ones');
        assert.deepEqual((await store.groups.list(owner, 1)).map((g) => g.id), [second.id]);
        assert.equal(await store.groups.get('grp_nope'), undefined);
      });

      it('stores inputs once per key (a repeated key, in one batch or a later one, is skipped), lists and moves them by status', async () => {
        const g = group(accountId);
        await store.groups.insert(g);
        const stored = await store.groups.insertInputs([input(g.id, 0, { key: 'a' }), input(g.id, 1), input(g.id, 2, { key: 'a' }), input(g.id, 3, { key: 'b' }), input(g.id, 4)]);
        assert.deepEqual(stored.sort(), [0, 1, 3, 4], 'inputs without a key never collide; the second "a" is skipped');
        assert.deepEqual(await store.groups.insertInputs([input(g.id, 5, { key: 'b' }), input(g.id, 6, { key: 'c' })]), [6]);
        assert.deepEqual(await store.groups.getInput(g.id, 3), input(g.id, 3, { key: 'b' }));
        assert.equal(await store.groups.getInput(g.id, 2), undefined);

        await store.groups.setInput(g.id, 1, { status: 'running', taskId: 'tsk_one', turnId: 'turn_one' });
        await store.groups.setInput(g.id, 4, { status: 'failed', taskId: 'tsk_four', turnId: 'turn_four' });
        assert.deepEqual((await store.groups.listInputs(g.id, 'pending', 10)).map((i) => i.index), [0, 3, 6]);
        assert.deepEqual((await store.groups.listInputs(g.id, 'pending', 1, 0)).map((i) => i.index), [3], 'after an index, up to a limit');
        assert.deepEqual(await store.groups.listInputs(g.id, 'running', 10), [input(g.id, 1, { status: 'running', taskId: 'tsk_one', turnId: 'turn_one' })]);
        assert.equal(await store.groups.moveInputs(g.id, 'pending', 'stopped'), 3);
        assert.equal(await store.groups.moveInputs(g.id, 'pending', 'stopped'), 0);
        assert.equal(await store.groups.moveInputs(g.id, 'failed', 'pending'), 1);
        assert.deepEqual((await store.groups.getInput(g.id, 4))?.taskId, 'tsk_four', 'a moved input keeps its last run');
      });

      it('merges the rows of each input\'s run in (input, row) order, by offset or after a position, and counts them', async () => {
        const g = group(accountId);
        await store.groups.insert(g);
        const runs = [uid('tsk'), uid('tsk'), uid('tsk')];
        await store.groups.insertInputs([input(g.id, 0, { taskId: runs[0]!, status: 'completed' }), input(g.id, 1), input(g.id, 2, { taskId: runs[2]!, status: 'failed' })]);
        const row = (n: number, text: string) => () => `{"_row":${n},"note":${JSON.stringify(text)},"_sources":[]}`;
        await store.rows.append(runs[0]!, 'facts', 'k0', [row(1, 'a1'), row(2, 'a2')], '2030-01-01T00:00:00.000Z');
        await store.rows.append(runs[2]!, 'facts', 'k2', [row(1, 'c1')], '2030-01-01T00:00:00.000Z');
        await store.rows.append(runs[2]!, 'other', 'k3', [row(1, 'elsewhere')], '2030-01-01T00:00:00.000Z');
        await store.rows.append(runs[1]!, 'facts', 'k1', [row(1, 'not this group\'s run')], '2030-01-01T00:00:00.000Z');

        assert.equal(await store.groups.rowCount(g.id, 'facts'), 3);
        assert.equal(await store.groups.rowCount(g.id, 'nothing'), 0);
        const all = await store.groups.rows(g.id, 'facts', 10, { offset: 0 });
        assert.deepEqual(all.map((r) => [r.index, r.rowNumber, r.taskId, r.status, JSON.parse(r.row).note, JSON.parse(r.input).company]), [
          [0, 1, runs[0], 'completed', 'a1', 'Firm 0'], [0, 2, runs[0], 'completed', 'a2', 'Firm 0'], [2, 1, runs[2], 'failed', 'c1', 'Firm 2'],
        ]);
        assert.deepEqual((await store.groups.rows(g.id, 'facts', 1, { offset: 1 })).map((r) => [r.index, r.rowNumber]), [[0, 2]]);
        assert.deepEqual((await store.groups.rows(g.id, 'facts', 10, { after: { index: 0, rowNumber: 1 } })).map((r) => [r.index, r.rowNumber]), [[0, 2], [2, 1]]);
        assert.deepEqual((await store.groups.rows(g.id, 'facts', 10, { after: { index: 0, rowNumber: 2 } })).map((r) => [r.index, r.rowNumber]), [[2, 1]]);
      });
    });
  });
}
