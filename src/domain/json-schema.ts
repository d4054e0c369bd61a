/**
 * Every JSON Schema validator Quarry checks data with, configured here and nowhere else. Each use
 * gets its own Ajv instance because the uses want different answers from the same schema:
 *
 * - `body`: request bodies (REST, MCP and A2A alike) are never coerced (a number is not a
 *   string), defaults are filled in, and numbers must be finite: Infinity (what JSON's 1e400
 *   parses to) is no number, whatever a schema's bounds.
 * - `query`: query and path values arrive as text and are coerced to the schema's types; their
 *   schemas' bounds refuse "1e400".
 * - `tool-arguments`: a model's tool call is checked with every error listed, so the model can
 *   fix them all in its next attempt.
 * - `records`: a user's records schema (a spec's output) checks each row; the first error is
 *   enough, and schemas come and go (they are compiled per spec and removed again).
 */
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats is published as CommonJS; under NodeNext its function is the module's `default`.
const addFormats = addFormatsModule.default;

export type SchemaUse = 'body' | 'query' | 'tool-arguments' | 'records';

/** A new validator instance for `use`: compile schemas on it once, at start-up or per spec. */
export function schemaValidator(use: SchemaUse): Ajv {
  const ajv = use === 'body' || use === 'query'
    ? new Ajv({ coerceTypes: use === 'query' ? 'array' : false, useDefaults: true, removeAdditional: false, allErrors: false, strict: false, strictNumbers: use === 'body' })
    : new Ajv({ allErrors: use === 'tool-arguments', strict: false });
  addFormats(ajv);
  return ajv;
}
