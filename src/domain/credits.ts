/**
 * Credits as exact integers of micro-credits (decisions §14). Balances, charges and usage are
 * stored, added and compared as whole micro-credits, never as binary floating point; the decimal
 * numbers the API shows and takes are converted here, at the edge, and nowhere else.
 */

/** 1 credit = 1,000,000 micro-credits: credits have at most 6 fractional digits. */
export const MICROS_PER_CREDIT = 1_000_000;

/**
 * Whole credits must stay below this for every micro-credit amount to be exact in a JS number
 * (pg returns the bigint columns as text; they are read back through `fromStoredMicros`).
 */
const MAX_MICROS = BigInt(Number.MAX_SAFE_INTEGER);
const MAX_CREDITS = `${MAX_MICROS / 1_000_000n}.${String(MAX_MICROS % 1_000_000n).padStart(6, '0')}`;

const DECIMAL = /^(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/;

/**
 * Credits (a decimal number, as the API takes it) in micro-credits. The amount is read as its
 * shortest decimal form, the digits JSON carried (`0.1 + 0.2` is 0.30000000000000004, which is
 * 300,000 micro-credits, not 300,001), and rounded to 6 fractional digits half away from zero:
 * 1.0000005 is 1,000,001 micros and -1.0000005 is -1,000,001. Working on the digits rather than
 * on `credits * 1e6` keeps that rounding exact where the product would carry float noise across
 * the half. Throws a RangeError for NaN, ±Infinity, or an amount too large to hold exactly.
 */
export function toMicros(credits: number): number {
  if (!Number.isFinite(credits)) throw new RangeError(`must be a finite number of credits, got ${credits}`);
  const [, whole, fraction = '', exponent = '0'] = DECIMAL.exec(String(Math.abs(credits)))!;
  const digits = whole! + fraction;
  // Where the decimal point falls in `digits` once the amount is scaled to micro-credits.
  const point = whole!.length + Number(exponent) + 6;
  const padded = digits.padEnd(point, '0');
  const kept = point > 0 ? BigInt(padded.slice(0, point)) : 0n;
  const roundsUp = point >= 0 && Number(padded[point] ?? '0') >= 5;
  const micros = kept + (roundsUp ? 1n : 0n);
  if (micros > MAX_MICROS) throw new RangeError(`must be at most ${MAX_CREDITS} credits either way, got ${credits}`);
  if (micros === 0n) return 0;
  return credits < 0 ? -Number(micros) : Number(micros);
}

/**
 * Micro-credits as the decimal number the API shows: the double nearest the exact decimal, which
 * JSON writes with at most 6 fractional digits. It compares with other credit amounts as the
 * integers do (0 micros is 0, any positive amount is above 0).
 */
export function fromMicros(micros: number): number {
  return micros / MICROS_PER_CREDIT;
}

/** A micro-credit column as a driver returns it (pg: bigint as text), checked to be exact. */
export function fromStoredMicros(value: number | string | bigint): number {
  const micros = Number(value);
  if (!Number.isSafeInteger(micros)) throw new RangeError(`stored micro-credits are not a safe integer: ${String(value)}`);
  return micros;
}

/** The price table in credits, as configured (QUARRY_PRICE_*). */
export interface Prices {
  /** Credits per million input tokens not read from a prompt cache. */
  inputPerMillion: number;
  /** Credits per million input tokens read from the provider's prompt cache. */
  cachedInputPerMillion: number;
  /** Credits per million output tokens. */
  outputPerMillion: number;
  /** Credits per tool call. */
  toolCall: number;
}

/** The price table in micro-credits: per million tokens of each class, and per tool call. */
export type MicroPrices = Prices;

export function pricesInMicros(prices: Prices): MicroPrices {
  return {
    inputPerMillion: toMicros(prices.inputPerMillion),
    cachedInputPerMillion: toMicros(prices.cachedInputPerMillion),
    outputPerMillion: toMicros(prices.outputPerMillion),
    toolCall: toMicros(prices.toolCall),
  };
}

/**
 * What one agent step costs, in micro-credits. `tokensIn` counts all input tokens; the
 * `tokensInCached` of them are priced as cached input, the rest as input. Token prices are per
 * million tokens, so the token part is rounded to a whole micro-credit once per step, half up
 * (the amount is never negative); tool calls cost whole micro-credits each. Integer arithmetic
 * throughout, exact while tokens times price stay below 2^53 (a step of a million tokens at
 * 1,000 credits per million tokens is 10^15).
 */
export function stepCostMicros(prices: MicroPrices, usage: { tokensIn: number; tokensInCached: number; tokensOut: number; toolCalls: number }): number {
  const cached = Math.min(usage.tokensInCached, usage.tokensIn);
  const perMillion = (usage.tokensIn - cached) * prices.inputPerMillion + cached * prices.cachedInputPerMillion + usage.tokensOut * prices.outputPerMillion;
  return Math.floor((perMillion + 500_000) / 1_000_000) + usage.toolCalls * prices.toolCall;
}

/**
 * The most a model call may cost before it is made, in micro-credits (a capped group's runs
 * reserve it, decisions §18): its prompt's estimated tokens all priced as uncached input, and the
 * most output tokens the provider is asked for (QUARRY_MODEL_MAX_TOKENS) at the output price.
 */
export function modelCallMaxMicros(prices: MicroPrices, promptTokens: number, maxOutputTokens: number): number {
  return stepCostMicros(prices, { tokensIn: promptTokens, tokensInCached: 0, tokensOut: maxOutputTokens, toolCalls: 0 });
}
