/**
 * One contract, one way through the layers: the server registers exactly the contract's routes,
 * its /openapi.json is the document generated from the contract, and the client's committed
 * wire types are what that document generates (regenerate with `npm run generate`).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { buildOpenApiDocument } from '../../src/http/openapi.js';
import { ROUTES } from '../../src/contract/index.js';
import { clientTypesSource } from '../../scripts/client-types.js';
import { startTestHarness } from '../kit/task-api.js';

const root = path.resolve(import.meta.dirname, '..', '..');

/** JSON with object keys sorted: the same document whatever order its routes were registered in. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b))) : v));
}

test("the client's generated types match the contract", async () => {
  const committed = fs.readFileSync(path.join(root, 'packages/client/src/generated/openapi.ts'), 'utf8');
  assert.equal(committed, await clientTypesSource(), 'packages/client/src/generated/openapi.ts is stale: run `npm run generate`');
});

test('GET /openapi.json is the document of the contract, one operation per route of the table', async (t) => {
  const h = await startTestHarness(t, { model: false });
  const served = await h.request('GET', '/openapi.json', { key: null });
  assert.equal(served.status, 200);
  // Compared as text: a diff of two documents this size is too slow to print.
  assert.ok(canonical(served.body) === canonical(await buildOpenApiDocument()), 'GET /openapi.json differs from the contract\'s document: a route is registered outside the contract table');
  const operations = Object.values(served.body.paths as Record<string, Record<string, { operationId: string }>>).flatMap((item) => Object.values(item).map((op) => op.operationId));
  assert.deepEqual(operations.sort(), Object.values(ROUTES).map((r) => r.schema.operationId).sort());
});
