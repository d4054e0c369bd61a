/**
 * Overhead of one run_code call in the bubblewrap sandbox: a trivial program (`true` in shell,
 * `pass` in python, an empty javascript program) run N times in a fresh sandbox each, end to end
 * as run_code sees it (cgroup set-up, bwrap, copying the workspace in and out, clean-up).
 *
 *   node --import tsx bench/sandbox.ts [runs=30]
 *
 * Prints the median and p95 in ms per language. The target for shell is under 50 ms.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSandbox, type SandboxLanguage } from '../src/sandbox/sandbox.js';

const runs = Math.max(5, Number(process.argv[2] ?? 30));
const sandbox = await createSandbox({ mode: 'bwrap', log: (level, message) => console.error(`[${level}] ${message}`) });
if (!sandbox.available) {
  console.error(`sandbox unavailable: ${sandbox.reason}`);
  process.exit(1);
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-bench-sandbox-'));
const cases: [SandboxLanguage, string][] = [['shell', 'true'], ['python', 'pass'], ['javascript', '']];

function percentile(sorted: number[], p: number): number {
  const at = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, at)]!;
}

console.log(`run_code overhead, ${runs} runs each (${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(2)})`);
for (const [language, code] of cases) {
  if (!sandbox.languages.includes(language)) continue;
  const workspaceDir = path.join(root, language);
  // One warm-up run (page cache, the workspace's first creation).
  await sandbox.run({ language, code, timeoutS: 30, workspaceDir });
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = process.hrtime.bigint();
    const result = await sandbox.run({ language, code, timeoutS: 30, workspaceDir });
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
    if (result.exitCode !== 0) throw new Error(`${language} run failed: ${result.stderr}`);
  }
  times.sort((a, b) => a - b);
  console.log(`${language.padEnd(10)} median ${percentile(times, 50).toFixed(1)} ms   p95 ${percentile(times, 95).toFixed(1)} ms   min ${times[0]!.toFixed(1)} ms`);
}

await sandbox.close();
fs.rmSync(root, { recursive: true, force: true });
