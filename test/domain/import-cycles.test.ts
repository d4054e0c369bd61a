/**
 * The import-cycle check of `npm run lint` finds cycles between folders and between files (a
 * check that passes on everything would keep the tree layered by luck), and src/ has none.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(import.meta.dirname, '..', '..');

function check(dir: string): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/check-import-cycles.ts'), dir], { cwd: root, encoding: 'utf8' });
  return { status: run.status, output: run.stdout + run.stderr };
}

function tree(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-cycles-'));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

test('two folders importing each other fail the check, though no two files do', () => {
  const dir = tree({
    'store/store.ts': "import type { Spec } from '../domain/spec.js';\nexport type Row = Spec;\n",
    'domain/spec.ts': 'export type Spec = string;\n',
    'domain/credits.ts': "import type { Store } from '../store/db.js';\nexport type Credits = Store;\n",
    'store/db.ts': 'export type Store = number;\n',
  });
  const { status, output } = check(dir);
  assert.equal(status, 1);
  assert.match(output, /folders import each other: domain\/ ⇄ store\//);
  assert.doesNotMatch(output, /files import each other/);
});

test('two files importing each other fail the check', () => {
  const dir = tree({
    'tasks/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
    'tasks/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
  });
  const { status, output } = check(dir);
  assert.equal(status, 1);
  assert.match(output, /files import each other: tasks\/a\.ts ⇄ tasks\/b\.ts/);
});

test('src/ has no import cycle between its folders or its files', () => {
  const { status, output } = check(path.join(root, 'src'));
  assert.equal(status, 0, output);
});
