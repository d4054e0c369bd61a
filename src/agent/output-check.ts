/**
 * Finishing well (docs/agent.md): before a turn ends, what its outputs still lack, as the one
 * message the lead gets to fix it: outputs with no rows, required columns left null, rows with
 * no verified source.
 */
import type { TaskSpec } from '../contract/index.js';

/** The first line of the message: how a model (the demo model) knows it. */
export const GAPS_HEADING = 'Before you finish, check what the outputs still lack:';

/** Items listed by name; the rest are counted. */
export const GAPS_LISTED = 20;

/** The message listing what the outputs lack, or null when they lack nothing. */
export async function outputGaps(spec: TaskSpec, readRows: (outputId: string) => AsyncIterable<string>): Promise<string | null> {
  const listed: string[] = [];
  let more = 0;
  const gap = (item: string) => {
    if (listed.length < GAPS_LISTED) listed.push(`- ${item}`);
    else more++;
  };
  for (const output of spec.outputs) {
    const required = (output.columns ?? []).filter((c) => c.required).map((c) => c.name);
    let count = 0;
    for await (const stored of readRows(output.id)) {
      count++;
      const row = JSON.parse(stored) as Record<string, unknown>;
      const label = `${output.id} row ${typeof row._row === 'number' ? row._row : count}`;
      const empty = required.filter((name) => row[name] === null || row[name] === undefined);
      if (empty.length > 0) gap(`${label}: required ${empty.length === 1 ? 'column' : 'columns'} ${empty.map((n) => `"${n}"`).join(', ')} left empty`);
      const sources: unknown[] = Array.isArray(row._sources) ? row._sources : [];
      if (!sources.some((s) => (s as { verified?: unknown } | null)?.verified === true)) gap(`${label}: no verified source`);
    }
    if (count === 0) gap(`${output.id}: no rows`);
  }
  if (listed.length === 0) return null;
  return [
    GAPS_HEADING,
    ...listed,
    ...(more > 0 ? [`… and ${more} more.`] : []),
    'Fill what you can: research it, then write the missing or corrected rows with write_rows, citing pages you read. ' +
      'What cannot be found may stay as it is: say so in your summary. Then answer with a short summary and no tool call.',
  ].join('\n');
}
