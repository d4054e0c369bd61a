/**
 * The `quarry` CLI, run as a child process against a real server: task, upload and admin
 * commands, `--json` output, `--follow` progress, the documented exit codes, and `serve`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply, type FakeRequestBody } from '../kit/fake-openai-server.js';
import { fetchJson } from '../kit/http.js';
import { dropSchemas, testStoreEnv } from '../kit/postgres.js';
import { makeDataDir, removeDataDir, startQuarryCli, startServer, type NodeProcess, type ServerProcess } from '../kit/process.js';
import { LiveView, PlainView } from '../../src/cli/progress-view.js';
import { eventLine } from '../../src/cli/format.js';
import type { TaskEvent } from '../../packages/client/src/index.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-cli-test-'));
const ADMIN_KEY = 'cli-admin-key';
/** QUARRY_TEST_STORE=postgres (npm run test:postgres): the server runs on a schema of its own, as every harness does. */
const store = testStoreEnv('t_cli');

/** `quarry <args>` from the build, with `env` as its only QUARRY_* configuration and no colour. */
function start(args: string[], env: Record<string, string | undefined>): NodeProcess {
  return startQuarryCli(args, { env: { NO_COLOR: '1', ...env } });
}

describe('quarry CLI', () => {
  let model: FakeOpenAI;
  let server: ServerProcess;
  let env: Record<string, string>;
  const scripts = new Map<string, FakeReply[]>();
  const script = (prompt: string, ...replies: FakeReply[]) => scripts.set(prompt, [...(scripts.get(prompt) ?? []), ...replies]);

  const quarry = (args: string[], extra: Record<string, string | undefined> = {}) => start(args, { ...env, ...extra }).result();

  before(async () => {
    model = await startFakeOpenAI();
    model.setResponder((body: FakeRequestBody) => {
      const first = (body.messages ?? []).find((m) => m.role === 'user');
      return scripts.get(typeof first?.content === 'string' ? first.content : '')?.shift() ?? { text: 'Done.' };
    });
    // The CLI's server is the built one too: what a user runs.
    server = await startServer({
      dataDir: path.join(tmp, 'data'),
      waitForStarterKey: true,
      env: {
        QUARRY_RATE_LIMIT_PER_MIN: '1000000', QUARRY_ADMIN_KEY: ADMIN_KEY, QUARRY_MODEL_BASE_URL: model.url, QUARRY_MODEL: 'fake-model',
        ...store.env,
      },
    });
    env = { QUARRY_URL: server.url, QUARRY_API_KEY: server.starterKey!, QUARRY_ADMIN_KEY: ADMIN_KEY };
  });
  after(async () => {
    await server?.kill9();
    await model?.close();
    if (store.schema) await dropSchemas(store.schema);
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('task create --follow prints one plain line per event off a terminal, then reads the task back', async () => {
    const prompt = 'EU plants making Li-ion cells';
    script(
      prompt,
      { toolCalls: [{ name: 'update_spec', arguments: { outputs: [{ id: 'plants', kind: 'table', columns: [{ name: 'company', type: 'string', required: true }] }] } }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'plants', rows: [{ company: 'Northvolt' }, { company: 'ACC' }], sources: [{ url: 'https://example.com/nv' }] } }] },
      { text: 'Found two plants.' },
    );
    const run = await quarry(['task', 'create', prompt, '--follow']);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.trim().split('\n');
    assert.equal(lines[0], 'task: created');
    assert.ok(lines.some((l) => /^tool: write_rows finished - wrote 2 rows to plants \(0 verified\) \(\d+ ms\)$/.test(l)), run.stdout);
    assert.ok(lines.includes('text: Found two plants.'));
    assert.match(lines.at(-2)!, /^done: completed \(credits [\d.]+\)$/);
    const summary = lines.at(-1)!;
    assert.match(summary, /^done: completed · 2 rows written · 2 tool calls · [\d.]+ credits · [\d.]+ s · tsk_[0-9A-Z]{26}$/);
    const taskId = /tsk_[0-9A-Z]{26}/.exec(summary)![0];

    const [ls, show, showText, csv, jsonl, rows, rowsText, outputs] = await Promise.all([
      quarry(['task', 'ls', '--json']),
      quarry(['task', 'show', taskId, '--json']),
      quarry(['task', 'show', taskId]),
      quarry(['task', 'rows', taskId, '--csv']),
      quarry(['task', 'rows', taskId, '--output', 'plants', '--jsonl']),
      quarry(['task', 'rows', taskId, '--json']),
      quarry(['task', 'rows', taskId]),
      quarry(['task', 'outputs', taskId, '--json']),
    ]);
    for (const r of [ls, show, showText, csv, jsonl, rows, rowsText, outputs]) assert.equal(r.code, 0, r.stderr);
    assert.ok(JSON.parse(ls.stdout).some((t: any) => t.task_id === taskId));
    const detail = JSON.parse(show.stdout);
    assert.equal(detail.task_id, taskId);
    assert.equal(detail.spec.outputs[0].id, 'plants');
    assert.match(showText.stdout, /^task {6}tsk_/);
    assert.match(showText.stdout, /plants +table +2 /);
    // The page was never fetched in this task: each source is exported with its not_read mark.
    assert.equal(csv.stdout, '_row,company,_sources\r\n1,Northvolt,https://example.com/nv [not_read]\r\n2,ACC,https://example.com/nv [not_read]\r\n');
    assert.deepEqual(jsonl.stdout.trim().split('\n').map((l) => JSON.parse(l).company), ['Northvolt', 'ACC']);
    const page = JSON.parse(rows.stdout);
    assert.equal(page.total, 2);
    assert.equal(page.output.id, 'plants');
    assert.match(rowsText.stdout, /^#\s+company\s+SOURCES\n1\s+Northvolt\s+1\n2\s+ACC\s+1\n$/);
    assert.match(rowsText.stderr, /rows 1-2 of 2 in plants/);
    assert.equal(JSON.parse(outputs.stdout)[0].row_count, 2);

    // Checked again against the snapshots (none: the page was never fetched): nothing changes, twice.
    const recheck = await quarry(['task', 'recheck', taskId, '--json']);
    assert.equal(recheck.code, 0, recheck.stderr);
    assert.deepEqual(JSON.parse(recheck.stdout), { rows: 2, changed: 0 });
    const recheckText = await quarry(['task', 'recheck', taskId]);
    assert.equal(recheckText.stdout, `${taskId} rechecked: 2 rows, 0 changed\n`);
  });

  it('task create --spec FILE --id ID --json starts from a spec; a repeat exits 5 with task_exists', async () => {
    const spec = path.join(tmp, 'spec.json');
    fs.writeFileSync(spec, JSON.stringify({ name: 'From a file', outputs: [{ id: 'makers', kind: 'table', columns: [{ name: 'company', required: true }] }] }));
    const created = await quarry(['task', 'create', 'Makers of cells', '--spec', spec, '--id', 'cli-spec-1', '--json']);
    assert.equal(created.code, 0, created.stderr);
    const task = JSON.parse(created.stdout);
    assert.equal(task.task_id, 'cli-spec-1');
    assert.equal(task.name, 'From a file');
    const waited = await quarry(['task', 'wait', 'cli-spec-1', '--timeout', '30', '--json']);
    assert.equal(waited.code, 0, waited.stderr);
    assert.equal(JSON.parse(waited.stdout).active, false);
    const detail = await fetchJson('GET', `${server.url}/task/cli-spec-1`, { key: env.QUARRY_API_KEY });
    assert.equal(detail.body.spec.prompt, 'Makers of cells');

    const again = await quarry(['task', 'create', '--spec', spec, '--id', 'cli-spec-1', '--json']);
    assert.equal(again.code, 5);
    assert.equal(again.stdout, '');
    const error = JSON.parse(again.stderr);
    assert.equal(error.error, 'task_exists');
    assert.equal(error.status, 409);
    assert.equal(error.task_id, 'cli-spec-1');
    assert.match(error.request_id, /^qc_/);
  });

  it('follow --json, continue, execute while running (5), stop, and a followed turn that was stopped (8)', async () => {
    const prompt = 'a turn that hangs until stopped';
    script(prompt, { hang: true });
    const created = await quarry(['task', 'create', prompt, '--json']);
    assert.equal(created.code, 0, created.stderr);
    const taskId = JSON.parse(created.stdout).task_id;

    const follower = start(['task', 'follow', taskId, '--json'], env);
    await follower.waitForLine(/"reason":"turn_started"/);

    // Ctrl-C stops following, not the task.
    const interrupted = start(['task', 'follow', taskId], env);
    await interrupted.waitForLine(/^task: turn_started/);
    const stoppedFollowing = { ...(await interrupted.stop('SIGINT')), stdout: interrupted.stdout(), stderr: interrupted.stderr() };
    assert.equal(stoppedFollowing.code, 130, stoppedFollowing.stderr);
    assert.match(stoppedFollowing.stdout, /stopped following \(the task keeps running\)\n$/);
    assert.equal(stoppedFollowing.stderr, `follow it again with: quarry task follow ${taskId}\n`);

    const queued = await quarry(['task', 'continue', taskId, 'Also look at Norway.']);
    assert.equal(queued.code, 0, queued.stderr);
    assert.equal(queued.stdout, `${taskId} message queued (1 waiting)\n`);

    const busy = await quarry(['task', 'execute', taskId]);
    assert.equal(busy.code, 5);
    assert.match(busy.stderr, /task_executing, HTTP 409/);

    const stopped = await quarry(['task', 'stop', taskId, '--clear-queue']);
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.equal(stopped.stdout, `${taskId} stopped (plan/idle)\n`);

    const follow = await follower.result();
    assert.equal(follow.code, 8, follow.stderr);
    const events = follow.stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1));
    assert.equal(events.at(-1).type, 'done');
    assert.equal(events.at(-1).outcome, 'stopped');

    const removed = await quarry(['task', 'rm', taskId]);
    assert.equal(removed.code, 0);
    assert.equal(removed.stdout, `${taskId} deleted\n`);
    const gone = await quarry(['task', 'show', taskId, '--events', '3']);
    assert.equal(gone.code, 0, 'a deleted task can still be shown');
    assert.match(gone.stdout, /status {4}deleted/);
  });

  it('execute and continue --offline run a turn that is offered no web_search', async () => {
    const prompt = 'a task run again offline';
    const created = await quarry(['task', 'create', prompt, '--follow']);
    assert.equal(created.code, 0, created.stderr);
    const taskId = /tsk_[0-9A-Z]{26}/.exec(created.stdout)![0];
    const offered = (request: number) => (model.requests[request]!.body.tools ?? []).map((t) => t.function.name);
    for (const args of [['task', 'execute', taskId, '--offline', '--follow'], ['task', 'continue', taskId, 'From what you read.', '--offline', '--follow'], ['task', 'execute', taskId, '--follow']]) {
      const asked = model.requests.length;
      const run = await quarry(args);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(offered(asked).includes('web_search'), !args.includes('--offline'), `${args.join(' ')}: ${offered(asked)}`);
    }
  });

  it('exits with the documented code for each kind of failure', async () => {
    const made = await fetchJson('POST', `${server.url}/admin/accounts`, { key: ADMIN_KEY, body: { name: 'broke', credits: 0 } });
    assert.equal(made.status, 201, made.text);
    const broke = { apiKey: made.body.api_key as string };
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));

    const cases: [string, string[], Record<string, string | undefined>, number, RegExp][] = [
      ['help', ['--help'], {}, 0, /^$/],
      ['help among combined short options', ['task', 'continue', '-fh'], {}, 0, /^$/],
      ['no command', [], {}, 2, /usage: quarry <command>/],
      ['unknown command', ['frobnicate'], {}, 2, /unknown command "frobnicate"/],
      ['missing prompt', ['task', 'create'], {}, 2, /missing PROMPT/],
      ['unknown option', ['task', 'ls', '--bogus'], {}, 2, /Unknown option '--bogus'/],
      ['two formats', ['task', 'rows', 'x', '--csv', '--jsonl'], {}, 2, /one of --csv and --jsonl/],
      ['bad number', ['task', 'ls', '--limit', 'many'], {}, 2, /--limit must be an integer/],
      ['unreadable spec', ['task', 'create', '--spec', path.join(tmp, 'missing.json')], {}, 2, /cannot read spec file/],
      ['no key', ['task', 'ls'], { QUARRY_API_KEY: undefined }, 3, /QUARRY_API_KEY is not set/],
      ['wrong key', ['task', 'ls'], { QUARRY_API_KEY: 'qry_wrong' }, 3, /unauthorized, HTTP 401/],
      ['no admin key', ['accounts', 'show', 'acct_x'], { QUARRY_ADMIN_KEY: undefined }, 3, /QUARRY_ADMIN_KEY is not set/],
      ['no such task', ['task', 'show', 'no-such-task'], {}, 4, /task_not_found, HTTP 404/],
      ['no such output', ['task', 'rows', 'cli-spec-1', '--output', 'nope'], {}, 4, /not_found, HTTP 404/],
      ['invalid request', ['task', 'create', '   '], {}, 1, /invalid_request, HTTP 422/],
      ['out of credits', ['task', 'create', 'no credits'], { QUARRY_API_KEY: broke.apiKey }, 6, /out_of_credits, HTTP 402/],
      ['unreachable', ['task', 'ls'], { QUARRY_URL: `http://127.0.0.1:${deadPort}` }, 7, /connection_error/],
    ];
    const runs = await Promise.all(cases.map(([, args, extra]) => quarry(args, extra)));
    cases.forEach(([what, , , code, stderr], i) => {
      assert.equal(runs[i]!.code, code, `${what}: ${runs[i]!.stderr}`);
      assert.match(runs[i]!.stderr, stderr, what);
    });
    assert.match(runs[0]!.stdout, /Exit codes:/);
    assert.match(runs[1]!.stdout, /Exit codes:/, '-fh prints the usage rather than running the command without its arguments');

    const asJson = await quarry(['task', 'create', 'no credits', '--json'], { QUARRY_API_KEY: broke.apiKey });
    assert.equal(asJson.code, 6);
    const body = JSON.parse(asJson.stderr);
    assert.equal(body.error, 'out_of_credits');
    assert.equal(body.task_created, false);
    assert.match(body.resolve, /\/credits$/);
  });

  it('uploads a file and manages accounts, keys and credits', async () => {
    const file = path.join(tmp, 'shortlist.csv');
    fs.writeFileSync(file, 'company\nNorthvolt\n');
    const uploaded = await quarry(['upload', file, '--json']);
    assert.equal(uploaded.code, 0, uploaded.stderr);
    const upload = JSON.parse(uploaded.stdout);
    assert.match(upload.upload_id, /^upl_/);
    assert.equal(upload.size_bytes, 18);
    assert.equal(upload.content_type, 'text/csv');

    const created = await quarry(['accounts', 'create', 'cli-team', '--credits', '3', '--json']);
    assert.equal(created.code, 0, created.stderr);
    const account = JSON.parse(created.stdout);
    assert.match(account.api_key, /^qry_/);
    const credited = await quarry(['credits', 'add', account.account_id, '-1', '--json']);
    assert.equal(credited.code, 0, credited.stderr);
    assert.equal(JSON.parse(credited.stdout).balance, 2);
    const shown = await quarry(['accounts', 'show', account.account_id]);
    assert.match(shown.stdout, /balance {2}2\n/);

    const key = JSON.parse((await quarry(['keys', 'create', account.account_id, '--json'])).stdout);
    const keys = JSON.parse((await quarry(['keys', 'ls', account.account_id, '--json'])).stdout);
    assert.deepEqual(keys.map((k: any) => k.key_id).sort(), [account.key_id, key.key_id].sort());
    const asUser = await quarry(['task', 'ls', '--json'], { QUARRY_API_KEY: key.api_key });
    assert.equal(asUser.stdout.trim(), '[]');
    const revoked = await quarry(['keys', 'revoke', account.account_id, key.key_id]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, new RegExp(`^${key.key_id} revoked at `));
    assert.equal((await quarry(['task', 'ls'], { QUARRY_API_KEY: key.api_key })).code, 3);
    assert.equal((await quarry(['accounts', 'show', 'acct_missing'])).code, 4);
  });

  it('draws a live status line on a terminal: activity, tool calls, rows written, credits', () => {
    let screen = '';
    const view = new LiveView((text) => (screen += text), { color: false, columns: 200 });
    const at = new Date().toISOString();
    const base = { task_id: 'tsk_1', turn_id: 'turn_1', at };
    const task = { task_id: 'tsk_1', status: 'execute', phase: 'execute', activity: 'executing', credits_used: 0.25 } as any;
    const events: TaskEvent[] = [
      { ...base, seq: 1, type: 'task', reason: 'created', task },
      { ...base, seq: 2, type: 'tool', call_id: 'c1', name: 'write_rows', state: 'started', input: { output: 'items', rows: [{}, {}, {}] }, summary: null, duration_ms: null },
      { ...base, seq: 3, type: 'tool', call_id: 'c1', name: 'write_rows', state: 'finished', input: { output: 'items', rows: [{}, {}, {}] }, summary: 'wrote 3 rows to items', duration_ms: 12 },
      { ...base, seq: 4, type: 'text', text: 'First line\nsecond ' },
      { ...base, seq: 5, type: 'done', outcome: 'completed', output_count: 1, credits_used: 0.25 },
    ];
    for (const event of events) view.event(event);
    view.close('ended');
    const CLEAR_LINE = '\r\u001b[2K';
    assert.ok(screen.startsWith(CLEAR_LINE), 'the status line is redrawn in place');
    assert.match(screen, /. executing · 1 tool call · 3 rows · 0\.25 credits · /);
    assert.match(screen, /✓ write_rows {2}wrote 3 rows to items {2}12 ms\n/);
    assert.match(screen, /│ First line\n/);
    assert.match(screen, /│ second\n/);
    assert.match(screen, /done: completed · 3 rows written · 1 tool call · 0\.25 credits · [\d.]+ s · tsk_1\n$/);
  });

  /** One turn's events: its start, these `text` events, its end. */
  function turnWithText(texts: { text: string; restart?: true }[]): TaskEvent[] {
    const base = { task_id: 'tsk_1', turn_id: 'turn_1', at: new Date().toISOString() };
    const task = { task_id: 'tsk_1', status: 'execute', phase: 'execute', activity: 'thinking', credits_used: 0 } as any;
    return [
      { ...base, seq: 1, type: 'task', reason: 'turn_started', task },
      ...texts.map((t, i): TaskEvent => ({ ...base, seq: i + 2, type: 'text', ...t })),
      { ...base, seq: texts.length + 2, type: 'done', outcome: 'completed', output_count: 0, credits_used: 0.01 },
    ];
  }

  /** A model reply cut off after two lines and a bit, then asked for again and answered whole. */
  const cutReply = () => turnWithText([
    { text: 'Rock of Ages is in Barre.\nSmith quarry is in Barre too.\nBoth cut gra' },
    { text: '', restart: true },
    { text: 'Rock of Ages is in Barre.\nSmith quarry is in Barre too.\nBoth cut granite.' },
  ]);

  /** A cut reply to the outputs check, whose restart carries the answer before it again. */
  const cutCheckReply = () => turnWithText([
    { text: 'No list could be written.\n' },
    { text: 'Rock of' },
    { text: 'No list could be written.\n', restart: true },
    { text: 'Rock of Ages is in Barre.' },
  ]);

  /** The rows a terminal shows after `output`: enough of one to follow the live view's moves. */
  function terminalRows(output: string): string[] {
    const rows = [''];
    let row = 0;
    const ESC = String.fromCharCode(0x1b);
    for (const part of output.split(new RegExp(`(\r${ESC}\\[2K|${ESC}\\[1A${ESC}\\[2K|\n)`))) {
      if (part === '\r\x1b[2K') rows[row] = '';
      else if (part === '\x1b[1A\x1b[2K') rows[(row = Math.max(0, row - 1))] = '';
      else if (part === '\n') rows[++row] ??= '';
      else rows[row] += part;
    }
    return rows.slice(0, row + 1);
  }

  it('a reply cut off and asked for again shows once on a terminal: the lines it printed are taken back', () => {
    let screen = '';
    const view = new LiveView((text) => (screen += text), { color: false, columns: 200 });
    for (const event of cutReply()) view.event(event);
    view.close('ended');
    const shown = terminalRows(screen).filter((line) => line.startsWith('│'));
    assert.deepEqual(shown, ['│ Rock of Ages is in Barre.', '│ Smith quarry is in Barre too.', '│ Both cut granite.']);
  });

  it('a cut reply to the outputs check keeps the answer before it, on a terminal and in plain output', () => {
    let screen = '';
    const live = new LiveView((text) => (screen += text), { color: false, columns: 200 });
    for (const event of cutCheckReply()) live.event(event);
    live.close('ended');
    assert.deepEqual(terminalRows(screen).filter((line) => line.startsWith('│')), ['│ No list could be written.', '│ Rock of Ages is in Barre.']);
    let out = '';
    const plain = new PlainView((text) => (out += text));
    for (const event of cutCheckReply()) plain.event(event);
    plain.close('ended');
    assert.deepEqual(out.split('\n').filter((line) => line.startsWith('text:')), ['text: No list could be written. Rock of Ages is in Barre.']);
    assert.equal(eventLine(cutCheckReply()[3]!), 'text: (the reply was cut off: its text above is dropped, and the model is asked again)\ntext: No list could be written.');
  });

  it('a reply cut off and asked for again is one text line in plain output', () => {
    let out = '';
    const view = new PlainView((text) => (out += text));
    for (const event of cutReply()) view.event(event);
    view.close('ended');
    const lines = out.split('\n').filter((line) => line.startsWith('text:'));
    assert.deepEqual(lines, ['text: Rock of Ages is in Barre. Smith quarry is in Barre too. Both cut granite.']);
  });
});

describe('quarry serve', () => {
  it('prints its URL and the starter key, answers the client commands, and stops on SIGTERM', async () => {
    const dataDir = makeDataDir('quarry-cli-serve-');
    try {
      const server = await startServer({ dataDir, env: { QUARRY_LOG_LEVEL: 'silent' }, waitForStarterKey: true });
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.match(server.starterKey!, /^qry_\S+$/);
      const ls = await start(['task', 'ls', '--json'], { QUARRY_URL: server.url, QUARRY_API_KEY: server.starterKey }).result();
      assert.equal(ls.code, 0, ls.stderr);
      assert.equal(ls.stdout.trim(), '[]');
      const stopped = await server.stop('SIGTERM');
      assert.equal(stopped.code, 0, server.output());
    } finally {
      removeDataDir(dataDir);
    }
  });

  it('refuses an unknown role with its usage line and exit code 2', async () => {
    const run = await start(['serve', '--role', 'bogus'], {}).result();
    assert.equal(run.code, 2);
    assert.equal(run.stderr, 'usage: quarry serve [--role all|api|worker]\n');
  });
});
