/**
 * Whether a value appears in a quoted passage, after normalizing the ways one value is written
 * (decisions §17.1), and whether two answers agree (answer grading, §17.3). One normalization
 * serves both:
 *
 * - text: case, white space, diacritics (é → e, ß → ss, ø → o), typographic quotes and dashes;
 *   the value must stand as whole words in the quote ("ten" is not in "often");
 * - numbers: thousands separators (comma, dot, apostrophe, plain, no-break and thin spaces), a
 *   decimal comma, a sign, `%` (45% is 45 or 0.45), the scale words thousand, million, billion,
 *   trillion, k, m, mn, bn, tn ("1.2 million" is 1200000, and 1.2), and a unit after the number
 *   ("45 GWh" holds 45). A written number with more than one reading ("1,234": 1234 or 1.234)
 *   matches any of them;
 * - dates: the same calendar date written as ISO (2026-03-12), "12 March 2026", "March 12, 2026"
 *   (month names in English, French, German, Spanish, Italian, Portuguese and Dutch) or as
 *   12/03/2026 only when the day and month cannot be swapped (25/03/2026; 12/12/2026); with dots
 *   (12.03.2026) the day comes first, as everywhere dots are written;
 * - booleans and json: not checked (null).
 *
 * A value found in a quote is evidence that the page says it, not that it is true.
 */
import type { ColumnType } from '../contract/index.js';

/** Typographic quotes, dashes and the ellipsis, as plain text types them; soft hyphens and zero-width spaces dropped. */
const PLAIN: Record<string, string> = {
  '\u2018': "'", '\u2019': "'", '\u201a': "'", '\u201b': "'", '\u2032': "'", '\u0060': "'", '\u00b4': "'",
  '\u201c': '"', '\u201d': '"', '\u201e': '"', '\u201f': '"', '\u2033': '"', '\u00ab': '"', '\u00bb': '"',
  '\u2010': '-', '\u2011': '-', '\u2012': '-', '\u2013': '-', '\u2014': '-', '\u2015': '-', '\u2212': '-', '\u2e3a': '-', '\u2e3b': '-', '\ufe58': '-', '\ufe63': '-', '\uff0d': '-',
  '\u2026': '...', '\u00ad': '', '\u200b': '', '\u200c': '', '\u200d': '', '\u2060': '',
};
const TYPOGRAPHY = new RegExp(`[${Object.keys(PLAIN).map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}]`, 'g');
/**
 * Runs of white space that are not already one plain space. A pattern matching every space
 * would match between almost all words and replace each with itself: on a 20 MB page that was
 * nearly a second, most of it garbage collection.
 */
const SPACE = /[\t\n\v\f\r\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]\s*| \s+/g;

/** The form quotes and pages are compared in: lower case, typographic quotes and dashes made plain, every run of white space one space. */
export function normalizeQuoteText(text: string): string {
  return text.toLowerCase().replace(TYPOGRAPHY, (c) => PLAIN[c]!).replace(SPACE, ' ').trim();
}

/** Letters that carry no combining mark to strip but are written without it in plain text. */
const FOLDED: Record<string, string> = { 'ß': 'ss', 'ø': 'o', 'ł': 'l', 'đ': 'd', 'ð': 'd', 'þ': 'th', 'æ': 'ae', 'œ': 'oe', 'ı': 'i' };
const FOLD = /[ßøłđðþæœı]/g;
// eslint-disable-next-line no-misleading-character-class -- the class is of combining marks on purpose
const MARKS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]/g;
const ASCII = /^[\x20-\x7e]*$/;

/** normalizeQuoteText, and without diacritics: the form values and quotes are compared in. */
export function normalizeValueText(text: string): string {
  const plain = normalizeQuoteText(text);
  if (ASCII.test(plain)) return plain;
  return plain.normalize('NFKD').replace(MARKS, '').replace(FOLD, (c) => FOLDED[c]!).normalize('NFC');
}

// ---- text --------------------------------------------------------------------------------------

const WORD_CHAR = /[\p{L}\p{N}]/u;

/** Whether `needle` stands in `haystack` (both normalized) with no letter or digit glued to either end. */
function containsWords(haystack: string, needle: string): boolean {
  if (needle === '') return false;
  const startsWord = WORD_CHAR.test(needle[0]!);
  const endsWord = WORD_CHAR.test(needle[needle.length - 1]!);
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) {
    const before = at > 0 ? haystack[at - 1]! : ' ';
    const after = at + needle.length < haystack.length ? haystack[at + needle.length]! : ' ';
    if ((!startsWord || !WORD_CHAR.test(before)) && (!endsWord || !WORD_CHAR.test(after))) return true;
  }
  return false;
}

// ---- numbers -----------------------------------------------------------------------------------

const SCALES: Record<string, number> = {
  thousand: 1e3, k: 1e3, million: 1e6, millions: 1e6, m: 1e6, mn: 1e6, mln: 1e6, billion: 1e9, billions: 1e9, bn: 1e9, trillion: 1e12, tn: 1e12,
};
/**
 * A written number: an optional sign, digit groups joined by one separator, then an optional
 * percent or scale word. What may stand before it is checked apart (numberAt): a lookbehind
 * here made the scan of a quote several times slower.
 */
const NUMBER = /([+-])?(\d+(?:[ ,.']\d+)*)(?: ?(%|percent|per cent|pct|thousand|millions?|billions?|trillion|mln|mn|bn|tn|k|m)(?![\p{L}\p{N}]))?/gu;
/** What may not stand right before a number's first digit: "abc123" and ".5" hold no number. */
const NOT_BEFORE_NUMBER = /[\p{L}\p{N}.,']/u;

/**
 * The sign of a NUMBER match, '' when it has none, or undefined when the match is no number. A
 * sign counts only where no letter or digit is glued before it, so "covid-19" and "2020-2021"
 * hold no negative number.
 */
function numberAt(text: string, m: RegExpMatchArray): string | undefined {
  const at = m.index!;
  const before = at > 0 ? text[at - 1]! : ' ';
  if (m[1] === undefined) return NOT_BEFORE_NUMBER.test(before) ? undefined : '';
  return NOT_BEFORE_NUMBER.test(before) ? '' : m[1];
}

const SEPARATOR = /[ ,.']/;
const SEPARATORS = /[ ,.']/g;

/** Whether separated digit groups read as thousands: 1–3 digits, then groups of exactly 3. */
function thousandGroups(groups: readonly string[]): boolean {
  if (groups[0]!.length > 3) return false;
  for (let i = 1; i < groups.length; i++) if (groups[i]!.length !== 3) return false;
  return true;
}

/** Every value a run of digits and separators can be read as. */
function readings(digits: string, out: number[]): void {
  if (!SEPARATOR.test(digits)) {
    out.push(Number(digits));
    return;
  }
  const groups = digits.split(SEPARATORS);
  const seps = digits.replace(/\d+/g, '');
  const sameSeps = (s: string): boolean => s.split('').every((c) => c === s[0]);
  const before = out.length;
  if (sameSeps(seps) && thousandGroups(groups)) out.push(Number(groups.join('')));
  const last = seps[seps.length - 1]!;
  const lead = seps.slice(0, -1);
  if ((last === '.' || last === ',') && (lead === '' || (sameSeps(lead) && lead[0] !== last && thousandGroups(groups.slice(0, -1))))) {
    out.push(Number(`${groups.slice(0, -1).join('')}.${groups[groups.length - 1]}`));
  }
  // A space may part two numbers ("in 2020 500 people") as well as group one: its parts count too.
  if (seps.includes(' ')) for (const part of digits.split(' ')) readings(part, out);
  else if (out.length === before) for (const group of groups) out.push(Number(group));
}

/** The values a number written at one place stands for, with its sign, percent and scale. */
function numberValues(sign: string, digits: string, suffix: string | undefined, out: number[]): void {
  const read: number[] = [];
  readings(digits, read);
  const negative = sign === '-';
  const scale = suffix === undefined ? undefined : suffix === '%' || suffix.startsWith('per') || suffix === 'pct' ? 0.01 : SCALES[suffix];
  for (const r of read) {
    const n = negative ? -r : r;
    out.push(n);
    if (scale !== undefined) out.push(n * scale);
  }
}

/** Every number a normalized text holds, in every reading. */
function numbersIn(text: string): number[] {
  const out: number[] = [];
  for (const m of text.matchAll(NUMBER)) {
    const sign = numberAt(text, m);
    if (sign !== undefined) numberValues(sign, m[2]!, m[3], out);
  }
  return out;
}

/** Money symbols a number may be written with. */
const CURRENCY = /[$€£¥₹₩₽¢]|\b(?:usd|eur|gbp|chf|jpy|us\$)\b/g;

/**
 * The readings of a text that is one number and nothing else but a sign, a currency, a percent
 * or scale word ("1.2 million", "$4.5bn", "-3,5 %"); undefined for any other text, so "Model 3"
 * is text, not the number 3.
 */
function numberValue(text: string): number[] | undefined {
  const plain = text.replace(CURRENCY, ' ').replace(/ +/g, ' ').trim();
  const m = [...plain.matchAll(NUMBER)];
  if (m.length !== 1 || m[0]!.index !== 0 || m[0]![0].length !== plain.length) return undefined;
  const out: number[] = [];
  numberValues(m[0]![1] ?? '', m[0]![2]!, m[0]![3], out);
  return out;
}

function sameNumber(a: number, b: number): boolean {
  return a === b || Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));
}

function withinOnePercent(expected: number, given: number): boolean {
  return sameNumber(expected, given) || Math.abs(given - expected) <= 0.01 * Math.abs(expected);
}

// ---- dates -------------------------------------------------------------------------------------

const MONTHS: Record<string, number> = Object.create(null) as Record<string, number>;
for (const [month, names] of [
  [1, 'january jan janvier januar janner enero gennaio janeiro januari'],
  [2, 'february feb fevrier februar febrero febbraio fevereiro februari'],
  [3, 'march mar mars marz maerz marzo marco maart'],
  [4, 'april apr avril abril aprile'],
  [5, 'may mai mayo maggio maio mei'],
  [6, 'june jun juin juni junio giugno junho'],
  [7, 'july jul juillet juli julio luglio julho'],
  [8, 'august aug aout agosto augustus'],
  [9, 'september sep sept septembre septiembre setiembre settembre setembro'],
  [10, 'october oct octobre oktober octubre ottobre outubro'],
  [11, 'november nov novembre noviembre novembro'],
  [12, 'december dec decembre dezember diciembre dicembre dezembro'],
] as const) for (const name of names.split(' ')) MONTHS[name] = month;
/*
 * Month names are matched as any word and looked up in MONTHS: an alternation of the hundred
 * names, tried at every letter of a quote, made reading its dates several times slower.
 */
const ISO_DATE = /(?<![\p{N}])(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?![\p{N}])/gu;
const DAY_MONTH_YEAR = /(?<![\p{L}\p{N}])(\d{1,2})(?:st|nd|rd|th|er|\.|º|°)? ?(?:de )?([a-z]+)\.?,? ?(?:de )?(\d{4})(?![\p{N}])/gu;
const MONTH_DAY_YEAR = /(?<![\p{L}])([a-z]+)\.? (\d{1,2})(?:st|nd|rd|th)?,? (\d{4})(?![\p{N}])/gu;
const NUMERIC_DATE = /(?<![\p{N}/.-])(\d{1,2})([/.-])(\d{1,2})\2(\d{4})(?![\p{N}])/gu;

function isoDate(year: number, month: number, day: number): string | undefined {
  if (month < 1 || month > 12 || day < 1) return undefined;
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day > days) return undefined;
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

/** Every calendar date a normalized text writes, as YYYY-MM-DD. */
function datesIn(text: string): Set<string> {
  const out = new Set<string>();
  const add = (d: string | undefined): void => {
    if (d !== undefined) out.add(d);
  };
  if (!/\d/.test(text)) return out;
  for (const m of text.matchAll(ISO_DATE)) add(isoDate(Number(m[1]), Number(m[2]), Number(m[3])));
  for (const m of text.matchAll(DAY_MONTH_YEAR)) {
    const month = MONTHS[m[2]!];
    if (month !== undefined) add(isoDate(Number(m[3]), month, Number(m[1])));
  }
  for (const m of text.matchAll(MONTH_DAY_YEAR)) {
    const month = MONTHS[m[1]!];
    if (month !== undefined) add(isoDate(Number(m[3]), month, Number(m[2])));
  }
  for (const m of text.matchAll(NUMERIC_DATE)) {
    const a = Number(m[1]);
    const b = Number(m[3]);
    const year = Number(m[4]);
    if (m[2] === '.' || (a > 12 && b <= 12) || a === b) add(isoDate(year, b, a));
    else if (b > 12 && a <= 12) add(isoDate(year, a, b));
  }
  return out;
}

/** The one calendar date a text is (an ISO date, with a time or not, or one written date), or undefined. */
function dateValue(text: string): string | undefined {
  const iso = /^(\d{4})-(\d{2})-(\d{2})(?:$|[t ])/.exec(text);
  if (iso) return isoDate(Number(iso[1]), Number(iso[2]), Number(iso[3]));
  const dates = datesIn(text);
  return dates.size === 1 ? [...dates][0] : undefined;
}

// ---- the checks --------------------------------------------------------------------------------

/** A quote normalized once, with its numbers and dates read when first asked for. */
interface ReadQuote {
  text: string;
  numbers?: number[];
  dates?: Set<string>;
}

/** The last quotes read: one source is checked against several columns of its row in turn. */
const recentQuotes = new Map<string, ReadQuote>();
const RECENT_QUOTES = 64;

function readQuote(quote: string): ReadQuote {
  let read = recentQuotes.get(quote);
  if (read === undefined) {
    read = { text: normalizeValueText(quote) };
    if (recentQuotes.size >= RECENT_QUOTES) recentQuotes.delete(recentQuotes.keys().next().value!);
    recentQuotes.set(quote, read);
  }
  return read;
}

function quoteNumbers(q: ReadQuote): number[] {
  return (q.numbers ??= numbersIn(q.text));
}

function quoteDates(q: ReadQuote): Set<string> {
  return (q.dates ??= datesIn(q.text));
}

function numberInQuote(value: number, q: ReadQuote): boolean {
  return quoteNumbers(q).some((n) => sameNumber(n, value));
}

/**
 * Whether a row's value appears in a quote: true or false, or null where the value is not
 * checked (booleans, json, an empty or non-scalar value).
 */
export function valueInQuote(value: unknown, quote: string, type: ColumnType): boolean | null {
  if (value === null || value === undefined || type === 'boolean' || type === 'json') return null;
  if (typeof value === 'number') return Number.isFinite(value) ? numberInQuote(value, readQuote(quote)) : null;
  if (typeof value !== 'string') return null;
  const text = normalizeValueText(value);
  if (text === '') return null;
  const q = readQuote(quote);
  if (type === 'number' || type === 'integer') {
    const values = numberValue(text);
    return values !== undefined ? values.some((v) => numberInQuote(v, q)) : containsWords(q.text, text);
  }
  if (type === 'date') {
    const date = dateValue(text);
    return date !== undefined ? quoteDates(q).has(date) : containsWords(q.text, text);
  }
  if (containsWords(q.text, text)) return true;
  const values = numberValue(text);
  if (values !== undefined) return values.some((v) => numberInQuote(v, q));
  const date = dateValue(text);
  return date !== undefined && quoteDates(q).has(date);
}

const YEAR = /^[12]\d{3}$/;

/** Text an answer is compared in: normalized, and without the punctuation that ends or wraps it. */
function answerText(text: string): string {
  return normalizeValueText(text).replace(/^[\s"'([{]+|[\s"')\]}.,;:!?]+$/g, '');
}

/**
 * Whether a given answer agrees with the expected one, after the same normalization: numbers
 * within 1% of the expected (any number the answer writes), the same calendar date, or the
 * expected text standing as whole words in the answer ("Paris" agrees with "Paris, France").
 * Without an answer type, the expected answer's own form decides: a date, a number (a bare
 * four-digit year must be the same year), or text.
 */
export function answersAgree(expected: string, given: string, answerType?: 'text' | 'number' | 'date'): boolean {
  const want = answerText(expected);
  const got = answerText(given);
  if (want === '' || got === '') return false;
  const asText = want === got || containsWords(got, want);
  if (answerType === 'text') return asText;
  if (answerType === 'number' || answerType === undefined) {
    const values = numberValue(want);
    if (values !== undefined) {
      const gotNumbers = numbersIn(got);
      // A year is a name more than a quantity: 1969 is not 1970, though within 1% of it.
      const agree = answerType === undefined && YEAR.test(want) ? sameNumber : withinOnePercent;
      return want === got || values.some((v) => gotNumbers.some((n) => agree(v, n)));
    }
    if (answerType === 'number') return asText;
  }
  const date = dateValue(want);
  if (date !== undefined) return asText || datesIn(got).has(date);
  return asText;
}
