/**
 * A webhook receiver on loopback for the tests: records every request it gets (headers and raw
 * body), answers each with what the test's `answer` says (a status, a redirect, or never), and
 * lets a test wait for a number of requests.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { startLoopbackServer } from './loopback-server.js';
import { until } from './bounded-waits.js';

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as it arrived (what the signature covers). */
  body: string;
  /** 0-based index among every request this receiver got. */
  index: number;
  /** When it arrived (Date.now()). */
  receivedAt: number;
}

/** A status to answer with, `{status, headers, body}`, or 'hang' to never answer. */
export type ReceiverAnswer = number | { status: number; headers?: Record<string, string>; body?: string } | 'hang';

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly received: ReceivedWebhook[];
  /** Decides each answer (default 200). */
  answer: (request: ReceivedWebhook) => ReceiverAnswer;
  /** Resolves once at least `count` requests arrived (fails after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  /** The requests that carried this webhook-id, in order. */
  byId(id: string): ReceivedWebhook[];
  close(): Promise<void>;
}

export async function startWebhookReceiver(answer: WebhookReceiver['answer'] = () => 200): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const receiver: Omit<WebhookReceiver, 'url' | 'close'> = {
    received,
    answer,
    async waitFor(count, timeoutMs = 10_000) {
      await until(`${count} webhook requests (got ${received.length})`, () => received.length >= count, { timeoutMs });
      return received;
    },
    byId: (id) => received.filter((r) => r.headers['webhook-id'] === id),
  };
  const server = await startLoopbackServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ReceivedWebhook = { path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), index: received.length, receivedAt: Date.now() };
      received.push(request);
      const reply = receiver.answer(request);
      if (reply === 'hang') return;
      const { status, headers, body } = typeof reply === 'number' ? { status: reply, headers: {}, body: undefined } : reply;
      res.writeHead(status, headers).end(body);
    });
  });
  return Object.assign(receiver, { url: server.url, close: () => server.close() });
}
