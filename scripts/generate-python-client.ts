/**
 * Writes the Python client's generated modules (packages/python/quarry/types.py and
 * _catalogue.py) from the contract and the error catalogue. Run it after changing either
 * (`npm run generate`); a test fails while the files are stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pythonCatalogueSource, pythonTypesSource } from './python-client.js';

const dir = path.resolve(import.meta.dirname, '../packages/python/quarry');
const files: [string, string][] = [['types.py', await pythonTypesSource()], ['_catalogue.py', pythonCatalogueSource()]];
for (const [name, source] of files) {
  fs.writeFileSync(path.join(dir, name), source);
  console.log(`wrote ${path.relative(process.cwd(), path.join(dir, name))}`);
}
