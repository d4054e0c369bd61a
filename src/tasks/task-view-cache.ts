/**
 * The list's Task bodies as JSON, each kept with the version of the task row it was built from
 * (tasks.version, which every change of the row raises). A page reads its tasks' ids and
 * versions only, from the list index, and builds just the views it does not hold at that
 * version: a page of unchanged tasks costs neither their specs nor their views. A whole page's
 * body is kept too, and sent again while the same request finds the same tasks at the same
 * versions (a console or a script polling the list).
 *
 * Each process keeps its own; the versions read from the store are what say a view is current,
 * so a change made by another process of a cluster shows at the next read.
 */
import type { TaskRecord } from '../domain/records.js';
import type { TaskListEntry } from '../store/store.js';
import { toTaskView, viewChangesWithTime } from '../domain/task-view.js';

/** How many views, and how many page bodies, are kept; past that a cache starts again empty. */
const TASK_VIEWS_MAX = 10_000;
const PAGE_BODIES_MAX = 256;

interface PageBody {
  tasks: TaskListEntry[];
  body: Buffer;
}

function sameTasks(a: TaskListEntry[], b: TaskListEntry[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i]!.id !== b[i]!.id || a[i]!.version !== b[i]!.version) return false;
  return true;
}

export class TaskViewCache {
  private readonly views = new Map<string, { version: number; json: string }>();
  private readonly pages = new Map<string, PageBody>();

  /**
   * The body of the page `request` names (its account, limit, cursor and group), holding these
   * tasks: the kept one when it holds the same tasks at the same versions, else one built from
   * the views, with `read` asked for the tasks whose view is not held.
   */
  async pageBody(request: string, tasks: TaskListEntry[], read: (ids: string[]) => Promise<TaskRecord[]>): Promise<Buffer> {
    const kept = this.pages.get(request);
    if (kept && sameTasks(kept.tasks, tasks)) return kept.body;
    const held = tasks.map((t) => this.view(t));
    const missing = tasks.filter((_, i) => held[i] === undefined).map((t) => t.id);
    const fresh = new Map((missing.length > 0 ? await read(missing) : []).map((t) => [t.id, t]));
    const now = Date.now();
    let keepable = true;
    const views = tasks.flatMap((t, i) => {
      const view = held[i];
      if (view !== undefined) return [view];
      const task = fresh.get(t.id);
      // Deleted for good between the two reads: left out, as a later page would.
      if (!task) return [];
      if (viewChangesWithTime(task)) keepable = false;
      return [this.put(task, t.version, now)];
    });
    const body = Buffer.from(`[${views.join(',')}]`);
    if (keepable && views.length === tasks.length) {
      if (this.pages.size >= PAGE_BODIES_MAX) this.pages.clear();
      this.pages.set(request, { tasks, body });
    }
    return body;
  }

  /** The view of the task at this entry's version, when it is held. */
  private view(entry: TaskListEntry): string | undefined {
    const held = this.views.get(entry.id);
    return held?.version === entry.version ? held.json : undefined;
  }

  /**
   * Builds the view of `task`, read at `version` or later, and keeps it under `version`: a view
   * newer than its entry is never wrong, and the next change's higher version replaces it. A view
   * that changes with time alone is built for each page and not kept.
   */
  private put(task: TaskRecord, version: number, now: number): string {
    const json = JSON.stringify(toTaskView(task, now));
    if (!viewChangesWithTime(task)) {
      if (this.views.size >= TASK_VIEWS_MAX) this.views.clear();
      this.views.set(task.id, { version, json });
    }
    return json;
  }
}
