/**
 * Builds the `quarry` command (server and CLI) into dist/src/cli/quarry.js with esbuild: our
 * modules and their dependencies bundled into a few files. Run by `npm run build`; type checking
 * is `npm run typecheck`'s job.
 *
 * Why a bundle: Node.js loads an ES module graph file by file (resolve, stat, open, compile), and
 * the server's graph is some 900 files. A process spent about 0.9 s of CPU loading them, 0.35 s
 * loading the bundle: every start, restart and crash recovery pays it. The CLI's client commands
 * and the server are separate chunks (the entry imports each side only when used), so
 * `quarry tasks list` still loads none of the server.
 */
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { QUARRY_BUILD, ROOT } from './build-state.js';

const outdir = path.dirname(QUARRY_BUILD);
// What an earlier build left (older chunks, or a build made file by file) would pile up otherwise.
fs.rmSync(path.join(ROOT, 'dist', 'src'), { recursive: true, force: true });
await build({
  entryPoints: [path.join(ROOT, 'src', 'cli', 'quarry.ts')],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: ['node20'],
  sourcemap: 'linked',
  entryNames: '[name]',
  chunkNames: 'chunks/[name]-[hash]',
  legalComments: 'none',
  logLevel: 'warning',
  external: [
    // A native addon: loaded from node_modules, built for the Node.js that runs it.
    'better-sqlite3',
    // pg's optional native binding, never installed.
    'pg-native',
    // Read files from their package directories (static files, their package.json).
    '@fastify/swagger',
    '@fastify/swagger-ui',
    // PDF text extraction, loaded on the first PDF only; large, and loads parts of itself by path.
    'unpdf',
  ],
  // Bundled CommonJS packages call require() for Node's built-ins: give the ES module chunks one.
  banner: { js: "import { createRequire as quarryCreateRequire } from 'node:module'; const require = quarryCreateRequire(import.meta.url);" },
});
