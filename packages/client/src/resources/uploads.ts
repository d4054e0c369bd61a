/**
 * `client.uploads`: large inputs go to a signed URL, not into JSON bodies. Ask for a URL, PUT the
 * file to it (no API key: the signature is the credential), then name the `upload_id` in a
 * spec's `inputs`.
 */
import type { Transport } from '../internal/transport.js';
import type { RequestOptions } from '../request-options.js';
import type { RequestBody, UploadResult, UploadTicket } from '../types.js';

/**
 * `POST /upload-url`.
 *
 * @example
 * ```ts
 * const ticket = await client.uploads.create({ filename: 'a.pdf', content_type: 'application/pdf', size_bytes: 52_000 } satisfies CreateUploadParams);
 * ```
 */
export type CreateUploadParams = RequestBody<'createUploadUrl'>;

/**
 * A file's content: bytes, text (sent as UTF-8) or a Blob.
 *
 * @example
 * ```ts
 * const data: UploadData = await openAsBlob('shortlist.csv'); // node:fs
 * ```
 */
export type UploadData = Uint8Array | string | Blob;

/**
 * `uploads.upload()`: the data and how to name it.
 *
 * @example
 * ```ts
 * await client.uploads.upload({ data: 'company\nNorthvolt\n', filename: 'shortlist.csv', content_type: 'text/csv' } satisfies UploadParams);
 * ```
 */
export interface UploadParams {
  data: UploadData;
  filename: string;
  /** Default: the Blob's type, else `application/octet-stream`. */
  content_type?: string;
}

function byteLength(data: UploadData): number {
  if (typeof data === 'string') return new TextEncoder().encode(data).byteLength;
  if (data instanceof Uint8Array) return data.byteLength;
  return data.size;
}

/**
 * The upload routes. Reached as `client.uploads`.
 *
 * @example
 * ```ts
 * const file = await client.uploads.upload({ data: await readFile('shortlist.csv'), filename: 'shortlist.csv', content_type: 'text/csv' });
 * await client.tasks.start({ task: { prompt: 'Check each company.', inputs: [{ upload_id: file.upload_id, name: 'shortlist.csv' }] } });
 * ```
 */
export class Uploads {
  /** @internal */
  constructor(private readonly transport: Transport) {}

  /**
   * `POST /upload-url`: a signed URL to PUT the file to, valid for 15 minutes.
   *
   * @example
   * ```ts
   * const ticket = await client.uploads.create({ filename: 'a.csv', content_type: 'text/csv', size_bytes: 1234 });
   * ```
   */
  create(params: CreateUploadParams, opts?: RequestOptions): Promise<UploadTicket> {
    return this.transport.json<UploadTicket>({ method: 'POST', path: '/upload-url', json: params, auth: 'key', resendable: true }, opts);
  }

  /**
   * PUTs the file to a ticket's signed URL (no API key is sent); answers `{upload_id, size_bytes, sha256}`.
   *
   * @example
   * ```ts
   * const stored = await client.uploads.put(ticket, 'company\nNorthvolt\n');
   * ```
   */
  put(ticket: Pick<UploadTicket, 'upload_url' | 'headers'>, data: UploadData, opts?: RequestOptions): Promise<UploadResult> {
    return this.transport.json<UploadResult>(
      { method: 'PUT', path: ticket.upload_url, body: data, headers: ticket.headers, auth: 'none', resendable: true },
      opts,
    );
  }

  /**
   * Both steps: asks for a URL sized for `data`, then PUTs it.
   *
   * @example
   * ```ts
   * const { upload_id } = await client.uploads.upload({ data: 'company\nNorthvolt\n', filename: 'shortlist.csv', content_type: 'text/csv' });
   * ```
   */
  async upload(params: UploadParams, opts?: RequestOptions): Promise<UploadResult> {
    const contentType = params.content_type ?? (typeof params.data === 'object' && 'type' in params.data && params.data.type ? params.data.type : 'application/octet-stream');
    const ticket = await this.create({ filename: params.filename, content_type: contentType, size_bytes: byteLength(params.data) }, opts);
    return this.put(ticket, params.data, opts);
  }
}
