/**
 * `quarry eval`'s rules without a server: reading question sets in their formats, exact grading,
 * the summary's figures, and the grading prompt the docs show.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { GRADING_PROMPT, gradeExact, percentile, readVerdict, summarize, type EvalResult } from '../../src/cli/eval/eval-scoring.js';
import { readQuestionSet } from '../../src/cli/eval/question-set.js';

const root = path.resolve(import.meta.dirname, '..', '..');

describe('question sets', () => {
  it('reads JSON Lines with and without ids, numbers as answers, and refuses a bad line by its number', () => {
    const set = readQuestionSet('set.jsonl', '{"id": "a", "question": " Q1 ", "answer": "x", "answer_type": "text"}\n\n{"question": "Q2", "answer": 206}\n');
    assert.deepEqual(set, [{ id: 'a', question: 'Q1', answer: 'x', answerType: 'text' }, { id: '3', question: 'Q2', answer: '206' }]);
    assert.throws(() => readQuestionSet('s.jsonl', '{"question": "q", "answer": "a", "answer_type": "money"}'), /s\.jsonl line 1: answer_type must be one of text, number, date/);
    assert.throws(() => readQuestionSet('s.jsonl', '{"question": "q", "answer": "a"}\n[1]'), /s\.jsonl line 2 must be a JSON object/);
    assert.throws(() => readQuestionSet('s.jsonl', '{"id": 1, "question": "q", "answer": "a"}\n{"id": "1", "question": "q", "answer": "a"}'), /id "1" is used twice/);
  });

  it('reads CSV headers of ours, SimpleQA and FRAMES, and TSV; other answer_type values are left to the grader', () => {
    const ours = readQuestionSet('ours.csv', 'id,question,answer,answer_type\nx,"Q, one",1889,\ny,Q2,W,text\n');
    assert.deepEqual(ours, [{ id: 'x', question: 'Q, one', answer: '1889' }, { id: 'y', question: 'Q2', answer: 'W', answerType: 'text' }]);
    assert.deepEqual(readQuestionSet('simple_qa.csv', '\ufeffmetadata,problem,answer,answer_type\n"{""topic"": ""Art""}",Who?,Bosch,Single Answer\n'), [{ id: '1', question: 'Who?', answer: 'Bosch' }]);
    assert.deepEqual(readQuestionSet('frames.tsv', 'Unnamed: 0\tPrompt\tAnswer\n0\tWhich?\tThat one\n'), [{ id: '1', question: 'Which?', answer: 'That one' }]);
    assert.throws(() => readQuestionSet('x.csv', 'q,a\n1,2\n'), /header row needs a question column/);
    assert.throws(() => readQuestionSet('x.csv', 'question,answer\n'), /holds no questions/);
  });

  it('ships an example set that reads as 20 questions, the same in both formats', () => {
    const jsonl = readQuestionSet('questions.jsonl', fs.readFileSync(path.join(root, 'examples/eval/questions.jsonl'), 'utf8'));
    const csv = readQuestionSet('questions.csv', fs.readFileSync(path.join(root, 'examples/eval/questions.csv'), 'utf8'));
    assert.equal(jsonl.length, 20);
    assert.deepEqual(csv, jsonl);
  });
});

describe('grading and the summary', () => {
  it('grades exactly: no answer is not attempted', () => {
    assert.equal(gradeExact('Canberra', null), 'not_attempted');
    assert.equal(gradeExact('Canberra', '  '), 'not_attempted');
    assert.equal(gradeExact('Canberra', 'Canberra, ACT', 'text'), 'correct');
    assert.equal(gradeExact('206', '300', 'number'), 'incorrect');
  });

  it('reads a verdict cell', () => {
    assert.equal(readVerdict('correct'), 'correct');
    assert.equal(readVerdict('Incorrect.'), 'incorrect');
    assert.equal(readVerdict('not attempted'), 'not_attempted');
    assert.equal(readVerdict('unsure'), null);
    assert.equal(readVerdict(3), null);
  });

  it('sums up verdicts, citation accuracy where reported, and credits and seconds with nearest-rank percentiles', () => {
    const item = (verdict: EvalResult['verdict'], credits: number, seconds: number, citation: number | null): EvalResult => ({
      id: String(credits), question: 'q', expected: 'a', answer_type: null, answer: verdict === 'not_attempted' ? null : 'a', verdict, citation_accuracy: citation,
      verified_sources: 1, credits, tokens_in: 10, tokens_in_cached: 4, tokens_out: 2, seconds, grading_credits: 0, task_id: null, outcome: 'completed', error: null,
    });
    const s = summarize([item('correct', 1, 10, 1), item('correct', 2, 20, 0.5), item('incorrect', 3, 30, null), item('not_attempted', 4, 40, null)], 'exact');
    assert.deepEqual([s.items, s.correct, s.incorrect, s.not_attempted, s.accuracy, s.accuracy_attempted, s.not_attempted_rate, s.citation_accuracy], [4, 2, 1, 1, 0.5, 0.6667, 0.25, 0.75]);
    assert.deepEqual(s.credits, { mean: 2.5, p50: 2, p95: 4, total: 10 });
    assert.deepEqual([s.tokens_in, s.tokens_in_cached, s.tokens_out], [40, 16, 8]);
    assert.equal(summarize([], 'model').accuracy_attempted, null);
    assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.95), 10);
    assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.5), 5);
  });

  it('docs/eval.md shows the grading prompt word for word', () => {
    assert.ok(fs.readFileSync(path.join(root, 'docs/eval.md'), 'utf8').includes(GRADING_PROMPT), 'the grading prompt in docs/eval.md is the one used');
  });
});
