/**
 * Reads the tar stream of /workspace that the sandbox writes after the code has ended, into a new
 * directory on the host. The stream is untrusted (the code chose every name and byte), so: only
 * regular files and directories are made (symlinks, devices and fifos are dropped; a hard link
 * becomes a copy), names are checked component by component and can never leave the directory,
 * and the total size and number of entries are capped. The host's copy of a workspace therefore
 * never holds anything but plain files and directories, all made by Quarry itself.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface ExtractLimits {
  /** Sum of file sizes. */
  maxBytes: number;
  /** Files plus directories. */
  maxEntries: number;
}

export interface ExtractSummary {
  bytes: number;
  entries: number;
  /** Sum of file sizes rounded up to 4 KiB pages: what the files took in the sandbox's tmpfs. */
  pages: number;
  /** Entries that were not saved: symlinks, special files. */
  skipped: number;
}

export class SnapshotError extends Error {
  override name = 'SnapshotError';
  constructor(message: string, readonly overQuota = false) {
    super(message);
  }
}

const BLOCK = 512;
const MAX_PATH = 4096;
const MAX_DEPTH = 64;
/** Longest pax header or GNU long name we accept (a name is at most MAX_PATH anyway). */
const MAX_META = 64 * 1024;

/** Pulls exact byte counts out of a stream of chunks. */
class ChunkReader {
  private chunks: Buffer[] = [];
  private length = 0;
  constructor(private readonly source: AsyncIterator<Buffer>) {}

  private async fill(n: number): Promise<boolean> {
    while (this.length < n) {
      const next = await this.source.next();
      if (next.done) return false;
      const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
      this.chunks.push(chunk);
      this.length += chunk.length;
    }
    return true;
  }

  /** Exactly n bytes, or null at the end of the stream. */
  async read(n: number): Promise<Buffer | null> {
    if (!(await this.fill(n))) return null;
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.length = rest.length;
    return out;
  }

  /** Hands n bytes to `sink` a chunk at a time; false if the stream ends first. */
  async pipe(n: number, sink: (chunk: Buffer) => Promise<void>): Promise<boolean> {
    let left = n;
    while (left > 0) {
      if (this.length === 0 && !(await this.fill(1))) return false;
      const head = this.chunks[0]!;
      const part = head.subarray(0, Math.min(left, head.length));
      if (part.length === head.length) this.chunks.shift();
      else this.chunks[0] = head.subarray(part.length);
      this.length -= part.length;
      left -= part.length;
      await sink(part);
    }
    return true;
  }
}

function text(block: Buffer, start: number, length: number): string {
  const field = block.subarray(start, start + length);
  const end = field.indexOf(0);
  return field.subarray(0, end < 0 ? field.length : end).toString('utf8');
}

function octal(block: Buffer, start: number, length: number): number {
  // GNU base-256 for large values: the high bit of the first byte is set.
  if (block[start]! & 0x80) {
    let value = block[start]! & 0x7f;
    for (let i = start + 1; i < start + length; i++) value = value * 256 + block[i]!;
    return value;
  }
  const raw = text(block, start, length).trim();
  if (raw === '') return 0;
  if (!/^[0-7]+$/.test(raw)) throw new SnapshotError('the workspace archive is corrupt (bad number)');
  return parseInt(raw, 8);
}

function checksumOk(block: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : block[i]!;
  try {
    return sum === octal(block, 148, 8);
  } catch {
    return false;
  }
}

/** Parses pax records ("<len> key=value\n"), keeping path, linkpath and size. */
function paxRecords(data: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    if (space < 0) break;
    const len = Number(data.subarray(at, space).toString('ascii'));
    if (!Number.isInteger(len) || len <= 0 || at + len > data.length) throw new SnapshotError('the workspace archive is corrupt (bad pax header)');
    const record = data.subarray(space + 1, at + len - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq > 0) out.set(record.slice(0, eq), record.slice(eq + 1));
    at += len;
  }
  return out;
}

/** The checked relative path of an entry: null for the archive's root; throws for names that try to leave it. */
export function safeRelative(name: string): string | null {
  if (name.length > MAX_PATH || name.includes('\0')) throw new SnapshotError('a name in the workspace is too long');
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.some((p) => p === '..')) throw new SnapshotError(`the workspace archive names a path outside it: ${JSON.stringify(name.slice(0, 200))}`);
  if (parts.length > MAX_DEPTH) throw new SnapshotError('the workspace nests directories too deeply');
  if (parts.some((p) => Buffer.byteLength(p) > 255)) throw new SnapshotError('a name in the workspace is too long');
  return parts.length ? parts.join('/') : null;
}

const roundUp = (n: number, to: number) => Math.ceil(n / to) * to;

/**
 * Extracts a tar stream into `dest` (an empty directory the caller made). Resolves when the
 * archive's end marker is read; rejects with SnapshotError for a broken or over-limit archive.
 * Top-level entries named in `skipTop` (the read-only inputs/) are not extracted.
 */
export async function extractTar(source: AsyncIterable<Buffer>, dest: string, limits: ExtractLimits, skipTop: ReadonlySet<string> = new Set()): Promise<ExtractSummary> {
  const iterator = source[Symbol.asyncIterator]();
  try {
    return await extractFrom(new ChunkReader(iterator), dest, limits, skipTop);
  } finally {
    // Read (and drop) whatever follows, the archive's padding or the rest of a refused one, so
    // the writer never blocks on a full pipe.
    while (!(await iterator.next()).done) {
      // Discarded.
    }
  }
}

async function extractFrom(reader: ChunkReader, dest: string, limits: ExtractLimits, skipTop: ReadonlySet<string>): Promise<ExtractSummary> {
  const summary: ExtractSummary = { bytes: 0, entries: 0, pages: 0, skipped: 0 };
  const made = new Set<string>();
  let longName: string | null = null;
  let longLink: string | null = null;
  let pax = new Map<string, string>();

  const ensureDir = (rel: string) => {
    if (made.has(rel)) return;
    const parent = path.posix.dirname(rel);
    if (parent !== '.') ensureDir(parent);
    const full = path.join(dest, rel);
    try {
      fs.mkdirSync(full, { mode: 0o755 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !fs.lstatSync(full).isDirectory()) {
        throw new SnapshotError(`the workspace archive is inconsistent at ${JSON.stringify(rel)}`);
      }
    }
    if (!made.has(rel)) {
      made.add(rel);
      count();
    }
  };
  const count = () => {
    summary.entries++;
    if (summary.entries > limits.maxEntries) throw new SnapshotError(`the workspace holds more than ${limits.maxEntries} files and directories`, true);
  };
  const addBytes = (n: number) => {
    summary.bytes += n;
    summary.pages += roundUp(n, 4096);
    if (summary.bytes > limits.maxBytes) throw new SnapshotError(`the workspace holds more than ${limits.maxBytes} bytes`, true);
  };
  /** Skips an entry's data, padding included. */
  const skip = async (size: number) => discard(roundUp(size, BLOCK));
  const discard = async (bytes: number) => {
    if (!(await reader.pipe(bytes, async () => {}))) throw new SnapshotError('the workspace archive ends early');
  };
  const readMeta = async (size: number): Promise<Buffer> => {
    if (size > MAX_META) throw new SnapshotError('the workspace archive has an oversized header');
    const data = await reader.read(roundUp(size, BLOCK));
    if (!data) throw new SnapshotError('the workspace archive ends early');
    return data.subarray(0, size);
  };

  while (true) {
    const block = await reader.read(BLOCK);
    if (!block) throw new SnapshotError('the workspace archive ends without its end marker');
    if (block.every((b) => b === 0)) return summary;
    if (!checksumOk(block)) throw new SnapshotError('the workspace archive is corrupt (checksum)');
    const type = String.fromCharCode(block[156]!);
    let size = octal(block, 124, 12);
    const mode = octal(block, 100, 8);
    const mtime = octal(block, 136, 12);
    let name = text(block, 0, 100);
    const prefix = block.subarray(257, 262).toString('ascii') === 'ustar' ? text(block, 345, 155) : '';
    if (prefix) name = `${prefix}/${name}`;
    let linkName = text(block, 157, 100);

    // Headers that describe the next entry.
    if (type === 'L' || type === 'K') {
      const value = (await readMeta(size)).toString('utf8').replace(/\0+$/, '');
      if (type === 'L') longName = value;
      else longLink = value;
      continue;
    }
    if (type === 'x') {
      pax = paxRecords(await readMeta(size));
      continue;
    }
    if (type === 'g') {
      await skip(size);
      continue;
    }
    if (longName !== null) name = longName;
    if (longLink !== null) linkName = longLink;
    if (pax.has('path')) name = pax.get('path')!;
    if (pax.has('linkpath')) linkName = pax.get('linkpath')!;
    if (pax.has('size')) size = Number(pax.get('size'));
    if (!Number.isSafeInteger(size) || size < 0) throw new SnapshotError('the workspace archive is corrupt (size)');
    longName = longLink = null;
    pax = new Map();

    const rel = safeRelative(name);
    if (rel === null || skipTop.has(rel.split('/')[0]!)) {
      await skip(type === '5' ? 0 : size);
      continue;
    }
    const full = path.join(dest, rel);
    if (type === '5') {
      ensureDir(rel);
      await skip(size);
    } else if (type === '0' || type === '\0' || type === '7') {
      const parent = path.posix.dirname(rel);
      if (parent !== '.') ensureDir(parent);
      count();
      addBytes(size);
      let handle: fs.promises.FileHandle;
      try {
        // wx: a name seen twice, or one a directory already took, is an inconsistent archive.
        handle = await fs.promises.open(full, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, mode & 0o111 ? 0o755 : 0o644);
      } catch {
        throw new SnapshotError(`the workspace archive is inconsistent at ${JSON.stringify(rel)}`);
      }
      try {
        if (!(await reader.pipe(size, async (chunk) => void (await handle.write(chunk))))) throw new SnapshotError('the workspace archive ends early');
        if (mtime > 0) await handle.utimes(mtime, mtime);
      } finally {
        await handle.close();
      }
      await discard(roundUp(size, BLOCK) - size);
    } else if (type === '1') {
      // A hard link to a file already extracted: saved as a copy of it.
      await skip(size);
      const target = safeRelative(linkName);
      const source = target === null ? null : path.join(dest, target);
      let stat: fs.Stats | null = null;
      try {
        stat = source ? fs.lstatSync(source) : null;
      } catch {
        stat = null;
      }
      if (!stat?.isFile()) {
        summary.skipped++;
        continue;
      }
      const parent = path.posix.dirname(rel);
      if (parent !== '.') ensureDir(parent);
      count();
      addBytes(stat.size);
      try {
        fs.copyFileSync(source!, full, fs.constants.COPYFILE_EXCL);
      } catch {
        throw new SnapshotError(`the workspace archive is inconsistent at ${JSON.stringify(rel)}`);
      }
    } else {
      // Symlinks, devices, fifos: never recreated on the host.
      summary.skipped++;
      await skip(size);
    }
  }
}
