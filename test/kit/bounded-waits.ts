/**
 * Waits with a limit, so that a test (or a benchmark) fails instead of hanging when what it
 * waits for never happens.
 */

/** Fails instead of hanging the suite when a promise does not settle in time. */
export async function within<T>(promise: Promise<T>, ms: number, what = 'the promise'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` (bounded) until it returns a truthy value, and returns that value. */
export async function until<T>(what: string, check: () => T | Promise<T>, { timeoutMs = 5000, pollMs = 10 } = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
