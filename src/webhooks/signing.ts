/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): a secret is `whsec_` + base64 of
 * random bytes; a signature is `v1,` + base64 of HMAC-SHA256 over `<id>.<timestamp>.<body>`
 * keyed with those bytes. Several signatures (two secrets during a rotation) are separated by
 * spaces; a receiver accepts the message if any one verifies.
 */
import crypto from 'node:crypto';

const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

export function newSecret(): string {
  return `${SECRET_PREFIX}${crypto.randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** The value of the webhook-signature header for one message, signed with every secret given. */
export function signatureHeader(secrets: string[], id: string, timestampSeconds: number, body: string): string {
  const content = `${id}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) => `v1,${crypto.createHmac('sha256', Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')).update(content).digest('base64')}`)
    .join(' ');
}
