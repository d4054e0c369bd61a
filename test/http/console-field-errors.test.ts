/** A refused field, as the console says it: a sentence naming the field as its forms do. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { startHarness } from '../kit/harness.js';
import { fieldSentence, type FieldProblem } from '../../src/console/human-errors.js';

it('names the field of a refused spec as the form does, from the API\'s own detail', async (t) => {
  const h = await startHarness();
  t.after(() => h.close());
  const refused = async (body: object): Promise<string> => {
    const res = await h.request('POST', 'task' in body ? '/task/start' : '/task', { body });
    assert.equal(res.status, 422, res.text);
    return fieldSentence((res.body.detail as FieldProblem[])[0]!);
  };
  assert.equal(await refused({ task: { prompt: 'x', outputs: [{ id: 'plants', kind: 'table', columns: [] }] } }), 'Output 1 needs at least one column.');
  assert.equal(await refused({ task: { prompt: 'x', outputs: [{ id: 'Plants!', kind: 'table' }] } }), 'Output 1, id may use only a to z, 0 to 9, _ and -, starting with a letter.');
  assert.equal(await refused({ prompt: '   ' }), 'The prompt is empty: write something here.');
  assert.match(await refused({ task: { prompt: 'x', outputs: [{ id: 'plants', kind: 'table', columns: [{ name: 'a', type: 'str' }] }] } }), /^Output 1, column 1, type must be one of /);
});
