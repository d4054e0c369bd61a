/**
 * A wait that an abort cuts short, rejecting with the signal's own reason (node:timers/promises
 * rejects with an AbortError instead, and callers here branch on the reason: stopped, time
 * limit, lost lease, shutdown).
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
