/**
 * The self-description served by GET /task/workflow and GET /task/metaprompt: the route map and
 * state machine, and what a caller-side agent needs to write a good spec.
 */
import { COLUMN_TYPES, EVENT_TYPES, OUTPUT_KINDS, ROUTES, TOOL_NAMES, TaskSpecInput } from '../contract/index.js';
import { DEFAULT_LIMITS } from '../domain/spec.js';

/** The route map of the task API, from the contract's route table. */
const ROUTE_MAP = Object.values(ROUTES)
  .filter((route) => route.auth === 'key')
  .map((route) => ({ method: route.method, path: route.url.replace(/:(\w+)/g, '{$1}'), does: route.schema.summary }));

export const WORKFLOW = {
  version: '1.0.0',
  summary: 'Start a task, follow it by stream or polling, send follow-up messages, read its rows.',
  states: {
    status: ['plan', 'execute', 'deleted'],
    phase: ['plan', 'execute'],
    activity: ['idle', 'planning', 'executing', 'thinking'],
    meaning: {
      plan: 'No turn runs (a finished or stopped run reports plan, activity idle).',
      execute: 'A turn is running or waiting for a worker.',
      deleted: 'The task was deleted; only GET /task/{task_id} still shows it.',
    },
  },
  transitions: [
    { from: 'none', trigger: 'POST /task | POST /task/start', to: 'execute', note: 'answers at once with task_id; a prompt plans first, a spec executes' },
    { from: 'execute', trigger: 'POST /task/{task_id}/continue', to: 'execute', note: '202 accepted: queued (up to 16) and taken when the turn ends; 409 task_executing when the queue is full' },
    { from: 'execute', trigger: 'POST /task/{task_id}/execute', to: 'execute', note: 'refused: 409 task_executing (execute is never queued)' },
    { from: 'plan', trigger: 'continue | execute', to: 'execute', note: '402 out_of_credits without credits: nothing starts' },
    { from: 'execute', trigger: 'turn ends | POST /task/{task_id}/stop', to: 'plan', note: 'the next queued message starts, if any' },
    { from: 'any', trigger: 'message to a task in cron mode', to: 'unchanged', note: '409 task_in_cron_mode' },
  ],
  events: {
    kinds: EVENT_TYPES,
    wire: 'id: <seq>\\nevent: <kind>\\ndata: <json>; resume with Last-Event-ID or ?after=',
  },
  polling: 'Wait poll_after_s seconds between polls; GET /task/{task_id}/state is the cheap poll; ?wait=N (0-60) long-polls.',
  retry: 'Retry only when retryable is true: wait retry_after seconds if given, else back off briefly.',
  routes: ROUTE_MAP,
};


const METAPROMPT = `You are writing a task spec for Quarry, a research service. A spec tells Quarry's agent what to find
and the exact shape of the results. Write it as JSON with these parts:

1. "prompt": the research question, self-contained and specific: scope (regions, dates, sizes), what
   counts and what does not, and how thorough to be. The agent sees only this and later messages.
2. "outputs": one or more named outputs. Prefer a "table" whenever the answer is a list of things:
   one row per thing, one column per fact, typed (string, number, integer, boolean, date, url, json).
   Mark a column "required" only when a row is useless without it. Name columns in snake_case and
   add a "description" when a column's meaning or unit could be misread (e.g. "capacity in GWh/year").
   Use a "report" for prose (ordered sections of heading + markdown), and "records" for nested objects
   (optionally with a JSON Schema in "schema").
3. "inputs": uploads the agent should read (get an upload_id from POST /upload-url first).
4. "limits": max_steps, max_turn_seconds, max_credits_per_turn, max_subagents (tasks one research call hands to sub-researchers; 0: none), max_subagent_steps when the defaults do not fit.
5. "schedule": only for work that must repeat: {"cron": "0 7 * * 1", "timezone": "Europe/Berlin"}.

Every row Quarry writes carries "_sources" (url or upload_id, title, quote): ask for facts that can be
cited. Keep one output per kind of thing; if you need a summary too, add a small report output.
After the task runs, read rows from GET /task/{task_id}/output, and send corrections with continue.`;

export function metaprompt() {
  return {
    version: '1.0.0',
    spec_schema: TaskSpecInput,
    output_kinds: {
      table: { rows: 'objects keyed by the declared columns', column_types: COLUMN_TYPES, default_extension: 'csv' },
      report: { rows: 'ordered sections {heading, markdown}', default_extension: 'md' },
      records: { rows: 'free JSON objects, checked against the optional JSON Schema in `schema`', default_extension: 'jsonl' },
    },
    kinds: OUTPUT_KINDS,
    tools: TOOL_NAMES,
    default_limits: DEFAULT_LIMITS,
    reserved_row_fields: { _row: '1-based position', _sources: 'list of {url | upload_id, title?, quote?, fields?}' },
    metaprompt: METAPROMPT,
    example: {
      name: 'EU battery makers',
      prompt: 'Find every company making Li-ion cells in the EU, with plant location and capacity.',
      outputs: [{
        id: 'makers', kind: 'table', description: 'one row per plant',
        columns: [
          { name: 'company', type: 'string', required: true },
          { name: 'country', type: 'string' },
          { name: 'capacity_gwh', type: 'number', description: 'annual capacity in GWh' },
          { name: 'source_url', type: 'url' },
        ],
      }],
    },
  };
}
