/**
 * The model's text in a task's events as a reader should see it. A streamed reply that fails
 * part-way is asked for again; the `text` event with `restart: true` that follows its stored
 * text says to drop that text, so the retry's text does not come after a copy of it. The
 * restart's own text (most often empty) is kept: an earlier answer the drop took with it.
 */
import type { TaskEvent } from './types.js';

/**
 * Whether a model reply's text starts after this event: a turn's first reply follows its
 * `turn_started`, a later one a `tool` event of the reply before or the move to phase `execute`.
 * A `text` event with `restart: true` drops the text since the last such event. Other events (a
 * `PATCH`'s `updated`, a skipped cron tick) can land in the middle of a reply.
 *
 * @example
 * ```ts
 * let reply = '';
 * for await (const event of client.tasks.stream(taskId)) {
 *   if (startsModelReply(event)) reply = '';
 *   if (event.type === 'text') reply = (event.restart ? '' : reply) + event.text;
 * }
 * ```
 */
export function startsModelReply(event: TaskEvent): boolean {
  return event.type === 'tool' || (event.type === 'task' && (event.reason === 'turn_started' || event.reason === 'phase_changed'));
}

/**
 * Joins the `text` events it is given, dropping the text of replies that were cut off and
 * retried. Feed it every event of the task, in order.
 *
 * @example
 * ```ts
 * const text = new ModelText();
 * for await (const event of client.tasks.stream(taskId)) text.add(event);
 * console.log(text.value);
 * ```
 */
export class ModelText {
  private shown = '';
  private replyStart = 0;

  /** Takes the next event of the task; says whether it changed `value`. */
  add(event: TaskEvent): boolean {
    if (event.type !== 'text') {
      if (startsModelReply(event)) this.replyStart = this.shown.length;
      return false;
    }
    if (event.restart) this.shown = this.shown.slice(0, this.replyStart);
    this.shown += event.text;
    return event.restart === true || event.text !== '';
  }

  /** The text so far, each reply once. */
  get value(): string {
    return this.shown;
  }

  /** The text of the reply under way (or the last one): what a `restart` would drop. */
  get reply(): string {
    return this.shown.slice(this.replyStart);
  }
}
