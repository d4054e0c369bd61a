/** Signed uploads (decisions §8). */
import { Type } from 'typebox';
import { component, Str, Timestamp } from './common.js';

export const UploadUrlBody = Type.Object({
  filename: Str({ minLength: 1, maxLength: 256 }),
  content_type: Str({ minLength: 1, maxLength: 200 }),
  size_bytes: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'The file\'s size; the PUT may send at most this many bytes.' }),
});

export const UploadTicket = component('UploadTicket', Type.Object({
  upload_id: Type.String(),
  upload_url: Type.String({ description: 'Signed: needs no API key; expires at expires_at.' }),
  method: Type.Literal('PUT'),
  headers: Type.Record(Type.String(), Type.String()),
  expires_at: Timestamp(),
  max_bytes: Type.Integer(),
}));

export const UploadResult = component('UploadResult', Type.Object({
  upload_id: Type.String(),
  size_bytes: Type.Integer({ minimum: 0 }),
  sha256: Type.String({ description: 'Hex SHA-256 of the stored file.' }),
}));

export const UploadParams = Type.Object({ upload_id: Str({ minLength: 1, maxLength: 100 }) });
export const UploadPutQuery = Type.Object({ expires: Type.Optional(Str({ maxLength: 20 })), sig: Type.Optional(Str({ maxLength: 200 })) });
