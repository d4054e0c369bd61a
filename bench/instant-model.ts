/**
 * The `turns` benchmark's model, in a process of its own (its CPU is neither Quarry's nor the
 * load generator's): the fake OpenAI chat-completions server of the tests, answering every call
 * at once with a short final answer and no tool calls, so each turn is one model call and ends.
 * Prints `instant model listening on <url>` (the base URL, ending in `/v1`). Given a file path as
 * its first argument, it writes there the body of the first call it answers, so that the
 * baseline server can send the model the very request Quarry sent.
 */
import fs from 'node:fs';
import { startFakeOpenAI, type FakeReply } from '../test/fake-model/fake-openai-server.js';

const REPLY: FakeReply = { text: 'Found three plants; the table is complete.' };
/** The fake records every request for the tests to read; nothing reads them here, so it keeps at most this many. */
const KEEP_REQUESTS = 1000;

const fake = await startFakeOpenAI();
let requestFile: string | undefined = process.argv[2];
fake.setResponder((body) => {
  if (requestFile) {
    fs.writeFileSync(requestFile, JSON.stringify(body));
    requestFile = undefined;
  }
  // A run makes tens of thousands of calls, each body holding the whole prompt and tool list:
  // kept, they would grow this process by gigabytes and its garbage collection with them.
  if (fake.requests.length > KEEP_REQUESTS) fake.requests.length = 0;
  return REPLY;
});
process.stdout.write(`instant model listening on ${fake.url}\n`);

process.on('SIGTERM', () => {
  void fake.close().then(() => process.exit(0));
});
