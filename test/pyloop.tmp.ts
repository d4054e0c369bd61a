import { execFileSync, spawn } from 'node:child_process';
import { startServer, tempDataDir } from './kit/process.js';
const hogs = Array.from({ length: 3 }, () => spawn('node', ['-e', 'for(;;){}']));
let fails = 0;
for (let i = 0; i < 30; i++) {
  const demo = await startServer({ dataDir: tempDataDir('quarry-pyloop-'), waitForStarterKey: true,
    env: { QUARRY_RATE_LIMIT_PER_MIN: '1000000', QUARRY_ADMIN_KEY: 'x', QUARRY_MODEL_PROVIDER: 'demo' } });
  try {
    execFileSync('/usr/bin/python3', ['-m', 'pytest', 'packages/python/tests/test_async.py', '-q', '-p', 'no:cacheprovider', '-k', 'test_async_tasks'], { env: { ...process.env, QUARRY_URL: demo.url, QUARRY_API_KEY: demo.starterKey!, PYTHONDONTWRITEBYTECODE: '1' }, encoding: 'utf8' });
  } catch (e: any) { fails++; console.log(e.stdout.slice(0, 6000)); }
  await demo.kill9();
}
console.log('fails', fails);
hogs.forEach((h) => h.kill()); process.exit(0);
