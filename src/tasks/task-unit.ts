import type { EventPayload, EventType, TaskEventReason } from '../contract/index.js';
import type { TaskPatch, TaskRecord } from '../domain/records.js';
import { toTaskView } from '../domain/task-view.js';
import { RecordChange, type UnitOfWork } from './unit-of-work.js';

/** One task's changes within a unit of work: its fields and its events (task_id, turn_id). */
export class TaskUnit extends RecordChange<TaskRecord, TaskPatch> {
  constructor(uow: UnitOfWork, task: TaskRecord, opts: { isNew?: boolean } = {}) {
    super(uow, task, opts.isNew ?? false);
  }

  get task(): TaskRecord {
    return this.record;
  }

  event<T extends EventType>(type: T, turnId: string | null, payload: EventPayload<T>): void {
    this.append(type, turnId, { task_id: this.task.id, turn_id: turnId }, payload);
  }

  /** The task's snapshot, saying why it changed (and, for a turn a caller's words started, those words). */
  taskEvent(reason: TaskEventReason, turnId: string | null, message?: string): void {
    this.event('task', turnId, { reason, task: toTaskView(this.task, Date.parse(this.now)), ...(message !== undefined ? { message } : {}) });
  }

  protected async insert(task: TaskRecord): Promise<void> {
    await this.tx.tasks.insert(task);
  }

  protected async update(id: string, patch: TaskPatch): Promise<void> {
    await this.tx.tasks.update(id, patch);
  }
}
