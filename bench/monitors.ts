/**
 * The monitors benchmark (`npm run bench:monitors`): what one tick of a monitor stores. A task on
 * SQLite with a keyed table of BENCH_MONITOR_ROWS rows (default 10,000) runs BENCH_MONITOR_TICKS
 * execute turns (default 5; an execute turn is what a cron tick runs), each writing every row
 * again with BENCH_MONITOR_CHANGED (default 1%) of them changed. Quarry runs in this process
 * (test/kit/harness.ts) with the fake model, which answers each turn with the writes (5,000 rows a
 * call) and then a final answer.
 *
 * Per tick: the pages the database uses (page_count - freelist_count, times page_size, read after
 * the turn ended), their growth, the change records stored and their bytes. The goal: growth
 * proportional to the changed rows, not to the table.
 *
 * Results: a table on stdout and .bench/monitors.json.
 */
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { SQLITE_FILE } from '../src/store/sqlite/sqlite-store.js';
import { startHarness, waitIdle } from '../test/kit/harness.js';
import type { FakeReply } from '../test/kit/fake-openai-server.js';
import { loadAverage, log, reportHeader, round, table, writeReport } from './lib.js';

const ROWS = Number(process.env.BENCH_MONITOR_ROWS ?? 10_000);
const TICKS = Number(process.env.BENCH_MONITOR_TICKS ?? 5);
const CHANGED = Number(process.env.BENCH_MONITOR_CHANGED ?? 0.01);
const PER_CALL = 5_000;
const SPEC = {
  prompt: 'Track the price of every product.',
  outputs: [{
    id: 'prices', kind: 'table', key: ['sku'],
    columns: [{ name: 'sku', type: 'string', required: true }, { name: 'name', type: 'string' }, { name: 'price', type: 'number' }],
  }],
};

/** The table as tick `tick` sees it: the first CHANGED share of the rows carries that tick's price. */
function rowsOf(tick: number): object[] {
  const changed = Math.round(ROWS * CHANGED);
  return Array.from({ length: ROWS }, (_, i) => ({ sku: `sku-${i}`, name: `Product number ${i}`, price: i < changed ? 100 + tick : 100 }));
}

function usedBytes(file: string): number {
  const db = new SQLite(file, { readonly: true });
  try {
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const pages = db.pragma('page_count', { simple: true }) as number;
    const free = db.pragma('freelist_count', { simple: true }) as number;
    return (pages - free) * pageSize;
  } finally {
    db.close();
  }
}

/** Bytes in use by the rows and their changes (tables and indexes): what keyed writes store, apart from the turn's own record (its steps, events). */
function rowBytes(file: string): number {
  const db = new SQLite(file, { readonly: true });
  try {
    const r = db.prepare(`select coalesce(sum(pgsize - unused), 0) as b from dbstat
      where name in ('rows', 'row_changes', 'row_batches', 'outputs', 'rows_key', 'row_changes_task') or name like 'sqlite_autoindex_row%'`).get() as { b: number };
    return r.b;
  } finally {
    db.close();
  }
}

function changeRecords(file: string): { count: number; bytes: number } {
  const db = new SQLite(file, { readonly: true });
  try {
    const r = db.prepare('select count(*) as n, coalesce(sum(length(data)), 0) as b from row_changes').get() as { n: number; b: number };
    return { count: r.n, bytes: r.b };
  } finally {
    db.close();
  }
}

async function main(): Promise<void> {
  const started = new Date();
  const loadAtStart = loadAverage();
  const h = await startHarness({ env: { QUARRY_STARTER_CREDITS: '100000', QUARRY_RATE_LIMIT_PER_MIN: '100000' } });
  try {
    let tick = 0;
    // Each turn: the table in calls of PER_CALL rows, then the answer.
    h.model!.setResponder((body) => {
      const results = (body.messages ?? []).filter((m) => m.role === 'tool').length;
      const rows = rowsOf(tick);
      const start = results * PER_CALL;
      if (start >= rows.length) return { text: 'Done.' };
      return { toolCalls: [{ name: 'write_rows', arguments: { output: 'prices', rows: rows.slice(start, start + PER_CALL), sources: [{ url: 'https://example.com/prices' }] } }] } satisfies FakeReply;
    });
    const file = path.join(h.dataDir, SQLITE_FILE);
    const res = await h.request('POST', '/task/start', { body: { task: SPEC } });
    if (res.status !== 200) throw new Error(res.text);
    const taskId = res.body.task_id as string;
    await waitIdle(h, taskId, 120_000);
    let before = usedBytes(file);
    let rowsBefore = rowBytes(file);
    let recordsBefore = changeRecords(file);
    log(`${ROWS} rows written: ${before} bytes in use`);
    const results: { tick: number; seconds: number; growth_bytes: number; row_growth_bytes: number; change_records: number; change_bytes: number; changes: unknown }[] = [];
    for (tick = 1; tick <= TICKS; tick++) {
      const t0 = performance.now();
      const exec = await h.request('POST', `/task/${taskId}/execute`, { body: {} });
      if (exec.status !== 200) throw new Error(exec.text);
      await waitIdle(h, taskId, 120_000);
      const seconds = (performance.now() - t0) / 1000;
      const after = usedBytes(file);
      const rowsAfter = rowBytes(file);
      const records = changeRecords(file);
      const events = await h.request('GET', `/task/${taskId}/events?limit=1000&after=0`);
      const done = (events.body.events as { type: string; changes?: unknown }[]).filter((e) => e.type === 'done').at(-1);
      results.push({ tick, seconds: round(seconds, 2), growth_bytes: after - before, row_growth_bytes: rowsAfter - rowsBefore, change_records: records.count - recordsBefore.count, change_bytes: records.bytes - recordsBefore.bytes, changes: done?.changes });
      before = after;
      rowsBefore = rowsAfter;
      recordsBefore = records;
    }
    console.log(table([
      ['tick', 's', 'db growth (bytes)', 'rows + changes growth', 'change records', 'their bytes', 'done.changes'],
      ...results.map((r) => [String(r.tick), String(r.seconds), String(r.growth_bytes), String(r.row_growth_bytes), String(r.change_records), String(r.change_bytes), JSON.stringify(r.changes)]),
    ]));
    const meanOf = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    const mean = meanOf(results.map((r) => r.growth_bytes));
    const rowMean = meanOf(results.map((r) => r.row_growth_bytes));
    const changed = Math.max(1, Math.round(ROWS * CHANGED));
    console.log(`mean growth per tick, ${changed} changed rows of ${ROWS}: rows and changes ${Math.round(rowMean)} bytes (${round(rowMean / changed, 1)} per changed row); the whole database ${Math.round(mean)} bytes (the turn's own record included: its checkpointed steps hold the model's write_rows calls)`);
    writeReport('monitors.json', { ...reportHeader(started, loadAtStart, { rows: ROWS, ticks: TICKS, changed: CHANGED }), results, mean_growth_bytes: Math.round(mean), mean_row_growth_bytes: Math.round(rowMean) });
  } finally {
    await h.close();
  }
}

await main();
