/**
 * The task spec (decisions §3): as a caller sends it (`TaskSpecInput`, every member optional) and
 * as the server stores and returns it (`TaskSpec`, every default filled in). tasks/spec.ts
 * normalizes the one into the other and checks what JSON Schema cannot.
 */
import { Type, type Static } from 'typebox';
import { component, MAX_CREDITS, Nullable, OUTPUT_ID_PATTERN, Str, StringEnum, Text } from './common.js';

export const TOOL_NAMES = ['web_search', 'fetch_url', 'read_input', 'run_code'] as const;
export const COLUMN_TYPES = ['string', 'number', 'integer', 'boolean', 'date', 'url', 'json'] as const;
export const OUTPUT_KINDS = ['table', 'report', 'records'] as const;

export type ToolName = (typeof TOOL_NAMES)[number];
export type ColumnType = (typeof COLUMN_TYPES)[number];
export type OutputKind = (typeof OUTPUT_KINDS)[number];

const ToolNameSchema = StringEnum([...TOOL_NAMES]);
const ColumnTypeSchema = StringEnum([...COLUMN_TYPES]);
export const OutputKindSchema = StringEnum([...OUTPUT_KINDS], { description: 'table: typed columns; report: {heading, markdown} sections; records: free objects.' });
const ColumnName = Str({ minLength: 1, maxLength: 64, pattern: '^[^_\\u0000][^\\u0000]*$', description: 'Column name; may not start with "_".' });
const OutputId = Type.String({ pattern: OUTPUT_ID_PATTERN, description: '1-64 chars of a-z 0-9 _ -, starting with a letter.' });
const RecordSchema = Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Schema each row of a records output must satisfy.' });
const SpecInput = Type.Object({ upload_id: Str({ minLength: 1, maxLength: 64 }), name: Type.Optional(Str({ maxLength: 256 })) });

/** A table's row identity (decisions §19): a row written with a key already in the output replaces that row. */
const KeyColumns = Type.Array(Str({ minLength: 1, maxLength: 64 }), {
  minItems: 1, maxItems: 8, uniqueItems: true,
  description: 'Table outputs only: the required columns that identify a row; a row written again with the same key updates that row in place.',
});

export const ColumnInput = Type.Object({
  name: ColumnName,
  type: Type.Optional(ColumnTypeSchema),
  required: Type.Optional(Type.Boolean()),
  description: Type.Optional(Str({ maxLength: 2000 })),
});

export type ColumnInput = Static<typeof ColumnInput>;

export const OutputInput = Type.Object({
  id: OutputId,
  kind: OutputKindSchema,
  path: Type.Optional(Str({ minLength: 1, maxLength: 256 })),
  description: Type.Optional(Str({ maxLength: 2000 })),
  columns: Type.Optional(Type.Array(ColumnInput, { minItems: 1, maxItems: 200 })),
  key: Type.Optional(KeyColumns),
  schema: Type.Optional(RecordSchema),
});
export type OutputInput = Static<typeof OutputInput>;

/** How citations are held to what was read (decisions §15.1). */
export const CITATION_MODES = ['flag', 'require_verified', 'require_supported'] as const;
export type CitationMode = (typeof CITATION_MODES)[number];
const CitationsSchema = StringEnum([...CITATION_MODES], {
  description: 'flag (default): rows are stored and unverified sources marked; require_verified: a row without a verified source, or with a source whose quote was not found or that was never read, is refused back to the agent; require_supported: as require_verified, and a row with an unsupported cell (a value no quote checked for it holds) is refused too.',
});
/** Domains in a source policy, include and exclude together. */
export const MAX_POLICY_DOMAINS = 200;
const Domain = Str({ minLength: 1, maxLength: 253, description: 'A domain name such as example.com; it covers its subdomains.' });
export const SourcePolicyInput = Type.Object({
  include_domains: Type.Optional(Type.Array(Domain, { maxItems: MAX_POLICY_DOMAINS, description: 'Only these domains (and their subdomains) are searched, fetched and accepted as sources.' })),
  exclude_domains: Type.Optional(Type.Array(Domain, { maxItems: MAX_POLICY_DOMAINS, description: 'These domains (and their subdomains) are never searched, fetched or accepted as sources.' })),
});
export const SourcePolicy = Type.Object({ include_domains: Type.Array(Type.String()), exclude_domains: Type.Array(Type.String()) });
export type SourcePolicy = Static<typeof SourcePolicy>;

export const ScheduleInput = Type.Object({ cron: Str({ minLength: 1, maxLength: 120 }), timezone: Type.Optional(Str({ minLength: 1, maxLength: 64 })) });

export const TaskSpecInput = component('TaskSpecInput', Type.Object(
  {
    name: Type.Optional(Str({ maxLength: 200 })),
    type: Type.Optional(Type.Literal('research')),
    prompt: Type.Optional(Text('1-100,000 characters after trimming.')),
    outputs: Type.Optional(Type.Array(OutputInput, { maxItems: 64 })),
    inputs: Type.Optional(Type.Array(SpecInput, { maxItems: 100 })),
    schedule: Type.Optional(Nullable(ScheduleInput)),
    limits: Type.Optional(
      Type.Object({
        max_steps: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        max_turn_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
        max_credits_per_turn: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: MAX_CREDITS })),
        max_subagents: Type.Optional(Type.Integer({ minimum: 0, maximum: 32, description: 'Tasks one research call may run as sub-researchers; 0 removes the research tool.' })),
        max_subagent_steps: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Steps one sub-researcher may take.' })),
      }),
    ),
    tools: Type.Optional(Type.Array(ToolNameSchema, { uniqueItems: true })),
    citations: Type.Optional(CitationsSchema),
    sources: Type.Optional(SourcePolicyInput),
    input_columns: Type.Optional(Type.Array(ColumnInput, { minItems: 1, maxItems: 200, description: 'A group\'s spec only (POST /group): the columns every input has, declared as table columns are.' })),
  },
  { description: 'A task spec: what to research and which outputs to fill.' },
));
export type TaskSpecInput = Static<typeof TaskSpecInput>;

export const ColumnDecl = Type.Object({
  name: Type.String(),
  type: ColumnTypeSchema,
  required: Type.Boolean(),
  description: Type.Optional(Type.String()),
});
export type ColumnDecl = Static<typeof ColumnDecl>;

export const OutputDecl = Type.Object({
  id: Type.String(),
  kind: OutputKindSchema,
  path: Type.String(),
  description: Type.Optional(Type.String()),
  columns: Type.Optional(Type.Array(ColumnDecl)),
  key: Type.Optional(Type.Array(Type.String())),
  schema: Type.Optional(RecordSchema),
});
export type OutputDecl = Static<typeof OutputDecl>;

export const Schedule = Type.Object({ cron: Type.String(), timezone: Type.String() });
export type Schedule = Static<typeof Schedule>;

export const TaskLimits = Type.Object({
  max_steps: Type.Integer(), max_turn_seconds: Type.Integer(), max_credits_per_turn: Type.Number(), max_subagents: Type.Integer(), max_subagent_steps: Type.Integer(),
});
export type TaskLimits = Static<typeof TaskLimits>;

export const TaskSpec = component('TaskSpec', Type.Object({
  name: Nullable(Type.String()),
  type: Type.Literal('research'),
  prompt: Nullable(Type.String()),
  outputs: Type.Array(OutputDecl),
  inputs: Type.Array(SpecInput),
  schedule: Nullable(Schedule),
  limits: TaskLimits,
  tools: Type.Array(ToolNameSchema),
  // Optional: tasks created before these fields existed have neither (they mean flag, and no policy).
  citations: Type.Optional(CitationsSchema),
  sources: Type.Optional(SourcePolicy),
  /** A group's spec (and its runs'): the columns of each input. */
  input_columns: Type.Optional(Type.Array(ColumnDecl)),
}, { description: 'The spec as stored: every default filled in.' }));
export type TaskSpec = Static<typeof TaskSpec>;
