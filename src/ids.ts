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

/**
 * Random hex digits (request ids are made at every request) come from a block of their own,
 * rendered as hex once per block: a slice of a string costs less than rendering a few bytes.
 */
const HEX_BLOCK_BYTES = 4096;
let hexBlock = '';
let hexOffset = 0;

/** `bytes` random bytes, as hex. */
export function pooledHex(bytes: number): string {
  const digits = bytes * 2;
  if (hexOffset + digits > hexBlock.length) {
    hexBlock = crypto.randomBytes(HEX_BLOCK_BYTES).toString('hex');
    hexOffset = 0;
  }
  const hex = hexBlock.slice(hexOffset, hexOffset + digits);
  hexOffset += digits;
  return hex;
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
