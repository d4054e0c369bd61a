/** The one error body of interface §7, with every field a client may branch on. */
import { Type, type Static } from 'typebox';
import { ERROR_CODES } from '../errors.js';
import { component, StringEnum } from './common.js';

export const ErrorCode = StringEnum(ERROR_CODES, { description: 'Stable snake_case code: branch on it.' });

export const ErrorDetail = Type.Object({
  type: Type.String({ description: 'What kind of check failed, e.g. missing, string_too_long.' }),
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()]), { description: 'Where: the request part, then the path to the field.' }),
  msg: Type.String(),
});

export const ErrorBody = component('Error', Type.Object({
  error: ErrorCode,
  message: Type.String({ description: 'What went wrong and what to do: show it to a person.' }),
  retryable: Type.Boolean({ description: 'Whether the same request may succeed later.' }),
  request_id: Type.String({ description: 'Also in the X-Request-ID header.' }),
  retry_after: Type.Optional(Type.Integer({ minimum: 0, description: 'Seconds to wait (429, 503); also the Retry-After header.' })),
  resolve: Type.Optional(Type.String({ description: 'Where to fix the cause (402).' })),
  param: Type.Optional(Type.String({ description: 'The field that failed validation (422).' })),
  detail: Type.Optional(Type.Array(ErrorDetail, { description: 'Validator output (422).' })),
  task_id: Type.Optional(Type.String({ description: 'The task the error refers to.' })),
  task_created: Type.Optional(Type.Boolean({ description: 'false on a refused POST /task: no task exists.' })),
}));
export type ErrorBody = Static<typeof ErrorBody>;
