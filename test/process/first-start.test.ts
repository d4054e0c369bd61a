/**
 * The first start (`quarry serve` from the build, as `npm start` runs it): a start that cannot
 * get its port says so in one line and leaves the starter key for the next start; the key is
 * announced before it is stored, so no crash can lose it; a start without a model says how to
 * point Quarry at one.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Accounts } from '../../src/accounts/accounts.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { fetchJson } from '../kit/http.js';
import { killAll, startQuarryCli, startServer, tempDataDir } from '../kit/process.js';

after(killAll);

const dataDir = () => tempDataDir('quarry-first-start-');

/** A loopback port something else listens on, held until the test ends. */
async function busyPort(t: { after(fn: () => unknown): void }): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as net.AddressInfo).port;
}

describe('the first start', () => {
  it('on a busy port: one line naming QUARRY_PORT, exit 1, and the next start still prints the starter key', async (t) => {
    const dir = dataDir();
    const port = await busyPort(t);
    const failed = await startQuarryCli(['serve'], {
      env: { QUARRY_HOST: '127.0.0.1', QUARRY_PORT: String(port), QUARRY_DATA_DIR: dir, QUARRY_SANDBOX: 'off', QUARRY_LOG_LEVEL: 'warn' },
    }).result();
    assert.equal(failed.code, 1, failed.stderr);
    const lines = failed.stderr.trim().split('\n');
    assert.equal(lines.length, 1, `one line, no stack trace:\n${failed.stderr}`);
    assert.match(lines[0]!, new RegExp(`^quarry: cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use.*set QUARRY_PORT`));
    assert.doesNotMatch(failed.stderr + failed.stdout, /\n\s+at |EADDRINUSE/);
    assert.doesNotMatch(failed.stdout, /starter api key/, 'a start that failed shows no key');

    const server = await startServer({ dataDir: dir, waitForStarterKey: true });
    assert.match(server.starterKey!, /^qry_\S+$/);
    const res = await fetchJson('GET', `${server.url}/task`, { key: server.starterKey });
    assert.equal(res.status, 200, res.text);
    // The key line comes with what to do when it is lost.
    assert.ok(server.lines.some((line) => /keys create/.test(line)), server.stdout());
    await server.stop();

    const again = await startServer({ dataDir: dir });
    assert.ok(!again.lines.some((line) => line.startsWith('starter api key')), 'the key is shown once');
    await again.stop();
  });

  it('without a model: one line names QUARRY_MODEL_BASE_URL and QUARRY_MODEL with an example', async () => {
    const server = await startServer({ dataDir: dataDir() });
    try {
      const line = await server.waitForLine(/^no model configured/);
      assert.match(line.input, /QUARRY_MODEL_BASE_URL=http\S+ QUARRY_MODEL=\S+/);
    } finally {
      await server.stop();
    }
  });

  it('announces the starter key before storing it: a start that dies in between leaves it for the next start', async () => {
    const dir = dataDir();
    const store = openSqliteStore(dir);
    try {
      await store.migrate();
      const accounts = new Accounts(store);
      let announced: string | undefined;
      const crash = new Error('killed right after printing');
      await assert.rejects(accounts.ensureStarterAccount(100, (key) => {
        announced = key;
        throw crash;
      }), crash);
      assert.match(announced!, /^qry_/);
      assert.equal(await store.accounts.count(), 0, 'nothing stored: the next start makes the starter account');

      let shown: string | undefined;
      const key = await accounts.ensureStarterAccount(100, (k) => (shown = k));
      assert.equal(key, shown, 'the key stored is the key shown');
      assert.notEqual(key, announced);
      assert.ok(await accounts.verifyKey(key!));
      assert.equal(await accounts.verifyKey(announced!), null);
      assert.equal(await accounts.ensureStarterAccount(100, () => assert.fail('shown once')), null);
    } finally {
      await store.close();
    }
  });
});
