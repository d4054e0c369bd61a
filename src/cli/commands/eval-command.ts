/**
 * `quarry eval FILE` (decisions §17.3, docs/eval.md): runs a question set against a running
 * Quarry, one task per question with the server's configured model, grades each answer, and
 * writes the results and a summary. Grading by model is a small task of its own on the same
 * server (no research tools, a one-row verdict), so no credentials beyond the API key are needed.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { QuarryError, type DoneEvent, type ErrorEvent, type QuarryClient, type Row, type TaskEvent } from '../../../packages/client/src/index.js';
import { csvLine } from '../../outputs/export.js';
import { intOption, parseCommand, type CliContext, type Command } from '../context.js';
import { ExitCode, UsageError } from '../exit-codes.js';
import { EvalProgressView } from '../progress-view.js';
import {
  ANSWER_OUTPUT, answerSpec, gradeExact, gradingSpec, readVerdict, RESULT_COLUMNS, summarize, summaryText, VERDICT_OUTPUT,
  type EvalResult, type Grader, type Verdict,
} from '../eval/eval-scoring.js';
import { readQuestionSet, type EvalQuestion } from '../eval/question-set.js';

const DEFAULT_CONCURRENCY = 4;

/** What one finished task left: its answer rows, credits, token counts and how its turn ended. */
interface TaskOutcome {
  taskId: string;
  rows: Row[];
  credits: number;
  done: DoneEvent | undefined;
  error: string | null;
  citationAccuracy: number | null;
}

/** Starts a task from `spec`, waits until its turn ends, and reads what it wrote to `output`. */
async function runTask(client: QuarryClient, spec: Record<string, unknown>, output: string): Promise<TaskOutcome> {
  const task = await client.tasks.start({ task: spec as never });
  await client.tasks.waitForTurn(task);
  const detail = await client.tasks.retrieve(task.task_id);
  const events = [...(detail.events as TaskEvent[])].reverse();
  const done = events.find((e): e is DoneEvent => e.type === 'done');
  const failure = events.find((e): e is ErrorEvent => e.type === 'error');
  const page = await client.tasks.output(task.task_id, { output, limit: 100 }).catch((err: unknown) => {
    // A task that never declared the output (it failed first) has no rows.
    if (err instanceof QuarryError && err.status === 404) return { rows: [] as Row[] };
    throw err;
  });
  // citation_accuracy is read where the server reports it (decisions §17.1).
  const accuracy = (detail as { citation_accuracy?: unknown }).citation_accuracy;
  return {
    taskId: task.task_id,
    rows: page.rows,
    credits: detail.credits_used,
    done,
    error: done && done.outcome !== 'completed' ? (failure ? `${failure.error}: ${failure.message}` : `turn ${done.outcome}`) : null,
    citationAccuracy: typeof accuracy === 'number' ? accuracy : null,
  };
}

/** The answer a task gave: the `answer` cell of its first row with one, or null. */
function answerOf(rows: Row[]): string | null {
  for (const row of rows) {
    const value = (row as Record<string, unknown>).answer;
    if (value !== null && value !== undefined && String(value).trim() !== '') return String(value).trim();
  }
  return null;
}

function verifiedSources(rows: Row[]): number {
  const ids = new Set<string>();
  for (const row of rows) for (const s of row._sources ?? []) if (s.verified) ids.add(s.source_id ?? s.url ?? s.upload_id ?? '');
  return ids.size;
}

/** Errors no other item would escape: the key, the account, the server itself refusing every request. */
function stopsTheRun(err: unknown): boolean {
  return err instanceof QuarryError && (err.status === 401 || err.status === 403);
}

async function evalItem(client: QuarryClient, q: EvalQuestion, grader: Grader): Promise<EvalResult> {
  const started = Date.now();
  const base = { id: q.id, question: q.question, expected: q.answer, answer_type: q.answerType ?? null };
  let outcome: TaskOutcome;
  try {
    outcome = await runTask(client, answerSpec(q), ANSWER_OUTPUT);
  } catch (err) {
    if (stopsTheRun(err)) throw err;
    return {
      ...base, answer: null, verdict: 'not_attempted', citation_accuracy: null, verified_sources: 0, credits: 0, tokens_in: 0, tokens_in_cached: 0, tokens_out: 0,
      seconds: (Date.now() - started) / 1000, grading_credits: 0, task_id: err instanceof QuarryError ? (err.task_id ?? null) : null, outcome: null, error: (err as Error).message,
    };
  }
  const seconds = (Date.now() - started) / 1000;
  const answer = answerOf(outcome.rows);
  let verdict: Verdict;
  let gradingCredits = 0;
  let error = outcome.error;
  if (grader === 'exact' || answer === null) {
    verdict = gradeExact(q.answer, answer, q.answerType);
  } else {
    const grading = await runTask(client, gradingSpec(q, answer), VERDICT_OUTPUT);
    gradingCredits = grading.credits;
    const read = readVerdict((grading.rows[0] as Record<string, unknown> | undefined)?.verdict);
    // A grader that gave no verdict grades nothing: the item counts as not attempted, and says why.
    verdict = read ?? 'not_attempted';
    if (!read) error = `the grading task ${grading.taskId} gave no verdict${grading.error ? ` (${grading.error})` : ''}`;
  }
  return {
    ...base,
    answer,
    verdict,
    citation_accuracy: outcome.citationAccuracy,
    verified_sources: verifiedSources(outcome.rows),
    credits: outcome.credits,
    tokens_in: outcome.done?.tokens_in ?? 0,
    tokens_in_cached: outcome.done?.tokens_in_cached ?? 0,
    tokens_out: outcome.done?.tokens_out ?? 0,
    seconds: Math.round(seconds * 1000) / 1000,
    grading_credits: gradingCredits,
    task_id: outcome.taskId,
    outcome: outcome.done?.outcome ?? null,
    error,
  };
}

/** Runs `work` over `items`, at most `concurrency` at once; results in the items' order. */
async function pooled<T, R>(items: T[], concurrency: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

function defaultOutDir(): string {
  return `eval-${new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}`;
}

export const evalCommand: Command = async (ctx: CliContext, args) => {
  const { values, positionals } = parseCommand(args, {
    limit: { type: 'string', short: 'n' },
    concurrency: { type: 'string', short: 'c' },
    out: { type: 'string', short: 'o' },
    grader: { type: 'string' },
  }, { min: 1, max: 1, names: 'FILE' });
  const file = positionals[0]!;
  const limit = intOption(values.limit, 'limit', { min: 1 });
  const concurrency = intOption(values.concurrency, 'concurrency', { min: 1, max: 64 }) ?? DEFAULT_CONCURRENCY;
  const grader = (values.grader ?? 'exact') as Grader;
  if (grader !== 'exact' && grader !== 'model') throw new UsageError(`--grader must be exact or model, got "${values.grader}"`);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  const questions = readQuestionSet(file, text).slice(0, limit);
  const outDir = values.out ?? defaultOutDir();
  const client = ctx.client();
  await fs.mkdir(outDir, { recursive: true });

  const view = new EvalProgressView((s) => ctx.io.stdout.write(s), ctx.json ? 'json' : ctx.live ? 'live' : 'plain', questions.length, {
    color: ctx.io.env.NO_COLOR === undefined, columns: ctx.io.stdout.columns,
  });
  let results: EvalResult[];
  try {
    results = await pooled(questions, concurrency, async (q) => {
      view.started();
      const result = await evalItem(client, q, grader);
      view.finished(result.verdict, `${result.id}: ${result.verdict.replace('_', ' ')}${result.answer === null ? '' : ` (${JSON.stringify(result.answer.slice(0, 80))})`} · ${result.seconds.toFixed(1)} s${result.error ? ` · ${result.error}` : ''}`);
      return result;
    });
  } finally {
    view.close();
  }

  const summary = summarize(results, grader);
  await fs.writeFile(path.join(outDir, 'results.jsonl'), results.map((r) => `${JSON.stringify(r)}\n`).join(''));
  await fs.writeFile(path.join(outDir, 'results.csv'), [csvLine(RESULT_COLUMNS), ...results.map((r) => csvLine(RESULT_COLUMNS.map((c) => r[c])))].join(''));
  await fs.writeFile(path.join(outDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  if (ctx.json) ctx.printJson(summary);
  else ctx.out(summaryText(summary, outDir));
  return ExitCode.ok;
};
