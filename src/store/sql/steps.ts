/** A turn's agent checkpoints: what a resumed turn replays instead of redoing. */
import type { StepsRepository } from '../store.js';
import { SqlRepository } from './sql-repository.js';

export class SqlSteps extends SqlRepository implements StepsRepository {
  async insert(turnId: string, step: number, data: string, at: string): Promise<boolean> {
    // The primary key (turn_id, step) decides: one index probe, however many steps the turn has.
    const inserted = await this.db
      .insertInto('turn_steps')
      .values({ turn_id: turnId, step, data, created_at: at })
      .onConflict((oc) => oc.columns(['turn_id', 'step']).doNothing())
      .returning('step')
      .executeTakeFirst();
    return inserted !== undefined;
  }

  async get(turnId: string, step: number): Promise<string | undefined> {
    const row = await this.db.selectFrom('turn_steps').select('data').where('turn_id', '=', turnId).where('step', '=', step).executeTakeFirst();
    return row?.data;
  }

  async list(turnId: string): Promise<{ step: number; data: string }[]> {
    const rows = await this.db.selectFrom('turn_steps').select(['step', 'data']).where('turn_id', '=', turnId).orderBy('step').execute();
    return rows.map((r) => ({ step: Number(r.step), data: r.data }));
  }
}
