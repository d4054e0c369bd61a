/**
 * A raw HTTP/1.1 client over node:net, for tests of what a client sees on the wire below the
 * routes: bytes no HTTP library would send (bad framing, stalled bodies), and the answers and
 * connection closes that come back.
 */
import net from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface RawExchange {
  /** The answers read, in order (several on a kept-alive connection). */
  answers: RawAnswer[];
  /** Whether the server closed the connection before the client gave up waiting. */
  closedByServer: boolean;
  /** From the first byte sent to the close (or to giving up). */
  ms: number;
}

/** Splits received bytes into answers (each with a Content-Length body, as every answer here has). */
function parseAnswers(bytes: Buffer): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let rest = bytes;
  while (rest.length > 0) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) break;
    const [statusLine, ...lines] = rest.subarray(0, headEnd).toString('latin1').split('\r\n');
    const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(':')).trim().toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as [string, string]));
    const length = Number(headers.get('content-length') ?? 0);
    const text = rest.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8');
    let body: unknown;
    try { body = JSON.parse(text); } catch { body = undefined; }
    answers.push({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)?.[1] ?? 0), headers, text, body });
    rest = rest.subarray(headEnd + 4 + length);
  }
  return answers;
}

/**
 * Sends `parts` on one connection (a number between them is a pause in ms), then reads until the
 * server closes the connection or `waitMs` has passed since the last part.
 */
export function exchange(url: string, parts: (string | Buffer | number)[], waitMs = 5_000): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    let started = 0;
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const finish = (closedByServer: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ answers: parseAnswers(Buffer.concat(chunks)), closedByServer, ms: Date.now() - started });
    };
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.once('close', () => finish(true));
    socket.once('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? finish(true) : reject(err)));
    socket.once('connect', async () => {
      started = Date.now();
      for (const part of parts) {
        if (typeof part === 'number') await new Promise((r) => setTimeout(r, part));
        else if (!socket.destroyed) socket.write(part);
      }
      timer = setTimeout(() => finish(false), waitMs);
    });
  });
}
