/**
 * Named places where a crash would hurt most (between a side effect and its record). The crash
 * test suite starts Quarry with QUARRY_CRASH_AT=<name>[:<n>] to have the process SIGKILL itself
 * the n-th time (default first) it reaches that place, then restarts it and checks that nothing
 * acknowledged was lost. Unset, a crash point costs one comparison.
 */

export const CRASH_POINTS = [
  'create.committed',
  'message.committed',
  'turn.claimed',
  'model.replied',
  'step.checkpointed',
  'tool.started',
  'rows.appended',
  'turn.finishing',
  'turn.finished',
  'cron.fired',
  'upload.stored',
  'upload.completed',
  'webhook.sent',
  'group.created',
] as const;

export type CrashPoint = (typeof CRASH_POINTS)[number];

// Read once here rather than through Config: crash points are reached from deep inside modules
// that have no reason to carry configuration, and only tests ever set this.
const [target, nth] = (process.env.QUARRY_CRASH_AT ?? '').split(':');
let remaining = Number(nth || 1);

export function crashPoint(name: CrashPoint): void {
  if (name !== target) return;
  remaining -= 1;
  if (remaining === 0) process.kill(process.pid, 'SIGKILL');
}
