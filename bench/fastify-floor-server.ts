/**
 * The framework floor: the state route of bench/baseline-server.ts on a bare Fastify app (the
 * version Quarry runs, default options, no hooks, no schema), doing the same in-memory work: the
 * `x-api-key` check against a map, the task lookup, and the captured `/state` JSON serialized per
 * request. Quarry ÷ this server is the share of Fastify's own ceiling that Quarry's request path
 * keeps; this server ÷ the bare node:http baseline is what the framework alone costs.
 *
 * Configured over loopback: POST /_bench/config {statePath, stateBody}. Prints
 * `fastify floor listening on <url>`.
 */
import Fastify from 'fastify';

const ACCOUNT = 'account';
const keys = new Map<string, string>([[process.argv[2] ?? '', ACCOUNT]]);
const tasks = new Map<string, { account: string; state: unknown }>();
const STATE_PATH = /^\/task\/([^/]+)\/state$/;
const NOT_FOUND = { error: 'not_found', message: 'No such task.' };

const app = Fastify({ logger: false, keepAliveTimeout: 72_000 });

app.get<{ Params: { task_id: string } }>('/task/:task_id/state', (request, reply) => {
  const key = request.headers['x-api-key'];
  const account = typeof key === 'string' ? keys.get(key) : undefined;
  if (account === undefined) return reply.code(401).send({ error: 'unauthorized', message: 'A valid API key is required.' });
  const task = tasks.get(request.params.task_id);
  if (task?.account !== account) return reply.code(404).send(NOT_FOUND);
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(task.state));
});

app.post<{ Body: { statePath?: string; stateBody?: string } }>('/_bench/config', (request, reply) => {
  const { statePath, stateBody } = request.body;
  if (statePath !== undefined && stateBody !== undefined) {
    tasks.set(decodeURIComponent(STATE_PATH.exec(statePath)![1]!), { account: ACCOUNT, state: JSON.parse(stateBody) });
  }
  return reply.send({ ok: true });
});

const url = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`fastify floor listening on ${url}\n`);

process.on('SIGTERM', () => {
  void app.close().then(() => process.exit(0));
});
