/**
 * What processes sharing one database tell each other (PostgreSQL NOTIFY). Payloads stay tiny
 * (NOTIFY caps them at 8,000 bytes): events are announced by sequence range and read from the
 * store by whoever has listeners for them.
 */

/** `<origin> <task_id> <first_seq> <last_seq>`: events of one transaction were stored. */
export const EVENTS_CHANNEL = 'quarry_events';
/** JSON ControlMessage. */
export const CONTROL_CHANNEL = 'quarry_control';

export type ControlMessage =
  /** A turn became ready to run: workers should claim. */
  | { type: 'wake' }
  /** A turn was stopped or its task deleted: whoever runs it should abandon it. */
  | { type: 'cancel'; turnId: string }
  /** An API key was revoked: forget any cached verdict for it. */
  | { type: 'key_revoked'; keyId: string };

export function eventsNotice(origin: string, taskId: string, firstSeq: number, lastSeq: number): string {
  return `${origin} ${taskId} ${firstSeq} ${lastSeq}`;
}

export function parseEventsNotice(payload: string): { origin: string; taskId: string; firstSeq: number; lastSeq: number } | null {
  const [origin, taskId, first, last] = payload.split(' ');
  const firstSeq = Number(first);
  const lastSeq = Number(last);
  if (!origin || !taskId || !Number.isInteger(firstSeq) || !Number.isInteger(lastSeq)) return null;
  return { origin, taskId, firstSeq, lastSeq };
}

export function parseControl(payload: string): ControlMessage | null {
  try {
    const msg = JSON.parse(payload) as ControlMessage;
    return msg && typeof msg.type === 'string' ? msg : null;
  } catch {
    return null;
  }
}
