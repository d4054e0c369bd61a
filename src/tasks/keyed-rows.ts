/**
 * Keyed table outputs (decisions §19): a row written with a key already in the output replaces
 * that row in place, and every write records what it changed, with the rows, in one transaction.
 * What a change keeps is only what differs (the changed fields before and after, and the
 * sources), so the record of a turn grows with what it changed, not with the table.
 */
import type { RowKeys, RowWriter } from '../agent/turn-port.js';
import type { CellSupport, ChangeKind, OutputDecl, RowChange, RowSource } from '../contract/index.js';
import type { ChangeCounts, RowChangeRecord, RowTally } from '../domain/records.js';
import { countCells, emptyCounts } from '../outputs/cell-support.js';
import { newId } from '../ids.js';
import { rowVerified, type CheckedSource } from '../outputs/citations.js';
import type { TaskUnit } from './task-unit.js';

const NO_CHANGES: ChangeCounts = { added: 0, changed: 0, unconfirmed: 0 };

type StoredRow = Record<string, unknown> & { _sources?: RowSource[]; _support?: Record<string, CellSupport> };

/**
 * Writes one keyed call under `writeKey` (once: a replayed call writes nothing and counts nothing)
 * and records its changes; the caller holds the task's row lock.
 */
export async function writeKeyedRows(
  unit: TaskUnit, turnId: string, output: OutputDecl, writeKey: string, rows: RowWriter[], rowKeys: RowKeys,
): Promise<{ firstRow: number; count: number; replayed: boolean; delta: RowTally }> {
  const taskId = unit.task.id;
  const delta: RowTally = { verified: 0, cells: emptyCounts() };
  const done = await unit.tx.rows.batch(taskId, writeKey);
  if (done) return { ...done, replayed: true, delta };
  const existing = new Map((await unit.tx.rows.keyed(taskId, output.id, rowKeys.keys)).map((r) => [r.key, r]));
  const updates: { key: string; rowNumber: number; data: string | null }[] = [];
  const inserts: { key: string; make: RowWriter }[] = [];
  const changes: RowChangeRecord[] = [];
  const counts = { ...NO_CHANGES };
  rows.forEach((make, i) => {
    const key = rowKeys.keys[i]!;
    const verified = rowKeys.verified[i]!;
    const before = existing.get(key);
    if (!before) {
      inserts.push({ key, make });
      const after = parseRow(make(0));
      tallyRow(delta, after, verified, 1);
      changes.push(changeRecord(unit, turnId, output, 'added', after, fieldChanges(output, null, after), { before: null, after: after._sources ?? [] }));
      counts.added++;
      return;
    }
    const data = make(before.rowNumber);
    if (data === before.data) {
      updates.push({ key, rowNumber: before.rowNumber, data: null });
      return;
    }
    const old = parseRow(before.data);
    const after = parseRow(data);
    tallyRow(delta, after, verified, 1);
    tallyRow(delta, old, rowVerified((old._sources ?? []) as CheckedSource[]), -1);
    updates.push({ key, rowNumber: before.rowNumber, data });
    const fields = fieldChanges(output, old, after);
    const sourcesChanged = JSON.stringify(old._sources ?? []) !== JSON.stringify(after._sources ?? []);
    // A row written again with only its basis changed is replaced, but nothing it holds changed.
    if (Object.keys(fields).length === 0 && !sourcesChanged) return;
    changes.push(changeRecord(unit, turnId, output, 'changed', after, fields, { before: old._sources ?? [], after: after._sources ?? [] }));
    counts.changed++;
  });
  const written = await unit.tx.rows.writeKeyed(taskId, output.id, writeKey, turnId, { updates, inserts, tally: delta }, unit.now);
  await recordChanges(unit, turnId, changes, counts);
  return { ...written, replayed: false, delta };
}

/**
 * At the end of a completed execute turn (a cron tick, or `execute`): every key of a keyed output
 * that existed before the turn and that it did not write again is recorded as unconfirmed; the
 * rows stay.
 */
export async function recordUnconfirmed(unit: TaskUnit, turnId: string): Promise<void> {
  const changes: RowChangeRecord[] = [];
  for (const output of unit.task.spec.outputs) {
    if (!output.key) continue;
    for (const row of await unit.tx.rows.keyedNotWrittenBy(unit.task.id, output.id, turnId)) {
      const values = JSON.parse(row.key) as unknown[];
      const key = Object.fromEntries(output.key.map((column, i) => [column, values[i] ?? null]));
      changes.push(changeRecordOf(unit, turnId, output.id, 'unconfirmed', key, {}, { before: null, after: null }));
    }
  }
  if (changes.length > 0) await recordChanges(unit, turnId, changes, { ...NO_CHANGES, unconfirmed: changes.length });
}

/** A stored change as the API returns it. */
export function changeView(record: RowChangeRecord): RowChange {
  const data = JSON.parse(record.data) as Pick<RowChange, 'key' | 'fields' | 'sources'>;
  return { turn_id: record.turnId, at: record.at, output: record.outputId, key: data.key, change: record.change, fields: data.fields, sources: data.sources };
}

async function recordChanges(unit: TaskUnit, turnId: string, changes: RowChangeRecord[], counts: ChangeCounts): Promise<void> {
  if (changes.length === 0) return;
  await unit.tx.rows.insertChanges(changes);
  await unit.tx.turns.addChanges(turnId, counts);
}

/** Adds (sign 1) or takes away (sign -1) a stored row's verified flag and cells by support. */
function tallyRow(tally: RowTally, row: StoredRow, verified: boolean, sign: 1 | -1): void {
  const cells = emptyCounts();
  countCells(cells, row._support ?? {});
  tally.verified += sign * (verified ? 1 : 0);
  tally.cells.supported += sign * cells.supported;
  tally.cells.unsupported += sign * cells.unsupported;
  tally.cells.unchecked += sign * cells.unchecked;
}

function parseRow(data: string): StoredRow {
  return JSON.parse(data) as StoredRow;
}

/** The declared columns whose value differs between the two rows (before null: every column with a value). */
function fieldChanges(output: OutputDecl, before: StoredRow | null, after: StoredRow): RowChange['fields'] {
  const fields: RowChange['fields'] = {};
  for (const { name } of output.columns ?? []) {
    const was = before ? (before[name] ?? null) : null;
    const is = after[name] ?? null;
    if (JSON.stringify(was) !== JSON.stringify(is)) fields[name] = { before: was, after: is };
  }
  return fields;
}

function changeRecord(unit: TaskUnit, turnId: string, output: OutputDecl, change: ChangeKind, row: StoredRow, fields: RowChange['fields'], sources: RowChange['sources']): RowChangeRecord {
  const key = Object.fromEntries((output.key ?? []).map((column) => [column, row[column] ?? null]));
  return changeRecordOf(unit, turnId, output.id, change, key, fields, sources);
}

function changeRecordOf(unit: TaskUnit, turnId: string, outputId: string, change: ChangeKind, key: Record<string, unknown>, fields: RowChange['fields'], sources: RowChange['sources']): RowChangeRecord {
  return { id: newId('chg'), taskId: unit.task.id, turnId, outputId, change, at: unit.now, data: JSON.stringify({ key, fields, sources }) };
}
