/**
 * The docs say what the code does: the error table in docs/api.md matches the catalogue, and the
 * README's walkthrough runs as written against a real server.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { ERROR_CATALOGUE } from '../../src/errors.js';
import { startHarness, type Harness } from '../kit/harness.js';

const root = path.resolve(import.meta.dirname, '..', '..');

test('the error table in docs/api.md lists the catalogue, in order', () => {
  const doc = fs.readFileSync(path.join(root, 'docs/api.md'), 'utf8');
  const section = doc.slice(doc.indexOf('\n## Errors'));
  const header = section.indexOf('| Status | error | retryable | When |');
  assert.ok(header > 0, 'docs/api.md has the error table');
  const lines = section.slice(header).split('\n').slice(2);
  const table = lines
    .slice(0, lines.findIndex((line) => !line.startsWith('|')))
    .map((line) => line.split('|').slice(1, 4).map((cell) => cell.trim().replace(/`/g, '')));
  const http = Object.values(ERROR_CATALOGUE).filter((e) => e.status !== null);
  assert.deepEqual(table, http.map((e) => [String(e.status), e.error, e.retryable ? 'yes' : 'no']));
});

test('every code only a turn carries is in the turn errors table of docs/api.md, with its retryable', () => {
  const doc = fs.readFileSync(path.join(root, 'docs/api.md'), 'utf8');
  const section = doc.slice(doc.indexOf('\n### Turn errors'));
  const rows = new Map(section.split('\n').filter((line) => line.startsWith('| `')).map((line) => {
    const [code, retryable] = line.split('|').slice(1, 3).map((cell) => cell.trim().replace(/`/g, ''));
    return [code!, retryable!];
  }));
  for (const entry of Object.values(ERROR_CATALOGUE).filter((e) => e.status === null)) {
    assert.equal(rows.get(entry.error), entry.retryable ? 'true' : 'false', `docs/api.md's turn errors table lists ${entry.error}`);
  }
});

/** The first ```sh block of the README after `marker`. */
function readmeScript(marker: string): string {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  return /```sh\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf(marker)))![1]!;
}

/** Runs a shell script as a user would, against the harness's server and key; its stdout. */
async function runAgainst(h: Harness, script: string): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], {
    env: { ...process.env, QUARRY_URL: h.url, QUARRY_API_KEY: h.key },
    timeout: 30_000,
  });
  return stdout;
}

test("the README's walkthrough runs as written", async () => {
  const script = readmeScript('## A walkthrough');
  const h = await startHarness({ listen: true });
  try {
    h.model!.script(
      { toolCalls: [{ name: 'update_spec', arguments: { outputs: [{ id: 'plants', kind: 'table', columns: [{ name: 'company', type: 'string', required: true }, { name: 'country', type: 'string' }] }] } }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'plants', rows: [{ company: 'Northvolt', country: 'SE' }], sources: [{ url: 'https://example.com/nv' }] } }] },
      { text: 'Found one plant.' },
    );
    // The script's own exports are replaced by the test server's address and key.
    const stdout = await runAgainst(h, script.replace(/^export QUARRY_(URL|API_KEY)=.*$/gm, '').replace('> plants.csv', ''));
    // The stream showed the turn itself, however soon it ended: its tool calls and its completed done.
    assert.match(stdout, /event: tool\n/);
    assert.match(stdout, /event: done\ndata: \{[^\n]*"outcome":"completed"/);
    assert.match(stdout, /"active":false/);
    assert.match(stdout, /"total":1,"rows":\[\{"_row":1,"company":"Northvolt"/);
    // The page was never fetched in this walkthrough: its source is marked not_read (decisions §15.1).
    assert.match(stdout, /"_sources":\[\{"url":"https:\/\/example.com\/nv","verified":false,"check":"not_read"\}\]/);
    assert.match(stdout, /_row,company,country,_sources\r\n1,Northvolt,SE,https:\/\/example.com\/nv \[not_read\]\r\n/);
    assert.match(stdout, /"task_id":"tsk_/);
  } finally {
    await h.close();
  }
});

test("the README's task group example runs as written", async () => {
  const script = readmeScript('create a task group');
  const h = await startHarness({ listen: true });
  try {
    h.model!.setResponder(() => ({ text: 'Done.' }));
    const stdout = await runAgainst(h, script);
    const [group, csv] = stdout.split(/(?<=\})\n?(?=_)/);
    assert.match(group!, /^\{"group_id":"grp_[0-9A-Z]{26}"/, stdout);
    assert.match(csv!, /^_input,company,/, stdout);
  } finally {
    await h.close();
  }
});

test("docs/agents.md's MCP client code type-checks under strict, against the installed SDK", () => {
  const doc = fs.readFileSync(path.join(root, 'docs/agents.md'), 'utf8');
  // The complete programs (those that import what they use), not the fragments that continue one.
  const programs = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((code) => code.startsWith('import '));
  assert.ok(programs.length > 0, 'docs/agents.md has a TypeScript program');
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-agents-doc-'));
  try {
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(project, 'node_modules'), 'dir');
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'agents-doc', private: true, type: 'module' }));
    const files = programs.map((code, i) => {
      fs.writeFileSync(path.join(project, `program-${i}.ts`), code);
      return `program-${i}.ts`;
    });
    fs.writeFileSync(path.join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
      files,
    }));
    const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: project, encoding: 'utf8', timeout: 120_000 });
    assert.equal(tsc.status, 0, `tsc found errors:\n${tsc.stdout}${tsc.stderr}`);
  } finally {
    fs.rmSync(project, { recursive: true, force: true });
  }
});
