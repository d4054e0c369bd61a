/**
 * `quarry keys create [--account NAME]` on the server's host: a new key written into the store
 * the server uses (QUARRY_DATA_DIR), with no server call and no admin key, so a lost starter key
 * is never the end. Runs the built CLI beside a built server, over real HTTP.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { fetchJson } from '../kit/http.js';
import { killAll, runQuarryCli, startServer, tempDataDir, type ServerProcess } from '../kit/process.js';

const ADMIN_KEY = 'admin-for-keys-command';
after(killAll);

const dataDir = () => tempDataDir('quarry-keys-');

function keysCreate(dir: string, args: string[] = []) {
  return runQuarryCli(['keys', 'create', ...args], { env: { QUARRY_DATA_DIR: dir } });
}

describe('quarry keys create on the server\'s host', () => {
  let server: ServerProcess;
  let dir: string;
  let taskId: string;

  before(async () => {
    dir = dataDir();
    server = await startServer({ dataDir: dir, env: { QUARRY_ADMIN_KEY: ADMIN_KEY }, waitForStarterKey: true });
    const created = await fetchJson('POST', `${server.url}/task`, { key: server.starterKey, body: { prompt: 'Granite quarries.' } });
    assert.equal(created.status, 200, created.text);
    taskId = created.body.task_id;
  });
  after(() => server.stop());

  it('prints a new key for the default account while the server runs', async () => {
    const run = await keysCreate(dir);
    assert.equal(run.code, 0, run.stderr);
    const apiKey = /^api_key +(qry_\S+)$/m.exec(run.stdout)?.[1];
    assert.ok(apiKey, run.stdout);
    assert.match(run.stdout, /^name +default$/m);
    assert.match(run.stderr, /shown only once/);
    const tasks = await fetchJson('GET', `${server.url}/task`, { key: apiKey });
    assert.equal(tasks.status, 200, tasks.text);
    assert.deepEqual(tasks.body.map((t: { task_id: string }) => t.task_id), [taskId], 'the default account, the starter key\'s');
    const starter = await fetchJson('GET', `${server.url}/task`, { key: server.starterKey });
    assert.equal(starter.status, 200, 'the starter key still works');
  });

  it('--account NAME: a key for another account, as JSON with --json', async () => {
    const account = await fetchJson('POST', `${server.url}/admin/accounts`, { key: ADMIN_KEY, body: { name: 'research-team', credits: 5 } });
    assert.equal(account.status, 201, account.text);
    const run = await keysCreate(dir, ['--account', 'research-team', '--json']);
    assert.equal(run.code, 0, run.stderr);
    const key = JSON.parse(run.stdout);
    assert.equal(key.account_id, account.body.account_id);
    assert.equal(key.name, 'research-team');
    assert.match(key.key_id, /^key_/);
    const tasks = await fetchJson('GET', `${server.url}/task`, { key: key.api_key });
    assert.equal(tasks.status, 200, tasks.text);
    assert.deepEqual(tasks.body, []);
  });

  it('an unknown account name is exit 4; ACCOUNT and --account together are a usage error', async () => {
    const unknown = await keysCreate(dir, ['--account', 'nobody']);
    assert.equal(unknown.code, 4, unknown.stderr);
    assert.match(unknown.stderr, /^quarry: No account named "nobody"/);
    const both = await keysCreate(dir, ['acct_x', '--account', 'default']);
    assert.equal(both.code, 2, both.stderr);
  });

  it('refuses a data dir that holds no store, and leaves it empty', async () => {
    const empty = dataDir();
    const run = await keysCreate(empty);
    assert.equal(run.code, 4, run.stderr);
    assert.match(run.stderr, /no Quarry store at .*quarry\.db: run this on the server's host/);
    assert.deepEqual(fs.readdirSync(empty), []);
    const missing = path.join(empty, 'nope');
    assert.equal((await keysCreate(missing)).code, 4);
    assert.equal(fs.existsSync(missing), false);
  });
});

describe('after a start that failed', () => {
  it('makes the default account on a store that has none, and the server then accepts its key', async () => {
    const dir = dataDir();
    // What a start that could not listen leaves: a migrated store without accounts.
    const store = openSqliteStore(dir);
    await store.migrate();
    await store.close();

    const run = await keysCreate(dir, ['--json']);
    assert.equal(run.code, 0, run.stderr);
    const key = JSON.parse(run.stdout);
    assert.equal(key.name, 'default');
    const server = await startServer({ dataDir: dir });
    try {
      assert.ok(!server.lines.some((line) => line.startsWith('starter api key')), 'the store has its account already');
      const res = await fetchJson('GET', `${server.url}/task`, { key: key.api_key });
      assert.equal(res.status, 200, res.text);
    } finally {
      await server.stop();
    }
  });
});
