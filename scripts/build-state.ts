/**
 * Whether the build is older than its sources. `npm start` and the test suites build only when
 * it is (scripts/build-if-stale.ts), and tests that start the built server refuse a stale one.
 */
import fs from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..');
/** The built CLI (the server and the command line), from scripts/build-server.ts. */
export const QUARRY_BUILD = path.join(ROOT, 'dist', 'src', 'cli', 'quarry.js');
/** The built client package (packages/client): ES modules from its own tsconfig, and one CommonJS bundle for require(). */
const CLIENT_BUILDS = ['index.js', 'index.cjs'].map((file) => path.join(ROOT, 'packages', 'client', 'dist', file));
/** The built web console (scripts/build-console.ts), served by Quarry at /console. */
export const CONSOLE_DIR = path.join(ROOT, 'dist', 'console');
const CONSOLE_BUILD = path.join(CONSOLE_DIR, 'index.html');
/** What the builds are made from (the console's sources are under src/ too). */
const BUILD_SOURCES = ['src', path.join('packages', 'client', 'src')];

/** The newest file under the build's sources, by modification time. */
function newestSource(): { file: string; mtimeMs: number } {
  let newest = { file: '', mtimeMs: 0 };
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) {
        const mtimeMs = fs.statSync(p).mtimeMs;
        if (mtimeMs > newest.mtimeMs) newest = { file: p, mtimeMs };
      }
    }
  };
  for (const dir of BUILD_SOURCES) walk(path.join(ROOT, dir));
  return newest;
}

/** Why the build cannot be used (missing, or older than a source file), or undefined when it is fresh. */
export function staleBuild(): string | undefined {
  const newest = newestSource();
  for (const output of [QUARRY_BUILD, ...CLIENT_BUILDS, CONSOLE_BUILD]) {
    const rel = path.relative(ROOT, output);
    if (!fs.existsSync(output)) return `${rel} is missing`;
    const built = fs.statSync(output).mtimeMs;
    if (newest.mtimeMs > built) {
      return `${rel} (built ${new Date(built).toISOString()}) is older than ${path.relative(ROOT, newest.file)} (changed ${new Date(newest.mtimeMs).toISOString()})`;
    }
  }
  return undefined;
}
