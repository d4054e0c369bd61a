/**
 * The run_code tool and write_rows `from_file`, called directly with a hand-built ToolContext
 * (the one the agent loop builds, plus the proposed `sandbox` and `workspace()` members) and a
 * real bubblewrap sandbox: code writes a file to outputs/, write_rows loads it into an output,
 * validated exactly like inline rows; paths that leave outputs/ are refused. The run_code tests
 * are skipped, with the probe's reason, only when bubblewrap cannot run here (in CI they fail).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRunCodeTool } from '../../src/agent/tools/run-code.js';
import type { ToolContext, ToolResult } from '../../src/agent/tools/tool.js';
import { writeRowsTool } from '../../src/agent/tools/write-rows.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/sandbox.js';
import { ensureWorkspace, openTaskWorkspace, removeTaskWorkspace, taskWorkspaceDir } from '../../src/sandbox/workspace.js';
import type { TaskSpec, TaskSpecInput } from '../../src/contract/index.js';
import { normalizeSpec } from '../../src/domain/spec.js';
import { until } from '../kit/bounded-waits.js';
import { hostProcessesWith } from '../kit/process.js';
import { skipUnlessAvailable } from '../kit/require-tool.js';

const MiB = 1024 * 1024;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-run-code-test-'));
const uploadPath = path.join(dataDir, 'uploads', 'upl_01PRICES');
fs.mkdirSync(path.dirname(uploadPath), { recursive: true });
fs.writeFileSync(uploadPath, 'item,price,qty\nbolt,0.25,400\nnut,0.1,1000\nwasher,0.05,250\n');

const sandbox: Sandbox = await createSandbox({ mode: 'bwrap', limits: { memoryBytes: 256 * MiB, workspaceBytes: 32 * MiB, tmpBytes: 16 * MiB }, protectedPaths: [dataDir] });
const skip = skipUnlessAvailable('bubblewrap', sandbox.available ? false : String(sandbox.reason));

after(async () => {
  await sandbox.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const SPEC: TaskSpec = normalizeSpec({
  prompt: 'Price the parts list.',
  outputs: [
    { id: 'parts', kind: 'table', columns: [{ name: 'item', required: true }, { name: 'price', type: 'number' }, { name: 'total', type: 'number' }, { name: 'checked', type: 'boolean' }] },
    { id: 'facts', kind: 'records', schema: { type: 'object', required: ['fact'], properties: { fact: { type: 'string' }, score: { type: 'number' } } } },
    { id: 'notes', kind: 'report' },
  ],
} as TaskSpecInput);
const SOURCE = { upload_id: 'upl_01PRICES', title: 'parts list' };
/** A source as write_rows stores it here: these tool calls never read a page or an input, so each is marked not read (decisions §15.1). */
const notRead = <S extends object>(source: S) => ({ ...source, verified: false, check: 'not_read' });
const STORED_SOURCE = notRead(SOURCE);

interface Harness {
  ctx: ToolContext;
  written: Map<string, string[]>;
  dir: string;
}

let seq = 0;
function harness(opts: { signal?: AbortSignal } = {}): Harness {
  const dir = taskWorkspaceDir(dataDir, `tsk_rc${++seq}`);
  const written = new Map<string, string[]>();
  const ctx: ToolContext = {
    signal: opts.signal ?? new AbortController().signal,
    offline: false,
    writeKey: `turn:${seq}:call`,
    callId: 'call',
    spec: () => SPEC,
    updateSpec: async () => {},
    rowCounts: async () => new Map([...written].map(([k, v]) => [k, v.length])),
    appendRows: async (outputId, rows) => {
      const list = written.get(outputId) ?? [];
      const firstRow = list.length + 1;
      rows.forEach((make, i) => list.push(make(firstRow + i)));
      written.set(outputId, list);
      return { firstRow, count: rows.length };
    },
    inputs: async () => [{ upload_id: 'upl_01PRICES', name: 'parts.csv', path: uploadPath, contentType: 'text/csv' }],
    workspaceDir: async () => openTaskWorkspace(dataDir, path.basename(dir)),
    recordSource: async () => 'src_test',
    citedSources: async () => [],
    source: async () => undefined,
    waitingOn: () => () => undefined,
  };
  return { ctx, written, dir };
}

const runCodeTool = createRunCodeTool(sandbox);
const runCode = (h: Harness, args: { language: 'python' | 'javascript' | 'shell'; code: string; timeout_s?: number }) => runCodeTool.run(args, h.ctx);
const writeRows = (h: Harness, args: { output: string; rows?: unknown[]; from_file?: string; sources?: unknown[] }) => writeRowsTool.run(args, h.ctx);
const stored = (h: Harness, output: string) => (h.written.get(output) ?? []).map((r) => JSON.parse(r) as Record<string, unknown>);

function ok(result: ToolResult): ToolResult {
  assert.ok(!result.isError, `expected success, got: ${result.content}`);
  return result;
}

describe('run_code', { skip }, () => {
  it('runs python over an input and writes a CSV that write_rows loads with from_file', async () => {
    const h = harness();
    const ran = ok(await runCode(h, {
      language: 'python',
      code: [
        'import csv',
        'rows = list(csv.DictReader(open("inputs/parts.csv")))',
        'with open("outputs/priced.csv", "w", newline="") as f:',
        '    w = csv.writer(f)',
        '    w.writerow(["item", "price", "total", "checked"])',
        '    for r in rows: w.writerow([r["item"], r["price"], round(float(r["price"]) * int(r["qty"]), 2), "true"])',
        'print(len(rows), "items priced")',
      ].join('\n'),
    }));
    assert.match(ran.content, /^Status: exit code 0\.$/m);
    assert.match(ran.content, /Workspace: saved/);
    assert.match(ran.content, /stdout:\n3 items priced/);
    assert.match(ran.summary, /^python exited 0 in \d+\.\d s$/);

    const loaded = ok(await writeRows(h, { output: 'parts', from_file: 'priced.csv', sources: [SOURCE] }));
    const neverRead = (line: number) => `- line ${line}, source 1 (upload upl_01PRICES): not_read: this task never read that input with read_input`;
    assert.equal(loaded.content, `Wrote 3 rows from outputs/priced.csv to parts (rows 1-3); 0 of them verified. parts now has 3 rows. These sources could not be verified:\n${[2, 3, 4].map(neverRead).join('\n')}`);
    assert.deepEqual(stored(h, 'parts'), [
      { _row: 1, item: 'bolt', price: 0.25, total: 100, checked: true, _sources: [STORED_SOURCE] },
      { _row: 2, item: 'nut', price: 0.1, total: 100, checked: true, _sources: [STORED_SOURCE] },
      { _row: 3, item: 'washer', price: 0.05, total: 12.5, checked: true, _sources: [STORED_SOURCE] },
    ]);
  });

  it('loads JSONL written by javascript into a records output, each row citing its own sources', async () => {
    const h = harness();
    ok(await runCode(h, {
      language: 'javascript',
      code: 'const fs = require("fs");\nconst lines = [{ fact: "bolts are cheap", score: 1, _sources: [{ url: "https://example.com/bolts" }] }, { fact: "nuts too" }];\nfs.writeFileSync("outputs/facts.jsonl", lines.map((l) => JSON.stringify(l)).join("\\n") + "\\n");',
    }));
    const loaded = ok(await writeRows(h, { output: 'facts', from_file: 'outputs/facts.jsonl', sources: [SOURCE] }));
    assert.match(loaded.content, /^Wrote 2 rows from outputs\/facts\.jsonl to facts/);
    assert.deepEqual(stored(h, 'facts'), [
      { _row: 1, fact: 'bolts are cheap', score: 1, _sources: [notRead({ url: 'https://example.com/bolts' })] },
      { _row: 2, fact: 'nuts too', _sources: [STORED_SOURCE] },
    ]);
  });

  it('rejects a file whose rows fail validation, naming the lines, and writes nothing', async () => {
    const h = harness();
    ok(await runCode(h, { language: 'shell', code: 'printf \'item,price\\nbolt,cheap\\n,1\\n"multi\nline",2\\n\' > outputs/bad.csv' }));
    const result = await writeRows(h, { output: 'parts', from_file: 'bad.csv', sources: [SOURCE] });
    assert.equal(result.isError, true);
    assert.match(result.content, /No rows were written from outputs\/bad\.csv/);
    assert.match(result.content, /- line 2: price: must be a number, got "cheap"/);
    assert.match(result.content, /- line 3: item: is required/);
    assert.equal(stored(h, 'parts').length, 0);
    // The same rows inline are rejected the same way.
    const inline = await writeRows(h, { output: 'parts', rows: [{ item: 'bolt', price: 'cheap' }], sources: [SOURCE] });
    assert.match(inline.content, /- row 1: price: must be a number, got "cheap"/);
  });

  it('reports a timeout and a non-zero exit as failed calls the model can read', async () => {
    const h = harness();
    const slow = await runCode(h, { language: 'shell', code: 'echo working; sleep 30', timeout_s: 1 });
    assert.equal(slow.isError, true);
    assert.match(slow.content, /^Status: timed out after 1 s and was killed/m);
    assert.match(slow.content, /stdout:\nworking/);
    assert.equal(slow.summary, 'shell timed out after 1 s');
    const failing = await runCode(h, { language: 'python', code: 'raise SystemExit("no data")' });
    assert.equal(failing.isError, true);
    assert.match(failing.content, /^Status: exit code 1\.$/m);
    assert.match(failing.content, /stderr:\nno data/);
  });

  it('names the memory limit when the code is killed for it', async () => {
    const h = harness();
    const result = await runCode(h, { language: 'python', code: 'x = b"a" * (2 << 30)' });
    assert.equal(result.isError, true);
    assert.match(result.content, /killed by SIGKILL/);
    assert.match(result.content, /Limit hit: the memory limit/);
  });

  it('throws the abort reason when the turn is stopped', async () => {
    const controller = new AbortController();
    const h = harness({ signal: controller.signal });
    const marker = `95${process.pid}`;
    const running = runCode(h, { language: 'shell', code: `sleep ${marker}` });
    await until('the code to run', () => hostProcessesWith(`sleep ${marker}`).length > 0);
    controller.abort(new Error('turn stopped'));
    await assert.rejects(running, /turn stopped/);
  });
});

describe('run_code without a sandbox', () => {
  it('answers with the reason when the sandbox is off', async () => {
    const off = createRunCodeTool(await createSandbox({ mode: 'off' }));
    const result = await off.run({ language: 'python', code: 'print(1)' }, harness().ctx);
    assert.equal(result.isError, true);
    assert.match(result.content, /run_code is not available on this server: it is disabled \(QUARRY_SANDBOX=off\)/);
  });
});

describe('write_rows from_file', () => {
  /** A workspace with files written directly (as a finished run would leave them). */
  function withFiles(files: Record<string, string>): Harness {
    const h = harness();
    ensureWorkspace(h.dir);
    for (const [name, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(h.dir, name)), { recursive: true });
      fs.writeFileSync(path.join(h.dir, name), text);
    }
    return h;
  }

  it('refuses paths that leave outputs/', async () => {
    const h = withFiles({ 'outputs/ok.csv': 'item\nbolt\n', 'elsewhere.csv': 'item\nsecret\n' });
    fs.symlinkSync(path.join(h.dir, 'elsewhere.csv'), path.join(h.dir, 'outputs', 'link.csv'));
    fs.symlinkSync('/etc/passwd', path.join(h.dir, 'outputs', 'passwd.csv'));
    for (const [file, message] of [
      ['../elsewhere.csv', /may not contain "\.\."/],
      ['outputs/../../x.csv', /may not contain "\.\."/],
      ['/etc/passwd.csv', /not an absolute path/],
      ['link.csv', /resolves outside outputs\//],
      ['passwd.csv', /resolves outside outputs\//],
      ['missing.csv', /does not exist/],
      ['notes.txt', /must name a \.csv or \.jsonl file/],
    ] as const) {
      const result = await writeRows(h, { output: 'parts', from_file: file, sources: [SOURCE] });
      assert.equal(result.isError, true, file);
      assert.match(result.content, message, file);
    }
    assert.equal(stored(h, 'parts').length, 0);
    ok(await writeRows(h, { output: 'parts', from_file: 'ok.csv', sources: [SOURCE] }));
  });

  it('refuses a directory or a fifo named as the file, without blocking', async () => {
    const h = withFiles({ 'outputs/dir.csv/x': '' });
    execFileSync('mkfifo', [path.join(h.dir, 'outputs', 'pipe.csv')]);
    for (const file of ['dir.csv', 'pipe.csv']) {
      const result = await writeRows(h, { output: 'parts', from_file: file, sources: [SOURCE] });
      assert.match(result.content, /not a regular file/, file);
    }
  });

  it('takes rows or from_file, not both and not neither', async () => {
    const h = withFiles({ 'outputs/a.csv': 'item\nbolt\n' });
    assert.match((await writeRows(h, { output: 'parts', rows: [{ item: 'x' }], from_file: 'a.csv' })).content, /either rows or from_file, not both/);
    assert.match((await writeRows(h, { output: 'parts' })).content, /either rows .* or from_file/);
  });

  it('loads CSV only into tables, JSONL into tables and records, nothing into reports', async () => {
    const h = withFiles({ 'outputs/a.csv': 'fact\nx\n', 'outputs/p.jsonl': '{"item":"bolt","price":"0.5"}\n\n{"item":"nut"}\n' });
    assert.match((await writeRows(h, { output: 'facts', from_file: 'a.csv' })).content, /write them as JSONL/);
    assert.match((await writeRows(h, { output: 'notes', from_file: 'p.jsonl' })).content, /is a report/);
    ok(await writeRows(h, { output: 'parts', from_file: 'p.jsonl', sources: [SOURCE] }));
    assert.deepEqual(stored(h, 'parts').map((r) => [r.item, r.price]), [['bolt', 0.5], ['nut', null]]);
  });

  it('says which line of a file is broken', async () => {
    const h = withFiles({ 'outputs/b.jsonl': '{"item":"a"}\n{"item": \n', 'outputs/c.csv': 'item,price\na,1,extra\n', 'outputs/d.csv': 'item,item\n' });
    assert.match((await writeRows(h, { output: 'parts', from_file: 'b.jsonl' })).content, /line 2 is not valid JSON/);
    assert.match((await writeRows(h, { output: 'parts', from_file: 'c.csv' })).content, /line 2 has 3 fields but the header names 2 columns/);
    assert.match((await writeRows(h, { output: 'parts', from_file: 'd.csv' })).content, /names column "item" twice/);
  });

  it('reads a _sources column as JSON and keeps quoted commas and line breaks', async () => {
    const h = withFiles({ 'outputs/s.csv': '\uFEFFitem,_sources\r\n"bolt, hex ""M6""","[{""url"":""https://example.com/m6""}]"\r\n"two\r\nlines",\r\n' });
    ok(await writeRows(h, { output: 'parts', from_file: 's.csv', sources: [SOURCE] }));
    const rows = stored(h, 'parts');
    assert.equal(rows[0]!.item, 'bolt, hex "M6"');
    assert.deepEqual(rows[0]!._sources, [notRead({ url: 'https://example.com/m6' })]);
    assert.equal(rows[1]!.item, 'two\r\nlines');
    assert.deepEqual(rows[1]!._sources, [STORED_SOURCE]);
  });

  it('refuses a file with more rows than one call may write', async () => {
    const h = withFiles({ 'outputs/many.csv': `item\n${'x\n'.repeat(5001)}` });
    assert.match((await writeRows(h, { output: 'parts', from_file: 'many.csv' })).content, /5001 rows, more than 5000 per call: split it/);
  });

  it('opens a task workspace, and removes it', async () => {
    const dir = openTaskWorkspace(dataDir, 'tsk_open');
    assert.equal(dir, path.join(dataDir, 'workspaces', 'tsk_open'));
    assert.ok(fs.statSync(path.join(dir, 'outputs')).isDirectory());
    await removeTaskWorkspace(dataDir, 'tsk_open');
    assert.equal(fs.existsSync(dir), false);
    assert.throws(() => taskWorkspaceDir(dataDir, '../escape'), /not a task id/);
  });

  it('still writes inline rows as before', async () => {
    const h = harness();
    ok(await writeRows(h, { output: 'parts', rows: [{ item: 'bolt', price: 1 }], sources: [SOURCE] }));
    assert.deepEqual(stored(h, 'parts'), [{ _row: 1, item: 'bolt', price: 1, total: null, checked: null, _sources: [STORED_SOURCE] }]);
  });
});
