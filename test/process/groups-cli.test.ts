/**
 * `quarry group …` from the build, run as a child process against a real server (the build too)
 * on the fake model: create from a spec file and a CSV file with `--follow` (plain progress lines
 * off a terminal, the final counts, exit 0), the merged rows as a table, JSON and CSV export,
 * get and ls, a group with a failed run (exit 8) retried to completion, inputs added from JSON
 * Lines, stop, falling back to reading the group when its stream cannot be followed, the usage
 * and API errors with their exit codes; and the progress view's live and plain drawing.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply, type FakeRequestBody } from '../kit/fake-openai-server.js';
import { until } from '../kit/bounded-waits.js';
import { dropSchemas, testStoreEnv } from '../kit/postgres.js';
import { runQuarryCli, startQuarryCli, startServer, tempDataDir, type ServerProcess } from '../kit/process.js';
import { userText } from '../kit/task-api.js';
import { GroupProgressView } from '../../src/cli/progress-view.js';
import type { Group, GroupEvent } from '../../packages/client/src/index.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

/** QUARRY_TEST_STORE=postgres (npm run test:postgres): the server runs on a schema of its own. */
const store = testStoreEnv('t_grpcli');

const SPEC = {
  name: 'HQ cities',
  prompt: 'For each company, find its headquarters city.',
  input_columns: [{ name: 'company', type: 'string', required: true }, { name: 'founded', type: 'integer' }],
  outputs: [{ id: 'facts', kind: 'table', columns: [{ name: 'hq', type: 'string' }] }],
};

const step = (body: FakeRequestBody) => (body.messages ?? []).filter((m) => m.role === 'assistant').length;

let model: FakeOpenAI;
let server: ServerProcess;
let tmp: string;
/** While true, an input whose company starts with "Fail" breaks the model, so its run fails. */
let failing = true;
/** Companies whose runs wait at the model until taken out of this set. */
const held = new Set<string>();

function writeFile(name: string, text: string): string {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, text);
  return file;
}

before(async () => {
  tmp = tempDataDir('quarry-groups-cli-');
  model = await startFakeOpenAI();
  model.setResponder(async (body): Promise<FakeReply> => {
    const m = /Input (\d+):\n(\{.*\})/.exec(userText(body));
    if (!m) return { text: 'Not a group run.' };
    const company = String(JSON.parse(m[2]!).company);
    if (held.has(company)) await until(`${company} released`, () => !held.has(company), { timeoutMs: 30_000 }).catch(() => {});
    if (failing && company.startsWith('Fail')) return { status: 400, errorMessage: 'this input breaks the model' };
    // A little time per call, so a group's progress shows between its first and last line.
    await new Promise((r) => setTimeout(r, 20));
    return step(body) === 0 ? { toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows: [{ hq: `HQ of ${company}` }] } }] } : { text: 'Done.' };
  });
  server = await startServer({
    dataDir: tempDataDir('quarry-groups-cli-data-'),
    waitForStarterKey: true,
    env: { QUARRY_RATE_LIMIT_PER_MIN: '1000000', QUARRY_MODEL_BASE_URL: model.url, QUARRY_MODEL: 'fake-model', ...store.env },
  });
});
after(async () => {
  held.clear();
  await server?.kill9();
  await model?.close();
  if (store.schema) await dropSchemas(store.schema);
});

describe('quarry group', () => {
  let env: Record<string, string>;
  let spec: string;
  const quarry = (args: string[], extra: Record<string, string | undefined> = {}) => runQuarryCli(args, { env: { NO_COLOR: '1', ...env, ...extra } });

  before(() => {
    env = { QUARRY_URL: server.url, QUARRY_API_KEY: server.starterKey! };
    spec = writeFile('spec.json', JSON.stringify(SPEC));
  });

  it('create --follow shows progress lines off a terminal and exits 0; rows, get and ls read the group back', async () => {
    const companies = Array.from({ length: 40 }, (_, i) => ({ company: `Company ${i}, Inc.`, founded: 1950 + i }));
    const csv = writeFile('companies.csv', ['company,founded', ...companies.map((c) => `"${c.company}",${c.founded}`)].join('\n') + '\n');
    const run = await quarry(['group', 'create', '--spec', spec, '--inputs', csv, '--max-parallel', '4', '--name', 'CLI companies', '--follow']);
    assert.equal(run.code, 0, run.stderr + run.stdout);
    const lines = run.stdout.trim().split('\n');
    assert.match(lines[0]!, /^group grp_\w+ created: 40 inputs, at most 4 running at once$/);
    const groupId = /grp_\w+/.exec(lines[0]!)![0];
    const progress = lines.filter((l) => l.startsWith('progress: '));
    assert.ok(progress.length >= 3, `a progress line as each tenth of the runs ends:\n${run.stdout}`);
    for (const line of progress) assert.match(line, /^progress: \d+\/40( · [\d.]+ runs\/s( · ETA ([\d.]+ s|\d+ min \d+ s|under 1 s))?)? · \d+ completed · 0 failed · \d+ running · \d+ pending$/);
    assert.match(progress[0]!, /^progress: 0\/40 · 0 completed · 0 failed · 0 running · 40 pending$/, 'the first line as the group was created');
    const ended = progress.map((l) => Number(/^progress: (\d+)/.exec(l)![1]));
    assert.deepEqual(ended, [...ended].sort((a, b) => a - b), 'counts only go up');
    assert.match(lines.at(-1)!, new RegExp(`^done: finished · 40 completed · 0 failed · 0 stopped · 40 runs in [\\d.]+ s · [\\d.]+ credits · ${groupId}$`));
    assert.equal(lines.length, 1 + progress.length + 1, `nothing else on stdout:\n${run.stdout}`);

    const [exported, jsonl, table, page, get, getText, ls, lsText] = await Promise.all([
      quarry(['group', 'rows', groupId, '--csv']),
      quarry(['group', 'rows', groupId, '--jsonl']),
      quarry(['group', 'rows', groupId, '--limit', '3', '--offset', '36']),
      quarry(['group', 'rows', groupId, '--json', '--limit', '5', '--offset', '38']),
      quarry(['group', 'get', groupId, '--json']),
      quarry(['group', 'show', groupId]),
      quarry(['group', 'ls', '--json']),
      quarry(['group', 'list']),
    ]);
    for (const r of [exported, jsonl, table, page, get, getText, ls, lsText]) assert.equal(r.code, 0, r.stderr);
    const csvLines = exported.stdout.split('\r\n');
    assert.equal(csvLines[0], '_input,company,founded,hq,_sources,_task_id,_run_status');
    assert.equal(csvLines.at(-1), '', 'the file ends with a line end');
    assert.equal(csvLines.length, 42);
    companies.forEach((c, i) => assert.match(csvLines[i + 1]!, new RegExp(`^${i},"${c.company}",${c.founded},"HQ of ${c.company}",,tsk_\\w+,completed$`)));
    assert.deepEqual(jsonl.stdout.trim().split('\n').map((l) => JSON.parse(l).hq), companies.map((c) => `HQ of ${c.company}`));
    assert.match(table.stdout, /^INPUT +company +founded +hq +SOURCES\n36 +Company 36, Inc\. +1986 +HQ of Company 36, Inc\. +0\n37 +.+\n38 +.+\n$/);
    assert.equal(table.stderr, 'merged rows 37-39 of 40; --offset to page, --csv or --jsonl to export all\n');
    const rows = JSON.parse(page.stdout);
    assert.equal(rows.total, 40);
    assert.deepEqual(rows.rows.map((r: Json) => r._input), [38, 39]);

    const group = JSON.parse(get.stdout);
    assert.equal(group.group_id, groupId);
    assert.equal(group.name, 'CLI companies');
    assert.deepEqual(group.counts, { pending: 0, running: 0, completed: 40, failed: 0, stopped: 0 });
    assert.match(getText.stdout, new RegExp(`^group {5}${groupId}\\nname {6}CLI companies\\nstatus {4}finished\\ninputs {4}40 inputs\\nruns {6}40 completed · 0 failed · 0 running · 0 pending\\n`));
    assert.match(getText.stdout, /\ncolumns {3}company, founded → hq \(output facts\)\n$/);
    assert.ok(JSON.parse(ls.stdout).some((g: Json) => g.group_id === groupId));
    assert.match(lsText.stdout, /^GROUP +STATUS +INPUTS +COMPLETED +FAILED +LEFT +CREDITS +CREATED +NAME\n/);
    assert.match(lsText.stdout, new RegExp(`\\n${groupId} +finished +40 +40 +0 +0 +[\\d.]+ +\\S+ \\S+ +CLI companies\\n`));
  });

  it('exits 8 when a run failed, names the run, and retry --follow runs it again to exit 0', async () => {
    failing = true;
    const file = writeFile('some-fail.csv', 'company\nFine A\nFail B\nFine C\n');
    const run = await quarry(['group', 'create', '--spec', spec, '--inputs', file, '--follow']);
    assert.equal(run.code, 8, run.stderr + run.stdout);
    assert.match(run.stdout, /^input 1 failed: see quarry task show tsk_\w+$/m);
    assert.match(run.stdout.trim().split('\n').at(-1)!, /^done: finished · 2 completed · 1 failed · 0 stopped · 3 runs in [\d.]+ s · [\d.]+ credits · grp_\w+$/);
    const groupId = /grp_\w+/.exec(run.stdout)![0];

    const asJson = await quarry(['group', 'follow', groupId, '--json']);
    assert.equal(asJson.code, 8, 'following a finished group again ends the same way');
    const events = asJson.stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(events[0].type, 'group');
    assert.equal(events.at(-1).type, 'done');
    assert.equal(events.at(-1).group.counts.failed, 1);

    failing = false;
    const retried = await quarry(['group', 'retry', groupId, '--follow']);
    assert.equal(retried.code, 0, retried.stderr + retried.stdout);
    assert.match(retried.stdout, /^retrying the failed runs: 1 pending\n/, 'from the retry on: the history before it is not shown again');
    assert.doesNotMatch(retried.stdout, /failed: see quarry task show/);
    assert.match(retried.stdout.trim().split('\n').at(-1)!, /^done: finished · 3 completed · 0 failed · 0 stopped · 1 run in [\d.]+ s · /);
    const again = await quarry(['group', 'retry', groupId]);
    assert.equal(again.stdout, `${groupId} has no failed runs to retry (finished); 3 completed · 0 failed · 0 running · 0 pending\n`);
  });

  it('add-inputs from a JSON Lines file, and stop', async () => {
    failing = false;
    const created = await quarry(['group', 'create', '--spec', spec, '--inputs', writeFile('one.jsonl', '{"company":"First","_key":"first"}\n')]);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /^grp_\w+ created: 1 input; \d completed · 0 failed · \d running · 0 pending\n$/);
    const groupId = /grp_\w+/.exec(created.stdout)![0];
    const more = writeFile('more.ndjson', '{"company":"First","_key":"first"}\n{"company":"Second","founded":1999}\n');
    const added = await quarry(['group', 'add-inputs', groupId, '--inputs', more, '--follow']);
    assert.equal(added.code, 0, added.stderr + added.stdout);
    assert.match(added.stdout, /^inputs added: 3 inputs \(1 duplicate\) in all\n/);
    assert.match(added.stdout.trim().split('\n').at(-1)!, /^done: finished · 2 completed · 0 failed · 0 stopped · /);

    for (let i = 0; i < 4; i++) held.add(`Held ${i}`);
    const slow = await quarry(['group', 'create', '--spec', spec, '--inputs', writeFile('held.csv', `company\n${[0, 1, 2, 3].map((i) => `Held ${i}`).join('\n')}\n`), '--max-parallel', '2', '--json']);
    assert.equal(slow.code, 0, slow.stderr);
    const slowId = JSON.parse(slow.stdout).group_id;
    const follower = startQuarryCli(['group', 'follow', slowId], { env: { NO_COLOR: '1', ...env } });
    await follower.waitForLine(/^group grp_\w+ created/);
    const stopped = await quarry(['group', 'stop', slowId]);
    held.clear();
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.equal(stopped.stdout, `${slowId} stopped; 0 completed · 0 failed · 4 stopped · 0 running · 0 pending\n`);
    const followed = await follower.result();
    assert.equal(followed.code, 8, 'a stopped group is not a success');
    assert.match(followed.stdout, /^group stopped: pending inputs will not run$/m);
    assert.match(followed.stdout.trim().split('\n').at(-1)!, /^done: stopped · 0 completed · 0 failed · 4 stopped · /);
  });

  it('reads the group every few seconds when its stream cannot be followed', async () => {
    failing = false;
    // A proxy that answers the group's stream with 502, and forwards everything else.
    const proxy = http.createServer((req, res) => {
      if (req.url?.endsWith('/stream')) {
        res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'bad_gateway', message: 'This proxy does not pass event streams.', retryable: false }));
        return;
      }
      const target = new URL(req.url!, server.url);
      const upstream = http.request(target, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
      const run = await quarry(['group', 'create', '--spec', spec, '--inputs', writeFile('polled.csv', 'company\nPolled A\nPolled B\n'), '--follow'], { QUARRY_URL: url });
      assert.equal(run.code, 0, run.stderr + run.stdout);
      assert.match(run.stderr, /^quarry: the group's stream cannot be followed \(This proxy does not pass event streams\.\); reading the group every 2 s instead\n$/);
      assert.match(run.stdout, /^progress: \d\/2 · /m);
      assert.match(run.stdout.trim().split('\n').at(-1)!, /^done: finished · 2 completed · 0 failed · 0 stopped · /);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('prints the API\'s message and exits with the documented code on failure', async () => {
    const csv = writeFile('ok.csv', 'company\nAcme\n');
    const cases: [string, string[], Record<string, string | undefined>, number, RegExp][] = [
      ['missing --spec', ['group', 'create', '--inputs', csv], {}, 2, /missing --spec FILE/],
      ['missing --inputs', ['group', 'create', '--spec', spec], {}, 2, /missing --inputs FILE/],
      ['unreadable inputs', ['group', 'create', '--spec', spec, '--inputs', path.join(tmp, 'nope.csv')], {}, 2, /cannot read .*nope\.csv: ENOENT/],
      ['a file of no known format', ['group', 'create', '--spec', spec, '--inputs', writeFile('list.txt', 'company\nAcme\n')], {}, 2, /Cannot tell whether .*list\.txt is CSV or JSON Lines: name it \.csv or \.jsonl, or give its format/],
      ['bad --format', ['group', 'create', '--spec', spec, '--inputs', csv, '--format', 'xlsx'], {}, 2, /--format must be csv or jsonl, got "xlsx"/],
      ['bad --max-parallel', ['group', 'create', '--spec', spec, '--inputs', csv, '--max-parallel', '0'], {}, 2, /--max-parallel must be at least 1/],
      ['an input against its column', ['group', 'create', '--spec', spec, '--inputs', writeFile('bad.csv', 'company,founded\nGood,1990\nWorse,soon\n')], {}, 1, /\[input_upload_id\[1\]\.founded\] \(invalid_request, HTTP 422/],
      ['a spec without input columns', ['group', 'create', '--spec', writeFile('plain.json', JSON.stringify({ ...SPEC, input_columns: undefined })), '--inputs', csv], {}, 1, /\[task\.input_columns\] \(invalid_request, HTTP 422/],
      ['unknown group', ['group', 'get', 'grp_nope'], {}, 4, /^quarry: No task group with group_id "grp_nope"\. \(group_not_found, HTTP 404, request qc_\w+\)\n$/],
      ['rows of an unknown group', ['group', 'rows', 'grp_nope', '--csv'], {}, 4, /group_not_found, HTTP 404/],
      ['follow an unknown group', ['group', 'follow', 'grp_nope'], {}, 4, /group_not_found, HTTP 404/],
      ['stop an unknown group', ['group', 'stop', 'grp_nope'], {}, 4, /group_not_found, HTTP 404/],
      ['two formats', ['group', 'rows', 'grp_x', '--csv', '--jsonl'], {}, 2, /one of --csv and --jsonl/],
      ['unknown subcommand', ['group', 'run'], {}, 2, /unknown command "group run"; try: create, ls, list, get, show, follow, rows, changes, stop, retry, runs, add-inputs/],
      ['no key', ['group', 'ls'], { QUARRY_API_KEY: undefined }, 3, /QUARRY_API_KEY is not set/],
    ];
    const runs = await Promise.all(cases.map(([, args, extra]) => quarry(args, extra)));
    cases.forEach(([what, , , code, stderr], i) => {
      assert.equal(runs[i]!.code, code, `${what}: ${runs[i]!.stderr}`);
      assert.match(runs[i]!.stderr, stderr, what);
      assert.equal(runs[i]!.stdout, '', what);
    });

    const help = await quarry(['group', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /group create --spec FILE --inputs FILE \[--format csv\|jsonl\] \[--name NAME\]/);
    assert.match(help.stdout, /followed group ended with runs failed or stopped/);
  });
});

describe('the group progress view', () => {
  const at = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();
  const group = (counts: Partial<Group['counts']>, extra: Partial<Group> = {}): Group => ({
    group_id: 'grp_1', name: null, status: 'running', counts: { pending: 0, running: 0, completed: 0, failed: 0, stopped: 0, ...counts },
    inputs: 10, duplicates: 0, credits_used: 0.5, max_parallel: 2, max_credits: null, created_at: at(0), updated_at: at(0), finished_at: null, cron: null, ...extra,
  });
  const base = (seq: number, s: number) => ({ seq, group_id: 'grp_1', at: at(s) });
  /** Ten inputs, two at a time, a run ending each second; input 3 fails. */
  function events(): GroupEvent[] {
    const list: GroupEvent[] = [{ ...base(1, 0), type: 'group', reason: 'created', group: group({ pending: 10 }) }];
    let seq = 2;
    list.push({ ...base(seq++, 0), type: 'run', task_id: 'tsk_0', input: 0, status: 'running' }, { ...base(seq++, 0), type: 'run', task_id: 'tsk_1', input: 1, status: 'running' });
    for (let i = 0; i < 10; i++) {
      list.push({ ...base(seq++, i + 1), type: 'run', task_id: `tsk_${i}`, input: i, status: i === 3 ? 'failed' : 'completed' });
      if (i + 2 < 10) list.push({ ...base(seq++, i + 1), type: 'run', task_id: `tsk_${i + 2}`, input: i + 2, status: 'running' });
    }
    list.push({ ...base(seq, 10), type: 'done', group: group({ completed: 9, failed: 1 }, { status: 'finished', finished_at: at(10) }) });
    return list;
  }

  it('draws a progress bar with counts, runs per second and ETA in place on a terminal', () => {
    let screen = '';
    const view = new GroupProgressView((text) => (screen += text), 'live', { color: false, columns: 200 });
    const all = events();
    const CLEAR_LINE = '\r\u001b[2K';
    for (const event of all.slice(0, 11)) view.event(event);
    assert.ok(screen.startsWith(CLEAR_LINE), 'the status line is redrawn in place');
    assert.ok(screen.includes(`${CLEAR_LINE}group grp_1 created: 10 inputs, at most 2 running at once\n`), 'notes are printed above it');
    assert.ok(screen.includes(`${CLEAR_LINE}✗ input 3 failed: see quarry task show tsk_3\n`));
    // After four ended runs in four seconds: 1 run/s, six left.
    assert.ok(screen.endsWith('[████████░░░░░░░░░░░░] 4/10 · 1.0 runs/s · ETA 6.0 s · 3 completed · 1 failed · 2 running · 4 pending'), JSON.stringify(screen.slice(-120)));
    for (const event of all.slice(11)) view.event(event);
    view.close('ended');
    assert.ok(screen.endsWith(`${CLEAR_LINE}done: finished · 9 completed · 1 failed · 0 stopped · 10 runs in 10.0 s · 0.5 credits · grp_1\n`), JSON.stringify(screen.slice(-120)));
  });

  it('prints a progress line off a terminal as each tenth of the runs ends, not for every event', () => {
    let out = '';
    const view = new GroupProgressView((text) => (out += text), 'plain', { intervalMs: 60_000 });
    for (const event of events()) view.event(event);
    view.close('ended');
    const lines = out.trim().split('\n');
    assert.equal(lines[0], 'group grp_1 created: 10 inputs, at most 2 running at once');
    assert.equal(lines[1], 'progress: 0/10 · 0 completed · 0 failed · 0 running · 10 pending');
    assert.ok(lines.includes('input 3 failed: see quarry task show tsk_3'));
    assert.equal(lines.filter((l) => l.startsWith('progress: ')).length, 11, 'the first, then one per ended run (each a tenth of ten)');
    assert.ok(lines.includes('progress: 5/10 · 1.0 runs/s · ETA 5.0 s · 4 completed · 1 failed · 1 running · 4 pending'));
    assert.equal(lines.at(-1), 'done: finished · 9 completed · 1 failed · 0 stopped · 10 runs in 10.0 s · 0.5 credits · grp_1');
  });
});
