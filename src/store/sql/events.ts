/** A task's events, numbered gap-free per task by the task service, stored as the JSON streams send. */
import type { Selectable } from 'kysely';
import type { EventsTable } from '../database.js';
import type { EventRecord } from '../../domain/records.js';
import type { EventsRepository, TurnText } from '../store.js';
import { SqlRepository } from './sql-repository.js';

function toEvent(r: Selectable<EventsTable>): EventRecord {
  return { taskId: r.task_id, seq: Number(r.seq), type: r.type, turnId: r.turn_id, data: r.data };
}

export class SqlEvents extends SqlRepository implements EventsRepository {
  async insert(events: EventRecord[]): Promise<void> {
    if (events.length === 0) return;
    const rows = events.map((e) => ({ task_id: e.taskId, seq: e.seq, type: e.type, turn_id: e.turnId, data: e.data }));
    await this.runCompiled(`events.insert:${rows.length}`, rows.flatMap(Object.values), () => this.db.insertInto('events').values(rows));
  }

  async list(taskId: string, afterSeq: number, limit: number): Promise<EventRecord[]> {
    const rows = await this.db.selectFrom('events').selectAll().where('task_id', '=', taskId).where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute();
    return rows.map(toEvent);
  }

  async last(taskId: string, count: number): Promise<EventRecord[]> {
    const rows = await this.db.selectFrom('events').selectAll().where('task_id', '=', taskId).orderBy('seq', 'desc').limit(count).execute();
    return rows.reverse().map(toEvent);
  }

  async turnTexts(taskId: string, turnIds: readonly string[]): Promise<TurnText[]> {
    if (turnIds.length === 0) return [];
    // The task's range of the (task_id, seq) key. Tool events come without their data, which can
    // be long; of the task events, only those that may be a phase_changed (their reason is checked below).
    const rows = await this.db.selectFrom('events')
      .select((eb) => ['turn_id', 'type', eb.case().when('type', '=', 'tool').then(null).else(eb.ref('data')).end().as('data')])
      .where('task_id', '=', taskId).where('turn_id', 'in', turnIds)
      .where((eb) => eb.or([eb('type', 'in', ['text', 'tool']), eb.and([eb('type', '=', 'task'), eb('data', 'like', '%"reason":"phase_changed"%')])]))
      .orderBy('seq').execute();
    const said: TurnText[] = [];
    for (const r of rows) {
      const turnId = r.turn_id!;
      if (r.type === 'tool') {
        said.push({ turnId, kind: 'tool' });
      } else if (r.type === 'text') {
        const { text, restart } = JSON.parse(r.data!) as { text: string; restart?: true };
        said.push({ turnId, kind: 'text', text, ...(restart ? { restart } : {}) });
      } else if ((JSON.parse(r.data!) as { reason: string }).reason === 'phase_changed') {
        said.push({ turnId, kind: 'phase_changed' });
      }
    }
    return said;
  }

  async lastSeqs(streamIds: readonly string[]): Promise<Map<string, number>> {
    const seqs = new Map<string, number>();
    if (streamIds.length === 0) return seqs;
    const rows = await this.db.selectFrom('events').select(['task_id', (eb) => eb.fn.max('seq').as('seq')])
      .where('task_id', 'in', streamIds).groupBy('task_id').execute();
    for (const r of rows) seqs.set(r.task_id, Number(r.seq));
    return seqs;
  }
}
