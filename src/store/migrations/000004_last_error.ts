import { sql, type Kysely } from 'kysely';

/**
 * `tasks.last_error_seq`: the seq of the stored `error` event of the task's last ended turn
 * when that turn failed, else null. The /state poll joins it to read the error in the same
 * indexed read, and the stream of an idle task sends that event again, so a client that comes
 * to a task whose turn failed (no model configured, say) sees why nothing happened.
 *
 * Tasks that are idle now get the error of their last ended turn, if it failed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('tasks').addColumn('last_error_seq', 'integer').execute();
  await sql`
    update tasks set last_error_seq = (
      select max(e.seq) from events e
      where e.task_id = tasks.id and e.type = 'error' and e.turn_id = (
        select t.id from turns t
        where t.task_id = tasks.id and t.ended_at is not null
        order by t.ended_at desc, t.id desc limit 1
      )
    )
    where current_turn_id is null`.execute(db);
}

export async function down(): Promise<void> {
  throw new Error('Quarry migrations only move forward');
}
