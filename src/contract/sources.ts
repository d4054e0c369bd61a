/** Page snapshots: what the task read, kept so that citations can be checked (decisions §15.1). */
import { Type } from 'typebox';
import { component, Nullable, Str, Timestamp } from './common.js';

export const SourceInfo = component('SourceInfo', Type.Object({
  source_id: Type.String(),
  url: Type.String({ description: 'The URL asked for (an upload: upload:<upload_id>).' }),
  final_url: Type.String({ description: 'The URL that answered, after redirects.' }),
  upload_id: Nullable(Type.String({ description: 'Set when the snapshot is the text of one of the task\'s inputs.' })),
  title: Nullable(Type.String()),
  fetched_at: Timestamp(),
  sha256: Type.String({ description: 'Hex SHA-256 of the stored text (UTF-8).' }),
  bytes: Type.Integer({ minimum: 0, description: 'Bytes of the stored text (UTF-8).' }),
}));

export const SourceDetail = component('SourceDetail', Type.Object({
  ...SourceInfo.properties,
  text: Type.String({ description: 'The readable text as read: what quotes are checked against.' }),
}));

export const SourceList = Type.Object({
  total: Type.Integer({ minimum: 0 }),
  sources: Type.Array(SourceInfo),
});

export const RecheckResult = component('RecheckResult', Type.Object({
  rows: Type.Integer({ minimum: 0, description: 'Rows checked again, over every output of the task.' }),
  changed: Type.Integer({ minimum: 0, description: 'Of them, rows whose _sources checks, supports or _support changed (and were stored again).' }),
}, { description: 'What a recheck did: every row checked again against the stored snapshots, nothing fetched.' }));

export const SourcesQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 })),
});

export const SourceParams = Type.Object({ task_id: Str({ minLength: 1, maxLength: 200 }), source_id: Str({ minLength: 1, maxLength: 200 }) });
