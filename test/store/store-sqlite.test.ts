import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { runStoreCases } from './store-cases.js';

runStoreCases('sqlite', async () => openSqliteStore(fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-store-'))));
