/**
 * `npm run build:if-stale`: builds (npm run build) only when the build the process tests start
 * is missing or older than src/, so a second suite after `npm test` reuses its build.
 */
import { spawnSync } from 'node:child_process';
import { ROOT, staleBuild } from './process.js';

const stale = staleBuild();
if (stale) {
  process.stdout.write(`${stale}: building\n`);
  const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  process.exit(build.status ?? 1);
}
