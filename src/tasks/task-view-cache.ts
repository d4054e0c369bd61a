/**
 * The list's Task bodies as JSON, each kept with the version of the task row it was built from
 * (tasks.version, which every change of the row raises). A page reads its tasks' keys and
 * versions only, from the list index, and builds just the views it does not hold at that
 * version: a page of unchanged tasks costs neither their specs nor their views. Each process
 * keeps its own; the version read from the store is what says a view is current, so a change
 * made by another process of a cluster is seen at the next read.
 */
import type { TaskListEntry, TaskRecord } from '../store/store.js';
import { toTaskView, viewChangesWithTime } from './task-view.js';

/** How many views are kept; past it the cache starts again empty (a page refills what it needs). */
const TASK_VIEWS_MAX = 10_000;

export class TaskViewCache {
  private readonly views = new Map<string, { version: number; json: string }>();

  /** The view of the task at this entry's version, when it is held. */
  get(entry: TaskListEntry): string | undefined {
    const held = this.views.get(entry.id);
    return held?.version === entry.version ? held.json : undefined;
  }

  /**
   * Builds the view of `task`, read at `version` or later, and keeps it under `version`: a view
   * newer than its entry is never wrong, and the next change's higher version replaces it. A view
   * that changes with time alone is built for each page and not kept.
   */
  put(task: TaskRecord, version: number, now: number): string {
    const json = JSON.stringify(toTaskView(task, now));
    if (!viewChangesWithTime(task)) {
      if (this.views.size >= TASK_VIEWS_MAX) this.views.clear();
      this.views.set(task.id, { version, json });
    }
    return json;
  }
}
