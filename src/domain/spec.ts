/**
 * The task spec: its schema (served by GET /task/metaprompt and used to validate requests),
 * its defaults, and the checks JSON Schema cannot express. Everything that reads a spec reads
 * the normalized form produced here.
 */
import { Cron } from 'croner';
import { compileRecordSchema, freeJsonProblem } from './row-validation.js';
import { QuarryError } from '../errors.js';
import {
  charactersOver, MAX_POLICY_DOMAINS, MAX_TEXT_CHARS, NUL_PROBLEM, TOOL_NAMES,
  type ColumnDecl, type ColumnInput, type OutputDecl, type OutputInput, type Schedule, type SourcePolicy, type TaskLimits, type TaskSpec, type TaskSpecInput, type ToolName,
} from '../contract/index.js';
import { normalizeDomain } from '../net/domain-policy.js';

/**
 * A free-text field as stored: trimmed, at most MAX_TEXT_CHARS characters (code points, as the
 * schemas count them), and without NUL (see NO_NUL_PATTERN). Schemas check it is non-blank.
 */
export function checkedText(value: string, param: string): string {
  const text = value.trim();
  const chars = charactersOver(text, MAX_TEXT_CHARS);
  if (chars !== null) throw invalid(param, `must have at most ${MAX_TEXT_CHARS} characters after trimming, got ${chars}`);
  if (text.includes('\u0000')) throw invalid(param, NUL_PROBLEM);
  return text;
}

export const DEFAULT_LIMITS: TaskLimits = { max_steps: 40, max_turn_seconds: 900, max_credits_per_turn: 50, max_subagents: 8, max_subagent_steps: 20 };
export const DEFAULT_TOOLS: ToolName[] = [...TOOL_NAMES];

/**
 * A spec as stored: limits added since it was stored (max_subagents, max_subagent_steps) read as
 * their defaults, as a spec created now would have them.
 */
export function storedSpec(spec: TaskSpec): TaskSpec {
  return { ...spec, limits: { ...DEFAULT_LIMITS, ...spec.limits } };
}

const EXTENSION: Record<OutputDecl['kind'], string> = { table: 'csv', report: 'md', records: 'jsonl' };

/** Fails with a 422 naming `param`; `param` is a dotted path such as `task.outputs[1].id`. */
export function invalid(param: string, msg: string): QuarryError {
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

export function normalizeOutput(input: OutputInput, param: string): OutputDecl {
  const out: OutputDecl = {
    id: input.id,
    kind: input.kind,
    path: input.path ?? `outputs/${input.id}.${EXTENSION[input.kind]}`,
  };
  if (input.description !== undefined) out.description = input.description;
  if (input.kind === 'table') {
    if (!input.columns) throw invalid(`${param}.columns`, 'is required for a table output');
    out.columns = normalizeColumns(input.columns, `${param}.columns`);
    if (input.key) out.key = checkedKey(input.key, out.columns, `${param}.key`);
  } else if (input.columns) {
    throw invalid(`${param}.columns`, `is only allowed on table outputs, not ${input.kind}`);
  }
  if (input.key && input.kind !== 'table') throw invalid(`${param}.key`, `is only allowed on table outputs, not ${input.kind}`);
  if (input.schema !== undefined) {
    if (input.kind !== 'records') throw invalid(`${param}.schema`, `is only allowed on records outputs, not ${input.kind}`);
    const schema = input.schema as Record<string, unknown>;
    // Before anything walks it recursively (compiling it does): bounded depth, no NUL, finite numbers.
    const unfit = freeJsonProblem(schema);
    if (unfit) throw invalid(`${param}.schema`, unfit);
    const problem = compileRecordSchema(schema).error;
    if (problem) throw invalid(`${param}.schema`, `is not a valid JSON Schema: ${problem}`);
    out.schema = schema;
  }
  return out;
}

/** A table's key: declared columns, each `required` (a row without its key could not be matched). */
function checkedKey(key: string[], columns: ColumnDecl[], param: string): string[] {
  key.forEach((name, i) => {
    const column = columns.find((c) => c.name === name);
    if (!column) throw invalid(`${param}[${i}]`, `names no declared column: "${name}"`);
    if (!column.required) throw invalid(`${param}[${i}]`, `names the column "${name}", which must be declared "required": true to be part of the key`);
  });
  return [...key];
}

/** Table columns (or a group's input columns) with their defaults; a repeated name is refused. */
function normalizeColumns(columns: ColumnInput[], param: string): ColumnDecl[] {
  const seen = new Set<string>();
  return columns.map((c, i) => {
    if (seen.has(c.name)) throw invalid(`${param}[${i}].name`, `repeats the column name "${c.name}"`);
    seen.add(c.name);
    const col: ColumnDecl = { name: c.name, type: c.type ?? 'string', required: c.required ?? false };
    if (c.description !== undefined) col.description = c.description;
    return col;
  });
}

export function normalizeOutputs(inputs: OutputInput[], param: string): OutputDecl[] {
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
    citations: input.citations ?? 'flag',
    sources: normalizeSourcePolicy(input.sources ?? {}, `${param}.sources`),
    ...(input.input_columns ? { input_columns: normalizeColumns(input.input_columns, `${param}.input_columns`) } : {}),
  };
}

/** A host name's letters, digits, hyphens and dots (an IDN in its xn-- form). */
const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** Domains lower-cased and deduplicated; each must be a host name; at most MAX_POLICY_DOMAINS in all. */
function normalizeSourcePolicy(input: { include_domains?: string[]; exclude_domains?: string[] }, param: string): SourcePolicy {
  const list = (key: 'include_domains' | 'exclude_domains') => {
    const domains = (input[key] ?? []).map((raw, i) => {
      const domain = normalizeDomain(raw);
      if (!DOMAIN.test(domain)) throw invalid(`${param}.${key}[${i}]`, `must be a domain name such as example.com, got ${JSON.stringify(raw)}`);
      return domain;
    });
    return [...new Set(domains)];
  };
  const policy = { include_domains: list('include_domains'), exclude_domains: list('exclude_domains') };
  const total = policy.include_domains.length + policy.exclude_domains.length;
  if (total > MAX_POLICY_DOMAINS) throw invalid(param, `may name at most ${MAX_POLICY_DOMAINS} domains in all, got ${total}`);
  return policy;
}

export function emptySpec(prompt: string | null): TaskSpec {
  return normalizeSpec({ ...(prompt ? { prompt } : {}) });
}
