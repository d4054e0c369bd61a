/**
 * @quarry/client: a typed client for the Quarry research-task API.
 *
 * @example
 * ```ts
 * import { QuarryClient, TaskExecutingError } from '@quarry/client';
 * const client = new QuarryClient({ baseURL: 'http://127.0.0.1:8080', apiKey: process.env.QUARRY_API_KEY });
 * const task = await client.tasks.create({ prompt: 'EU battery makers' });
 * ```
 */
export { QuarryClient, type ClientOptions } from './client.js';
export type { Fetch, RequestOptions } from './request-options.js';
export {
  QuarryError,
  InvalidRequestError,
  ValidationError,
  AuthenticationError,
  OutOfCreditsError,
  NotFoundError,
  TaskNotFoundError,
  MethodNotAllowedError,
  ConflictError,
  TaskExecutingError,
  TaskInCronModeError,
  TaskExistsError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  RateLimitedError,
  InternalServerError,
  BadGatewayError,
  ServiceUnavailableError,
  AtCapacityError,
  AuthUnavailableError,
  ConnectionError,
  ConnectionTimeoutError,
  QuarryAbortError,
  type ErrorBody,
  type ErrorDetail,
  type ErrorFacts,
} from './errors.js';
export { Page, PagePromise, CursorPage, TaskPage, RowPage, EventPage } from './pagination.js';
export { TaskStream, type TaskStreamMode } from './task-stream.js';
export { OutputExport, type ExportFormat } from './output-export.js';
export { ModelText, startsModelReply } from './model-text.js';
export {
  Tasks,
  WaitTimeoutError,
  type CreateTaskParams,
  type StartTaskParams,
  type ListTasksParams,
  type ChangesParams,
  type ContinueParams,
  type ExecuteParams,
  type StopParams,
  type UpdateTaskParams,
  type OutputParams,
  type RowsParams,
  type ExportParams,
  type EventsParams,
  type StreamParams,
  type WaitParams,
  type WaitForTurnOptions,
} from './resources/tasks.js';
export {
  Groups,
  GroupStream,
  type CreateGroupParams,
  type CreateGroupFromFileParams,
  type AddGroupInputsParams,
  type ListGroupsParams,
  type GroupRunsParams,
  type RetryGroupParams,
  type GroupRowsParams,
  type IterateGroupRowsParams,
  type GroupStreamParams,
  type GroupInputFormat,
} from './resources/groups.js';
export { Uploads, type CreateUploadParams, type UploadParams, type UploadData } from './resources/uploads.js';
export { Webhooks, type CreateWebhookParams, type DeliveriesParams } from './resources/webhooks.js';
export { Admin, AdminAccounts, AdminKeys } from './resources/admin.js';
export type * from './types.js';
