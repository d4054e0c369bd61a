/**
 * `@quarry/client` as a user gets it: installed with `npm install <repo>/packages/client` into a
 * scratch project of its own, then the README's snippets compiled as a user's strict TypeScript
 * project would compile them (against the package's declarations) and run against a real server on the
 * demo model. Needs the built package (`npm run build` builds it with the server).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { killAll, quarryBuild, ROOT, spawnNode, tempDataDir } from '../kit/process.js';
import { startHarness, type Harness } from '../kit/harness.js';

after(killAll);

/** The ```ts blocks of a markdown file that import the client. */
function clientSnippets(markdownFile: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, markdownFile), 'utf8');
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((code) => code.includes("from '@quarry/client'"));
}

function run(cmd: string, args: string[], cwd: string): string {
  const res = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 120_000 });
  assert.equal(res.status, 0, `${cmd} ${args.join(' ')} failed:\n${res.stdout}\n${res.stderr}`);
  return res.stdout;
}

describe('the client package, installed from the repo', () => {
  let project: string;
  let h: Harness;

  before(async () => {
    quarryBuild(); // refuses a stale build, which also means a stale packages/client/dist
    project = tempDataDir('quarry-client-user-');
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
    run('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(ROOT, 'packages', 'client')], project);
    h = await startHarness({ listen: true, model: false, env: { QUARRY_MODEL_PROVIDER: 'demo' } });
  });
  after(() => h?.close());

  it('is installed as @quarry/client with its declarations', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(project, 'node_modules', '@quarry', 'client', 'package.json'), 'utf8'));
    assert.equal(manifest.name, '@quarry/client');
    assert.ok(fs.existsSync(path.join(project, 'node_modules', '@quarry', 'client', 'dist', 'index.d.ts')));
  });

  it('loads with require() from a CommonJS file too, and works', async () => {
    fs.writeFileSync(path.join(project, 'required.cjs'), [
      "const { QuarryClient, TaskNotFoundError } = require('@quarry/client');",
      'const client = new QuarryClient();',
      'client.tasks.retrieve(\'tsk_missing\').then(',
      '  () => { throw new Error(\'a missing task was found\'); },',
      '  (err) => console.log(err instanceof TaskNotFoundError ? `not found: ${err.status}` : `other: ${err}`),',
      ').then(() => client.tasks.create({ prompt: \'battery makers\' })).then((task) => console.log(`created: ${task.task_id}`));',
    ].join('\n'));
    const result = await spawnNode(path.join(project, 'required.cjs'), [], { env: { QUARRY_URL: h.url, QUARRY_API_KEY: h.key } }).result();
    assert.equal(result.code, 0, `require() failed:\n${result.stdout}\n${result.stderr}`);
    assert.match(result.stdout, /^not found: 404\ncreated: tsk_\w+\n$/);
    assert.equal(result.stderr, '', 'no warning either');
  });

  for (const file of ['README.md', 'packages/client/README.md']) {
    it(`${file}: the client snippet runs as written and type-checks`, async () => {
      const snippets = clientSnippets(file);
      assert.equal(snippets.length, 1, `one client snippet in ${file}`);
      const code = snippets[0]!;
      const name = file === 'README.md' ? 'readme' : 'package-readme';
      fs.writeFileSync(path.join(project, `${name}.ts`), code);
      // Compiled as a user's TypeScript project would compile it (strict, against the package's declarations), then run.
      fs.writeFileSync(path.join(project, 'tsconfig.json'), JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: false, types: [] },
        files: [`${name}.ts`],
      }));
      run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], project);

      const env = { QUARRY_URL: h.url, QUARRY_API_KEY: h.key };
      const result = await spawnNode(path.join(project, `${name}.js`), [], { env }).result();
      assert.equal(result.code, 0, `the snippet failed:\n${result.stdout}\n${result.stderr}`);
      // The demo model writes one row per distinct word of the prompt, and the snippets print the rows.
      assert.match(result.stdout, /word: '\w+'/, result.stdout);
    });
  }
});
