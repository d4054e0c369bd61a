/**
 * Summarizes a V8 .cpuprofile (from `BENCH_CPU_PROF=1 npm run bench`): self time by function and
 * by file, and inclusive time of the project's own functions, so a bottleneck can be named.
 * Frames in the bundled build (dist/src/cli/) are named by the source file and line their source
 * map gives.
 *   node --import tsx bench/profile-summary.ts .bench/prof/quarry-state.cpuprofile [top]
 */
import fs from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: bench/profile-summary.ts <file.cpuprofile> [top]\n');
  process.exit(2);
}
const top = Number(process.argv[3] ?? 25);
const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;

/** The source map beside a bundled file (`<file>.map`), read once per file; null when there is none. */
const sourceMaps = new Map<string, SourceMap | null>();
function sourceMapOf(url: string): SourceMap | null {
  if (!url.startsWith('file:')) return null;
  let map = sourceMaps.get(url);
  if (map === undefined) {
    const mapFile = `${fileURLToPath(url)}.map`;
    map = fs.existsSync(mapFile) ? new SourceMap(JSON.parse(fs.readFileSync(mapFile, 'utf8'))) : null;
    sourceMaps.set(url, map);
  }
  return map;
}
// Name each bundled frame by the original file and line (the function name V8 saw stays).
for (const n of profile.nodes) {
  const entry = sourceMapOf(n.callFrame.url)?.findEntry(n.callFrame.lineNumber, n.callFrame.columnNumber);
  if (entry && 'originalSource' in entry && entry.originalSource) {
    n.callFrame.url = entry.originalSource;
    n.callFrame.lineNumber = entry.originalLine;
  }
}

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const totalUs = profile.endTime - profile.startTime;

function shortUrl(url: string): string {
  const m = /\/(node_modules\/(?:@[^/]+\/)?[^/]+|src|test|bench)\/(.*)$/.exec(url);
  if (m) return m[1]!.startsWith('node_modules') ? m[1]!.replace('node_modules/', '') : `${m[1]}/${m[2]}`;
  if (url.startsWith('node:')) return url;
  return url || '(native)';
}

function label(n: ProfileNode): string {
  return `${n.callFrame.functionName || '(anonymous)'} ${shortUrl(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
}

const selfByFn = new Map<string, number>();
const selfByFile = new Map<string, number>();
const inclusiveByFn = new Map<string, number>();
/** Samples with a frame of the file/package anywhere on the stack. */
const inclusiveByFile = new Map<string, number>();
for (const [id, us] of self) {
  const n = byId.get(id)!;
  selfByFn.set(label(n), (selfByFn.get(label(n)) ?? 0) + us);
  const f = shortUrl(n.callFrame.url);
  selfByFile.set(f, (selfByFile.get(f) ?? 0) + us);
  // Inclusive time: charge every distinct ancestor frame once per sample.
  const seen = new Set<string>();
  const seenFiles = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const node = byId.get(cur)!;
    const file = shortUrl(node.callFrame.url);
    if (!seenFiles.has(file)) {
      seenFiles.add(file);
      inclusiveByFile.set(file, (inclusiveByFile.get(file) ?? 0) + us);
    }
    const l = label(node);
    if (seen.has(l)) continue;
    seen.add(l);
    inclusiveByFn.set(l, (inclusiveByFn.get(l) ?? 0) + us);
  }
}

function print(title: string, map: Map<string, number>, filter: (k: string) => boolean = () => true): void {
  process.stdout.write(`\n${title}\n`);
  const rows = [...map.entries()].filter(([k]) => filter(k)).sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [k, us] of rows) process.stdout.write(`${((us / totalUs) * 100).toFixed(1).padStart(6)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}\n`);
}

process.stdout.write(`profile ${file}: ${(totalUs / 1e6).toFixed(1)} s\n`);
print('self time by file / package', selfByFile);
print('self time by function', selfByFn);
print('inclusive time by file / package (any frame on the stack)', inclusiveByFile, (k) => k !== '(native)');
print('inclusive time, project code (src/)', inclusiveByFn, (k) => / src\//.test(k));
