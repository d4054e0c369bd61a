/**
 * A task's workspace on the host: <data dir>/workspaces/<task id>, holding outputs/ and whatever
 * else the task's code keeps between runs. Only Quarry writes it: a sandbox run sees a copy
 * (a size-capped tmpfs) and its result is extracted into a fresh directory that then replaces the
 * old one, so the directory only ever holds plain files and directories (see tar-extract.ts).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** The directory the code's result files go in (`/workspace/outputs` inside). */
export const OUTPUTS_DIR = 'outputs';
/** Read-only uploads (`/workspace/inputs` inside); never part of the saved workspace. */
export const INPUTS_DIR = 'inputs';

/** The workspace directory of a task. Task ids are checked ids (no `/`), but this re-checks. */
export function taskWorkspaceDir(dataDir: string, taskId: string): string {
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(taskId) || taskId === '.' || taskId === '..') throw new Error(`not a task id: ${taskId}`);
  return path.join(dataDir, 'workspaces', taskId);
}

function siblings(dir: string, kind: 'new' | 'old'): string[] {
  const parent = path.dirname(dir);
  const prefix = `.${path.basename(dir)}.${kind}-`;
  try {
    return fs.readdirSync(parent).filter((n) => n.startsWith(prefix)).map((n) => path.join(parent, n));
  } catch {
    return [];
  }
}

/**
 * Makes sure the workspace exists with its outputs/ directory, finishing or undoing a swap that a
 * crash interrupted (the old directory is put back if the new one never made it).
 */
export function ensureWorkspace(dir: string): void {
  if (!fs.existsSync(dir)) {
    const old = siblings(dir, 'old').sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
    if (old) fs.renameSync(old, dir);
  }
  for (const stale of [...siblings(dir, 'new'), ...siblings(dir, 'old')]) {
    try {
      fs.rmSync(stale, { recursive: true, force: true });
    } catch {
      // Being removed already (a previous run's clean-up); the next call retries.
    }
  }
  fs.mkdirSync(path.join(dir, OUTPUTS_DIR), { recursive: true });
}

/** True when the workspace holds nothing but an empty outputs/ (the copy into a run is skipped). */
export function workspaceIsEmpty(dir: string): boolean {
  const names = fs.readdirSync(dir);
  if (names.length === 0) return true;
  if (names.length !== 1 || names[0] !== OUTPUTS_DIR) return false;
  return fs.readdirSync(path.join(dir, OUTPUTS_DIR)).length === 0;
}

/** An empty directory beside the workspace to extract a run's result into. */
export function newSnapshotDir(dir: string): string {
  const next = path.join(path.dirname(dir), `.${path.basename(dir)}.new-${crypto.randomBytes(6).toString('hex')}`);
  fs.mkdirSync(next, { mode: 0o755 });
  return next;
}

/** Replaces the workspace with `next` (two renames; ensureWorkspace repairs a crash in between). */
export function commitSnapshot(dir: string, next: string): Promise<void> {
  // outputs/ is always a directory: a file the code left under that name is kept beside it.
  const outputs = path.join(next, OUTPUTS_DIR);
  if (fs.existsSync(outputs) && !fs.lstatSync(outputs).isDirectory()) fs.renameSync(outputs, `${outputs}.file`);
  fs.mkdirSync(outputs, { recursive: true });
  const old = path.join(path.dirname(dir), `.${path.basename(dir)}.old-${crypto.randomBytes(6).toString('hex')}`);
  fs.renameSync(dir, old);
  fs.renameSync(next, dir);
  // The old copy is garbage from here on; the caller need not wait for it to go.
  return fs.promises.rm(old, { recursive: true, force: true });
}

export function discardSnapshot(next: string): void {
  fs.rmSync(next, { recursive: true, force: true });
}

const UNSAFE_NAME = /[/\\\0\n\r\t]/;

/**
 * The name an input gets in /workspace/inputs: the given name when it is a plain file name,
 * else `fallback` (the upload id). Names that repeat get `-2`, `-3`… before the extension.
 */
export function inputNames(inputs: { name?: string | null; fallback: string }[]): string[] {
  const taken = new Set<string>();
  return inputs.map(({ name, fallback }) => {
    const wanted = name && !UNSAFE_NAME.test(name) && name !== '.' && name !== '..' && Buffer.byteLength(name) <= 200 ? name : fallback;
    let chosen = wanted;
    for (let n = 2; taken.has(chosen); n++) {
      const ext = path.extname(wanted);
      chosen = `${wanted.slice(0, wanted.length - ext.length)}-${n}${ext}`;
    }
    taken.add(chosen);
    return chosen;
  });
}

/** The workspace directory of a task for ToolContext.workspaceDir(): made (with outputs/) on first use. */
export function openTaskWorkspace(dataDir: string, taskId: string): string {
  const dir = taskWorkspaceDir(dataDir, taskId);
  ensureWorkspace(dir);
  return dir;
}

/** Deletes a task's workspace (with any half-done swap beside it), e.g. when the task is deleted. */
export async function removeTaskWorkspace(dataDir: string, taskId: string): Promise<void> {
  const dir = taskWorkspaceDir(dataDir, taskId);
  for (const p of [dir, ...siblings(dir, 'new'), ...siblings(dir, 'old')]) await fs.promises.rm(p, { recursive: true, force: true });
}

export class WorkspaceFileError extends Error {
  override name = 'WorkspaceFileError';
}

/**
 * Reads a file of the workspace's outputs/ for write_rows `from_file`. The path is relative to
 * outputs/ (a leading `outputs/` is accepted too); `..`, absolute paths and anything that
 * resolves outside outputs/ (a symlink) are refused, as is anything but a regular file.
 */
export async function readOutputFile(workspaceDir: string, file: string, maxBytes: number): Promise<{ relative: string; text: string }> {
  const given = file.trim().replace(/\\/g, '/');
  if (given === '' || given.includes('\0')) throw new WorkspaceFileError('from_file must name a file in outputs/');
  if (given.startsWith('/') || /^[A-Za-z]:/.test(given)) throw new WorkspaceFileError(`from_file must be a path relative to outputs/, not an absolute path (got ${JSON.stringify(file)})`);
  const parts = given.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.some((p) => p === '..')) throw new WorkspaceFileError(`from_file may not contain ".." (got ${JSON.stringify(file)})`);
  if (parts[0] === OUTPUTS_DIR) parts.shift();
  if (parts.length === 0) throw new WorkspaceFileError('from_file must name a file in outputs/, e.g. "results.csv"');
  const relative = parts.join('/');
  const outputs = path.join(workspaceDir, OUTPUTS_DIR);
  let realOutputs: string;
  let real: string;
  try {
    realOutputs = await fs.promises.realpath(outputs);
    real = await fs.promises.realpath(path.join(outputs, relative));
  } catch {
    throw new WorkspaceFileError(`outputs/${relative} does not exist: write it with run_code first (into /workspace/outputs/)`);
  }
  if (!real.startsWith(realOutputs + path.sep)) throw new WorkspaceFileError(`outputs/${relative} resolves outside outputs/`);
  // O_NOFOLLOW | O_NONBLOCK: a symlink or fifo swapped in after the check is refused, never waited on.
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(real, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (err) {
    throw new WorkspaceFileError(`outputs/${relative} cannot be opened (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new WorkspaceFileError(`outputs/${relative} is not a regular file`);
    if (stat.size > maxBytes) throw new WorkspaceFileError(`outputs/${relative} has ${stat.size} bytes, more than the ${maxBytes} write_rows reads: split it into smaller files`);
    const data = Buffer.alloc(stat.size);
    let at = 0;
    while (at < data.length) {
      const { bytesRead } = await handle.read(data, at, data.length - at, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    return { relative: `${OUTPUTS_DIR}/${relative}`, text: data.subarray(0, at).toString('utf8') };
  } finally {
    await handle.close();
  }
}
