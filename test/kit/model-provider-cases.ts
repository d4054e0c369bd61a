/**
 * What every model provider must do alike, whatever its wire format: test cases that each
 * provider's test file runs against its own fake server, and the helpers those files share.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { ModelProviderError, type ModelProvider, type ModelRequest } from '../../src/agent/providers/model-provider.js';
import type { HttpProviderOptions, ModelPost } from '../../src/agent/providers/provider-http.js';
import type { FakeModelReply, FakeModelServer } from './fake-model-server.js';
import { until, within } from './bounded-waits.js';

/** A request with one user message and no tools; `overrides` replaces any part. */
export function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { messages: [{ role: 'user', content: 'Hi' }], tools: [], signal: new AbortController().signal, ...overrides };
}

/** A fetch that answers every call with this body, given as byte pieces to cut events anywhere. */
/** A provider's POST answered with 200 and `pieces` as the body's chunks, one by one. */
export function postAnswering(pieces: Uint8Array[], contentType: string): ModelPost {
  return async () => ({
    statusCode: 200,
    headers: { 'content-type': contentType },
    body: (async function* () {
      yield* pieces;
    })(),
  });
}

export function bytes(text: string): Uint8Array[] {
  return [new TextEncoder().encode(text)];
}

export function isProviderError(expected: { status?: number; retryable: boolean; message?: RegExp }) {
  return (err: unknown) => {
    assert.ok(err instanceof ModelProviderError, `expected a ModelProviderError, got ${String(err)}`);
    assert.equal(err.status, expected.status);
    assert.equal(err.retryable, expected.retryable);
    if (expected.message) assert.match(err.message, expected.message);
    return true;
  };
}

export function isAbortError(err: unknown): boolean {
  assert.ok(err instanceof Error);
  assert.equal(err.name, 'AbortError');
  assert.ok(!(err instanceof ModelProviderError));
  return true;
}

/** A provider and the fake server it talks to, as one test file sets them up. */
export interface ProviderUnderTest {
  /** The fake server of the running test. */
  fake(): FakeModelServer<FakeModelReply, unknown>;
  /** The provider pointed at the fake, with `opts` on top of the file's own options. */
  provider(opts?: HttpProviderOptions & { stream?: boolean }): ModelProvider;
  /** The provider with nothing but a base URL and a model. */
  bareProvider(baseUrl: string): ModelProvider;
}

/**
 * The server reports no usage: the token counts are estimated from six characters of system
 * prompt and seven of user message (4 tokens), and from the answer's five characters (2 tokens).
 * `stream` is a complete streamed answer of the text `abcde` that carries no usage.
 */
export function tokenEstimateCase(subject: ProviderUnderTest, stream: string): void {
  it('estimates tokens as ceil(chars / 4) when the server reports no usage', async () => {
    const response = await subject.provider({ post: postAnswering(bytes(stream), 'text/event-stream') }).generate(
      request({ messages: [{ role: 'system', content: 'x'.repeat(6) }, { role: 'user', content: 'y'.repeat(7) }] }),
    );

    assert.deepEqual(response.usage, { inputTokens: 4, cachedInputTokens: 0, outputTokens: 2 });
  });
}

/**
 * HTTP errors: each of `retryable` (the scripted message must match `retryableMessage`) and each
 * of `permanent` (answered with `permanentError`, which `permanentMessage` must match).
 */
export function statusCases(
  subject: ProviderUnderTest,
  cases: { retryable: number[]; retryableMessage: RegExp; permanent: number[]; permanentError: string; permanentMessage: RegExp },
): void {
  for (const status of cases.retryable) {
    it(`answers ${status} with a retryable ModelProviderError carrying the provider's message`, async () => {
      subject.fake().script({ status, errorMessage: 'Slow down, quarry.' });

      await assert.rejects(subject.provider().generate(request()), isProviderError({ status, retryable: true, message: cases.retryableMessage }));
    });
  }

  for (const status of cases.permanent) {
    it(`answers ${status} with a ModelProviderError that is not retryable`, async () => {
      subject.fake().script({ status, errorMessage: cases.permanentError });

      await assert.rejects(subject.provider().generate(request()), isProviderError({ status, retryable: false, message: cases.permanentMessage }));
    });
  }
}

/**
 * Aborts, the time limit and a refused connection. `chunkDelayMs` spaces the stream events of
 * the mid-stream abort: aborting after the first must not wait for the next.
 */
export function abortAndFailureCases(subject: ProviderUnderTest, { chunkDelayMs }: { chunkDelayMs: number }): void {
  it('rejects at once with AbortError when aborted during a hanging call, and drops the connection', async () => {
    const fake = subject.fake();
    fake.script({ hang: true });
    const controller = new AbortController();
    const pending = subject.provider().generate(request({ signal: controller.signal }));
    await fake.waitForRequests(1);
    assert.equal(fake.pending(), 1);

    controller.abort();

    await assert.rejects(within(pending, 500), isAbortError);
    await until('no pending request', () => fake.pending() === 0, { timeoutMs: 1000, pollMs: 5 });
  });

  it('rejects with AbortError when aborted in the middle of a stream', async () => {
    const fake = subject.fake();
    fake.script({ text: 'a'.repeat(400), chunkDelayMs });
    const controller = new AbortController();
    const deltas: string[] = [];
    let firstDelta!: () => void;
    const gotFirstDelta = new Promise<void>((resolve) => (firstDelta = resolve));

    const pending = subject.provider().generate(
      request({
        signal: controller.signal,
        onTextDelta: (d) => {
          deltas.push(d);
          firstDelta();
        },
      }),
    );
    await gotFirstDelta;
    controller.abort();

    await assert.rejects(within(pending, 200), isAbortError);
    assert.equal(deltas.length, 1);
    await until('no pending request', () => fake.pending() === 0, { timeoutMs: 1000, pollMs: 5 });
  });

  it('passes on no delta after onTextDelta aborts, even within one network chunk', async () => {
    subject.fake().script({ text: 'Several deltas, all written at once.' });
    const controller = new AbortController();
    const deltas: string[] = [];

    await assert.rejects(
      subject.provider().generate(
        request({
          signal: controller.signal,
          onTextDelta: (d) => {
            deltas.push(d);
            controller.abort();
          },
        }),
      ),
      isAbortError,
    );
    assert.equal(deltas.length, 1);
  });

  it('sends nothing when the signal is already aborted', async () => {
    await assert.rejects(subject.provider().generate(request({ signal: AbortSignal.abort() })), isAbortError);
    assert.equal(subject.fake().requests.length, 0);
  });

  it('turns requestTimeoutMs into a retryable ModelProviderError, not an AbortError', async () => {
    subject.fake().script({ hang: true });

    await assert.rejects(
      within(subject.provider({ requestTimeoutMs: 50 }).generate(request()), 1000),
      isProviderError({ retryable: true, message: /within 50 ms/ }),
    );
  });

  it('reports a refused connection as a retryable ModelProviderError', async () => {
    const { url } = subject.fake();
    await subject.fake().close();

    await assert.rejects(subject.bareProvider(url).generate(request()), isProviderError({ retryable: true, message: /ECONNREFUSED/ }));
  });
}

/**
 * Answers that break the wire format, each as [what it is, a fetch serving it, whether a stream
 * is asked for]; `emptyAnswer` is a 200 JSON body of the provider's answer shape with nothing in
 * it (OpenAI's `choices: []`).
 */
export function malformedAnswerCase(subject: ProviderUnderTest, cases: [string, ModelPost, boolean][], emptyAnswer: string): void {
  it('reports a malformed answer as a retryable ModelProviderError (a gateway failing for a moment)', async () => {
    for (const [what, post, stream] of cases) {
      await assert.rejects(subject.provider({ post, stream }).generate(request()), isProviderError({ retryable: true, message: /malformed answer/ }), what);
    }
  });

  it('reports a 200 that is not JSON, or an empty answer, from the server as retryable malformed answers', async () => {
    subject.fake().script({ rawBody: '{"choices": [' }, { rawBody: emptyAnswer });

    for (const what of ['cut JSON', 'empty answer']) {
      await assert.rejects(subject.provider({ stream: false }).generate(request()), isProviderError({ retryable: true, message: /malformed answer/ }), what);
    }
  });
}

/** A 429 or 503 carrying Retry-After: the error says how long the server asked us to wait. */
export function retryAfterCases(subject: ProviderUnderTest): void {
  it('reads Retry-After in seconds from a 429, and retry-after-ms over it', async () => {
    subject.fake().script(
      { status: 429, errorMessage: 'Rate limited.', headers: { 'retry-after': '7' } },
      { status: 429, errorMessage: 'Rate limited.', headers: { 'retry-after': '7', 'retry-after-ms': '1500' } },
    );

    const first = await subject.provider().generate(request()).catch((err: unknown) => err);
    const second = await subject.provider().generate(request()).catch((err: unknown) => err);

    assert.ok(first instanceof ModelProviderError && second instanceof ModelProviderError);
    assert.deepEqual([first.status, first.retryable, first.retryAfterMs], [429, true, 7000]);
    assert.equal(second.retryAfterMs, 1500);
  });

  it('reads Retry-After as an HTTP date from a 503, and leaves it out when there is none or it is nonsense', async () => {
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    subject.fake().script(
      { status: 503, errorMessage: 'Down for a moment.', headers: { 'retry-after': inTenSeconds } },
      { status: 503, errorMessage: 'Down for a moment.' },
      { status: 503, errorMessage: 'Down for a moment.', headers: { 'retry-after': 'soon' } },
    );

    const errors: ModelProviderError[] = [];
    for (let i = 0; i < 3; i++) {
      const err = await subject.provider().generate(request()).catch((e: unknown) => e);
      assert.ok(err instanceof ModelProviderError);
      errors.push(err);
    }

    // An HTTP date has whole seconds: between 9 and 10 s from now, less the time the call took.
    const fromDate = errors[0]!.retryAfterMs!;
    assert.ok(fromDate > 8000 && fromDate <= 10_000, `Retry-After as a date gave ${fromDate} ms`);
    assert.equal(errors[1]!.retryAfterMs, undefined);
    assert.equal(errors[2]!.retryAfterMs, undefined);
  });
}

/**
 * The silence limit (`timeoutMs`): a server that says nothing at all, or stops in the middle of
 * a stream, fails the call with a retryable error soon after the limit; a slow stream whose
 * events each come within the limit is read to its end however long it takes in all.
 */
export function silenceTimeoutCases(subject: ProviderUnderTest): void {
  const silent = isProviderError({ retryable: true, message: /timed out: the server sent nothing for 150 ms/ });

  it('fails a call whose server never answers once timeoutMs passes, and drops the connection', async () => {
    const fake = subject.fake();
    fake.script({ hang: true });
    const started = Date.now();

    await assert.rejects(within(subject.provider({ timeoutMs: 150 }).generate(request()), 2000), silent);

    assert.ok(Date.now() - started >= 140, 'not before the limit');
    await until('no pending request', () => fake.pending() === 0, { timeoutMs: 1000, pollMs: 5 });
  });

  it('fails a stream that falls silent half way once timeoutMs passes', async () => {
    subject.fake().script({ text: 'a'.repeat(40), hangAfterEvents: 2 });
    const deltas: string[] = [];

    await assert.rejects(within(subject.provider({ timeoutMs: 150 }).generate(request({ onTextDelta: (d) => deltas.push(d) })), 2000), silent);
  });

  it('reads a slow stream to its end when each event comes within timeoutMs', async () => {
    subject.fake().script({ text: 'slow but steady', chunkDelayMs: 60 });
    const started = Date.now();

    const response = await subject.provider({ timeoutMs: 200 }).generate(request());

    assert.equal(response.text, 'slow but steady');
    assert.ok(Date.now() - started > 200, 'the stream as a whole took longer than the limit');
  });
}
