/**
 * Large inputs: POST /upload-url hands out a signed, expiring PUT URL; the PUT streams the file
 * to the data dir (temp file, then rename, so a half-written file is never visible) and records
 * its size and SHA-256. The signature is an HMAC over the upload id and expiry with a secret
 * kept in the store, so every node of a cluster can check it.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable, Transform } from 'node:stream';
import { crashPoint } from '../crash-points.js';
import { QuarryError } from '../errors.js';
import { newId, randomToken } from '../ids.js';
import type { UploadRecord } from '../domain/records.js';
import type { Store } from '../store/store.js';

const URL_TTL_MS = 15 * 60 * 1000;
const SECRET_SETTING = 'upload_signing_secret';
/** Size of the pieces an upload is stored in when it lives in the database. */
const STORE_CHUNK_BYTES = 256 * 1024;

export interface UploadTicket {
  upload_id: string;
  upload_url: string;
  method: 'PUT';
  headers: Record<string, string>;
  expires_at: string;
  max_bytes: number;
}

export class Uploads {
  private secret: Buffer | undefined;

  constructor(
    private readonly store: Store,
    private readonly opts: { dataDir: string; maxBytes: number; clock?: () => Date },
  ) {}

  private now(): Date {
    return this.opts.clock?.() ?? new Date();
  }

  private async signingSecret(): Promise<Buffer> {
    if (this.secret) return this.secret;
    let value = await this.store.cluster.getSetting(SECRET_SETTING);
    if (!value) {
      await this.store.cluster.setSetting(SECRET_SETTING, randomToken());
      value = (await this.store.cluster.getSetting(SECRET_SETTING))!;
    }
    this.secret = Buffer.from(value);
    return this.secret;
  }

  private async sign(uploadId: string, expires: number): Promise<string> {
    return crypto.createHmac('sha256', await this.signingSecret()).update(`${uploadId}.${expires}`).digest('base64url');
  }

  /** `baseUrl` is where this service is reached from the caller's side (the upload URL is absolute). */
  async createTicket(accountId: string, baseUrl: string, req: { filename: string; content_type: string; size_bytes: number }): Promise<UploadTicket> {
    if (req.size_bytes > this.opts.maxBytes) {
      throw QuarryError.validation('size_bytes', `size_bytes must be at most ${this.opts.maxBytes} bytes`);
    }
    const now = this.now();
    const expires = now.getTime() + URL_TTL_MS;
    const id = newId('upl');
    const record: UploadRecord = {
      id, accountId, filename: req.filename, contentType: req.content_type, declaredBytes: req.size_bytes, sizeBytes: null, sha256: null,
      storagePath: null, expiresAt: new Date(expires).toISOString(), createdAt: now.toISOString(), completedAt: null,
    };
    await this.store.uploads.insert(record);
    const sig = await this.sign(id, expires);
    return {
      upload_id: id,
      upload_url: `${baseUrl}/upload/${id}?expires=${expires}&sig=${sig}`,
      method: 'PUT',
      headers: { 'Content-Type': req.content_type },
      expires_at: record.expiresAt,
      max_bytes: req.size_bytes,
    };
  }

  /** Checks a PUT's signature and expiry; a bad or expired one is 401 (decisions §13). */
  async authorize(uploadId: string, expires: string | undefined, sig: string | undefined): Promise<UploadRecord> {
    const refuse = (why: string) => new QuarryError('unauthorized', `The upload URL is not valid: ${why}. Ask POST /upload-url for a new one.`);
    const expiresAt = Number(expires);
    if (!expires || !sig || !Number.isInteger(expiresAt)) throw refuse('it is missing its signature');
    const expected = Buffer.from(await this.sign(uploadId, expiresAt));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !crypto.timingSafeEqual(expected, given)) throw refuse('the signature does not match');
    if (this.now().getTime() > expiresAt) throw refuse('it has expired');
    const upload = await this.store.uploads.get(uploadId);
    if (!upload) throw refuse('the upload does not exist');
    return upload;
  }

  /**
   * Stores the body (more than the declared size is 413 and leaves nothing usable behind). One
   * process keeps it as a file under the data dir; processes sharing a database keep it in the
   * database in chunks, so every node can read what any node received.
   */
  async receive(upload: UploadRecord, body: Readable): Promise<{ upload_id: string; size_bytes: number; sha256: string }> {
    const hash = crypto.createHash('sha256');
    let size = 0;
    const limit = upload.declaredBytes;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > limit) return done(new QuarryError('payload_too_large', `The upload is larger than the ${limit} bytes declared in size_bytes.`));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    const storagePath = this.store.shared ? await this.receiveIntoStore(upload.id, body, meter) : await this.receiveIntoFile(upload.id, body, meter);
    const sha256 = hash.digest('hex');
    crashPoint('upload.stored');
    try {
      await this.store.uploads.complete(upload.id, { sizeBytes: size, sha256, storagePath, completedAt: this.now().toISOString() });
    } catch (err) {
      // Not recorded (the disk is full, the database is away): the contents of a first PUT go
      // too, so nothing half-stored takes space; the client sends the PUT again.
      if (!upload.completedAt) {
        if (storagePath) await fs.promises.rm(storagePath, { force: true }).catch(() => {});
        else await this.store.uploads.deleteChunks(upload.id).catch(() => {});
      }
      throw err;
    }
    crashPoint('upload.completed');
    return { upload_id: upload.id, size_bytes: size, sha256 };
  }

  private async receiveIntoFile(uploadId: string, body: Readable, meter: Transform): Promise<string> {
    const dir = path.join(this.opts.dataDir, 'uploads');
    await fs.promises.mkdir(dir, { recursive: true });
    const finalPath = path.join(dir, uploadId);
    const tempPath = `${finalPath}.${randomToken(6)}.part`;
    try {
      await pipeline(body, meter, fs.createWriteStream(tempPath));
      const handle = await fs.promises.open(tempPath, 'r');
      await handle.sync();
      await handle.close();
      await fs.promises.rename(tempPath, finalPath);
    } catch (err) {
      await fs.promises.rm(tempPath, { force: true });
      throw err;
    }
    return finalPath;
  }

  private async receiveIntoStore(uploadId: string, body: Readable, meter: Transform): Promise<null> {
    // A repeated PUT replaces what an earlier, perhaps interrupted, one left.
    await this.store.uploads.deleteChunks(uploadId);
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let chunk = 0;
    const flush = async () => {
      if (pendingBytes === 0) return;
      await this.store.uploads.putChunk(uploadId, chunk++, Buffer.concat(pending));
      pending = [];
      pendingBytes = 0;
    };
    try {
      await pipeline(body, meter, async (source: AsyncIterable<Buffer>) => {
        for await (const piece of source) {
          pending.push(piece);
          pendingBytes += piece.length;
          if (pendingBytes >= STORE_CHUNK_BYTES) await flush();
        }
        await flush();
      });
    } catch (err) {
      await this.store.uploads.deleteChunks(uploadId);
      throw err;
    }
    return null;
  }

  /**
   * A local file holding a finished upload's contents (for tools and the sandbox). Uploads kept
   * in the database are copied once into the data dir's cache.
   */
  async localPath(upload: UploadRecord): Promise<string> {
    if (upload.storagePath) return upload.storagePath;
    const dir = path.join(this.opts.dataDir, 'upload-cache');
    const file = path.join(dir, upload.id);
    if (fs.existsSync(file)) return file;
    await fs.promises.mkdir(dir, { recursive: true });
    const temp = `${file}.${randomToken(6)}.part`;
    try {
      await pipeline(Readable.from(this.store.uploads.readChunks(upload.id)), fs.createWriteStream(temp));
      await fs.promises.rename(temp, file);
    } catch (err) {
      await fs.promises.rm(temp, { force: true });
      throw err;
    }
    return file;
  }

  /** A finished upload of this account, or undefined. */
  async findCompleted(accountId: string, uploadId: string): Promise<UploadRecord | undefined> {
    const upload = await this.store.uploads.get(uploadId);
    return upload && upload.accountId === accountId && upload.completedAt ? upload : undefined;
  }
}
