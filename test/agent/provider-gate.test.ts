/**
 * The provider gate on its own, over a real SQLite store: what it learns from a 429 holds the
 * calls it has already given a start to, not only the calls still queued; a call aborted while it
 * waits leaves no timer of the gate's behind.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ProviderGate, ProviderWaitTooLong } from '../../src/agent/providers/provider-gate.js';
import type { LimitedProvider } from '../../src/metrics/metrics.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { until, within } from '../kit/bounded-waits.js';

/** A gate with no limits of its own over a fresh migrated SQLite store, closed after the test. */
async function gateOverStore(t: TestContext, provider: LimitedProvider): Promise<ProviderGate> {
  const store = openSqliteStore(fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-gate-')));
  await store.migrate();
  t.after(() => store.close());
  return new ProviderGate({ provider, limits: {}, store, metrics: { providerWait() {}, providerWaiting() {} } });
}

test('a hold learned while calls wait for their start holds them too', async (t) => {
  const gate = await gateOverStore(t, 'model');
  // A first 429 holds calls for 600 ms: the two calls below get their start at its end.
  await gate.learn({}, { retryAfterMs: 600 });
  const signal = new AbortController().signal;
  const started: number[] = [];
  const calls = [0, 1].map(async () => {
    const permit = await gate.acquire({ tokens: () => 0, signal, deadline: Infinity });
    started.push(Date.now());
    permit.release();
  });
  // Well before that end, another call's 429 asks for 800 ms from now.
  await sleep(100);
  const heldAt = Date.now();
  await gate.learn({}, { retryAfterMs: 800 });
  await Promise.all(calls);
  for (const at of started) assert.ok(at >= heldAt + 800, `a call started ${at - heldAt} ms after a 429 asked for 800 ms`);
});

test('a call given its start before such a hold, which the hold would take past its deadline, is not waited for', async (t) => {
  const gate = await gateOverStore(t, 'search');
  await gate.learn({}, { retryAfterMs: 600 });
  const call = gate.acquire({ tokens: () => 0, signal: new AbortController().signal, deadline: Date.now() + 900 });
  await sleep(100);
  await gate.learn({}, { retryAfterMs: 1000 });
  await assert.rejects(call, (err: Error) => err instanceof ProviderWaitTooLong);
});

/** The timers the process has set and not yet cleared or fired. */
const activeTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

/** A gate whose calls a 429 holds for a minute, and the count of timers before any call waits. */
async function heldGate(t: TestContext): Promise<{ gate: ProviderGate; timersBefore: number }> {
  const gate = await gateOverStore(t, 'model');
  await gate.learn({}, { retryAfterMs: 60_000 });
  return { gate, timersBefore: activeTimers() };
}

test('a call aborted while its start is being reserved is refused at once, leaving no timer behind', async (t) => {
  const { gate, timersBefore } = await heldGate(t);
  const abort = new AbortController();
  const call = gate.acquire({ tokens: () => 0, signal: abort.signal, deadline: Infinity });
  // At once: the pump is reserving the call's start in the store, not asleep.
  abort.abort(new Error('turn stopped'));
  await within(assert.rejects(call, /turn stopped/), 2000, 'the aborted call to be refused');
  await until('the gate\'s timers to be cleared', () => activeTimers() === timersBefore);
});

test('calls aborted while they wait for a start far ahead leave no timer behind (a closing process is not held open)', async (t) => {
  const { gate, timersBefore } = await heldGate(t);
  const aborts = [new AbortController(), new AbortController()];
  const calls = aborts.map((a) => gate.acquire({ tokens: () => 0, signal: a.signal, deadline: Infinity }));
  // The first call is given its start at the hold's end; the second waits behind it.
  await until('the gate to set its timers', () => activeTimers() > timersBefore);
  for (const a of aborts) a.abort(new Error('turn stopped'));
  for (const call of calls) await assert.rejects(call, /turn stopped/);
  await until('the gate\'s timers to be cleared', () => activeTimers() === timersBefore);
});
