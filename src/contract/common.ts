/**
 * Building blocks shared by every wire shape: nullable values, free text, identifiers and the
 * marker that names a schema as an OpenAPI component.
 */
import { Type, type TSchema, type TSchemaOptions } from 'typebox';

/** 1-64 characters of `A-Z a-z 0-9 _ . : -` (decisions §1): client task ids and X-Request-ID. */
export const CLIENT_ID_PATTERN = '^[A-Za-z0-9_.:-]{1,64}$';

/** Output ids: 1-64 chars of `a-z 0-9 _ -`, starting with a letter (decisions §1). */
export const OUTPUT_ID_PATTERN = '^[a-z][a-z0-9_-]{0,63}$';

/** Prompts, messages and instructions: 1-100,000 characters after trimming (decisions §1). */
export const MAX_TEXT_CHARS = 100_000;

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** Non-blank text; its length is checked after trimming (the schema sees it untrimmed). */
export const Text = (description: string) => Type.String({ minLength: 1, pattern: '\\S', description });

/** An ISO 8601 timestamp. */
export const Timestamp = (description?: string) => Type.String({ format: 'date-time', ...(description ? { description } : {}) });

/** A string enum: `{type: "string", enum: [...]}`. */
export const StringEnum = <const T extends string[]>(values: readonly [...T], options: TSchemaOptions = {}) => Type.Enum(values, { type: 'string', ...options });

/**
 * Names a schema as a component of the OpenAPI document: wherever it appears inline, the
 * document refers to `#/components/schemas/<name>` instead (see http/openapi.ts).
 */
export function component<T extends TSchema>(name: string, schema: T): T {
  (schema as Record<string, unknown>)['x-component'] = name;
  return schema;
}
