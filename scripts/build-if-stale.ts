/**
 * `npm run build:if-stale` (also the first half of `npm start`): runs `npm run build` only when
 * the build is missing or older than its sources, so a start or a second test suite after a
 * build costs no compile.
 */
import { spawnSync } from 'node:child_process';
import { ROOT, staleBuild } from './build-state.js';

const stale = staleBuild();
if (stale) {
  process.stdout.write(`${stale}: building\n`);
  const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  process.exit(build.status ?? 1);
}
