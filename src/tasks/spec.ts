/**
 * The task spec: its schema (served by GET /task/metaprompt and used to validate requests),
 * its defaults, and the checks JSON Schema cannot express. Everything that reads a spec reads
 * the normalized form produced here.
 */
import { Type, type Static } from 'typebox';
import { Cron } from 'croner';
import { compileRecordSchema } from '../outputs/row-validation.js';
import { QuarryError } from '../errors.js';

export const TOOL_NAMES = ['web_search', 'fetch_url', 'read_input', 'run_code'] as const;
export const COLUMN_TYPES = ['string', 'number', 'integer', 'boolean', 'date', 'url', 'json'] as const;
export const OUTPUT_KINDS = ['table', 'report', 'records'] as const;

export const OUTPUT_ID_PATTERN = '^[a-z][a-z0-9_-]{0,63}$';

/** Prompts, messages and instructions: 1-100,000 characters after trimming (decisions §1). */
export const MAX_TEXT_CHARS = 100_000;

/** A free-text field as stored: trimmed, and checked against MAX_TEXT_CHARS (schemas check it is non-blank). */
export function checkedText(value: string, param: string): string {
  const text = value.trim();
  if (text.length > MAX_TEXT_CHARS) throw invalid(param, `must have at most ${MAX_TEXT_CHARS} characters after trimming, got ${text.length}`);
  return text;
}

export const ColumnSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[^_]', description: 'Column name; may not start with "_".' }),
  type: Type.Optional(Type.Union(COLUMN_TYPES.map((t) => Type.Literal(t)), { default: 'string' })),
  required: Type.Optional(Type.Boolean()),
  description: Type.Optional(Type.String({ maxLength: 2000 })),
});

export const OutputSchema = Type.Object({
  id: Type.String({ pattern: OUTPUT_ID_PATTERN, description: '1-64 chars of a-z 0-9 _ -, starting with a letter.' }),
  kind: Type.Union(OUTPUT_KINDS.map((k) => Type.Literal(k))),
  path: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  description: Type.Optional(Type.String({ maxLength: 2000 })),
  columns: Type.Optional(Type.Array(ColumnSchema, { minItems: 1, maxItems: 200 })),
  schema: Type.Optional(Type.Object({}, { description: 'JSON Schema each row of a records output must satisfy.' })),
});

export const TaskSpecSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 200 })),
    type: Type.Optional(Type.Literal('research')),
    prompt: Type.Optional(Type.String({ minLength: 1, pattern: '\\S', description: '1-100,000 characters after trimming.' })),
    outputs: Type.Optional(Type.Array(OutputSchema, { maxItems: 64 })),
    inputs: Type.Optional(
      Type.Array(
        Type.Object({ upload_id: Type.String({ minLength: 1, maxLength: 64 }), name: Type.Optional(Type.String({ maxLength: 256 })) }),
        { maxItems: 100 },
      ),
    ),
    schedule: Type.Optional(
      Type.Union([
        Type.Object({ cron: Type.String({ minLength: 1, maxLength: 120 }), timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) }),
        Type.Null(),
      ]),
    ),
    limits: Type.Optional(
      Type.Object({
        max_steps: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        max_turn_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
        max_credits_per_turn: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
      }),
    ),
    tools: Type.Optional(Type.Array(Type.Union(TOOL_NAMES.map((t) => Type.Literal(t))), { uniqueItems: true })),
  },
  { description: 'A task spec: what to research and which outputs to fill.' },
);

export type TaskSpecInput = Static<typeof TaskSpecSchema>;
export type ColumnType = (typeof COLUMN_TYPES)[number];
export type OutputKind = (typeof OUTPUT_KINDS)[number];
export type ToolName = (typeof TOOL_NAMES)[number];

export interface ColumnDecl {
  name: string;
  type: ColumnType;
  required: boolean;
  description?: string;
}

export interface OutputDecl {
  id: string;
  kind: OutputKind;
  path: string;
  description?: string;
  columns?: ColumnDecl[];
  schema?: Record<string, unknown>;
}

export interface Schedule {
  cron: string;
  timezone: string;
}

export interface TaskLimits {
  max_steps: number;
  max_turn_seconds: number;
  max_credits_per_turn: number;
}

export interface TaskSpec {
  name: string | null;
  type: 'research';
  prompt: string | null;
  outputs: OutputDecl[];
  inputs: { upload_id: string; name?: string }[];
  schedule: Schedule | null;
  limits: TaskLimits;
  tools: ToolName[];
}

export const DEFAULT_LIMITS: TaskLimits = { max_steps: 40, max_turn_seconds: 900, max_credits_per_turn: 50 };
export const DEFAULT_TOOLS: ToolName[] = [...TOOL_NAMES];

const EXTENSION: Record<OutputKind, string> = { table: 'csv', report: 'md', records: 'jsonl' };

/** Fails with a 422 naming `param`; `param` is a dotted path such as `task.outputs[1].id`. */
function invalid(param: string, msg: string): QuarryError {
  return QuarryError.validation(param, `${param} ${msg}`, [{ type: 'value_error', loc: toLoc(param), msg }]);
}

function toLoc(param: string): (string | number)[] {
  const loc: (string | number)[] = ['body'];
  for (const part of param.split('.')) {
    const m = /^([^[]+)((?:\[\d+\])*)$/.exec(part);
    if (!m) { loc.push(part); continue; }
    loc.push(m[1]!);
    for (const idx of m[2]!.matchAll(/\[(\d+)\]/g)) loc.push(Number(idx[1]));
  }
  return loc;
}

export function normalizeOutput(input: Static<typeof OutputSchema>, param: string): OutputDecl {
  const out: OutputDecl = {
    id: input.id,
    kind: input.kind,
    path: input.path ?? `outputs/${input.id}.${EXTENSION[input.kind]}`,
  };
  if (input.description !== undefined) out.description = input.description;
  if (input.kind === 'table') {
    if (!input.columns) throw invalid(`${param}.columns`, 'is required for a table output');
    const seen = new Set<string>();
    out.columns = input.columns.map((c, i) => {
      if (seen.has(c.name)) throw invalid(`${param}.columns[${i}].name`, `repeats the column name "${c.name}"`);
      seen.add(c.name);
      const col: ColumnDecl = { name: c.name, type: c.type ?? 'string', required: c.required ?? false };
      if (c.description !== undefined) col.description = c.description;
      return col;
    });
  } else if (input.columns) {
    throw invalid(`${param}.columns`, `is only allowed on table outputs, not ${input.kind}`);
  }
  if (input.schema !== undefined) {
    if (input.kind !== 'records') throw invalid(`${param}.schema`, `is only allowed on records outputs, not ${input.kind}`);
    const schema = input.schema as Record<string, unknown>;
    const problem = compileRecordSchema(schema).error;
    if (problem) throw invalid(`${param}.schema`, `is not a valid JSON Schema: ${problem}`);
    out.schema = schema;
  }
  return out;
}

export function normalizeOutputs(inputs: Static<typeof OutputSchema>[], param: string): OutputDecl[] {
  const seen = new Set<string>();
  return inputs.map((o, i) => {
    if (seen.has(o.id)) throw invalid(`${param}[${i}].id`, `repeats the output id "${o.id}"`);
    seen.add(o.id);
    return normalizeOutput(o, `${param}[${i}]`);
  });
}

/** Checks a cron schedule and fills in its default timezone. */
export function normalizeSchedule(input: { cron: string; timezone?: string }, param: string): Schedule {
  const timezone = input.timezone ?? 'UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw invalid(`${param}.timezone`, `is not a known IANA time zone: "${timezone}"`);
  }
  const fields = input.cron.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) throw invalid(`${param}.cron`, `must have 5 fields (or 6 with leading seconds), got ${fields}`);
  try {
    new Cron(input.cron, { timezone, paused: true });
  } catch (err) {
    throw invalid(`${param}.cron`, `is not a valid cron expression: ${(err as Error).message}`);
  }
  return { cron: input.cron.trim(), timezone };
}

/** Next run time of a schedule after `from`, or null when the expression never fires again. */
export function nextCronRun(schedule: Schedule, from: Date): Date | null {
  return new Cron(schedule.cron, { timezone: schedule.timezone, paused: true }).nextRun(from);
}

/** Turns a validated request spec into the stored form, filling every default. `param` prefixes error paths. */
export function normalizeSpec(input: TaskSpecInput, param = 'task'): TaskSpec {
  return {
    name: input.name ?? null,
    type: 'research',
    prompt: input.prompt === undefined ? null : checkedText(input.prompt, `${param}.prompt`),
    outputs: normalizeOutputs(input.outputs ?? [], `${param}.outputs`),
    inputs: (input.inputs ?? []).map((i) => ({ ...i })),
    schedule: input.schedule ? normalizeSchedule(input.schedule, `${param}.schedule`) : null,
    limits: { ...DEFAULT_LIMITS, ...input.limits },
    tools: input.tools ? [...input.tools] : [...DEFAULT_TOOLS],
  };
}

export function emptySpec(prompt: string | null): TaskSpec {
  return normalizeSpec({ ...(prompt ? { prompt } : {}) });
}
