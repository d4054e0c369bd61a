/**
 * What changed in keyed table outputs (decisions §19): a task's changes, a group's merged changes,
 * and the counts a turn's `done` event carries.
 */
import { Type, type Static } from 'typebox';
import { component, IdCursor, Nullable, Str, StringEnum, Timestamp } from './common.js';
import { RowSource } from './outputs.js';

export const CHANGE_KINDS = ['added', 'changed', 'unconfirmed'] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

export const ChangeCounts = component('ChangeCounts', Type.Object({
  added: Type.Integer({ minimum: 0, description: 'Keys the turn wrote for the first time.' }),
  changed: Type.Integer({ minimum: 0, description: 'Rows whose values or sources the turn changed.' }),
  unconfirmed: Type.Integer({ minimum: 0, description: 'Keys an execute turn did not write again although they existed before (the rows stay).' }),
}, { description: 'What a turn changed in the keyed table outputs.' }));
export type ChangeCounts = Static<typeof ChangeCounts>;

const FieldChange = Type.Object({ before: Type.Unknown(), after: Type.Unknown() });

export const RowChange = component('RowChange', Type.Object({
  turn_id: Type.String(),
  at: Timestamp('When the turn wrote it (for unconfirmed: when the turn ended).'),
  output: Type.String({ description: 'The output id.' }),
  key: Type.Record(Type.String(), Type.Unknown(), { description: 'The key columns and their values.' }),
  change: StringEnum([...CHANGE_KINDS]),
  fields: Type.Record(Type.String(), FieldChange, { description: 'added: every column with a value (before null); changed: the columns whose value changed; unconfirmed: none.' }),
  sources: Type.Object({ before: Nullable(Type.Array(RowSource)), after: Nullable(Type.Array(RowSource)) }, { description: 'The row\'s _sources before and after (null where the row did not exist, and both null for unconfirmed).' }),
}));
export type RowChange = Static<typeof RowChange>;

export const ChangeList = Type.Object({ changes: Type.Array(RowChange) });

export const GroupRowChange = component('GroupRowChange', Type.Intersect([RowChange, Type.Object({
  _input: Type.Integer({ minimum: 0, description: 'The input\'s 0-based index in the group.' }),
  input: Type.Record(Type.String(), Type.Unknown(), { description: 'The run\'s input.' }),
  task_id: Type.String({ description: 'The run.' }),
})]));
export type GroupRowChange = Static<typeof GroupRowChange>;

export const GroupChangeList = Type.Object({ changes: Type.Array(GroupRowChange) });

export const ChangesQuery = Type.Object({
  since: Type.Optional(Str({ minLength: 1, maxLength: 200, description: 'A turn id: only changes of later turns.' })),
  after: Type.Optional(Timestamp('Only changes written after this time.')),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  cursor: Type.Optional(IdCursor('chg')),
});
export type ChangesQuery = Static<typeof ChangesQuery>;
