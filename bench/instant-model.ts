/**
 * The `turns` benchmark's model, in a process of its own (its CPU is neither Quarry's nor the
 * load generator's): the fake OpenAI chat-completions server of the tests, answering every call
 * at once with a short final answer and no tool calls, so each turn is one model call and ends.
 * Prints `instant model listening on <url>` (the base URL, ending in `/v1`). Given a file path as
 * its first argument, it writes there the body of the first call it answers, so that the
 * baseline server can send the model the very request Quarry sent.
 *
 * With `--rows <output>`, each turn first writes two rows to that output (a `write_rows` call)
 * and then answers: a turn that leaves what research turns leave, steps and rows included. A turn
 * whose message contains NO_NEW_ROWS writes none (a monitor re-run that found nothing new).
 */
import fs from 'node:fs';
import { startFakeOpenAI, type FakeReply } from '../test/kit/fake-openai-server.js';

/** Kept in step with bench/storage.ts, which sends it (a separate process: no shared import). */
const NO_NEW_ROWS = '[nothing new]';
const REPLY: FakeReply = { text: 'Found three plants; the table is complete.' };
/** The fake records every request for the tests to read; nothing reads them here, so it keeps at most this many. */
const KEEP_REQUESTS = 1000;

const args = process.argv.slice(2);
const rowsAt = args.indexOf('--rows');
const rowsOutput = rowsAt >= 0 ? args.splice(rowsAt, 2)[1] : undefined;
const WRITE_ROWS: FakeReply = {
  text: 'Writing what the registry lists.',
  toolCalls: [{ name: 'write_rows', arguments: { output: rowsOutput, rows: [{ plant: 'North', capacity_mw: 1200 }, { plant: 'South', capacity_mw: 800 }] } }],
};

const fake = await startFakeOpenAI();
let requestFile: string | undefined = args[0];
fake.setResponder((body) => {
  if (requestFile) {
    fs.writeFileSync(requestFile, JSON.stringify(body));
    requestFile = undefined;
  }
  // A run makes tens of thousands of calls, each body holding the whole prompt and tool list:
  // kept, they would grow this process by gigabytes and its garbage collection with them.
  if (fake.requests.length > KEEP_REQUESTS) fake.requests.length = 0;
  // The call after the rows were written carries their result as the last message.
  const last = body.messages?.at(-1);
  if (rowsOutput !== undefined && last?.role !== 'tool' && !JSON.stringify(last ?? '').includes(NO_NEW_ROWS)) return WRITE_ROWS;
  return REPLY;
});
process.stdout.write(`instant model listening on ${fake.url}\n`);

process.on('SIGTERM', () => {
  void fake.close().then(() => process.exit(0));
});
