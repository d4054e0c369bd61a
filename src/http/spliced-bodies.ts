/**
 * JSON bodies built around stored JSON without parsing it again: rows and events are stored as
 * the exact text clients receive, so a page splices those bytes between the fields it adds. A
 * 50,000-row page is tens of megabytes; parsing and re-serializing it would cost more than the
 * read. The shapes are the contract's (OutputPage, TaskDetail, EventPage).
 */
import type { EventRecord, TaskRecord } from '../domain/records.js';
import type { OutputRef } from '../contract/index.js';
import { toTaskView } from '../domain/task-view.js';

const COMMA = Buffer.from(',');

/** A page of rows as one buffer of the rows' stored bytes. */
export function outputPageBody(total: number, rows: Buffer[], output: OutputRef | null): Buffer {
  const parts: Buffer[] = [Buffer.from(`{"total":${total},"rows":[`)];
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) parts.push(COMMA);
    parts.push(rows[i]!);
  }
  parts.push(Buffer.from(`],"output":${JSON.stringify(output)}}`));
  return Buffer.concat(parts);
}

/** A page of a group's merged table: `{total, rows}`, each row as groups/group-view.ts spliced it. */
export function groupRowsBody(total: number, rows: string[]): string {
  return `{"total":${total},"rows":[${rows.join(',')}]}`;
}

function eventList(events: EventRecord[]): string {
  return `[${events.map((e) => e.data).join(',')}]`;
}

/** GET /task/{task_id}: the task, its spec and its last events. */
export function taskDetailBody(task: TaskRecord, events: EventRecord[]): string {
  const view = JSON.stringify({ ...toTaskView(task), spec: task.spec });
  return `${view.slice(0, -1)},"events":${eventList(events)}}`;
}

/** GET /task/{task_id}/events: a page of stored events and where the next starts. */
export function eventsBody(events: EventRecord[], nextAfter: number | null): string {
  return `{"events":${eventList(events)},"next_after":${nextAfter}}`;
}
