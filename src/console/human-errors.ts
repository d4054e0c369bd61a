/**
 * A refused field as a sentence a person reads: "Output 1 needs at least one column." rather
 * than the validator's `task.outputs[0].columns must NOT have fewer than 1 items`. Built from the
 * error's `detail` (its `loc` and `type`), never from its message text. Plain TypeScript, so that
 * tests run it without a browser.
 */

export interface FieldProblem {
  type: string;
  loc: (string | number)[];
  msg: string;
}

/** What the console's forms call the fields a person fills in. */
const FIELD_NAMES: Record<string, string> = {
  prompt: 'the prompt',
  name: 'the name',
  message: 'the message',
  instruction: 'the instruction',
  columns: 'columns',
  outputs: 'outputs',
  id: 'id',
  kind: 'kind',
  description: 'description',
  input_columns: 'input columns',
  inputs: 'inputs',
  max_parallel: 'runs at once',
  max_credits: 'the credit cap',
  citations: 'the citation mode',
  url: 'the URL',
  events: 'the events',
  schedule: 'the schedule',
  cron: 'the cron expression',
};

/** `['body','task','outputs',0,'columns',2,'name']` → `Output 1, column 3: name`. */
function fieldOf(loc: (string | number)[]): string {
  const parts: string[] = [];
  let last = '';
  // The body, and a spec sent under `task`, are where every field is: they name nothing.
  for (const part of loc.slice(1)) {
    if (part === 'task' && parts.length === 0) continue;
    if (typeof part === 'number') {
      const noun = last === 'outputs' ? 'output' : last === 'columns' || last === 'input_columns' ? 'column' : last === 'inputs' ? 'input' : 'item';
      parts.pop();
      parts.push(`${noun} ${part + 1}`);
    } else {
      parts.push(FIELD_NAMES[part] ?? part.replace(/_/g, ' '));
    }
    last = String(part);
  }
  const text = parts.join(', ') || 'the request';
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The number a validator's message names (`must NOT have fewer than 1 items` → 1). */
function countIn(msg: string): number | undefined {
  const m = /(\d+)/.exec(msg);
  return m ? Number(m[1]) : undefined;
}

function plural(n: number | undefined, noun: string): string {
  if (n === undefined) return `more ${noun}s`;
  return `${n === 1 ? 'one' : n} ${noun}${n === 1 ? '' : 's'}`;
}

/** What is wrong with the field, by the problem's type. */
function problemOf(p: FieldProblem, itemNoun: string): string {
  const n = countIn(p.msg);
  switch (p.type) {
    case 'missing': return 'is required.';
    case 'too_short': return `needs at least ${plural(n, itemNoun)}.`;
    case 'too_long': return `takes at most ${plural(n, itemNoun)}.`;
    case 'string_too_short': return n !== undefined && n <= 1 ? 'is empty: write something here.' : `needs at least ${n} characters.`;
    case 'string_too_long': return `is too long: at most ${n} characters.`;
    case 'string_pattern_mismatch': return p.msg.startsWith('must contain text') ? 'is empty: write something here.' : 'may use only a to z, 0 to 9, _ and -, starting with a letter.';
    case 'greater_than_equal': return `must be at least ${n}.`;
    case 'greater_than': return `must be more than ${n}.`;
    case 'less_than_equal': return `must be at most ${n}.`;
    case 'unique_items': return 'names one thing twice.';
    case 'extra_forbidden': return 'is not a field Quarry knows.';
    default: return `${p.msg}.`;
  }
}

/** The sentence for the first refused field. */
export function fieldSentence(problem: FieldProblem): string {
  const last = problem.loc.at(-1);
  // A list that is too short: say what it needs more of ("Output 1 needs at least one column").
  if ((problem.type === 'too_short' || problem.type === 'too_long') && typeof last === 'string') {
    const noun = last === 'columns' || last === 'input_columns' ? 'column' : last === 'outputs' ? 'output' : last === 'inputs' ? 'input' : last === 'events' ? 'event' : 'item';
    return `${fieldOf(problem.loc.slice(0, -1))} ${problemOf(problem, noun)}`;
  }
  return `${fieldOf(problem.loc)} ${problemOf(problem, 'item')}`;
}
