import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readInputTool } from '../../src/agent/tools/read-input.js';
import type { InputFile } from '../../src/agent/turn-port.js';
import type { ToolContext, ToolResult } from '../../src/agent/tools/tool.js';
import { ARTICLE_FACT, BOILERPLATE, CSV, GRANITE_HTML, JSON_DATA, PDF, PNG } from '../kit/fixture-web.js';

let dir: string;
let inputs: InputFile[];

/** Writes a file under the temp dir and lists it as an input. */
function addInput(uploadId: string, name: string, contentType: string, data: string | Buffer): InputFile {
  const file = path.join(dir, uploadId);
  fs.writeFileSync(file, data);
  const input = { upload_id: uploadId, name, path: file, contentType };
  inputs.push(input);
  return input;
}

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-read-input-'));
  inputs = [];
  addInput('upl_txt', 'notes.txt', 'text/plain', 'Granite is igneous.\nMarble is metamorphic.\n');
  addInput('upl_md', 'brief.md', 'application/octet-stream', '# Brief\n\nFind every quarry in *Vermont*.\n');
  addInput('upl_csv', 'shortlist.csv', 'text/csv', CSV);
  addInput('upl_json', 'quarries.json', 'application/json', JSON.stringify(JSON_DATA));
  addInput('upl_html', 'granite.html', 'text/html', GRANITE_HTML);
  addInput('upl_pdf', 'report.pdf', 'application/pdf', PDF);
  addInput('upl_png', 'logo.png', 'image/png', PNG);
  addInput('upl_long', 'long.txt', 'text/plain', Array.from({ length: 5000 }, (_, i) => `line ${String(i).padStart(4, '0')}`).join('\n'));
  addInput('upl_emoji', 'emoji.txt', 'text/plain; charset=utf-8', '🪨'.repeat(10));
  addInput('upl_latin1', 'old.txt', 'text/plain; charset=iso-8859-1', Buffer.from('Café Pietà', 'latin1'));
  addInput('upl_empty', 'empty.txt', 'text/plain', '');
  inputs.push({ upload_id: 'upl_gone', name: 'gone.txt', path: path.join(dir, 'does-not-exist'), contentType: 'text/plain' });
});

after(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function ctx(list: InputFile[] = inputs, signal = new AbortController().signal): ToolContext {
  const unused = () => {
    throw new Error('not used by read_input');
  };
  return { signal, offline: false, writeKey: 'test', callId: 'call_1', spec: unused, updateSpec: unused, rowCounts: unused, appendRows: unused, inputs: async () => list, workspaceDir: unused, recordSource: async () => 'src_test', citedSources: unused, source: unused, waitingOn: unused };
}

function read(args: { upload_id: string; offset?: number; length?: number }, context: ToolContext = ctx()): Promise<ToolResult> {
  return readInputTool.run(args, context);
}

function bodyOf(result: ToolResult): string {
  return result.content.slice(result.content.indexOf('\n\n') + 2);
}

describe('read_input', () => {
  it('returns a whole small text input and says it is whole', async () => {
    const result = await read({ upload_id: 'upl_txt' });
    assert.ok(!result.isError, result.content);
    assert.equal(
      result.content,
      'Input upl_txt "notes.txt", text. Source: src_test.\nCharacters 0-43 of 43: the whole text.\n\nGranite is igneous.\nMarble is metamorphic.\n',
    );
    assert.equal(result.summary, 'read notes.txt 0-43 of 43 chars');
  });

  it('reads markdown by its name, CSV as it is, and JSON pretty-printed', async () => {
    assert.equal(bodyOf(await read({ upload_id: 'upl_md' })), '# Brief\n\nFind every quarry in *Vermont*.\n');
    assert.equal(bodyOf(await read({ upload_id: 'upl_csv' })), CSV);
    const json = await read({ upload_id: 'upl_json' });
    assert.equal(bodyOf(json), JSON.stringify(JSON_DATA, null, 2));
    assert.match(json.content, /^Input upl_json "quarries\.json", json\./);
  });

  it('reads HTML as readable text without the site chrome', async () => {
    const result = await read({ upload_id: 'upl_html' });
    assert.ok(!result.isError, result.content);
    assert.match(result.content, /^Input upl_html "granite\.html", html, title "Granite in Vermont/);
    const text = bodyOf(result);
    assert.ok(text.includes(ARTICLE_FACT));
    for (const chrome of BOILERPLATE) assert.ok(!text.includes(chrome), chrome);
  });

  it('reads the text of a PDF', async () => {
    const result = await read({ upload_id: 'upl_pdf' });
    assert.ok(!result.isError, result.content);
    assert.match(result.content, /^Pages: 2\.$/m);
    assert.ok(bodyOf(result).includes('Granite output rose 12% (to 4,000 t).'));
    assert.ok(bodyOf(result).includes('[page 2]\nMarble output held steady at Carrara.'));
  });

  it('pages through a long input by characters, telling the total and where to go on', async () => {
    const first = await read({ upload_id: 'upl_long', length: 1000 });
    assert.match(first.content, /^Characters 0-1,000 of 49,999\.$/m);
    assert.match(first.content, /^More follows: call read_input with upload_id "upl_long" and offset 1000 to read on\.$/m);
    assert.equal(bodyOf(first).length, 1000);
    assert.ok(bodyOf(first).startsWith('line 0000\nline 0001'));

    const middle = await read({ upload_id: 'upl_long', offset: 1000, length: 1000 });
    assert.match(middle.content, /^Characters 1,000-2,000 of 49,999\.$/m);
    assert.equal(bodyOf(first) + bodyOf(middle), (await read({ upload_id: 'upl_long', length: 2000 })).content.split('\n\n')[1]);

    const last = await read({ upload_id: 'upl_long', offset: 49_000 });
    assert.match(last.content, /^Characters 49,000-49,999 of 49,999\.$/m);
    assert.ok(!last.content.includes('More follows'));
    assert.ok(bodyOf(last).endsWith('line 4999'));

    const byDefault = await read({ upload_id: 'upl_long' });
    assert.match(byDefault.content, /^Characters 0-20,000 of 49,999\.$/m);
  });

  it('never splits a character made of two UTF-16 units', async () => {
    const start = await read({ upload_id: 'upl_emoji', length: 3 });
    assert.equal(bodyOf(start), '🪨');
    const middle = await read({ upload_id: 'upl_emoji', offset: 3, length: 4 });
    assert.equal(bodyOf(middle), '🪨🪨');
  });

  it('decodes the charset the upload declared', async () => {
    assert.equal(bodyOf(await read({ upload_id: 'upl_latin1' })), 'Café Pietà');
  });

  it('refuses an offset past the end', async () => {
    const result = await read({ upload_id: 'upl_txt', offset: 500 });
    assert.equal(result.isError, true);
    assert.match(result.content, /offset 500 is past the end of upl_txt "notes\.txt", which has 43 characters/);
    const empty = await read({ upload_id: 'upl_empty' });
    assert.ok(!empty.isError);
    assert.match(empty.content, /\(The input has no text\.\)/);
  });

  it('only reads uploads that are inputs of the task', async () => {
    const result = await read({ upload_id: 'upl_other' }, ctx(inputs.slice(0, 2)));
    assert.equal(result.isError, true);
    assert.equal(result.content, 'upl_other is not an input of this task. Its inputs: upl_txt (notes.txt), upl_md (brief.md).');
    const none = await read({ upload_id: 'upl_txt' }, ctx([]));
    assert.match(none.content, /The task has no inputs\./);
  });

  it('says when an input is not text, or its file is gone', async () => {
    const png = await read({ upload_id: 'upl_png' });
    assert.equal(png.isError, true);
    assert.match(png.content, /\(image\/png\) is not text/);
    const gone = await read({ upload_id: 'upl_gone' });
    assert.equal(gone.isError, true);
    assert.match(gone.content, /missing on the server/);
  });

  it('reads a changed file again instead of serving the cached text', async () => {
    const input = addInput('upl_changing', 'changing.txt', 'text/plain', 'first version');
    assert.equal(bodyOf(await read({ upload_id: input.upload_id })), 'first version');
    fs.writeFileSync(input.path, 'second, longer version');
    assert.equal(bodyOf(await read({ upload_id: input.upload_id })), 'second, longer version');
  });
});
