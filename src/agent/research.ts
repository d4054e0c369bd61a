/**
 * The `research` tool's parts that are not the loop itself (decisions §16.2): its arguments, and
 * the view of the turn a sub-researcher works through. The loop (agent-loop.ts) runs the lead and
 * each sub-researcher with the same code; this view is what makes a sub-researcher's work its
 * own: its tool events carry its agent id, its text is not streamed, it writes only to its
 * output, and what it wrote and read is counted for its result.
 */
import type { TaskSpec, TaskWait } from '../contract/index.js';
import type { ReadSource, RowKeys, RowWriter, SubTally, ToolEvent, TurnPort } from './turn-port.js';
import type { RowTally } from '../domain/records.js';

/** A sub-researcher's last answer, as its research call reports it, is cut to this many characters. */
export const SUMMARY_CAP = 4_000;

/** One task of a research call. */
export interface ResearchTask {
  objective: string;
  /** The one output it may write to; absent: any. */
  output?: string;
  context?: string;
}

export const RESEARCH_DESCRIPTION =
  'Hand research objectives to sub-researchers that work at the same time, each with its own fresh context and the research tools, read_source and write_rows. ' +
  'Give each task a self-contained objective (it does not see this conversation), the output it writes to, and any context it needs (names, ids, what is already known). ' +
  'Each writes its rows itself and answers with a summary; you get, per task, its outcome, rows written, verified rows, the source_ids it read and that summary.';

// One schema per task count: the loop's validator compiles each schema object once, and keeps it.
const parametersByMax = new Map<number, object>();

/** The research tool's arguments: 1 to `maxTasks` tasks a call. */
export function researchParameters(maxTasks: number): object {
  let parameters = parametersByMax.get(maxTasks);
  if (!parameters) {
    parameters = schemaFor(maxTasks);
    parametersByMax.set(maxTasks, parameters);
  }
  return parameters;
}

function schemaFor(maxTasks: number): object {
  return {
    type: 'object',
    properties: {
      tasks: {
        type: 'array',
        minItems: 1,
        maxItems: maxTasks,
        items: {
          type: 'object',
          properties: {
            objective: { type: 'string', minLength: 1, maxLength: 4_000, description: 'What to find and write, stated so that it stands on its own.' },
            output: { type: 'string', description: 'Id of the output its rows go to; absent: any output.' },
            context: { type: 'string', maxLength: 20_000, description: 'What it should know to start: names, ids, what is already written.' },
          },
          required: ['objective'],
          additionalProperties: false,
        },
      },
    },
    required: ['tasks'],
    additionalProperties: false,
  };
}

/** The part of the TurnPort an agent's loop uses; steps are stored through the turn's step log. */
export type AgentPort = Omit<TurnPort, 'checkpoint' | 'steps' | 'userMessages' | 'kind' | 'planOnly'>;

/** A sub-researcher's view of the lead's turn. */
export class SubResearcherPort implements AgentPort {
  readonly turnId: string;
  readonly taskId: string;
  readonly offline: boolean;
  readonly signal: AbortSignal;
  private rows: number;
  private verified: number;
  private readonly sources: Set<string>;

  /** `agent`: "<research call_id>/<task index>"; `tally`: what it had done by its last stored step. */
  constructor(private readonly lead: TurnPort, readonly agent: string, private readonly output: string | undefined, tally: SubTally | undefined) {
    // Row writes are keyed by turn, step and call: the agent in the turn id keeps its keys its own.
    this.turnId = `${lead.turnId}/${agent}`;
    this.taskId = lead.taskId;
    this.offline = lead.offline;
    this.signal = lead.signal;
    this.rows = tally?.rows_written ?? 0;
    this.verified = tally?.verified_rows ?? 0;
    this.sources = new Set(tally?.sources);
  }

  tally(): SubTally {
    return { rows_written: this.rows, verified_rows: this.verified, sources: [...this.sources] };
  }

  spec(): TaskSpec {
    const spec = this.lead.spec();
    return this.output === undefined ? spec : { ...spec, outputs: spec.outputs.filter((o) => o.id === this.output) };
  }

  updateSpec(): Promise<void> {
    throw new Error('A sub-researcher cannot change the spec.');
  }

  rowCounts(): Promise<Map<string, number>> {
    return this.lead.rowCounts();
  }

  readRows(outputId: string): AsyncIterable<string> {
    return this.lead.readRows(outputId);
  }

  async appendRows(writeKey: string, outputId: string, rows: RowWriter[], tally?: RowTally, keys?: RowKeys): Promise<{ firstRow: number; count: number }> {
    const written = await this.lead.appendRows(writeKey, outputId, rows, tally, keys);
    this.rows += written.count;
    this.verified += tally?.verified ?? 0;
    return written;
  }

  async recordSource(source: ReadSource): Promise<string> {
    const id = await this.lead.recordSource(source);
    this.sources.add(id);
    return id;
  }

  citedSources(urls: string[], uploadIds: string[]) {
    return this.lead.citedSources(urls, uploadIds);
  }

  source(sourceId: string) {
    return this.lead.source(sourceId);
  }

  inputs() {
    return this.lead.inputs();
  }

  workspaceDir() {
    return this.lead.workspaceDir();
  }

  /** The task's state is the lead's to move: it is executing while its sub-researchers work. */
  async setState(): Promise<void> {}

  /** The task shows what any agent of its turn waits on. */
  waitingOn(wait: TaskWait): () => void {
    return this.lead.waitingOn(wait);
  }

  /** Only the lead's model text is streamed. */
  text(): void {}

  async withdrawText(): Promise<void> {}

  tool(event: ToolEvent): Promise<void> {
    return this.lead.tool({ ...event, agent: this.agent });
  }
}
