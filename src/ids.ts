/**
 * Identifier generation. ULIDs sort by creation time; the monotonic factory keeps that order
 * within one millisecond, which the FIFO queue of a task's messages relies on.
 */
import crypto from 'node:crypto';
import { monotonicFactory } from 'ulid';
import { CLIENT_ID_PATTERN } from './contract/common.js';

/**
 * Random bytes are drawn from the OS in blocks rather than one call per character (the default),
 * which showed in create profiles. Each byte gives a uniform value in [0, 1) at 1/256 steps,
 * enough for the 32-letter alphabet a ULID character is chosen from.
 */
const RANDOM_BLOCK = 4096;
const randomBlock = Buffer.alloc(RANDOM_BLOCK);
let randomOffset = RANDOM_BLOCK;

function pooledRandom(): number {
  if (randomOffset === RANDOM_BLOCK) {
    crypto.randomFillSync(randomBlock);
    randomOffset = 0;
  }
  return randomBlock[randomOffset++]! / 256;
}

const IDS_PER_BLOCK = 128;

/**
 * A source of ids `<prefix><random hex>` (`bytes` random bytes each), for ids made often (one per
 * request): each is a slice of a block of ids rendered once per 128. A slice is a flat string;
 * `prefix + hex` made per id would be a concatenation, which V8 flattens again wherever the id is
 * scanned: an answer's header values are, by a regular expression, at every answer.
 */
export function pooledIds(prefix: string, bytes: number): () => string {
  const digits = bytes * 2;
  const length = prefix.length + digits;
  let block = '';
  let offset = 0;
  return () => {
    if (offset === block.length) {
      const hex = crypto.randomBytes(IDS_PER_BLOCK * bytes).toString('hex');
      block = Array.from({ length: IDS_PER_BLOCK }, (_, i) => prefix + hex.slice(i * digits, (i + 1) * digits)).join('');
      offset = 0;
    }
    const id = block.slice(offset, offset + length);
    offset += length;
    return id;
  };
}

const nextUlid = monotonicFactory(pooledRandom);

/** `wh`: a webhook endpoint; `msg`: a webhook delivery (its webhook-id, as Standard Webhooks names them); `src`: a source snapshot; `chg`: a keyed row's change. */
export function newId(prefix: 'tsk' | 'turn' | 'acct' | 'key' | 'upl' | 'wh' | 'msg' | 'src' | 'grp' | 'chg'): string {
  return `${prefix}_${nextUlid()}`;
}

/** 1–64 chars of `A-Z a-z 0-9 _ . : -`: client-chosen task ids and X-Request-ID share this form. */
const CLIENT_ID_RE = new RegExp(CLIENT_ID_PATTERN);

export function isClientId(value: string): boolean {
  return CLIENT_ID_RE.test(value);
}

export function randomToken(bytes = 32): string {
  return crypto.randomBytes(bytes).toString('base64url');
}
