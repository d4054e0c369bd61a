/**
 * One version everywhere Quarry names its own: the OpenAPI document, the A2A agent card and the
 * MCP server's initialize answer all carry package.json's version.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startHarness, type Harness } from '../kit/harness.js';

const PACKAGE_VERSION = (JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('Quarry\'s version', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ listen: true, model: false });
  });
  after(() => h?.close());

  it('is package.json\'s in /openapi.json, the agent card and the MCP server info', async () => {
    const openapi = await h.request('GET', '/openapi.json', { key: null });
    assert.equal(openapi.status, 200);
    const card = await h.request('GET', '/.well-known/agent-card.json', { key: null });
    assert.equal(card.status, 200);
    const client = new Client({ name: 'version-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { requestInit: { headers: { 'X-API-Key': h.key } } }));
    const mcpVersion = client.getServerVersion()?.version;
    await client.close();
    assert.deepEqual(
      { openapi: openapi.body.info.version, agentCard: card.body.version, mcp: mcpVersion },
      { openapi: PACKAGE_VERSION, agentCard: PACKAGE_VERSION, mcp: PACKAGE_VERSION },
    );
  });
});
