/**
 * The three OpenAPI tools the conformance test runs, each from this project's node_modules (no
 * network): Redocly CLI's linter, Stoplight Prism's validating proxy, and openapi-typescript
 * (read through the TypeScript checker to see which responses it could not type).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'node_modules', '.bin');

/** Keeps the tools off the network (telemetry, update checks) and their output plain. */
const QUIET_ENV = {
  ...process.env,
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  REDOCLY_SUPPRESS_NOTIFICATIONS: 'true',
  NO_COLOR: '1',
  FORCE_COLOR: '0',
};

// ---- Redocly ------------------------------------------------------------------------------------

export interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn' | string;
  message: string;
  /** JSON pointer into the document, e.g. `#/paths/~1task/post/responses`. */
  pointer: string;
}

export interface LintResult {
  errors: LintProblem[];
  warnings: LintProblem[];
  /** What the linter printed on stderr (its summary), for a failure message. */
  stderr: string;
}

/** `redocly lint` with its built-in `recommended` rules (or `configPath`), every problem reported. */
export async function redoclyLint(docPath: string, opts: { configPath?: string; timeoutMs?: number } = {}): Promise<LintResult> {
  const args = ['lint', docPath, '--format=json', '--max-problems=100000', ...(opts.configPath ? ['--config', opts.configPath] : [])];
  const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    // Exit status 1 means "problems found": the JSON on stdout says which.
    execFile(path.join(BIN, 'redocly'), args, { env: QUIET_ENV, timeout: opts.timeoutMs ?? 30_000, maxBuffer: 64 * 1024 * 1024 }, (err, out, errOut) => {
      if (err && (err as { code?: unknown }).code !== 1) reject(new Error(`redocly lint failed to run: ${err.message}\n${errOut}`));
      else resolve({ stdout: out, stderr: errOut });
    });
  });
  let report: { problems?: { ruleId: string; severity: string; message: string; location?: { pointer?: string }[] }[] };
  try {
    report = JSON.parse(stdout);
  } catch {
    throw new Error(`redocly lint printed no JSON report:\n${stdout.slice(0, 2000)}\n${stderr.slice(-2000)}`);
  }
  const problems = (report.problems ?? []).map((p) => ({ ruleId: p.ruleId, severity: p.severity, message: p.message, pointer: p.location?.[0]?.pointer ?? '' }));
  return { errors: problems.filter((p) => p.severity === 'error'), warnings: problems.filter((p) => p.severity !== 'error'), stderr };
}

// ---- Prism ----------------------------------------------------------------------------------------

export interface PrismProxy {
  url: string;
  /** The last lines Prism logged (for failure messages). */
  log(): string;
  close(): Promise<void>;
}

const running = new Set<ChildProcess>();
// A test file that is force-exited still takes its proxies with it.
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * `prism proxy <doc> <upstream> [--errors] -p 0`, ready once it logs the address it listens on
 * (bounded by `timeoutMs`). With `errors`, Prism answers a request that breaks the document
 * itself (it is not forwarded), and a response that breaks it as a 500 problem+json.
 */
export async function startPrismProxy(docPath: string, upstream: string, opts: { errors: boolean; timeoutMs?: number }): Promise<PrismProxy> {
  const args = ['proxy', docPath, upstream, '--host', '127.0.0.1', '--port', '0', '--multiprocess=false', ...(opts.errors ? ['--errors'] : [])];
  const child = spawn(path.join(BIN, 'prism'), args, { env: QUIET_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  const lines: string[] = [];
  let pending = '';
  let resolveUrl: (url: string) => void;
  const address = new Promise<string>((resolve) => (resolveUrl = resolve));
  const onData = (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const parts = pending.split('\n');
    pending = parts.pop()!;
    for (const line of parts) {
      // eslint-disable-next-line no-control-regex
      const plain = line.replace(/\u001b\[[0-9;]*m/g, '');
      lines.push(plain);
      if (lines.length > 200) lines.shift();
      const m = /Prism is listening on (http:\/\/\S+)/.exec(plain);
      if (m) resolveUrl(m[1]!);
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = once(child, 'exit').then(([code, signal]) => {
    running.delete(child);
    return { code, signal };
  });

  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(timer);
    }
  };

  const timeoutMs = opts.timeoutMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    address.then((url) => ({ url })),
    exited.then((e) => ({ error: `Prism exited (${e.code ?? e.signal}) before listening` })),
    new Promise<{ error: string }>((resolve) => (timer = setTimeout(() => resolve({ error: `Prism did not listen within ${timeoutMs} ms` }), timeoutMs))),
  ]);
  clearTimeout(timer);
  if ('error' in outcome) {
    await close();
    throw new Error(`${outcome.error}:\n${lines.slice(-40).join('\n')}`);
  }
  return { url: outcome.url, log: () => lines.join('\n'), close };
}

/** One entry of Prism's `sl-violations` header. */
export interface PrismViolation {
  location: (string | number)[];
  severity: string;
  code?: string | number;
  message: string;
}

/**
 * The violations Prism attached to a response: the `sl-violations` header (request and response
 * problems, every severity), or, when `--errors` made Prism answer in the server's place, the
 * `validation` list of its problem+json body.
 */
export function prismViolations(headers: Headers, body: unknown): { violations: PrismViolation[]; prismAnswered?: string } {
  const violations: PrismViolation[] = [];
  const header = headers.get('sl-violations');
  if (header) {
    try {
      violations.push(...(JSON.parse(header) as PrismViolation[]).map((v) => ({ ...v, location: v.location ?? [] })));
    } catch {
      // Prism cuts a header over 8 KB and prefixes "Too many violations!".
      violations.push({ location: ['response'], severity: 'Error', message: header.slice(0, 2000) });
    }
  }
  const problem = body as { type?: unknown; title?: unknown; detail?: unknown; validation?: PrismViolation[] } | undefined;
  const contentType = headers.get('content-type') ?? '';
  if (contentType.startsWith('application/problem+json') && typeof problem?.type === 'string' && problem.type.startsWith('https://stoplight.io/prism/errors#')) {
    const kind = problem.type.slice('https://stoplight.io/prism/errors#'.length);
    for (const raw of problem.validation ?? []) {
      const v = { ...raw, location: raw.location ?? [] };
      if (!violations.some((w) => w.message === v.message && JSON.stringify(w.location) === JSON.stringify(v.location))) violations.push(v);
    }
    return { violations, prismAnswered: `${kind}: ${String(problem.title)}${problem.detail ? ` (${String(problem.detail)})` : ''}` };
  }
  return { violations };
}

// ---- openapi-typescript -----------------------------------------------------------------------------

/** The declaration file openapi-typescript generates for the document (its Node API, no network). */
export async function openapiTypescript(doc: unknown): Promise<string> {
  const { default: openapiTS, astToString } = await import('openapi-typescript');
  const ast = await openapiTS(doc as Parameters<typeof openapiTS>[0], { silent: true });
  return astToString(ast);
}

export interface TypedResponse {
  /** `METHOD /path` */
  operation: string;
  status: string;
  mediaType: string;
}

/**
 * For each (operation, status, media type) the document declares content for, what
 * openapi-typescript made of the body: the type
 * as TypeScript prints it, and why it does not count as a type (or null when it does). A body
 * does not count when it is `never`, `unknown` or `any`, an object with no named property
 * (`Record<string, never>`, `{ [key: string]: unknown }`, `{}`), or an array of such.
 */
export function inspectResponseTypes(dts: string, wanted: TypedResponse[]): (TypedResponse & { type: string; untyped: string | null })[] {
  const lines = wanted.map((w, i) => {
    const method = w.operation.split(' ')[0]!.toLowerCase();
    const route = w.operation.slice(w.operation.indexOf(' ') + 1);
    return `export type T${i} = NonNullable<paths[${JSON.stringify(route)}][${JSON.stringify(method)}]>['responses'][${JSON.stringify(w.status)}]['content'][${JSON.stringify(w.mediaType)}];`;
  });
  const files = new Map([
    ['/openapi/schema.d.ts', dts],
    ['/openapi/probe.ts', `import type { paths } from './schema.js';\n${lines.join('\n')}\n`],
  ]);
  const options: ts.CompilerOptions = { strict: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, skipLibCheck: true, types: [] };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  const exists = host.fileExists.bind(host);
  host.readFile = (f) => files.get(f) ?? read(f);
  host.fileExists = (f) => files.has(f) || exists(f);
  host.directoryExists = (d) => d === '/openapi' || ts.sys.directoryExists(d);
  host.getSourceFile = ((get) => (f, lang, ...rest) => (files.has(f) ? ts.createSourceFile(f, files.get(f)!, lang) : get(f, lang, ...rest)))(host.getSourceFile.bind(host));
  const program = ts.createProgram(['/openapi/probe.ts'], options, host);
  const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  if (problems.length > 0) throw new Error(`the generated types do not compile:\n${problems.slice(0, 20).join('\n')}`);
  const checker = program.getTypeChecker();
  const probe = program.getSourceFile('/openapi/probe.ts')!;
  const aliases = new Map<string, ts.Type>();
  probe.forEachChild((node) => {
    if (ts.isTypeAliasDeclaration(node)) aliases.set(node.name.text, checker.getTypeAtLocation(node.name));
  });

  const why = (type: ts.Type, depth = 0): string | null => {
    if (type.flags & ts.TypeFlags.Never) return 'never (no body declared for this media type)';
    if (type.flags & ts.TypeFlags.Unknown) return 'unknown';
    if (type.flags & ts.TypeFlags.Any) return 'any';
    if (type.isUnion()) {
      const reasons = type.types.map((t) => why(t, depth + 1));
      return reasons.every((r) => r !== null) ? reasons[0]! : null;
    }
    if (checker.isArrayType(type)) {
      const element = checker.getTypeArguments(type as ts.TypeReference)[0];
      const reason = element ? why(element, depth + 1) : 'array of unknown';
      return reason ? `array of ${reason}` : null;
    }
    if (type.flags & ts.TypeFlags.Object || type.isIntersection()) {
      if (checker.getPropertiesOfType(type).length === 0) return 'object with no declared property';
    }
    return null;
  };

  return wanted.map((w, i) => {
    const type = aliases.get(`T${i}`);
    if (!type) return { ...w, type: '?', untyped: 'not found in the generated types' };
    return { ...w, type: checker.typeToString(type, undefined, ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.InTypeAlias).slice(0, 200), untyped: why(type) };
  });
}
