/**
 * Fails when src/ has an import cycle, between files or between its top-level folders (and the
 * files at its root, each counted as a folder of its own). The folders are the layers a reader
 * sees in the tree: `domain` under `store` under the services under `engine` and the edges. A
 * cycle between two folders means neither can be read, changed or tested without the other, so
 * `npm run checks` refuses one the day it appears. Type-only imports count: they tie the
 * folders' meanings together as much as value imports do.
 *
 *   node --import tsx scripts/check-import-cycles.ts [dir]   # dir defaults to src
 */
import fs from 'node:fs';
import path from 'node:path';

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

type Graph = Map<string, Set<string>>;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts'))
    .map((e) => path.join(e.parentPath, e.name));
}

/** Each file's relative imports within `root`, as the .ts/.tsx files they name. */
function fileGraph(root: string): Graph {
  const files = new Set(sourceFiles(root));
  const graph: Graph = new Map();
  for (const file of files) {
    const targets = new Set<string>();
    for (const m of fs.readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const base = path.resolve(path.dirname(file), (m[1] ?? m[2])!).replace(/\.js$/, '');
      const target = [`${base}.ts`, `${base}.tsx`, path.join(base, 'index.ts')].find((f) => files.has(f));
      if (target && target !== file) targets.add(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** The same graph with each file replaced by its top-level folder under `root`. */
function folderGraph(root: string, files: Graph): Graph {
  const layer = (file: string): string => {
    const parts = path.relative(root, file).split(path.sep);
    return parts.length > 1 ? `${parts[0]}/` : parts[0]!;
  };
  const graph: Graph = new Map();
  for (const [file, targets] of files) {
    const from = layer(file);
    const edges = graph.get(from) ?? new Set<string>();
    for (const target of targets) if (layer(target) !== from) edges.add(layer(target));
    graph.set(from, edges);
  }
  return graph;
}

/** The strongly connected components with more than one member (Tarjan): each is a cycle. */
function cycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const root = path.resolve(process.argv[2] ?? 'src');
const files = fileGraph(root);
const problems = [
  ...cycles(folderGraph(root, files)).map((c) => `folders import each other: ${c.join(' ⇄ ')}`),
  ...cycles(files).map((c) => `files import each other: ${c.map((f) => path.relative(root, f)).join(' ⇄ ')}`),
];
for (const problem of problems) console.error(problem);
if (problems.length) process.exit(1);
console.log(`no import cycles among ${files.size} files in ${path.relative(process.cwd(), root) || '.'}`);
