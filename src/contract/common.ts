/**
 * Building blocks shared by every wire shape: nullable values, free text, identifiers and the
 * marker that names a schema as an OpenAPI component.
 */
import { Type, type TSchema, type TSchemaOptions, type TStringOptions } from 'typebox';

/** 1-64 characters of `A-Z a-z 0-9 _ . : -` (decisions §1): client task ids and X-Request-ID. */
export const CLIENT_ID_PATTERN = '^[A-Za-z0-9_.:-]{1,64}$';

/** Output ids: 1-64 chars of `a-z 0-9 _ -`, starting with a letter (decisions §1). */
export const OUTPUT_ID_PATTERN = '^[a-z][a-z0-9_-]{0,63}$';

/** Prompts, messages and instructions: 1-100,000 characters after trimming (decisions §1). */
export const MAX_TEXT_CHARS = 100_000;

/**
 * No text Quarry takes may hold NUL (U+0000): PostgreSQL's text cannot store it, so it is refused
 * (422) on both databases alike. Strings say so in their schema with this pattern (linear: no
 * backtracking on a 100,000-character string); free text checks it in tasks/spec.ts.
 */
export const NO_NUL_PATTERN = '^[^\\u0000]*$';
/** What a refusal of NUL says, wherever it is found (a schema's pattern, free text, free-form JSON). */
export const NUL_PROBLEM = 'must not contain the NUL character (\\u0000)';

/** Event sequence numbers are 32-bit integers in both databases (`events.seq`): `after` and `Last-Event-ID` stop here. */
export const MAX_EVENT_SEQ = 2_147_483_647;

/**
 * The most credits an amount may carry either way: 2^53 - 1 micro-credits (accounts/credits.ts,
 * which refuses the last micro-credit above it that this double cannot tell apart).
 */
export const MAX_CREDITS = Number.MAX_SAFE_INTEGER / 1_000_000;

/** How deep free-form JSON (a records output's `schema`, a row's values) may nest, so no walk of it can run out of stack. */
export const MAX_JSON_DEPTH = 64;

/**
 * The length of `text` in characters when it has more than `max`, else null. Characters are
 * counted as the contract counts them: Unicode code points, as JSON Schema's maxLength does (an
 * emoji is one character, not two UTF-16 units). Text of at most `max` UTF-16 units has at most
 * `max` code points, so only longer text is counted.
 */
export function charactersOver(text: string, max: number): number | null {
  if (text.length <= max) return null;
  const chars = codePointLength(text);
  return chars > max ? chars : null;
}

function codePointLength(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        length--;
        i++;
      }
    }
  }
  return length;
}

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** A string of any characters but NUL (see NO_NUL_PATTERN); `pattern` given here replaces it and must exclude NUL too. */
export const Str = (options: TStringOptions = {}) => Type.String({ pattern: NO_NUL_PATTERN, ...options });

/**
 * A keyset cursor that is the last id of the previous page (`prefix_` and a ULID): anything else
 * is a 422 naming `cursor`, not a page that starts somewhere arbitrary.
 */
export const IdCursor = (prefix: string) =>
  Type.String({ pattern: `^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`, description: 'X-Next-Cursor of the previous page.' });

/** Non-blank text; its length and NUL are checked after trimming (tasks/spec.ts checkedText; the schema sees it untrimmed). */
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
