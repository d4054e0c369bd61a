/**
 * The JSON Schema validators requests are checked with, configured once: bodies are never
 * coerced (a number is not a string) and must hold finite numbers; query and path values are
 * coerced from their text. The routes use both; the MCP and A2A front ends check the bodies
 * they build from their own calls with the body one.
 */
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats is published as CommonJS; under NodeNext its function is the module's `default`.
const addFormats = addFormatsModule.default;

export function makeAjv(part: 'body' | 'query'): Ajv {
  const coerce = part === 'query';
  // Bodies: Infinity (what JSON's 1e400 parses to) is no number, whatever a schema's bounds.
  // (Query values are strings; their schemas' bounds refuse "1e400".)
  const ajv = new Ajv({ coerceTypes: coerce ? 'array' : false, useDefaults: true, removeAdditional: false, allErrors: false, strict: false, strictNumbers: !coerce });
  addFormats(ajv);
  return ajv;
}
