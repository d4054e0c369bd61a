/**
 * The Python client (packages/python) against real servers from the build: its pytest suite runs
 * against one Quarry on the demo model and one whose model never answers (its turns run until
 * stopped), `mypy --strict` checks the package, its examples and its tests, and the package
 * README's walkthrough runs as written. The generated modules (types and error classes) must
 * match the contract. Needs /usr/bin/python3 with httpx, pytest and pytest-asyncio, and
 * /usr/bin/mypy (Debian: python3-httpx python3-pytest python3-pytest-asyncio mypy).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pythonCatalogueSource, pythonTypesSource } from '../../scripts/python-client.js';
import { startFakeOpenAI, type FakeOpenAI } from '../kit/fake-openai-server.js';
import { dropSchemas, testStoreEnv } from '../kit/postgres.js';
import { ROOT, startServer, tempDataDir, type ServerProcess } from '../kit/process.js';
import { skipUnlessAvailable } from '../kit/require-tool.js';

const PYTHON = '/usr/bin/python3';
const MYPY = '/usr/bin/mypy';
const PACKAGE = path.join(ROOT, 'packages', 'python');
const ADMIN_KEY = 'python-client-admin-key';

/** Why the Python tools cannot be used here, or false when they can. */
function pythonToolsMissing(): string | false {
  if (!fs.existsSync(MYPY)) return `${MYPY} is not installed`;
  const probe = spawnSync(PYTHON, ['-c', 'import httpx, pytest, pytest_asyncio'], { encoding: 'utf8' });
  if (probe.error) return `${PYTHON} cannot be run: ${probe.error.message}`;
  return probe.status === 0 ? false : `${PYTHON} lacks httpx, pytest or pytest-asyncio: ${probe.stderr.trim().split('\n').pop()}`;
}

interface Ran { code: number | null; output: string }

/** Runs a command to its end without blocking this process (the fake model server lives here). */
function run(cmd: string, args: string[], env: Record<string, string>, cwd = ROOT): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, env: { ...process.env, ...env }, timeout: 600_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

it('the Python client\'s generated modules match the contract', async () => {
  const stale = 'is stale: run `npm run generate`';
  assert.equal(fs.readFileSync(path.join(PACKAGE, 'quarry', 'types.py'), 'utf8'), await pythonTypesSource(), `packages/python/quarry/types.py ${stale}`);
  assert.equal(fs.readFileSync(path.join(PACKAGE, 'quarry', '_catalogue.py'), 'utf8'), pythonCatalogueSource(), `packages/python/quarry/_catalogue.py ${stale}`);
});

describe('the Python client against real servers', { skip: skipUnlessAvailable('python3-httpx, python3-pytest, python3-pytest-asyncio and mypy', pythonToolsMissing()) }, () => {
  const stores = [testStoreEnv('t_py'), testStoreEnv('t_pyheld')];
  let demo: ServerProcess;
  let held: ServerProcess;
  let model: FakeOpenAI;
  let env: Record<string, string>;
  /** One mypy cache for both checks, outside the tree. */
  const mypyCache = `--cache-dir=${tempDataDir('quarry-python-mypy-')}`;

  before(async () => {
    model = await startFakeOpenAI();
    model.setResponder(() => ({ hang: true }));
    const common = { QUARRY_RATE_LIMIT_PER_MIN: '1000000', QUARRY_ADMIN_KEY: ADMIN_KEY };
    [demo, held] = await Promise.all([
      // The webhook test's receiver listens on loopback.
      startServer({ dataDir: tempDataDir('quarry-python-'), waitForStarterKey: true,
        env: { ...common, QUARRY_MODEL_PROVIDER: 'demo', QUARRY_FETCH_ALLOW_PRIVATE: '1', ...stores[0]!.env } }),
      startServer({ dataDir: tempDataDir('quarry-python-held-'), waitForStarterKey: true,
        env: { ...common, QUARRY_MODEL_BASE_URL: model.url, QUARRY_MODEL: 'fake-model', ...stores[1]!.env } }),
    ]);
    env = {
      QUARRY_URL: demo.url, QUARRY_API_KEY: demo.starterKey!, QUARRY_ADMIN_KEY: ADMIN_KEY,
      QUARRY_HELD_URL: held.url, QUARRY_HELD_API_KEY: held.starterKey!,
      PYTHONDONTWRITEBYTECODE: '1',
    };
  });
  after(async () => {
    await Promise.all([demo?.kill9(), held?.kill9()]);
    await model?.close();
    const schemas = stores.flatMap((s) => (s.schema ? [s.schema] : []));
    if (schemas.length > 0) await dropSchemas(...schemas);
  });

  it('passes its pytest suite', async () => {
    const result = await run(PYTHON, ['-m', 'pytest', 'packages/python/tests', '-q', '-p', 'no:cacheprovider'], env);
    assert.equal(result.code, 0, `pytest failed:\n${result.output}`);
    assert.match(result.output, /\d+ passed/);
  });

  it('type-checks with mypy --strict: the package, its examples and its tests', async () => {
    const result = await run(MYPY, ['--strict', mypyCache, 'packages/python/quarry', 'packages/python/examples', 'packages/python/tests'], {});
    assert.equal(result.code, 0, `mypy --strict failed:\n${result.output}`);
  });

  it('runs the package README\'s walkthrough as written', async () => {
    const readme = fs.readFileSync(path.join(PACKAGE, 'README.md'), 'utf8');
    const snippets = [...readme.matchAll(/```python\n([\s\S]*?)```/g)].map((m) => m[1]!);
    assert.equal(snippets.length, 1, 'one walkthrough in packages/python/README.md');
    const dir = tempDataDir('quarry-python-readme-');
    fs.writeFileSync(path.join(dir, 'walkthrough.py'), snippets[0]!);
    const result = await run(PYTHON, ['walkthrough.py'], { ...env, PYTHONPATH: PACKAGE }, dir);
    assert.equal(result.code, 0, `the walkthrough failed:\n${result.output}`);
    assert.match(result.output, /^turn completed credits/m);
    assert.match(result.output, /^404 task_not_found req_/m);
    assert.match(result.output, /^1 ACC demo value for ACC$/m);
    assert.ok(fs.existsSync(path.join(dir, 'plants.csv')));
    const typed = await run(MYPY, ['--strict', mypyCache, 'walkthrough.py'], { MYPYPATH: PACKAGE }, dir);
    assert.equal(typed.code, 0, `mypy --strict failed on the walkthrough:\n${typed.output}`);
  });
});
