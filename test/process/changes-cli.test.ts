/**
 * `quarry task changes` and `quarry group changes` (decisions §19) from the build, against a real
 * `quarry serve` on the fake model: a keyed task whose turns add, change and leave rows
 * unconfirmed, and a group whose runs add rows and one run's later turn changes one; the table a
 * user reads, `--json`, `--since`, `--limit` and `--all` (paging past the server's 200-change
 * pages), and the errors.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply } from '../kit/fake-openai-server.js';
import { until } from '../kit/bounded-waits.js';
import { dropSchemas, testStoreEnv } from '../kit/postgres.js';
import { starterCli, startServer, tempDataDir, type ServerProcess } from '../kit/process.js';
import { userText } from '../kit/task-api.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const store = testStoreEnv('t_chcli');
let model: FakeOpenAI;
let server: ServerProcess;
/** The task's replies, in order (group runs are answered from their input). */
const scripted: FakeReply[] = [];

const FACTS = {
  id: 'facts', kind: 'table', key: ['name'],
  columns: [{ name: 'name', type: 'string', required: true }, { name: 'hq', type: 'string' }],
};

function write(rows: Json[]): FakeReply {
  return { toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows, sources: [{ url: 'https://example.com/hq' }] } }] };
}

before(async () => {
  model = await startFakeOpenAI();
  /** How many turns each group run's task has begun. */
  const turns = new Map<string, number>();
  model.setResponder((body) => {
    const run = /"company":"([^"]+)"/.exec(userText(body));
    if (!run) return scripted.shift() ?? { text: 'Done.' };
    const company = run[1]!;
    if (body.messages?.at(-1)?.role === 'tool') return { text: 'Done.' };
    const n = (turns.get(company) ?? 0) + 1;
    turns.set(company, n);
    return write([{ name: company, hq: `HQ ${n}` }]);
  });
  server = await startServer({
    dataDir: tempDataDir('quarry-changes-cli-data-'),
    waitForStarterKey: true,
    env: { QUARRY_RATE_LIMIT_PER_MIN: '1000000', QUARRY_MODEL_BASE_URL: model.url, QUARRY_MODEL: 'fake-model', ...store.env },
  });
});
after(async () => {
  await server?.kill9();
  await model?.close();
  if (store.schema) await dropSchemas(store.schema);
});

describe('quarry task changes and group changes', () => {
  const { quarry, api, idle } = starterCli(() => server);
  /** Every change the API lists, page by page. */
  const allChanges = async (path: string): Promise<Json[]> => {
    const all: Json[] = [];
    for (let cursor = ''; ;) {
      const page = await api('GET', `${path}?limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(page.status, 200, JSON.stringify(page.body));
      all.push(...page.body.changes);
      cursor = page.headers.get('x-next-cursor') ?? '';
      if (!cursor) return all;
    }
  };
  /** A line of the table: the cells in order, each followed by padding (and the last trimmed). */
  const line = (...cells: string[]) => new RegExp(`^${cells.map((c) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join(' +')}$`);
  /** A change's time as the table shows it. */
  const when = (c: Json) => c.at.slice(0, 19).replace('T', ' ');

  it('task changes: the turns\' added, changed and unconfirmed rows as a table or JSON, --since, --limit and --all', async () => {
    const filler = (i: number) => `Filler ${String(i).padStart(3, '0')}`;
    const fillers = Array.from({ length: 250 }, (_, i) => ({ name: filler(i), hq: 'Nowhere' }));
    scripted.push(
      write([{ name: 'Acme', hq: 'Paris' }, { name: 'Beta', hq: 'Oslo' }, { name: 'Gamma', hq: 'Rome' }]), { text: 'Done.' },
      // The execute turn: Acme moved, Beta is written again as it was, Delta is new, Gamma is not written.
      write([{ name: 'Acme', hq: 'Lyon' }, { name: 'Beta', hq: 'Oslo' }, { name: 'Delta', hq: 'Bern' }]), { text: 'Done.' },
      // A message's turn adds more changes than one of the CLI's pages holds (200).
      write(fillers), { text: 'Done.' },
    );
    const created = await api('POST', '/task/start', { task: { name: 'HQs', prompt: 'Track the headquarters.', outputs: [FACTS] } });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const taskId = created.body.task_id;
    await idle(taskId);
    assert.equal((await api('POST', `/task/${taskId}/execute`, {})).status, 200);
    await idle(taskId);
    assert.equal((await api('POST', `/task/${taskId}/continue`, { message: 'Add the fillers.' })).status, 200);
    await idle(taskId);
    const changes = await allChanges(`/task/${taskId}/changes`);
    assert.equal(changes.length, 3 + 3 + 250);
    const [t1, t2, t3] = [changes[0].turn_id, changes[3].turn_id, changes.at(-1).turn_id];

    const [table, since, all, json, limited, allJson, none] = await Promise.all([
      quarry(['task', 'changes', taskId]),
      quarry(['task', 'changes', taskId, '--since', t1, '--limit', '3']),
      quarry(['task', 'changes', taskId, '--all']),
      quarry(['task', 'changes', taskId, '--json', '--limit', '7']),
      quarry(['task', 'changes', taskId, '--json', '--limit', '201']),
      quarry(['task', 'changes', taskId, '--json', '--all']),
      quarry(['task', 'changes', taskId, '--since', t3]),
    ]);
    for (const r of [table, since, all, json, limited, allJson, none]) assert.equal(r.code, 0, r.stderr);

    // The first 20 (the default), oldest first: each field that changed as `before → after`.
    const lines = table.stdout.split('\n');
    assert.equal(lines.length, 1 + 20 + 1, table.stdout);
    assert.equal(lines.at(-1), '', 'the table ends with a line end');
    const expected = [
      line('TURN', 'AT', 'OUTPUT', 'KEY', 'CHANGE', 'FIELDS'),
      line(t1, when(changes[0]), 'facts', 'Acme', 'added', 'name: - → Acme; hq: - → Paris'),
      line(t1, when(changes[1]), 'facts', 'Beta', 'added', 'name: - → Beta; hq: - → Oslo'),
      line(t1, when(changes[2]), 'facts', 'Gamma', 'added', 'name: - → Gamma; hq: - → Rome'),
      line(t2, when(changes[3]), 'facts', 'Acme', 'changed', 'hq: Paris → Lyon'),
      line(t2, when(changes[4]), 'facts', 'Delta', 'added', 'name: - → Delta; hq: - → Bern'),
      line(t2, when(changes[5]), 'facts', 'Gamma', 'unconfirmed'),
      ...Array.from({ length: 14 }, (_, i) => line(t3, when(changes[6 + i]), 'facts', filler(i), 'added', `name: - → ${filler(i)}; hq: - → Nowhere`)),
    ];
    expected.forEach((re, i) => assert.match(lines[i]!, re));
    // More remain than the table shows: the newest changes are the ones left out, so it says so.
    assert.equal(table.stderr, 'the first 20 changes, oldest first; more remain: --limit N or --all\n');

    const sinceLines = since.stdout.split('\n');
    assert.equal(sinceLines.length, 1 + 3 + 1, since.stdout);
    [
      line(t2, when(changes[3]), 'facts', 'Acme', 'changed', 'hq: Paris → Lyon'),
      line(t2, when(changes[4]), 'facts', 'Delta', 'added', 'name: - → Delta; hq: - → Bern'),
      line(t2, when(changes[5]), 'facts', 'Gamma', 'unconfirmed'),
    ].forEach((re, i) => assert.match(sinceLines[i + 1]!, re));
    assert.match(since.stderr, /^the first 3 changes, oldest first; more remain/);
    assert.equal(all.stdout.split('\n').length, 1 + 256 + 1, 'every change, through the API\'s pages');
    assert.match(all.stdout.split('\n').at(-2)!, line(t3, when(changes[255]), 'facts', filler(249), 'added', `name: - → ${filler(249)}; hq: - → Nowhere`));
    assert.equal(all.stderr, '', 'nothing left out');

    // --json: the changes as the API gives them, as many as asked, across its pages.
    assert.deepEqual(JSON.parse(json.stdout), changes.slice(0, 7));
    assert.deepEqual(JSON.parse(limited.stdout), changes.slice(0, 201));
    assert.deepEqual(JSON.parse(allJson.stdout), changes);
    assert.equal(json.stderr, '', 'JSON goes to a program: no note on stderr');
    assert.equal(none.stdout, 'no changes\n');
    assert.equal(none.stderr, '');

    const [missing, unknown, badLimit] = await Promise.all([
      quarry(['task', 'changes']),
      quarry(['task', 'changes', 'tsk_00000000000000000000000000']),
      quarry(['task', 'changes', taskId, '--limit', '0']),
    ]);
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /missing ID/);
    assert.equal(unknown.code, 4, unknown.stderr);
    assert.match(unknown.stderr, /tsk_00000000000000000000000000/);
    assert.equal(badLimit.code, 2, badLimit.stderr);
    assert.match(badLimit.stderr, /--limit must be at least 1, got 0/);
  });

  it('group changes: each run\'s changes with its input\'s index, as a table or JSON, and --since', async () => {
    const spec = { name: 'HQ monitor', prompt: 'For each company, find its headquarters city.', input_columns: [{ name: 'company', type: 'string', required: true }], outputs: [FACTS] };
    // One run at a time, so the changes come in input order.
    const created = await api('POST', '/group', { task: spec, inputs: [{ company: 'Acme' }, { company: 'Beta' }], max_parallel: 1 });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const groupId = created.body.group_id;
    await until('the runs are done', async () => (await api('GET', `/group/${groupId}`)).body.status === 'finished', { timeoutMs: 15_000 });
    const runs = (await api('GET', `/group/${groupId}/runs`)).body.runs;
    // Acme's run is executed again: its turn changes Acme's row.
    assert.equal((await api('POST', `/task/${runs[0].task_id}/execute`, {})).status, 200);
    await idle(runs[0].task_id);
    const changes = await allChanges(`/group/${groupId}/changes`);
    assert.deepEqual(changes.map((c) => [c._input, c.input.company, c.task_id, c.change]), [
      [0, 'Acme', runs[0].task_id, 'added'], [1, 'Beta', runs[1].task_id, 'added'], [0, 'Acme', runs[0].task_id, 'changed'],
    ]);

    const [table, json, since] = await Promise.all([
      quarry(['group', 'changes', groupId]),
      quarry(['group', 'changes', groupId, '--json']),
      quarry(['group', 'changes', groupId, '--since', changes[1].turn_id]),
    ]);
    for (const r of [table, json, since]) assert.equal(r.code, 0, r.stderr);
    const lines = table.stdout.split('\n');
    assert.equal(lines.length, 5, table.stdout);
    [
      line('INPUT', 'TURN', 'AT', 'OUTPUT', 'KEY', 'CHANGE', 'FIELDS'),
      line('0', changes[0].turn_id, when(changes[0]), 'facts', 'Acme', 'added', 'name: - → Acme; hq: - → HQ 1'),
      line('1', changes[1].turn_id, when(changes[1]), 'facts', 'Beta', 'added', 'name: - → Beta; hq: - → HQ 1'),
      line('0', changes[2].turn_id, when(changes[2]), 'facts', 'Acme', 'changed', 'hq: HQ 1 → HQ 2'),
    ].forEach((re, i) => assert.match(lines[i]!, re));
    assert.equal(table.stderr, '');
    assert.deepEqual(JSON.parse(json.stdout), changes);
    assert.match(since.stdout, new RegExp(`^INPUT .+\\n0 +${changes[2].turn_id} .+ changed +hq: HQ 1 → HQ 2\\n$`));

    const unknown = await quarry(['group', 'changes', 'grp_00000000000000000000000000']);
    assert.equal(unknown.code, 4, unknown.stderr);
  });
});
