/**
 * The store contract as one suite of cases. Every database adapter runs all of them, so the
 * adapters cannot drift apart.
 */
import assert from 'node:assert/strict';
import { describe, it, before, after } from 'node:test';
import type { Store, TaskRecord, TurnRecord } from '../../src/store/store.js';
import { emptySpec } from '../../src/tasks/spec.js';

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
    id: uid('turn'), taskId, accountId, kind: 'continue', status: 'pending', input: 'hi', planOnly: false, createdAt: new Date().toISOString(),
    startedAt: null, endedAt: null, leaseOwner: null, leaseExpiresAt: null, creditsUsedMicros: 0, tokensIn: 0, tokensOut: 0, toolCalls: 0, error: null, ...overrides,
  };
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
      const seen: string[] = [];
      let cursor;
      for (let page = 0; page < 10; page++) {
        const rows = await store.tasks.list(acct, 4, cursor);
        seen.push(...rows.map((r) => r.id));
        if (rows.length < 4) break;
        const last = rows[rows.length - 1]!;
        cursor = { pinned: last.pinned, updatedAt: last.updatedAt, id: last.id };
      }
      const expected = made
        .filter((t) => !t.deletedAt)
        .sort((a, b) => Number(b.pinned) - Number(a.pinned) || b.updatedAt.localeCompare(a.updatedAt) || b.id.localeCompare(a.id))
        .map((t) => t.id);
      assert.deepEqual(seen, expected);
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

    it('rolls a transaction back when it throws', async () => {
      const t = task(accountId);
      await assert.rejects(store.transaction(async (tx) => {
        await tx.tasks.insert(t);
        throw new Error('boom');
      }), /boom/);
      assert.equal(await store.tasks.get(t.id), undefined);
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
        for (let i = 0; i < 200 && got.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
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
  });
}
