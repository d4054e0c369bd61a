/**
 * The data dir's disk fills up under a running Quarry on SQLite (docs/durability.md). While it is
 * full, every write answers 503 service_unavailable with retry_after (a create, a message, an
 * upload's PUT), nothing half-stored stays behind, and a turn whose model reply arrives then
 * waits instead of failing. Once space is freed the same process answers again and the turn
 * finishes.
 *
 * The disk is a small tmpfs the test mounts itself (root only); where mounting is not allowed the
 * test is skipped and says why.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply } from '../kit/fake-openai-server.js';
import { until, within } from '../kit/bounded-waits.js';
import { assertUnavailable, fetchJson, waitIdle, type TestResponse } from '../kit/http.js';
import { killAll, startServer, type ServerProcess } from '../kit/process.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const ADMIN_KEY = 'faults-disk-admin-key';
const FINAL_TEXT = 'Finished once the disk had room.';
const TMPFS_SIZE = '16m';

/** Mounts a tmpfs of TMPFS_SIZE at a fresh dir; the reason it cannot when it cannot. */
function mountSmallDisk(): { dir: string } | { skip: string } {
  if (process.getuid?.() !== 0) return { skip: 'mounting a tmpfs needs root' };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_SIZE}`, 'tmpfs', dir], { stdio: 'pipe' });
    return { dir };
  } catch (err) {
    fs.rmdirSync(dir);
    return { skip: `cannot mount a tmpfs here: ${(err as Error).message.split('\n')[0]}` };
  }
}

function unmount(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'pipe' });
  } catch {
    // Still busy (a process being killed): detach it now, it goes when the last user does.
    execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
  }
  fs.rmdirSync(dir);
}

/** Writes `file` until the disk refuses more (ENOSPC), a page at a time at the end so no slack is left. */
function fillDisk(file: string): void {
  const fd = fs.openSync(file, 'w');
  try {
    const big = Buffer.alloc(1024 * 1024, 1);
    const page = Buffer.alloc(4096, 1);
    for (const chunk of [big, page]) {
      for (;;) {
        try {
          fs.writeSync(fd, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          break;
        }
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

const disk = mountSmallDisk();

describe('the data dir\'s disk fills up under a running Quarry (SQLite)', { skip: 'skip' in disk ? disk.skip : false, timeout: 60_000 }, () => {
  const dataDir = 'dir' in disk ? disk.dir : '';
  const filler = path.join(dataDir, 'filler');
  let model: FakeOpenAI;
  let server: ServerProcess;
  let release: () => void = () => {};

  before(async () => {
    model = await startFakeOpenAI();
    const held = new Promise<void>((resolve) => (release = resolve));
    // The first reply waits until the disk is full; then the turn ends.
    model.setResponder((_body, index): Promise<FakeReply> | FakeReply =>
      index === 0 ? held.then(() => ({ text: FINAL_TEXT })) : { text: FINAL_TEXT });
    server = await startServer({
      dataDir,
      env: { QUARRY_ADMIN_KEY: ADMIN_KEY, QUARRY_MODEL_BASE_URL: model.url, QUARRY_MODEL: 'fake-model' },
    });
  });

  after(async () => {
    release();
    try {
      await killAll();
      await model?.close();
    } finally {
      if (dataDir) unmount(dataDir);
    }
  });

  const send = (key: string, method: string, p: string, body?: unknown): Promise<TestResponse> =>
    fetchJson(method, server.url + p, { key, body, timeoutMs: 10_000 });

  function assertAlive(): void {
    assert.ok(server.alive(), `quarry died (${server.exitStatus()}):\n${server.output().slice(-4000)}`);
  }

  const uploadFiles = () => (fs.existsSync(path.join(dataDir, 'uploads')) ? fs.readdirSync(path.join(dataDir, 'uploads')) : []);

  it('answers 503 while the disk is full, keeps nothing half-stored, and recovers with the turn in flight finished', async () => {
    const account = await send(ADMIN_KEY, 'POST', '/admin/accounts', { name: 'faults', credits: 100 });
    assert.equal(account.status, 201, account.text);
    const key: string = account.body.api_key;
    const created = await send(key, 'POST', '/task/start', { task: { prompt: 'Research something slowly.' } });
    assert.equal(created.status, 200, created.text);
    const taskId: string = created.body.task_id;
    await model.waitForRequests(1);
    const content = Buffer.alloc(256 * 1024, 'x');
    const ticket = await send(key, 'POST', '/upload-url', { filename: 'notes.txt', content_type: 'text/plain', size_bytes: content.length });
    assert.equal(ticket.status, 200, ticket.text);
    const tasksBefore = (await send(key, 'GET', '/task')).body;

    fillDisk(filler);
    try {
      assertUnavailable(await send(key, 'POST', '/task/start', { task: { prompt: 'another' } }), 'start while full');
      assertUnavailable(await send(key, 'POST', `/task/${taskId}/continue`, { message: 'more' }), 'continue while full');
      const put = await fetchJson('PUT', ticket.body.upload_url, { rawBody: content, headers: { 'content-type': 'text/plain' }, timeoutMs: 10_000 });
      assertUnavailable(put, 'upload PUT while full');
      assert.deepEqual(uploadFiles(), [], 'no half-written upload file is left');
      // Reads still work, and nothing of the refused writes is there.
      const tasks = await send(key, 'GET', '/task');
      assert.equal(tasks.status, 200, tasks.text);
      assert.deepEqual(tasks.body, tasksBefore, 'no task was half-created');
      const state = await send(key, 'GET', `/task/${taskId}/state`);
      assert.equal(state.status, 200, state.text);
      assert.equal(state.body.queued_messages, 0, 'the refused message was not queued');

      // The model answers now: the turn's checkpoint finds the disk full and must wait.
      release();
      await within(server.waitForLine(/the turn waits and tries again/, 10_000), 11_000, 'quarry to log that the turn waits for the store');
      assertAlive();
    } finally {
      fs.rmSync(filler, { force: true });
    }

    await waitIdle((method, p, o) => send(key, method, p, o?.body), taskId, { timeoutMs: 20_000 });
    const events: Json[] = (await send(key, 'GET', `/task/${taskId}/events?limit=1000`)).body.events;
    assert.deepEqual(events.filter((e) => e.type === 'error'), [], 'the turn ended without an error');
    assert.ok(events.some((e) => e.type === 'done'), `the turn finished: ${events.map((e) => e.type).join(' ')}`);
    assert.ok(events.some((e) => e.type === 'text' && JSON.stringify(e).includes(FINAL_TEXT)), 'the reply given while the disk was full was stored');

    // Writes work again in the same process.
    const put = await fetchJson('PUT', ticket.body.upload_url, { rawBody: content, headers: { 'content-type': 'text/plain' }, timeoutMs: 10_000 });
    assert.equal(put.status, 201, put.text);
    assert.equal(put.body.size_bytes, content.length);
    assert.deepEqual(uploadFiles(), [ticket.body.upload_id]);
    const again = await until('a create to succeed after space was freed', async () => {
      const r = await send(key, 'POST', '/task/start', { task: { prompt: 'After the disk had room.' } });
      return r.status === 200 ? r : undefined;
    }, { timeoutMs: 5000, pollMs: 100 });
    await waitIdle((method, p, o) => send(key, method, p, o?.body), again!.body.task_id, { timeoutMs: 15_000 });
    assertAlive();
  });
});
