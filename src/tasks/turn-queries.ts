/**
 * What a claimed turn reads of its task besides the task record: its checkpointed steps, the
 * user messages it answers, the row counts of the task's outputs.
 */
import type { StoredStep } from '../agent/turn-port.js';
import type { TurnRecord } from '../domain/records.js';
import type { Store } from '../store/store.js';

export class TurnQueries {
  constructor(private readonly store: Store) {}

  /** The turn's checkpointed steps, in order (a resumed turn replays them). */
  async steps(turnId: string): Promise<StoredStep[]> {
    return (await this.store.steps.list(turnId)).map((s) => JSON.parse(s.data) as StoredStep);
  }

  /** The messages and instructions given to the task up to and including `turn`'s. */
  inputs(turn: Pick<TurnRecord, 'id' | 'taskId'>): Promise<string[]> {
    return this.store.turns.listInputs(turn.taskId, turn.id);
  }

  /** Up to `limit` rows of an output after row `offset`, as stored. */
  async rows(taskId: string, outputId: string, offset: number, limit: number): Promise<string[]> {
    return (await this.store.rows.read(taskId, outputId, offset, limit)).map((row) => row.toString());
  }

  /** The group's id when it caps its spend (max_credits): its runs' model calls are then budgeted (decisions §18). */
  async cappedGroup(groupId: string): Promise<string | undefined> {
    const group = await this.store.groups.get(groupId);
    return group?.maxCreditsMicros != null ? group.id : undefined;
  }

  /** Rows written so far, by output id. */
  async rowCounts(taskId: string): Promise<Map<string, number>> {
    return new Map((await this.store.rows.stats(taskId)).map((o) => [o.outputId, o.rowCount]));
  }
}
