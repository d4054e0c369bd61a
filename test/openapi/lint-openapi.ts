/**
 * `npm run lint:openapi`: prints what `redocly lint` (recommended rules) says about Quarry's
 * /openapi.json, and exits with its status. The document comes from the server at QUARRY_URL when
 * that is set, else from a Quarry started here for the purpose (SQLite in a temporary directory,
 * no model). Extra arguments go to redocly (e.g. `-- --format=json`).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHarness } from '../kit/harness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

async function fetchDocument(): Promise<string> {
  const fromUrl = process.env.QUARRY_URL;
  if (fromUrl) {
    const res = await fetch(new URL('/openapi.json', fromUrl));
    if (!res.ok) throw new Error(`GET ${fromUrl}/openapi.json answered ${res.status}`);
    return res.text();
  }
  const h = await startHarness({ listen: true, model: false });
  try {
    const res = await fetch(`${h.url}/openapi.json`);
    if (!res.ok) throw new Error(`GET /openapi.json answered ${res.status}`);
    return await res.text();
  } finally {
    await h.close();
    fs.rmSync(h.dataDir, { recursive: true, force: true });
  }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-openapi-lint-'));
try {
  const docPath = path.join(dir, 'openapi.json');
  fs.writeFileSync(docPath, JSON.stringify(JSON.parse(await fetchDocument()), null, 2));
  const result = spawnSync(path.join(root, 'node_modules', '.bin', 'redocly'), ['lint', docPath, '--max-problems=100000', ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true' },
  });
  process.exitCode = result.status ?? 1;
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
