/**
 * Group commit on a real SQLite file: transactions that arrive together share one commit, yet each
 * keeps its own all-or-nothing, and none is answered before it is stored.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import type { Database } from '../../src/store/database.js';
import { GroupCommit } from '../../src/store/group-commit.js';
import { statementRunner } from '../../src/store/sqlite/sqlite-connection.js';
import { tempDataDir } from '../kit/process.js';


function openDatabase(): { file: string; raw: SQLite.Database; db: Kysely<Database>; commits: GroupCommit } {
  const dir = tempDataDir('quarry-group-commit-');
  const file = path.join(dir, 'test.db');
  const raw = new SQLite(file);
  raw.pragma('journal_mode = WAL');
  raw.exec('create table notes (id integer primary key, body text not null)');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: raw }) });
  return { file, raw, db, commits: new GroupCommit(db, statementRunner(raw)) };
}

function insertNote(id: number, body = 'x') {
  return sql`insert into notes (id, body) values (${id}, ${body})`;
}

test('transactions that arrive together are all stored, and each is readable by another connection when it resolves', async () => {
  const { file, db, commits } = openDatabase();
  const reader = new SQLite(file, { readonly: true });
  const seenAtResolve: boolean[] = [];
  await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      commits.run(async (trx) => {
        await insertNote(i).execute(trx);
        return i;
      }).then((id) => {
        seenAtResolve.push(reader.prepare('select 1 from notes where id = ?').get(id) !== undefined);
      }),
    ),
  );
  assert.equal(seenAtResolve.length, 50);
  assert.ok(seenAtResolve.every(Boolean), 'a transaction resolved before its row was committed');
  reader.close();
  await db.destroy();
});

test('a transaction that throws is rolled back alone and rejected with its own error; the others are stored', async () => {
  const { raw, db, commits } = openDatabase();
  const results = await Promise.allSettled(
    [1, 2, 3, 4].map((id) =>
      commits.run(async (trx) => {
        await insertNote(id).execute(trx);
        await insertNote(id * 10).execute(trx);
        if (id === 2) throw new Error('member 2 changed its mind');
        // A constraint failure inside a member is that member's failure only.
        if (id === 3) await insertNote(1).execute(trx);
        return id;
      }),
    ),
  );
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled']);
  assert.match(String((results[1] as PromiseRejectedResult).reason), /member 2 changed its mind/);
  assert.match(String((results[2] as PromiseRejectedResult).reason), /UNIQUE constraint failed/);
  const ids = raw.prepare('select id from notes order by id').pluck().all();
  assert.deepEqual(ids, [1, 4, 10, 40]);
  await db.destroy();
});

test('when the disk fills, every transaction that resolved is stored and none that was rejected left anything', async () => {
  const { raw, db, commits } = openDatabase();
  // A database that may not grow past a few pages: the inserts below run out of room part way.
  const pages = Number(raw.pragma('page_count', { simple: true }));
  raw.pragma(`max_page_count = ${pages + 8}`);
  const body = 'y'.repeat(2_000);
  const results = await Promise.allSettled(
    Array.from({ length: 100 }, (_, i) =>
      commits.run(async (trx) => {
        await insertNote(i, body).execute(trx);
        await insertNote(1_000 + i, body).execute(trx);
        return i;
      }),
    ),
  );
  const stored = new Set(raw.prepare('select id from notes').pluck().all() as number[]);
  const rejected = results.filter((r) => r.status === 'rejected');
  assert.ok(rejected.length > 0, 'the database never filled up: the test proves nothing');
  for (const reason of rejected.map((r) => (r as PromiseRejectedResult).reason)) assert.match(String(reason), /full/i);
  results.forEach((r, i) => {
    const inStore = [stored.has(i), stored.has(1_000 + i)];
    assert.deepEqual(inStore, r.status === 'fulfilled' ? [true, true] : [false, false], `transaction ${i} was ${r.status} but its rows stored: ${inStore}`);
  });
  await db.destroy();
});
