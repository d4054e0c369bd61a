/**
 * read_source: a snapshot this task stored, read back by source_id without fetching anything;
 * offered with fetch_url or read_input, the tools that store snapshots.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Agent } from '../../src/agent/agent-loop.js';
import { createAgentTools } from '../../src/agent/tools/index.js';
import { readSourceTool } from '../../src/agent/tools/read-source.js';
import { toolContext } from '../../src/agent/tools/tool.js';
import { InMemoryTurn, ScriptedModel } from '../kit/in-memory-turn.js';

const PAGE = 'Rock of Ages opened its first granite quarry in 1885. '.repeat(10);

async function withSource() {
  const turn = new InMemoryTurn();
  const url = 'https://www.example.org/granite';
  const id = await turn.recordSource({ url, finalUrl: url, uploadId: null, title: 'Granite in Vermont', text: PAGE });
  return { turn, id, ctx: toolContext(turn, 'turn_1:1:call_1', 'call_1') };
}

describe('read_source', () => {
  it('reads a stored snapshot whole, with its URL and title', async () => {
    const { id, ctx } = await withSource();
    const result = await readSourceTool.run({ source_id: id }, ctx);
    assert.equal(result.isError, undefined);
    assert.equal(result.content, `Source: ${id}\nURL: https://www.example.org/granite\nTitle: Granite in Vermont\nRead at: ${(await ctx.source(id))!.fetchedAt}\nCharacters 0-${PAGE.length} of ${PAGE.length}: the whole text.\n\n${PAGE}`);
  });

  it('reads a window and says where to read on', async () => {
    const { id, ctx } = await withSource();
    const result = await readSourceTool.run({ source_id: id, offset: 13, length: 30 }, ctx);
    assert.match(result.content, new RegExp(`Characters 13-43 of ${PAGE.length}\\.\\nMore follows: call read_source with source_id "${id}" and offset 43 to read on\\.\\n\\n${PAGE.slice(13, 43)}$`));
  });

  it('answers a tool error for an unknown source_id or an offset past the end', async () => {
    const { id, ctx } = await withSource();
    const unknown = await readSourceTool.run({ source_id: 'src_nope' }, ctx);
    assert.equal(unknown.isError, true);
    assert.match(unknown.content, /no source src_nope/);
    const past = await readSourceTool.run({ source_id: id, offset: PAGE.length + 1 }, ctx);
    assert.equal(past.isError, true);
    assert.match(past.content, /past the end/);
  });

  it('is offered with fetch_url or read_input, and not without them', async () => {
    const tools = createAgentTools({ fetch: {}, search: undefined, sandbox: undefined } as never);
    const offered = async (spec: Parameters<typeof InMemoryTurn.prototype.updateSpec>[0]['tools']) => {
      const model = new ScriptedModel({ text: 'Done.' });
      await new Agent({ provider: model, tools }).runTurn(new InMemoryTurn({ spec: { prompt: 'Find granite quarries.', tools: spec } }));
      return model.calls[0]!.tools;
    };
    assert.ok((await offered(['fetch_url'])).includes('read_source'));
    assert.ok((await offered(['read_input'])).includes('read_source'));
    assert.ok(!(await offered(['web_search'])).includes('read_source'));
  });
});
