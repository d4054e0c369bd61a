/**
 * How `quarry eval` asks a task for an answer, grades it, and sums a run up (decisions §17.3;
 * docs/eval.md shows the task spec and the grading prompt word for word).
 */
import { answersAgree } from '../../domain/value-match.js';
import { fields } from '../format.js';
import type { AnswerType, EvalQuestion } from './question-set.js';

export const VERDICTS = ['correct', 'incorrect', 'not_attempted'] as const;
export type Verdict = (typeof VERDICTS)[number];
export type Grader = 'exact' | 'model';

/** The output each question's task writes its answer to. */
export const ANSWER_OUTPUT = 'answer';
/** The output a grading task writes its verdict to. */
export const VERDICT_OUTPUT = 'verdict';

/**
 * The spec of one question's task: the question, and a one-column table for the answer, so the
 * answer comes back as a row with its sources (checked like any row's) rather than as prose.
 */
export function answerSpec(q: EvalQuestion): Record<string, unknown> {
  return {
    name: `eval ${q.id}`,
    prompt: [
      `Answer this question: ${q.question}`,
      '',
      `Write exactly one row to the output "${ANSWER_OUTPUT}": in the column "answer", the answer alone, as short as it can be (a name, a number, a date or a few words, not a sentence),`,
      'and cite the page that states it, with a quote copied exactly from that page.',
      'If you cannot find the answer, write no row and say that you could not find it.',
    ].join('\n'),
    outputs: [{
      id: ANSWER_OUTPUT,
      kind: 'table',
      description: 'The answer to the question, with its source.',
      columns: [{ name: 'answer', type: 'string', required: true, description: 'The answer alone, as short as it can be.' }],
    }],
  };
}

/** The fixed grading prompt of `--grader model`; `{question}`, `{gold}` and `{predicted}` are filled in. */
export const GRADING_PROMPT = `You are grading one answer to a question against the gold answer. Decide on one verdict:

- correct: the predicted answer states the gold answer (other wording, extra detail, capitalization and small spelling differences in names are fine; a number must match to the precision of the gold answer, within 1%), and nothing in it contradicts the gold answer.
- incorrect: the predicted answer states something else, or contradicts the gold answer, or hedges between candidates of which one is wrong.
- not_attempted: the predicted answer gives no answer (it is empty or says the answer was not found) and does not contradict the gold answer.

Question: {question}
Gold answer: {gold}
Predicted answer: {predicted}

Write exactly one row to the output "verdict" with write_rows, {"verdict": "correct"}, {"verdict": "incorrect"} or {"verdict": "not_attempted"}, with no sources, then stop. Do not research anything.`;

/** The spec of the task that grades one answer: no tools besides write_rows, and a one-row verdict output. */
export function gradingSpec(q: EvalQuestion, predicted: string | null): Record<string, unknown> {
  return {
    name: `eval ${q.id} grading`,
    prompt: GRADING_PROMPT.replace('{question}', () => q.question).replace('{gold}', () => q.answer).replace('{predicted}', () => predicted ?? '(no answer)'),
    tools: [],
    limits: { max_steps: 4 },
    outputs: [{ id: VERDICT_OUTPUT, kind: 'table', columns: [{ name: 'verdict', type: 'string', required: true, description: VERDICTS.join(' | ') }] }],
  };
}

/** A grading task's row read as a verdict: the first of the three words it says. */
export function readVerdict(value: unknown): Verdict | null {
  if (typeof value !== 'string') return null;
  const text = value.toLowerCase().replace(/[\s-]+/g, '_');
  // not_attempted first: "incorrect" is no part of it, but "correct" is part of "incorrect".
  for (const v of ['not_attempted', 'incorrect', 'correct'] as const) if (text.includes(v)) return v;
  return null;
}

/** `exact`: no answer is not attempted; otherwise the normalized answers agree or not (src/domain/value-match.ts). */
export function gradeExact(expected: string, given: string | null, answerType?: AnswerType): Verdict {
  if (given === null || given.trim() === '') return 'not_attempted';
  return answersAgree(expected, given, answerType) ? 'correct' : 'incorrect';
}

/** One item of a run, as results.jsonl holds it. */
export interface EvalResult {
  id: string;
  question: string;
  expected: string;
  answer_type: AnswerType | null;
  /** The answer the task wrote; null when it wrote none. */
  answer: string | null;
  verdict: Verdict;
  /** The task's citation_accuracy (supported / checked cells), null where the server gives none. */
  citation_accuracy: number | null;
  /** Distinct verified sources of the answer rows. */
  verified_sources: number;
  credits: number;
  tokens_in: number;
  tokens_in_cached: number;
  tokens_out: number;
  seconds: number;
  /** Credits of the grading task (`--grader model`), else 0; not in `credits`. */
  grading_credits: number;
  task_id: string | null;
  /** How the task's turn ended (completed, failed, stopped, …), or null when no task ran. */
  outcome: string | null;
  /** Why the item has no answer: the turn's error, or a refused request. */
  error: string | null;
}

/** The columns of results.csv, in order: every field of a result. */
export const RESULT_COLUMNS: (keyof EvalResult)[] = [
  'id', 'question', 'expected', 'answer_type', 'answer', 'verdict', 'citation_accuracy', 'verified_sources', 'credits',
  'tokens_in', 'tokens_in_cached', 'tokens_out', 'seconds', 'grading_credits', 'task_id', 'outcome', 'error',
];

export interface Spread {
  mean: number;
  p50: number;
  p95: number;
  total: number;
}

export interface EvalSummary {
  items: number;
  grader: Grader;
  correct: number;
  incorrect: number;
  not_attempted: number;
  /** correct / items. */
  accuracy: number;
  /** correct / (correct + incorrect): how often an answer given is right; null when none was given. */
  accuracy_attempted: number | null;
  /** not_attempted / items. */
  not_attempted_rate: number;
  /** The mean of the items' citation_accuracy where not null; null when none has one. */
  citation_accuracy: number | null;
  credits: Spread;
  seconds: Spread;
  grading_credits: number;
  tokens_in: number;
  tokens_in_cached: number;
  tokens_out: number;
}

/** The value below which `p` of the sorted values lie (nearest rank). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

function spread(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const total = values.reduce((n, v) => n + v, 0);
  return { mean: round(values.length ? total / values.length : 0), p50: round(percentile(sorted, 0.5)), p95: round(percentile(sorted, 0.95)), total: round(total) };
}

function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}

export function summarize(results: EvalResult[], grader: Grader): EvalSummary {
  const count = (v: Verdict) => results.filter((r) => r.verdict === v).length;
  const correct = count('correct');
  const incorrect = count('incorrect');
  const notAttempted = count('not_attempted');
  const items = results.length;
  const cited = results.flatMap((r) => (r.citation_accuracy === null ? [] : [r.citation_accuracy]));
  const sum = (key: 'tokens_in' | 'tokens_in_cached' | 'tokens_out' | 'grading_credits') => results.reduce((n, r) => n + r[key], 0);
  return {
    items,
    grader,
    correct,
    incorrect,
    not_attempted: notAttempted,
    accuracy: round(items ? correct / items : 0),
    accuracy_attempted: correct + incorrect ? round(correct / (correct + incorrect)) : null,
    not_attempted_rate: round(items ? notAttempted / items : 0),
    citation_accuracy: cited.length ? round(cited.reduce((n, v) => n + v, 0) / cited.length) : null,
    credits: spread(results.map((r) => r.credits)),
    seconds: spread(results.map((r) => r.seconds)),
    grading_credits: round(sum('grading_credits')),
    tokens_in: sum('tokens_in'),
    tokens_in_cached: sum('tokens_in_cached'),
    tokens_out: sum('tokens_out'),
  };
}

function percent(n: number | null): string {
  return n === null ? '-' : `${(n * 100).toFixed(1)}%`;
}

/** The summary as printed on stdout. */
export function summaryText(s: EvalSummary, outDir: string): string {
  const lines: [string, string][] = [
    ['items', `${s.items} (grader: ${s.grader})`],
    ['accuracy', `${percent(s.accuracy)} (${s.correct} correct, ${s.incorrect} incorrect)`],
    ['attempted', `${percent(s.accuracy_attempted)} correct of the answers given`],
    ['not attempted', `${percent(s.not_attempted_rate)} (${s.not_attempted})`],
    ['citations', s.citation_accuracy === null ? '- (no citation_accuracy reported)' : `${percent(s.citation_accuracy)} citation accuracy (mean over items)`],
    ['credits', `p50 ${s.credits.p50} · p95 ${s.credits.p95} · mean ${s.credits.mean} per item · total ${s.credits.total}${s.grading_credits ? ` (+ ${s.grading_credits} grading)` : ''}`],
    ['seconds', `p50 ${s.seconds.p50} · p95 ${s.seconds.p95} · mean ${s.seconds.mean} per item`],
    ['tokens', `${s.tokens_in} in (${s.tokens_in_cached} cached) · ${s.tokens_out} out`],
    ['results', `${outDir}/results.jsonl, results.csv, summary.json`],
  ];
  return fields(lines);
}
