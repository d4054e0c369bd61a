/**
 * The source text of the Python client's generated modules (see generate-python-client.ts):
 * `quarry/types.py`, a TypedDict for every schema of the OpenAPI document, every JSON request
 * body and every event (task and group), and `quarry/_catalogue.py`, an exception class per
 * error code of the catalogue (src/errors.ts).
 */
import { buildOpenApiDocument } from '../src/http/openapi.js';
import { ERROR_CATALOGUE } from '../src/errors.js';
import { GroupEvent } from '../src/contract/groups.js';

type Json = Record<string, unknown>;

const HEADER = (what: string) => `# Generated from Quarry's ${what} by scripts/generate-python-client.ts: do not edit.
# Run \`npm run generate\` after changing the contract; a test fails while this file is stale.
`;

const PY_KEYWORDS = new Set(['False', 'None', 'True', 'and', 'as', 'assert', 'async', 'await', 'break', 'class', 'continue', 'def', 'del', 'elif', 'else',
  'except', 'finally', 'for', 'from', 'global', 'if', 'import', 'in', 'is', 'lambda', 'nonlocal', 'not', 'or', 'pass', 'raise', 'return', 'try', 'while', 'with', 'yield']);

const pascal = (s: string) => s.replace(/(^|[_\-\s])([a-z0-9])/gi, (_m, _p, c: string) => c.toUpperCase());
const isIdentifier = (key: string) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) && !PY_KEYWORDS.has(key);
const pyString = (s: string) => JSON.stringify(s);
const pyLiteral = (v: unknown) => (v === true ? 'True' : v === false ? 'False' : v === null ? 'None' : JSON.stringify(v));

/** A docstring body: the description, with what Python would read as escapes made plain. */
function docstring(text: string | undefined, indent: string): string {
  const body = (text ?? '').replace(/\\/g, '\\\\').replace(/"""/g, '\\"\\"\\"').trim();
  return body ? `${indent}"""${body}"""\n` : '';
}

/** Turns JSON schemas into Python type expressions, emitting a TypedDict for every object with properties. */
class TypedDictWriter {
  private readonly emitted = new Map<string, string>();
  private readonly order: string[] = [];

  constructor(private readonly components: Record<string, Json>) {}

  /** The Python type of `schema`; `name` names the TypedDict an inline object becomes. */
  type(schema: Json, name: string): string {
    if (typeof schema.$ref === 'string') return this.named(schema.$ref.split('/').pop()!);
    if (typeof schema['x-component'] === 'string' && name !== schema['x-component']) return this.named(schema['x-component'], schema);
    if (schema.const !== undefined) return `Literal[${pyLiteral(schema.const)}]`;
    if (Array.isArray(schema.enum)) return `Literal[${schema.enum.map(pyLiteral).join(', ')}]`;
    const union = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
    if (union) {
      const alternatives = union.filter((s) => s.type !== 'null');
      // A member of a union on `type` is named after its type (GroupEventRun), any other by its place.
      const memberName = (s: Json) => {
        const tag = ((s.properties as Record<string, Json> | undefined)?.type?.const);
        return alternatives.length < 2 ? name : typeof tag === 'string' ? name + pascal(tag) : `${name}${alternatives.indexOf(s) + 1}`;
      };
      const members = [...new Set(union.map((s) => this.type(s, memberName(s))))];
      const nonNull = members.filter((m) => m !== 'None');
      const joined = nonNull.length === 1 ? nonNull[0]! : `Union[${nonNull.join(', ')}]`;
      return members.includes('None') ? `Optional[${joined}]` : joined;
    }
    if (Array.isArray(schema.allOf)) return this.object(name, schema);
    switch (schema.type) {
      case 'string': return 'str';
      case 'integer': return 'int';
      case 'number': return 'float';
      case 'boolean': return 'bool';
      case 'null': return 'None';
      case 'array': return `List[${schema.items ? this.type(schema.items as Json, `${name}Item`) : 'Any'}]`;
      case 'object': {
        if (schema.properties && Object.keys(schema.properties).length > 0) return this.object(name, schema);
        const values = schema.additionalProperties ?? Object.values((schema.patternProperties ?? {}) as Record<string, Json>)[0];
        return `Dict[str, ${values && typeof values === 'object' ? this.type(values as Json, `${name}Value`) : 'Any'}]`;
      }
      default: return 'Any';
    }
  }

  /** A named schema: a component of the document, or a TypeBox schema marked as one. */
  private named(name: string, schema?: Json): string {
    if (!this.emitted.has(name) && !this.order.includes(name)) {
      const target = schema ?? this.components[name];
      if (!target) throw new Error(`no schema named ${name}`);
      this.define(name, target);
    }
    return name;
  }

  /** Defines `name` as `schema`: a TypedDict for an object, else an alias. */
  define(name: string, schema: Json): void {
    if (this.order.includes(name)) return;
    const type = this.type(schema, name);
    if (type !== name) this.add(name, `${docComment(schema)}${name} = ${type}\n`);
  }

  private object(name: string, schema: Json): string {
    if (this.order.includes(name)) return name;
    const bases: string[] = [];
    let own = schema;
    if (Array.isArray(schema.allOf)) {
      // Bases come first in the module: Python needs a class's bases defined when it is.
      const parts = schema.allOf as Json[];
      for (const part of parts.slice(0, -1)) bases.push(this.type(part, `${name}Base`));
      own = parts[parts.length - 1]!;
    }
    if (this.order.includes(name)) return name;
    this.order.push(name); // reserved before its fields: a schema may refer to itself
    const required = new Set((own.required ?? []) as string[]);
    const props = Object.entries((own.properties ?? {}) as Record<string, Json>).map(([key, s]) => ({
      key, type: this.type(s, name + pascal(key)), required: required.has(key), description: s.description as string | undefined,
    }));
    const mandatory = props.filter((p) => p.required);
    const optional = props.filter((p) => !p.required);
    const doc = docstring(schema.description as string | undefined ?? own.description as string | undefined, '    ');
    let text = '';
    if (props.every((p) => isIdentifier(p.key))) {
      const field = (p: (typeof props)[number]) => `    ${p.key}: ${p.type}\n${docstring(p.description, '    ')}`;
      if (mandatory.length > 0 && optional.length > 0) {
        text += `class _${name}Required(${bases.length ? bases.join(', ') : 'TypedDict'}):\n${mandatory.map(field).join('')}\n\n`;
        text += `class ${name}(_${name}Required, total=False):\n${doc}${optional.map(field).join('')}`;
      } else {
        const total = mandatory.length === 0 && optional.length > 0 ? ', total=False' : '';
        const body = props.map(field).join('');
        text += `class ${name}(${bases.length ? bases.join(', ') : 'TypedDict'}${total}):\n${doc}${body || (doc ? '' : '    pass\n')}`;
      }
    } else {
      // A key Python cannot name (e.g. `from`): the functional form, one part per totality.
      const entries = (list: typeof props) => `{${list.map((p) => `${pyString(p.key)}: ${p.type}`).join(', ')}}`;
      text += `_${name}Required = TypedDict(${pyString(`_${name}Required`)}, ${entries(mandatory)})\n`;
      text += `_${name}Optional = TypedDict(${pyString(`_${name}Optional`)}, ${entries(optional)}, total=False)\n\n\n`;
      text += `class ${name}(${[...bases, `_${name}Required`, `_${name}Optional`].join(', ')}):\n${doc || '    pass\n'}`;
    }
    this.add(name, text);
    return name;
  }

  private add(name: string, text: string): void {
    if (!this.order.includes(name)) this.order.push(name);
    this.emitted.set(name, text);
  }

  source(): string {
    return this.order.map((name) => this.emitted.get(name)!).join('\n\n');
  }
}

function docComment(schema: Json): string {
  const text = (schema.description as string | undefined)?.trim();
  return text ? `${text.split('\n').map((line) => `# ${line}`).join('\n')}\n` : '';
}

/** quarry/types.py: the wire shapes. */
export async function pythonTypesSource(): Promise<string> {
  const document = await buildOpenApiDocument() as { components: { schemas: Record<string, Json> }; paths: Record<string, Record<string, Json>> };
  const writer = new TypedDictWriter(document.components.schemas);
  for (const [name, schema] of Object.entries(document.components.schemas)) writer.define(name, schema);
  writer.define('GroupEvent', GroupEvent as unknown as Json);
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) {
      const id = pascal(operation.operationId as string);
      const body = ((operation.requestBody as Json | undefined)?.content as Record<string, { schema: Json }> | undefined)?.['application/json']?.schema;
      if (body && Object.keys(body.properties as Json ?? {}).length > 0) writer.define(`${id}Body`, body);
      for (const answer of Object.values(operation.responses as Record<string, Json>)) {
        const schema = (answer.content as Record<string, { schema: Json }> | undefined)?.['application/json']?.schema;
        if (schema?.type === 'object' && schema.properties) writer.define(`${id}Response`, schema);
      }
    }
  }
  return `${HEADER('OpenAPI document (src/contract)')}"""Every body, answer and event of the API as a TypedDict (fields as on the wire)."""
from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union


${writer.source()}
`;
}

/** quarry/_catalogue.py: one exception class per wire code of the error catalogue. */
export function pythonCatalogueSource(): string {
  const byCode = new Map<string, { status: number | null; retryable: boolean; messages: string[] }>();
  for (const entry of Object.values(ERROR_CATALOGUE)) {
    const seen = byCode.get(entry.error) ?? { status: entry.status, retryable: entry.retryable, messages: [] };
    seen.messages.push(entry.message);
    byCode.set(entry.error, seen);
  }
  const classes = [...byCode].map(([code, e]) => `class ${pascal(code)}(QuarryError):
${docstring(`\`\`${code}\`\`${e.status === null ? ' (only a turn\'s error event carries it)' : ` (HTTP ${e.status})`}: ${e.messages.join(' / ')}`, '    ')}
    default_status = ${e.status ?? 'None'}
    default_retryable = ${e.retryable ? 'True' : 'False'}
`);
  return `${HEADER('error catalogue (src/errors.ts)')}"""One exception class per error code of the catalogue."""
from typing import Dict, Type

from ._exceptions import QuarryError

__all__ = [${[...byCode.keys()].map((code) => pyString(pascal(code))).join(', ')}]


${classes.join('\n\n')}

ERROR_CLASSES: Dict[str, Type[QuarryError]] = {
${[...byCode.keys()].map((code) => `    ${pyString(code)}: ${pascal(code)},`).join('\n')}
}
`;
}
