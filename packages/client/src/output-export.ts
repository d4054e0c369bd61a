/**
 * A whole output streamed as a CSV or JSONL file (`format=csv|jsonl` on the output routes). The
 * body is read as it arrives, so exports of any size run in constant memory.
 */
import { ConnectionError, QuarryAbortError } from './errors.js';
import type { Row } from './types.js';

/**
 * The file format of an export.
 *
 * @example
 * ```ts
 * const format: ExportFormat = 'jsonl';
 * const file = await client.tasks.export(taskId, { format });
 * ```
 */
export type ExportFormat = 'csv' | 'jsonl';

/**
 * An export in flight. Iterate it for the file's bytes, or use {@link OutputExport.lines},
 * {@link OutputExport.rows} (JSONL) or {@link OutputExport.text}. The body can be read once.
 *
 * @example
 * ```ts
 * import { createWriteStream } from 'node:fs';
 * import { Writable } from 'node:stream';
 * const file = await client.tasks.export(taskId, { output: 'makers', format: 'csv' });
 * await file.body.pipeTo(Writable.toWeb(createWriteStream(file.filename ?? 'makers.csv')));
 * ```
 */
export class OutputExport implements AsyncIterable<Uint8Array> {
  /** The file's bytes; empty when the task has no outputs yet. */
  readonly body: ReadableStream<Uint8Array>;
  /** From `Content-Disposition`, e.g. `makers.csv`; null when the task has no outputs yet. */
  readonly filename: string | null;
  /** `text/csv; charset=utf-8` or `application/x-ndjson`. */
  readonly contentType: string;

  /** @internal */
  constructor(
    readonly response: Response,
    readonly format: ExportFormat,
    readonly requestId: string,
    private readonly signal?: AbortSignal,
  ) {
    this.contentType = response.headers.get('content-type') ?? '';
    const disposition = /filename="([^"]*)"/.exec(response.headers.get('content-disposition') ?? '');
    this.filename = disposition?.[1] ?? null;
    // A task without outputs answers the empty JSON page even when a file is asked for: no rows.
    const empty = /^application\/json\b/i.test(this.contentType);
    if (empty) void response.body?.cancel().catch(() => undefined);
    this.body = empty || !response.body ? new ReadableStream<Uint8Array>({ start: (c) => c.close() }) : response.body;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    const reader = this.body.getReader();
    try {
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (err) {
          if (this.signal?.aborted) throw new QuarryAbortError({ request_id: this.requestId, cause: this.signal.reason });
          throw new ConnectionError(`The export was cut off: ${(err as Error).message}`, { cause: err, request_id: this.requestId });
        }
        if (chunk.done) return;
        yield chunk.value;
      }
    } finally {
      reader.releaseLock();
      void this.body.cancel().catch(() => undefined);
    }
  }

  /**
   * The file's lines, without their line ends (CSV lines end with CRLF).
   *
   * @example
   * ```ts
   * for await (const line of (await client.tasks.export(taskId, { format: 'csv' })).lines()) console.log(line);
   * ```
   */
  async *lines(): AsyncGenerator<string> {
    const decoder = new TextDecoder();
    let rest = '';
    for await (const chunk of this) {
      rest += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = rest.indexOf('\n')) >= 0) {
        yield rest.slice(0, nl).replace(/\r$/, '');
        rest = rest.slice(nl + 1);
      }
    }
    rest += decoder.decode();
    if (rest) yield rest.replace(/\r$/, '');
  }

  /**
   * JSONL exports: each stored row, parsed.
   *
   * @example
   * ```ts
   * for await (const row of (await client.tasks.export(taskId, { format: 'jsonl' })).rows()) console.log(row._row);
   * ```
   */
  async *rows(): AsyncGenerator<Row> {
    if (this.format !== 'jsonl') throw new Error('rows() reads JSONL exports; ask for format: "jsonl".');
    for await (const line of this.lines()) if (line) yield JSON.parse(line) as Row;
  }

  /**
   * The whole file as one string.
   *
   * @example
   * ```ts
   * const csv = await (await client.tasks.export(taskId, { format: 'csv' })).text();
   * ```
   */
  async text(): Promise<string> {
    const decoder = new TextDecoder();
    let out = '';
    for await (const chunk of this) out += decoder.decode(chunk, { stream: true });
    return out + decoder.decode();
  }
}
