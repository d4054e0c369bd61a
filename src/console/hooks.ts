import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { messageOf } from './api.js';

export interface Loaded<T> {
  data: T | undefined;
  /** The API's message when the last load failed. */
  error: string | undefined;
  reload: () => void;
}

/**
 * Loads `load()` when `deps` change, again every `refreshMs` when given (the page's live view),
 * and on `reload()`. A load that is overtaken by another is dropped, so answers never arrive out
 * of order.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], refreshMs?: number): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const latest = useRef(0);
  const run = useCallback(() => {
    const ticket = ++latest.current;
    load().then(
      (value) => {
        if (ticket !== latest.current) return;
        setData(value);
        setError(undefined);
      },
      (err: unknown) => {
        if (ticket === latest.current) setError(messageOf(err));
      },
    );
  }, deps);
  // The last answer stays shown while the next loads: a live view does not flicker.
  useEffect(() => {
    run();
    if (!refreshMs) return () => void latest.current++;
    const timer = setInterval(run, refreshMs);
    return () => {
      clearInterval(timer);
      latest.current++;
    };
  }, [run, refreshMs]);
  return { data, error, reload: run };
}

/** Runs an action a button started: busy while it runs, the API's message if it fails. */
export function useAction(): { busy: boolean; error: string | undefined; run: (action: () => Promise<unknown>) => Promise<boolean>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const run = useCallback(async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      return true;
    } catch (err) {
      setError(messageOf(err));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(undefined) };
}
