/**
 * Where Quarry's package lies and its version, found from this file the same way whether it
 * runs from src/ (tsx) or from dist/src/ (the build): the nearest package.json above named quarry.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackage(): { root: string; version: string } | undefined {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'quarry' && pkg.version) return { root: dir, version: pkg.version };
    } catch {
      // no package.json here: look further up
    }
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

const found = findPackage();

/** The package's root directory (where package.json and dist/ are), or undefined when this file lies outside one. */
export const PACKAGE_ROOT: string | undefined = found?.root;

export const QUARRY_VERSION: string = found?.version ?? '0.0.0';
