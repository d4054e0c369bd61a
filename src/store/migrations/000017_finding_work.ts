import { sql, type Kysely } from 'kysely';

/**
 * Finding and following work (decisions §20).
 *
 * `tasks.last_turn` (the last ended turn, the JSON of records.ts's LastTurnRecord) and
 * `tasks.last_outcome` (its outcome, for the list's filter) are written by the change that ends
 * a turn, so the Task body and the list read no turn. `tasks.prompt` is the spec's prompt, kept
 * beside `name` for the list's text search without parsing every spec. Existing tasks take
 * them from their spec and their last ended turn.
 *
 * The list index of single tasks also holds state, outcome and creation time, so a filtered page
 * is read from the index alone, in the list's order; two more indexes lead with the state and
 * the outcome, so a page of the few running or failed tasks of a large account starts where they
 * are instead of walking every task (docs/performance.md has the figures).
 *
 * `webhook_attempts`: each attempt to send a delivery, as it happens (at most one per retry
 * schedule step and redelivery; deleted with its delivery).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('tasks').addColumn('last_turn', 'text').execute();
  await db.schema.alterTable('tasks').addColumn('last_outcome', 'text').execute();
  await db.schema.alterTable('tasks').addColumn('prompt', 'text').execute();
  await backfillTasks(db);

  await db.schema.dropIndex('tasks_list_single').execute();
  await db.schema.createIndex('tasks_list_single').on('tasks')
    .columns(['account_id', 'pinned desc', 'updated_at desc', 'id desc', 'version', 'status', 'last_outcome', 'created_at'])
    .where(sql.ref('group_id'), 'is', null).where(sql.ref('deleted_at'), 'is', null)
    .execute();
  await db.schema.createIndex('tasks_list_state').on('tasks')
    .columns(['account_id', 'status', 'pinned desc', 'updated_at desc', 'id desc', 'version', 'last_outcome', 'created_at'])
    .where(sql.ref('group_id'), 'is', null).where(sql.ref('deleted_at'), 'is', null)
    .execute();
  await db.schema.createIndex('tasks_list_outcome').on('tasks')
    .columns(['account_id', 'last_outcome', 'pinned desc', 'updated_at desc', 'id desc', 'version', 'status', 'created_at'])
    .where(sql.ref('group_id'), 'is', null).where(sql.ref('deleted_at'), 'is', null)
    .execute();
  await db.schema.createIndex('groups_account_status').on('groups').columns(['account_id', 'status', 'id']).execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('delivery_id', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('response_excerpt', 'text')
    .addPrimaryKeyConstraint('webhook_attempts_pk', ['delivery_id', 'attempt'])
    .execute();
}

const BACKFILL_BATCH = 500;

interface TaskBackfillRow { id: string; spec: string }
interface EndedTurnRow { id: string; task_id: string; kind: string; status: string; started_at: string | null; ended_at: string; credits_used_micros: number | string; error: string | null }

/** Each task's prompt and last ended turn, a batch of tasks at a time (in id order). */
async function backfillTasks(untyped: Kysely<unknown>): Promise<void> {
  const db = untyped as unknown as Kysely<{ tasks: TaskBackfillRow & { prompt: string | null; last_turn: string | null; last_outcome: string | null }; turns: EndedTurnRow }>;
  let after = '';
  for (;;) {
    const tasks = await db.selectFrom('tasks').select(['id', 'spec']).where('id', '>', after).orderBy('id').limit(BACKFILL_BATCH).execute();
    if (tasks.length === 0) return;
    after = tasks[tasks.length - 1]!.id;
    const turns = await db.selectFrom('turns')
      .select(['id', 'task_id', 'kind', 'status', 'started_at', 'ended_at', 'credits_used_micros', 'error'])
      .where('task_id', 'in', tasks.map((t) => t.id))
      .where('status', 'in', ['completed', 'failed', 'stopped'])
      .where('ended_at', 'is not', null)
      .execute();
    const last = new Map<string, EndedTurnRow>();
    for (const turn of turns) {
      const held = last.get(turn.task_id);
      if (!held || turn.ended_at > held.ended_at || (turn.ended_at === held.ended_at && turn.id > held.id)) last.set(turn.task_id, turn);
    }
    for (const task of tasks) {
      const prompt = (JSON.parse(task.spec) as { prompt?: string | null }).prompt ?? null;
      const turn = last.get(task.id);
      const lastTurn = turn && {
        turnId: turn.id, kind: turn.kind, outcome: turn.status, startedAt: turn.started_at, endedAt: turn.ended_at,
        creditsUsedMicros: Number(turn.credits_used_micros), error: turn.error === null ? null : pickError(turn.error),
      };
      await db.updateTable('tasks')
        .set({ prompt, last_turn: lastTurn ? JSON.stringify(lastTurn) : null, last_outcome: turn?.status ?? null })
        .where('id', '=', task.id)
        .execute();
    }
  }
}

function pickError(stored: string): { error: string; message: string } {
  const { error, message } = JSON.parse(stored) as { error: string; message: string };
  return { error, message };
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
