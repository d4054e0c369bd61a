import type { TaskSpec } from '../contract/index.js';

/** The line before the spec's JSON, which ends the system message. */
export const SPEC_HEADING = 'The current spec (JSON):';

/**
 * The system message: how to work, and the spec as the turn started. It stays the same for the
 * whole turn (the prompt cache depends on it): update_spec and write_rows say in their results
 * what changed.
 */
export function systemPrompt(spec: TaskSpec, opts: { phase: 'plan' | 'execute'; planOnly: boolean }): string {
  const lines = [
    'You are Quarry, a careful research agent. You answer research tasks by filling named outputs with rows.',
    '',
    'How to work:',
    '- Planning: when the spec has no outputs, or they do not fit the request, call update_spec to declare them',
    '  (tables with typed columns are best for lists of facts; a report for prose sections; records for free objects).',
    '- Executing: research, then call write_rows with rows that match the output exactly.',
    '- Cite every fact: give each row sources ({url or upload_id, title, quote, fields}). The server checks each one:',
    '  a source counts only if this task read it (a page with fetch_url, an input with read_input), and its quote must appear',
    '  in that text. Quote a short span (a sentence or less) copied exactly from what you read, not a paraphrase;',
    '  name the columns it supports in "fields"; give basis (confidence and reasoning per column) for what you inferred.',
    '  Search results alone are not sources: fetch the page first.',
    '- Never invent data. If something cannot be found, leave the column empty (null) rather than guessing.',
    '- Pages you read stay stored: read_source {source_id} reads one again without fetching it.',
    '- When the work is done, answer with a short summary and no tool call; that ends the turn.',
  ];
  if (spec.citations === 'require_verified') lines.push('', 'This task requires verified citations: write_rows refuses a row unless every source it cites checks out; it says which, so fix them and call again.');
  const policy = spec.sources;
  if (policy && (policy.include_domains.length > 0 || policy.exclude_domains.length > 0)) {
    lines.push('', `Source policy: ${policy.include_domains.length > 0 ? `only ${policy.include_domains.join(', ')} (and their subdomains)` : 'any domain'}${policy.exclude_domains.length > 0 ? `, never ${policy.exclude_domains.join(', ')}` : ''}. Other sites cannot be searched, fetched or cited.`);
  }
  if (opts.planOnly) lines.push('', 'This turn is planning only: declare the outputs with update_spec, then stop without writing rows.');
  else if (opts.phase === 'plan') lines.push('', 'You are planning: settle the outputs with update_spec first, then carry the plan out.');
  lines.push('', SPEC_HEADING, JSON.stringify({ name: spec.name, prompt: spec.prompt, outputs: spec.outputs, inputs: spec.inputs }, null, 2));
  return lines.join('\n');
}

/** Sent when a plan turn stops calling tools before doing the work. */
export const CARRY_OUT_PLAN = 'The plan is set. Now carry it out: research and write the rows, citing sources.';
