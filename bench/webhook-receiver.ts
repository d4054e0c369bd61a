/**
 * The webhook benchmark's receiver, in a process of its own: answers every POST with 204 at once
 * and counts them (and their distinct webhook-ids). GET /_count → {count, distinct}.
 * Prints `receiver listening on <url>`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

let count = 0;
const ids = new Set<string>();

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/_count') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ count, distinct: ids.size }));
    return;
  }
  req.resume();
  req.on('end', () => {
    count++;
    const id = req.headers['webhook-id'];
    if (typeof id === 'string') ids.add(id);
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 5000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`receiver listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
