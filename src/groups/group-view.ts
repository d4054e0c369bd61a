/**
 * A stored group → the contract's Group body, and a group's merged rows: each output row of a
 * run with its input, spliced from the stored JSON of both without parsing either.
 */
import { fromMicros } from '../domain/credits.js';
import type { Group, GroupDetail, GroupRun, OutputDecl, TaskSpec } from '../contract/index.js';
import type { GroupRecord, GroupRowRecord, GroupRunRecord } from '../domain/records.js';

export function toGroupView(g: GroupRecord): Group {
  return {
    group_id: g.id,
    name: g.name,
    status: g.status,
    counts: { ...g.counts },
    inputs: g.inputs,
    duplicates: g.duplicates,
    credits_used: fromMicros(g.creditsUsedMicros),
    max_parallel: g.maxParallel,
    max_credits: g.maxCreditsMicros === null ? null : fromMicros(g.maxCreditsMicros),
    created_at: g.createdAt,
    updated_at: g.updatedAt,
    finished_at: g.finishedAt,
    cron: g.cronExpression ? { expression: g.cronExpression, timezone: g.cronTimezone ?? 'UTC', next_run_at: g.cronNextRunAt } : null,
  };
}

/** A run as GET /group/{id}/runs shows it: a failed run carries its task's last error. */
export function toRunView(r: GroupRunRecord): GroupRun {
  return {
    task_id: r.task?.id ?? null,
    input_index: r.index,
    input: JSON.parse(r.data) as Record<string, unknown>,
    status: r.status,
    error: r.status === 'failed' ? r.task?.lastTurn?.error ?? null : null,
    credits_used: fromMicros(r.task?.creditsUsedMicros ?? 0),
    updated_at: r.task?.updatedAt ?? null,
  };
}

export function toGroupDetail(g: GroupRecord): GroupDetail {
  return { ...toGroupView(g), spec: g.spec };
}

/** The group's one table output (a group's spec is checked to have exactly one). */
export function tableOutput(spec: TaskSpec): OutputDecl {
  return spec.outputs.find((o) => o.kind === 'table')!;
}

/** The merged output: `_input`, the input columns, then the table's columns (names are kept apart by the spec check). */
export function mergedOutput(spec: TaskSpec): { inputColumns: string[]; output: OutputDecl } {
  return { inputColumns: (spec.input_columns ?? []).map((c) => c.name), output: tableOutput(spec) };
}

/**
 * `{"_input": i, <input fields>, <the row's columns>, "_sources": …, "_basis": …, "_run": {…}}`.
 * A stored row is `{"_row":n,…}` and a stored input `{…}` (see serializeRow and the group's
 * inputs), so both are spliced in as they are.
 */
export function mergedRow(r: GroupRowRecord): string {
  const inputMembers = r.input.slice(1, -1);
  const rowMembers = r.row.slice(r.row.indexOf(',') + 1, -1);
  const run = `"_run":{"task_id":${JSON.stringify(r.taskId)},"status":"${r.status}"}`;
  return `{"_input":${r.index},${inputMembers ? `${inputMembers},` : ''}${rowMembers},${run}}`;
}
