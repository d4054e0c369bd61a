/**
 * Loaded into every test file's process (`--import`): a file whose tests are over but whose
 * process stays alive (a server, a pool, a timer left open) fails, naming what holds it, instead
 * of hanging the suite until its timeout.
 *
 * The suite does not end files with --test-force-exit: a file that exits at once can lose its
 * last results on the way to the runner, and a lost result cannot fail the run.
 */
import { after } from 'node:test';

/** Longer than any file's own teardown (closing servers, pools, child processes). */
const GRACE_MS = 30_000;

// Registered before the file's own hooks, so it runs first: the grace covers theirs.
after(() => {
  setTimeout(() => {
    process.stderr.write(`${process.argv[1]}: the tests are over, yet after ${GRACE_MS / 1000} s the process is still held open by ${process.getActiveResourcesInfo().join(', ')}\n`);
    process.exit(1);
  }, GRACE_MS).unref();
});
