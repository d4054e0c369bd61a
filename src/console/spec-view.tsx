/**
 * What a task was asked to do, as stored: its outputs and their columns, the citation mode, the
 * source policy, the schedule and the limits. A plan-only task's plan is this spec.
 */
import type { TaskSpec } from './api.js';
import { credits } from './ui.js';

const CITATION_MODES: Record<string, string> = {
  flag: 'flag: every row kept, unverified sources marked',
  require_verified: 'require_verified: rows without a verified source refused',
  require_supported: 'require_supported: rows with a value its quote does not support refused',
};

export function SpecView(props: { spec: TaskSpec }) {
  const { spec } = props;
  const { limits } = spec;
  return (
    <div class="spec">
      {spec.outputs.length === 0 && <p class="hint">No outputs declared yet.</p>}
      {spec.outputs.map((output) => (
        <section key={output.id} class="spec-output" aria-label={`Output ${output.id}`}>
          <p>
            <strong class="mono">{output.id}</strong> <span class="hint">{output.kind}</span>
            {output.description && <> — {output.description}</>}
          </p>
          {output.columns && output.columns.length > 0 && (
            <ul class="spec-columns">
              {output.columns.map((c) => (
                <li key={c.name}>
                  <span class="mono">{c.name}</span> <span class="hint">{c.type}{c.required ? ', required' : ''}</span>
                  {c.description && <span> — {c.description}</span>}
                </li>
              ))}
            </ul>
          )}
        </section>
      ))}
      <dl class="spec-facts">
        <dt>Citations</dt>
        <dd>{CITATION_MODES[spec.citations ?? 'flag'] ?? spec.citations}</dd>
        {spec.input_columns && (
          <>
            <dt>Input columns</dt>
            <dd>{spec.input_columns.map((c) => c.name).join(', ')}</dd>
          </>
        )}
        <dt>Schedule</dt>
        <dd>{spec.schedule ? <><span class="mono">{spec.schedule.cron}</span> ({spec.schedule.timezone})</> : 'none: runs when asked'}</dd>
        <dt>Limits</dt>
        <dd>
          {limits.max_steps} steps, {limits.max_turn_seconds} s and {credits(limits.max_credits_per_turn)} credits a turn;
          {' '}{limits.max_subagents} sub-researchers a call, {limits.max_subagent_steps} steps each
        </dd>
        <dt>Tools</dt>
        <dd>{spec.tools.join(', ') || 'none'}</dd>
        {spec.sources && (spec.sources.include_domains.length > 0 || spec.sources.exclude_domains.length > 0) && (
          <>
            <dt>Sources</dt>
            <dd>
              {spec.sources.include_domains.length > 0 && <>only {spec.sources.include_domains.join(', ')}</>}
              {spec.sources.exclude_domains.length > 0 && <> never {spec.sources.exclude_domains.join(', ')}</>}
            </dd>
          </>
        )}
      </dl>
    </div>
  );
}
