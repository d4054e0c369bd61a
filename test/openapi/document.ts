/**
 * A small, read-only view of an OpenAPI 3.x document for the conformance test: which operation a
 * request lands on (as a router would pick it: literal segments beat templated ones), which
 * declared response a status falls under (exact code, then `4XX`-style range, then `default`),
 * and what that response declares (media types, headers). `$ref`s to components are followed.
 */

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export interface Operation {
  /** `METHOD /path/{template}`, the name every report uses. */
  key: string;
  method: string;
  path: string;
  operation: Json;
}

interface PathMatcher {
  path: string;
  regex: RegExp;
  literalSegments: number;
}

export class OpenApiDocument {
  readonly operations: Operation[] = [];
  private readonly matchers: PathMatcher[] = [];

  constructor(readonly doc: Json) {
    for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
      const segments = path.split('/').slice(1);
      const regex = new RegExp(
        '^/' + segments.map((s) => (/^\{[^}]+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/') + '/?$',
      );
      this.matchers.push({ path, regex, literalSegments: segments.filter((s) => !s.startsWith('{')).length });
      for (const method of HTTP_METHODS) {
        if (item?.[method]) this.operations.push({ key: `${method.toUpperCase()} ${path}`, method, path, operation: this.resolve(item[method]) });
      }
    }
    // The most specific template first: `/task/workflow` before `/task/{task_id}`.
    this.matchers.sort((a, b) => b.literalSegments - a.literalSegments);
  }

  /** Follows a local `$ref` (`#/components/...`), repeatedly. */
  resolve(node: Json): Json {
    let current = node;
    for (let hops = 0; current && typeof current === 'object' && typeof current.$ref === 'string' && hops < 20; hops++) {
      const ref: string = current.$ref;
      if (!ref.startsWith('#/')) return current;
      current = ref
        .slice(2)
        .split('/')
        .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
        .reduce((n: Json, p) => n?.[p], this.doc);
    }
    return current;
  }

  /**
   * The operation a request lands on, or undefined when the document has none for it. Like
   * Prism's router, a path whose most specific template lacks the method falls back to the next
   * template that matches and has it (`DELETE /task/workflow` lands on `DELETE /task/{task_id}`).
   */
  operationFor(method: string, requestPath: string): Operation | undefined {
    const pathname = requestPath.split('?')[0]!;
    for (const m of this.matchers) {
      if (!m.regex.test(pathname)) continue;
      const op = this.operations.find((o) => o.path === m.path && o.method === method.toLowerCase());
      if (op) return op;
    }
    return undefined;
  }

  /** The declared response a status falls under: the exact code, its range (`4XX`), then `default`. */
  responseFor(op: Operation, status: number): { code: string; response: Json } | undefined {
    const responses: Record<string, Json> = op.operation.responses ?? {};
    for (const code of [String(status), `${String(status)[0]}XX`, `${String(status)[0]}xx`, 'default']) {
      if (responses[code] !== undefined) return { code, response: this.resolve(responses[code]) };
    }
    return undefined;
  }

  /** Whether the response declares content of this media type (parameters ignored; `*` wildcards honoured). */
  static declaresMediaType(response: Json, contentType: string): boolean {
    const wanted = contentType.split(';')[0]!.trim().toLowerCase();
    return Object.keys(response?.content ?? {}).some((declared) => {
      const [type, sub] = declared.split(';')[0]!.trim().toLowerCase().split('/');
      const [wType, wSub] = wanted.split('/');
      return (type === '*' || type === wType) && (sub === '*' || sub === wSub);
    });
  }

  /** The response headers a response declares, lower-cased. */
  static declaredHeaders(response: Json): Set<string> {
    return new Set(Object.keys(response?.headers ?? {}).map((h) => h.toLowerCase()));
  }
}
