/**
 * Builds the web console (src/console, Preact) into dist/console: one script and one style
 * sheet with content hashes in their names, so Quarry can serve them as immutable, and an
 * index.html that names them (served no-cache). Run by `npm run build`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { CONSOLE_DIR, ROOT } from './build-state.js';

const source = path.join(ROOT, 'src', 'console');
const assets = path.join(CONSOLE_DIR, 'assets');
/** Where Quarry serves the assets (src/http/routes/console.ts). */
const ASSET_URL = '/console/assets/';

// Old hashed files would pile up otherwise.
fs.rmSync(CONSOLE_DIR, { recursive: true, force: true });
const result = await build({
  entryPoints: [path.join(source, 'main.tsx')],
  tsconfig: path.join(source, 'tsconfig.json'),
  bundle: true,
  format: 'esm',
  target: ['es2022'],
  minify: true,
  sourcemap: 'linked',
  entryNames: '[name]-[hash]',
  outdir: assets,
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
  // The client reads local files (createFromFile) through a dynamic import of node:fs that a
  // browser never runs: left as it is rather than bundled.
  external: ['node:*'],
});

const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
const script = outputs.find((file) => file.endsWith('.js'));
const style = outputs.find((file) => file.endsWith('.css'));
if (!script || !style) throw new Error(`the console build made no script or no style sheet: ${outputs.join(', ')}`);

// No inline script or style anywhere: the page's Content-Security-Policy allows only its own files.
const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Quarry console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSET_URL}${style}">
<script type="module" src="${ASSET_URL}${script}"></script>
</head>
<body>
<div id="app"></div>
<noscript>The Quarry console needs JavaScript.</noscript>
</body>
</html>
`;
fs.writeFileSync(path.join(CONSOLE_DIR, 'index.html'), html);
