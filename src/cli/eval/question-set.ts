/**
 * The question sets `quarry eval` reads (decisions §17.3): JSON Lines of `{id?, question, answer,
 * answer_type?}`, or CSV with a header row naming the question and answer columns, as our own
 * sets name them (`question`, `answer`) and as public sets do (`problem`/`answer` in SimpleQA,
 * `Prompt`/`Answer` in FRAMES).
 */
import { parse as parseCsv } from 'csv-parse/sync';
import { UsageError } from '../exit-codes.js';

export const ANSWER_TYPES = ['text', 'number', 'date'] as const;
export type AnswerType = (typeof ANSWER_TYPES)[number];

export interface EvalQuestion {
  /** The item's `id`, or its line (JSON Lines) or record (CSV) number, from 1. */
  id: string;
  question: string;
  /** The expected answer. */
  answer: string;
  answerType?: AnswerType;
}

/** Header names read as each field, compared without case. */
const QUESTION_HEADERS = ['question', 'problem', 'prompt'];
const ANSWER_HEADERS = ['answer'];
const ID_HEADERS = ['id'];
const ANSWER_TYPE_HEADERS = ['answer_type'];

/** JSON Lines when the file is named so, or when its first non-blank character opens an object; else CSV. */
export function questionFormat(file: string, text: string): 'jsonl' | 'csv' {
  if (/\.(jsonl|ndjson|json)$/i.test(file)) return 'jsonl';
  if (/\.(csv|tsv)$/i.test(file)) return 'csv';
  return text.trimStart().startsWith('{') ? 'jsonl' : 'csv';
}

export function readQuestionSet(file: string, text: string): EvalQuestion[] {
  const questions = questionFormat(file, text) === 'jsonl' ? fromJsonLines(file, text) : fromCsv(file, text);
  if (questions.length === 0) throw new UsageError(`${file} holds no questions`);
  const seen = new Set<string>();
  for (const q of questions) {
    if (seen.has(q.id)) throw new UsageError(`${file}: id "${q.id}" is used twice; ids name the results`);
    seen.add(q.id);
  }
  return questions;
}

function fromJsonLines(file: string, text: string): EvalQuestion[] {
  const questions: EvalQuestion[] = [];
  for (const [i, line] of text.split(/\r?\n/).entries()) {
    if (line.trim() === '') continue;
    const where = `${file} line ${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw new UsageError(`${where} is not JSON: ${(err as Error).message}`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageError(`${where} must be a JSON object {id?, question, answer, answer_type?}`);
    const item = value as Record<string, unknown>;
    questions.push(checked(where, String(i + 1), { id: item.id, question: item.question, answer: item.answer, answerType: item.answer_type }, true));
  }
  return questions;
}

function fromCsv(file: string, text: string): EvalQuestion[] {
  let records: string[][];
  try {
    records = parseCsv(text, { bom: true, skip_empty_lines: true, relax_column_count: true, delimiter: file.toLowerCase().endsWith('.tsv') ? '\t' : ',' }) as string[][];
  } catch (err) {
    throw new UsageError(`${file} is not CSV: ${(err as Error).message}`);
  }
  const [header, ...rows] = records;
  if (!header) return [];
  const column = (names: string[]) => header.findIndex((h) => names.includes(h.trim().toLowerCase()));
  const q = column(QUESTION_HEADERS);
  const a = column(ANSWER_HEADERS);
  if (q < 0 || a < 0) {
    throw new UsageError(`${file}: the header row needs a question column (question, problem or Prompt) and an answer column (answer); it has ${header.join(', ')}`);
  }
  const id = column(ID_HEADERS);
  const type = column(ANSWER_TYPE_HEADERS);
  return rows.map((row, i) => {
    const answerType = type < 0 ? undefined : row[type]?.trim().toLowerCase();
    // Public sets use answer_type for their own categories: only ours are read, the rest left to the grader.
    const known = ANSWER_TYPES.includes(answerType as AnswerType) ? answerType : undefined;
    return checked(`${file} record ${i + 1}`, String(i + 1), { id: id < 0 || !row[id]?.trim() ? undefined : row[id], question: row[q], answer: row[a], answerType: known }, false);
  });
}

function checked(where: string, position: string, item: { id: unknown; question: unknown; answer: unknown; answerType: unknown }, strictType: boolean): EvalQuestion {
  if (typeof item.question !== 'string' || item.question.trim() === '') throw new UsageError(`${where}: question must be a non-empty string`);
  const answer = typeof item.answer === 'number' ? String(item.answer) : item.answer;
  if (typeof answer !== 'string' || answer.trim() === '') throw new UsageError(`${where}: answer must be a non-empty string (or a number)`);
  if (item.id !== undefined && typeof item.id !== 'string' && typeof item.id !== 'number') throw new UsageError(`${where}: id must be a string or a number`);
  if (strictType && item.answerType !== undefined && !ANSWER_TYPES.includes(item.answerType as AnswerType)) {
    throw new UsageError(`${where}: answer_type must be one of ${ANSWER_TYPES.join(', ')}`);
  }
  return {
    id: item.id === undefined ? position : String(item.id),
    question: item.question.trim(),
    answer: answer.trim(),
    ...(item.answerType === undefined ? {} : { answerType: item.answerType as AnswerType }),
  };
}
