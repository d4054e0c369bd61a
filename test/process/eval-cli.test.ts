/**
 * `quarry eval` run as a child process against a real server whose model is the fake one,
 * scripted per question to answer right, answer wrong, or find nothing: both file formats, both
 * graders, and what the results files hold.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply, type FakeRequestBody } from '../kit/fake-openai-server.js';
import { dropSchemas, testStoreEnv } from '../kit/postgres.js';
import { startQuarryCli, startServer, type ServerProcess } from '../kit/process.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-eval-test-'));
const store = testStoreEnv('t_eval');

/** What the fake model answers to each question: an answer, or null for "not found". */
const ANSWERS: Record<string, string | null> = {
  'What is the capital city of Australia?': 'Canberra',
  'How many bones does a typical adult human skeleton have?': '300',
  'Who painted The Garden of Earthly Delights?': null,
  'On what date did Apollo 11 land on the Moon (UTC)?': '20 July 1969',
};
const QUESTIONS = [
  { id: 'capital', question: 'What is the capital city of Australia?', answer: 'Canberra', answer_type: 'text' },
  { id: 'bones', question: 'How many bones does a typical adult human skeleton have?', answer: '206', answer_type: 'number' },
  { id: 'bosch', question: 'Who painted The Garden of Earthly Delights?', answer: 'Hieronymus Bosch' },
  { id: 'apollo', question: 'On what date did Apollo 11 land on the Moon (UTC)?', answer: '1969-07-20', answer_type: 'date' },
];

function text(message: Record<string, unknown> | undefined): string {
  return typeof message?.content === 'string' ? message.content : '';
}

/**
 * A question's task writes its answer (or nothing) on its first call; a grading task grades
 * "Canberra" correct, anything else incorrect. After a tool result, the agent stops.
 */
function reply(body: FakeRequestBody): FakeReply {
  const messages = body.messages ?? [];
  if (messages.at(-1)?.role === 'tool') return { text: 'Done.' };
  const user = text(messages.find((m) => m.role === 'user'));
  if (user.startsWith('You are grading')) {
    const verdict = /Predicted answer: Canberra\b/.test(user) ? 'correct' : 'incorrect';
    return { toolCalls: [{ name: 'write_rows', arguments: { output: 'verdict', rows: [{ verdict }] } }] };
  }
  const question = /^Answer this question: (.*)$/m.exec(user)?.[1] ?? '';
  const answer = ANSWERS[question];
  if (!answer) return { text: 'I could not find the answer.' };
  return { toolCalls: [{ name: 'write_rows', arguments: { output: 'answer', rows: [{ answer }], sources: [{ url: 'https://example.com/facts' }] } }] };
}

describe('quarry eval', () => {
  let model: FakeOpenAI;
  let server: ServerProcess;
  let env: Record<string, string>;

  before(async () => {
    model = await startFakeOpenAI();
    model.setResponder(reply);
    server = await startServer({
      dataDir: path.join(tmp, 'data'),
      waitForStarterKey: true,
      env: { QUARRY_RATE_LIMIT_PER_MIN: '1000000', QUARRY_MODEL_BASE_URL: model.url, QUARRY_MODEL: 'fake-model', ...store.env },
    });
    env = { NO_COLOR: '1', QUARRY_URL: server.url, QUARRY_API_KEY: server.starterKey! };
  });
  after(async () => {
    await server?.kill9();
    await model?.close();
    if (store.schema) await dropSchemas(store.schema);
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const evalRun = (args: string[]) => startQuarryCli(['eval', ...args], { env }).result();
  const readResults = (dir: string) => fs.readFileSync(path.join(dir, 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));

  it('grades JSON Lines exactly: correct, incorrect and not attempted, with every results file', async () => {
    const file = path.join(tmp, 'set.jsonl');
    fs.writeFileSync(file, `${QUESTIONS.map((q) => JSON.stringify(q)).join('\n')}\n`);
    const out = path.join(tmp, 'exact');
    const run = await evalRun([file, '--out', out, '--concurrency', '2']);
    assert.equal(run.code, 0, run.stderr);

    const results = readResults(out);
    assert.deepEqual(results.map((r) => [r.id, r.answer, r.verdict]), [
      ['capital', 'Canberra', 'correct'],
      ['bones', '300', 'incorrect'],
      ['bosch', null, 'not_attempted'],
      ['apollo', '20 July 1969', 'correct'],
    ]);
    for (const r of results) {
      assert.match(r.task_id, /^tsk_/);
      assert.equal(r.outcome, 'completed');
      assert.equal(r.verified_sources, 0, 'the page cited was never fetched');
      assert.ok(r.credits > 0 && r.tokens_in > 0 && r.tokens_out > 0 && r.seconds > 0, JSON.stringify(r));
      assert.ok(r.tokens_in_cached >= 0 && r.tokens_in_cached <= r.tokens_in);
      assert.ok(r.citation_accuracy === null || typeof r.citation_accuracy === 'number');
      assert.equal(r.grading_credits, 0);
    }

    const summary = JSON.parse(fs.readFileSync(path.join(out, 'summary.json'), 'utf8'));
    assert.deepEqual([summary.items, summary.correct, summary.incorrect, summary.not_attempted, summary.accuracy, summary.accuracy_attempted], [4, 2, 1, 1, 0.5, 0.6667]);
    assert.ok(summary.credits.p50 > 0 && summary.credits.p95 >= summary.credits.p50 && summary.seconds.p95 >= summary.seconds.p50);

    const csv = parseCsv(fs.readFileSync(path.join(out, 'results.csv'), 'utf8'), { columns: true }) as Record<string, string>[];
    assert.deepEqual(csv.map((r) => [r.id, r.answer, r.verdict, r.expected]), [
      ['capital', 'Canberra', 'correct', 'Canberra'], ['bones', '300', 'incorrect', '206'], ['bosch', '', 'not_attempted', 'Hieronymus Bosch'], ['apollo', '20 July 1969', 'correct', '1969-07-20'],
    ]);
    assert.equal(csv[0]!.credits, String(results[0].credits));

    // Off a terminal: a line per item, then the summary.
    assert.match(run.stdout, /^\[\d\/4\] capital: correct/m);
    assert.match(run.stdout, /^accuracy +50\.0% \(2 correct, 1 incorrect\)$/m);
    assert.match(run.stdout, /^not attempted +25\.0% \(1\)$/m);
    assert.match(run.stdout, /^credits +p50 [\d.]+ · p95 [\d.]+/m);
  });

  it('reads SimpleQA-style CSV (problem/answer), takes --limit, and grades by model through the server', async () => {
    const file = path.join(tmp, 'simpleqa.csv');
    fs.writeFileSync(file, `metadata,problem,answer\n"{}",${QUESTIONS.map((q) => `"${q.question}",${q.answer}`).join('\n"{}",')}\n`);
    const out = path.join(tmp, 'model');
    const before = model.requests.length;
    const run = await evalRun([file, '--out', out, '--grader', 'model', '--limit', '3', '--json']);
    assert.equal(run.code, 0, run.stderr);

    const results = readResults(out);
    assert.deepEqual(results.map((r) => [r.id, r.verdict]), [['1', 'correct'], ['2', 'incorrect'], ['3', 'not_attempted']]);
    assert.ok(results[0].grading_credits > 0 && results[1].grading_credits > 0, 'both answers given were graded by a task');
    assert.equal(results[2].grading_credits, 0, 'no answer: nothing to grade');
    const grading = model.requests.slice(before).filter((r) => text(r.body.messages?.find((m) => m.role === 'user')).startsWith('You are grading'));
    assert.equal(grading.filter((r) => r.body.messages?.at(-1)?.role === 'user').length, 2);
    assert.ok(grading.every((r) => !(r.body.tools ?? []).some((t) => ['web_search', 'fetch_url'].includes(t.function.name))), 'the grader has no web tools');

    const summary = JSON.parse(run.stdout);
    assert.deepEqual([summary.items, summary.grader, summary.correct, summary.incorrect, summary.not_attempted], [3, 'model', 1, 1, 1]);
  });

  it('reads FRAMES-style headers and refuses a file it cannot read, naming the line', async () => {
    const frames = path.join(tmp, 'frames.csv');
    fs.writeFileSync(frames, `Unnamed: 0,Prompt,Answer,reasoning_types\n0,${QUESTIONS[0]!.question},Canberra,x\n`);
    const out = path.join(tmp, 'frames');
    const run = await evalRun([frames, '--out', out]);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(readResults(out).map((r) => r.verdict), ['correct']);

    const bad = path.join(tmp, 'bad.jsonl');
    fs.writeFileSync(bad, '{"question": "q", "answer": "a"}\n{"question": "q2"}\n');
    const refused = await evalRun([bad, '--out', path.join(tmp, 'bad')]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /bad\.jsonl line 2: answer must be a non-empty string/);
  });
});
