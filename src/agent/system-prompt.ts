import type { TaskSpec } from '../contract/index.js';

/** The line before the spec's JSON, which ends the system message. */
export const SPEC_HEADING = 'The current spec (JSON):';

/** How to cite, for the lead and its sub-researchers alike. */
const CITATION_RULES = [
  '- Cite every fact: give each row sources ({url or upload_id, title, quote, fields}). The server checks each one:',
  '  a source counts only if this task read it (a page with fetch_url, an input with read_input), and its quote must appear',
  '  in that text. Quote a short span (a sentence or less) copied exactly from what you read, not a paraphrase;',
  '  name the columns it supports in "fields"; give basis (confidence and reasoning per column) for what you inferred.',
  '  Search results alone are not sources: fetch the page first.',
  '- Never invent data. If something cannot be found, leave the column empty (null) rather than guessing.',
  '- Pages you read stay stored: read_source {source_id} reads one again without fetching it.',
];

/** The spec's citation mode and source policy, as lines of a system message. */
function sourceRules(spec: TaskSpec): string[] {
  const lines: string[] = [];
  if (spec.citations === 'require_verified') lines.push('', 'This task requires verified citations: write_rows refuses a row unless every source it cites checks out; it says which, so fix them and call again.');
  const policy = spec.sources;
  if (policy && (policy.include_domains.length > 0 || policy.exclude_domains.length > 0)) {
    lines.push('', `Source policy: ${policy.include_domains.length > 0 ? `only ${policy.include_domains.join(', ')} (and their subdomains)` : 'any domain'}${policy.exclude_domains.length > 0 ? `, never ${policy.exclude_domains.join(', ')}` : ''}. Other sites cannot be searched, fetched or cited.`);
  }
  return lines;
}

/**
 * The system message: how to work, and the spec as the turn started. It stays the same for the
 * whole turn (the prompt cache depends on it): update_spec and write_rows say in their results
 * what changed.
 */
/** Said to every agent of an offline turn (decisions §17.2), which otherwise would try to search. */
const OFFLINE_RULES = [
  '',
  'This turn is offline: there is no web search, and fetch_url reads only pages this task fetched before (from their stored snapshots).',
  'Work from those pages, the inputs and read_source; cite them as before.',
];

export function systemPrompt(spec: TaskSpec, opts: { phase: 'plan' | 'execute'; planOnly: boolean; offline: boolean }): string {
  const lines = [
    'You are Quarry, a careful research agent. You answer research tasks by filling named outputs with rows.',
    '',
    'How to work:',
    '- Planning: when the spec has no outputs, or they do not fit the request, call update_spec to declare them',
    '  (tables with typed columns are best for lists of facts; a report for prose sections; records for free objects).',
    '- Executing: research, then call write_rows with rows that match the output exactly.',
    ...CITATION_RULES,
    '- When the work is done, answer with a short summary and no tool call; that ends the turn.',
  ];
  lines.push(...sourceRules(spec));
  if (opts.offline) lines.push(...OFFLINE_RULES);
  if (opts.planOnly) lines.push('', 'This turn is planning only: declare the outputs with update_spec, then stop without writing rows.');
  else if (opts.phase === 'plan') lines.push('', 'You are planning: settle the outputs with update_spec first, then carry the plan out.');
  lines.push('', SPEC_HEADING, JSON.stringify({ name: spec.name, prompt: spec.prompt, outputs: spec.outputs, inputs: spec.inputs }, null, 2));
  return lines.join('\n');
}

/** Sent when a plan turn stops calling tools before doing the work. */
export const CARRY_OUT_PLAN = 'The plan is set. Now carry it out: research and write the rows, citing sources.';

/**
 * A sub-researcher's system message (decisions §16.2): its objective, the outputs it may write to
 * (`spec` holds only those), and the same citation rules and source policy as the lead's. It never
 * sees the lead's conversation: what it needs comes in its objective and context.
 */
export function subResearcherPrompt(spec: TaskSpec, objective: string, offline: boolean): string {
  const lines = [
    'You are a Quarry sub-researcher. A lead researcher gave you one objective: research it and write what you find as rows.',
    '',
    `Your objective: ${objective}`,
    '',
    'How to work:',
    '- Research with your tools, then call write_rows with rows that match the output exactly.',
    ...CITATION_RULES,
    '- Keep to your objective. When it is done (or cannot be done), answer with a short summary and no tool call:',
    '  what you found, what you wrote where, and what is still open. That answer is all the lead gets back.',
    ...sourceRules(spec),
    ...(offline ? OFFLINE_RULES : []),
    '',
    'The outputs you may write to (JSON):',
    JSON.stringify(spec.outputs, null, 2),
  ];
  return lines.join('\n');
}

/** A sub-researcher's one user message: its objective, and what the lead gave it to go on. */
export function subResearcherMessage(objective: string, context: string | undefined): string {
  return context ? `${objective}\n\nContext from the lead researcher:\n${context}` : objective;
}
