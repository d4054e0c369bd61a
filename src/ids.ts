/**
 * Identifier generation. ULIDs sort by creation time; the monotonic factory keeps that order
 * within one millisecond, which the FIFO queue of a task's messages relies on.
 */
import crypto from 'node:crypto';
import { monotonicFactory } from 'ulid';

const nextUlid = monotonicFactory();

export function newId(prefix: 'tsk' | 'turn' | 'acct' | 'key' | 'upl'): string {
  return `${prefix}_${nextUlid()}`;
}

/** 1–64 chars of `A-Z a-z 0-9 _ . : -`: client-chosen task ids and X-Request-ID share this form. */
export const CLIENT_ID_PATTERN = '^[A-Za-z0-9_.:-]{1,64}$';
const CLIENT_ID_RE = new RegExp(CLIENT_ID_PATTERN);

export function isClientId(value: string): boolean {
  return CLIENT_ID_RE.test(value);
}

export function randomToken(bytes = 32): string {
  return crypto.randomBytes(bytes).toString('base64url');
}
