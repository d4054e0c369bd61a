/**
 * How long a single task waits for its first model call while a large group runs (decisions §18:
 * at most one turn's duration on a busy worker). One in-process server (the test harness, SQLite,
 * or PostgreSQL with QUARRY_TEST_STORE=postgres), a fake model that answers each call after
 * BENCH_FAIR_TURN_MS, so a turn of the group lasts about that long; a group of BENCH_FAIR_INPUTS
 * inputs at max_parallel equal to its size fills the worker's BENCH_FAIR_SLOTS slots and queues
 * the rest. Once it runs, BENCH_FAIR_SINGLES single tasks are created one after another, each
 * timed from its create to its first model call.
 *
 *   npm run bench:fair-share
 */
import { startHarness } from '../test/kit/harness.js';
import { fakeModel, userText } from '../test/kit/task-api.js';
import { percentile } from './lib.js';

const INPUTS = Number(process.env.BENCH_FAIR_INPUTS ?? 1000);
const SLOTS = Number(process.env.BENCH_FAIR_SLOTS ?? 16);
const TURN_MS = Number(process.env.BENCH_FAIR_TURN_MS ?? 200);
const SINGLES = Number(process.env.BENCH_FAIR_SINGLES ?? 10);

async function main(): Promise<void> {
  const h = await startHarness({ env: { QUARRY_MAX_CONCURRENT_TURNS: String(SLOTS), QUARRY_RATE_LIMIT_PER_MIN: '1000000', QUARRY_MAX_PENDING_TURNS: '100000' } });
  const firstCall = new Map<string, () => void>();
  let groupCalls = 0;
  fakeModel(h).setResponder(async (body) => {
    const m = /\[single (\d+)\]/.exec(userText(body));
    if (m) firstCall.get(m[1]!)?.();
    else groupCalls++;
    await new Promise((r) => setTimeout(r, TURN_MS));
    return { text: 'Done.' };
  });
  try {
    const spec = {
      name: 'Bench group', prompt: 'Work on each input.',
      input_columns: [{ name: 'item', type: 'string', required: true }],
      outputs: [{ id: 'facts', kind: 'table', columns: [{ name: 'note', type: 'string' }] }],
    };
    let n = 0;
    const timeSingles = async (count: number) => {
      const waits: number[] = [];
      for (let i = 0; i < count; i++, n++) {
        const reached = new Promise<void>((resolve) => firstCall.set(String(n), resolve));
        const began = performance.now();
        const res = await h.request('POST', '/task', { body: { prompt: `[single ${n}] A single question.` } });
        if (res.status !== 200) throw new Error(res.text);
        await reached;
        waits.push(performance.now() - began);
      }
      return waits;
    };
    // The same on an idle worker first: what a create costs before any wait for a slot.
    const idle = await timeSingles(5);
    const created = await h.request('POST', '/group', { body: { task: spec, inputs: Array.from({ length: INPUTS }, (_, i) => ({ item: `item ${i}` })), max_parallel: Math.min(INPUTS, 256) } });
    if (created.status !== 200) throw new Error(created.text);
    // The group's runs fill the worker first.
    while (groupCalls < SLOTS) await new Promise((r) => setTimeout(r, 10));
    const waits = await timeSingles(SINGLES);
    const group = (await h.request('GET', `/group/${created.body.group_id}`)).body;
    console.log(`fair-share bench on ${process.env.QUARRY_TEST_STORE === 'postgres' ? 'PostgreSQL' : 'SQLite'}: group of ${INPUTS} inputs at max_parallel ${Math.min(INPUTS, 256)}, ${SLOTS} turn slots, a model call (and a group turn) of ${TURN_MS} ms`);
    console.log(`  single task's wait for its first model call, ${SINGLES} tasks: p50 ${percentile(waits, 50).toFixed(0)} ms, max ${Math.max(...waits).toFixed(0)} ms (one turn: ${TURN_MS} ms)`);
    console.log(`  the same on the idle worker before the group: p50 ${percentile(idle, 50).toFixed(0)} ms, max ${Math.max(...idle).toFixed(0)} ms`);
    console.log(`  meanwhile the group: ${group.counts.completed} completed, ${group.counts.running} running, ${group.counts.pending} pending`);
    await h.request('POST', `/group/${created.body.group_id}/stop`);
  } finally {
    await h.close();
  }
}

await main();
