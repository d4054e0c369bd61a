/**
 * The citation benchmark (`npm run bench:citations`): what checking row sources against page
 * snapshots costs (outputs/citations.ts, decisions §15.1), in this process, no server. Pages are
 * generated prose (sentences, paragraphs, typographic quotes and apostrophes, dashes, numbers and
 * currency, a few accented words and double spaces), the same on every run.
 *
 *   1. rows   What write_rows does with one call: a CitationChecker over the call's cited
 *             snapshots (BENCH_CITATIONS_PAGES pages of each size in BENCH_CITATIONS_PAGE_KB),
 *             then every source of BENCH_CITATIONS_ROWS rows checked, each row citing two pages
 *             with a quote of 80–200 characters from anywhere in the page. The quote is written
 *             as a model types it (straight quotes and apostrophes, plain hyphens, single
 *             spaces), so it matches only after normalization; "not found" changes one word of
 *             it, so every snapshot of that URL is searched to its end. Timed cold (a new
 *             checker: each page normalized once, as in one write_rows call) and warm (the same
 *             checker again: its cache of normalized text).
 *   2. size   One snapshot of each size in BENCH_CITATIONS_MB (an input read with read_input is
 *             kept whole), a quote near its end: the first check (a new checker: normalization
 *             plus search), normalizeQuoteText of the text alone, and a repeated check (cached).
 *
 * Same-run baseline: `String.prototype.includes` of the quote as it stands in the page (raw,
 * un-normalized) over the raw text, for the same sources and snapshots, in alternating
 * repetitions with the measured code. Every figure is the median of BENCH_CITATIONS_REPS
 * repetitions. KB and MB are 1,000 and 1,000,000 bytes of UTF-8.
 *
 * Results: tables on stdout and .bench/citations.json.
 */
import crypto from 'node:crypto';
import { CitationChecker, type CheckedSource } from '../src/outputs/citations.js';
import { normalizeQuoteText } from '../src/domain/value-match.js';
import { OPEN_POLICY } from '../src/net/domain-policy.js';
import type { SourceSnapshotRecord } from '../src/domain/records.js';
import type { RowSource } from '../src/contract/index.js';
import { loadAverage, log, noteLoad, percentile, reportHeader, round, seededRandom, startWatchdog, table, writeReport } from './lib.js';

const ROWS = Number(process.env.BENCH_CITATIONS_ROWS ?? 5000);
const PAGES = Number(process.env.BENCH_CITATIONS_PAGES ?? 50);
const PAGE_KB = (process.env.BENCH_CITATIONS_PAGE_KB ?? '20,100').split(',').map(Number);
const SIZES_MB = (process.env.BENCH_CITATIONS_MB ?? '1,5,20').split(',').map(Number);
const REPS = Math.max(1, Number(process.env.BENCH_CITATIONS_REPS ?? 5));
const SOURCES_PER_ROW = 2;

// ---- text -----------------------------------------------------------------------------------------

const WORDS = (
  'the of and to in a is that for it as was with be by on not he this are or his from at which but have an they you were her she there ' +
  'been one all would their we him has when who will more no if out so said what up its about into than them can only other new some ' +
  'could time these two may then do first any my now such like our over man me even most made after also did many before must through ' +
  'back years where much your way well down should because each just those people how too little state good very make world still own ' +
  'see men work long get here between both life being under never day same another know while last might us great old year off come ' +
  'since against go came right used take three company plant capacity report market energy prices supply region government production ' +
  'annual revenue growth quarter investment agreement operator grid storage demand forecast contract municipal council committee ' +
  'survey analysis results estimate percent million billion tonnes megawatts hectares residents employees customers suppliers'
).split(' ');
const NAMES = ['Müller', 'Société Générale', 'Zürich', 'São Paulo', 'Łódź', 'Ørsted', 'Nestlé', 'Québec', 'Málaga', 'Göteborg', 'Siemens', 'Vattenfall'];
const CONTRACTIONS = ['company’s', 'it’s', 'didn’t', 'won’t', 'operator’s', 'council’s', 'year’s', 'isn’t'];

function sentence(r: () => number): string {
  const n = 8 + Math.floor(r() * 22);
  const words: string[] = [];
  for (let i = 0; i < n; i++) {
    const p = r();
    if (p < 0.04) words.push(NAMES[Math.floor(r() * NAMES.length)]!);
    else if (p < 0.07) words.push(CONTRACTIONS[Math.floor(r() * CONTRACTIONS.length)]!);
    else if (p < 0.09) words.push(`${1990 + Math.floor(r() * 35)}–${(Math.floor(r() * 99) + 1).toString().padStart(2, '0')}`);
    else if (p < 0.11) words.push(`${(r() * 1000).toFixed(1)}${r() < 0.5 ? '%' : ' million'}`);
    else if (p < 0.115) words.push(`€${Math.floor(r() * 900) + 10}`);
    else words.push(WORDS[Math.floor(r() * WORDS.length)]!);
  }
  if (r() < 0.15) {
    const at = 1 + Math.floor(r() * (words.length - 3));
    words[at] = `“${words[at]}`;
    words[at + 2] = `${words[at + 2]}”`;
  }
  if (r() < 0.12) words.splice(1 + Math.floor(r() * (words.length - 2)), 0, '—');
  const first = words[0]!;
  words[0] = first.charAt(0).toUpperCase() + first.slice(1);
  return `${words.join(r() < 0.02 ? '  ' : ' ')}${r() < 0.9 ? '.' : r() < 0.5 ? '?' : ':'}`;
}

/** Prose of about `bytes` bytes of UTF-8: paragraphs of 3–8 sentences, a blank line between them. */
function prose(bytes: number, seed: number): string {
  const r = seededRandom(seed);
  const paragraphs: string[] = [];
  let size = 0;
  while (size < bytes) {
    const sentences: string[] = [];
    const n = 3 + Math.floor(r() * 6);
    for (let i = 0; i < n; i++) sentences.push(sentence(r));
    const p = sentences.join(' ');
    paragraphs.push(p);
    size += Buffer.byteLength(p) + 2;
  }
  return paragraphs.join('\n\n');
}

/** A span of `text` from about `at`, 80–200 characters, cut at word boundaries. */
function spanAt(text: string, at: number, r: () => number): string {
  let start = text.lastIndexOf(' ', Math.max(0, Math.min(at, text.length - 300)));
  start = start < 0 ? 0 : start + 1;
  const end = text.indexOf(' ', start + 80 + Math.floor(r() * 120));
  return text.slice(start, end < 0 ? text.length : end);
}

/** A quote as a model types it: straight quotes and apostrophes, plain hyphens, single spaces. */
function typed(raw: string): string {
  return raw.replace(/[‘’]/g, "'").replace(/[“”]/g, '"').replace(/[–—]/g, '-').replace(/\s+/g, ' ').trim();
}

/** The span with one word in its middle changed: in no snapshot, after normalization or not. */
function misquoted(raw: string): string {
  const mid = raw.indexOf(' ', Math.floor(raw.length / 2));
  const next = raw.indexOf(' ', mid + 1);
  return `${raw.slice(0, mid)} approximatelyx${next < 0 ? '' : raw.slice(next)}`;
}

let snapshots = 0;

/**
 * A snapshot as the store keeps it. Each gets an id of its own, as stored snapshots do: the
 * checker keeps normalized texts by id across calls, so a reused id would measure that cache.
 */
function snapshot(i: number, text: string): SourceSnapshotRecord {
  const url = `https://site${i}.example.com/reports/page-${i}`;
  return {
    id: `src_bench${String(++snapshots).padStart(8, '0')}`, taskId: 'tsk_bench', url, finalUrl: url, uploadId: null, title: `Page ${i}`,
    fetchedAt: '2030-01-01T00:00:00.000Z', sha256: crypto.createHash('sha256').update(text).digest('hex'), bytes: Buffer.byteLength(text), text,
  };
}

/** The same snapshot under a new id: never normalized before, as a page just read. */
function unseen(s: SourceSnapshotRecord): SourceSnapshotRecord {
  return { ...s, id: `src_bench${String(++snapshots).padStart(8, '0')}` };
}

// ---- timing ---------------------------------------------------------------------------------------

function ms(fn: () => void): number {
  const t = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

const median = (values: number[]) => percentile(values, 50);

// ---- 1. per row -----------------------------------------------------------------------------------

interface Cited {
  source: RowSource;
  /** The baseline's search: the quote as it stands in the page, in the page's raw text. */
  rawQuote: string;
  rawText: string;
}

function rowsCase(pageKb: number, found: boolean) {
  const r = seededRandom(pageKb * 7919 + (found ? 1 : 2));
  const snapshots = Array.from({ length: PAGES }, (_, i) => snapshot(i, prose(pageKb * 1000, pageKb * 100_003 + i)));
  const cited: Cited[] = [];
  for (let row = 0; row < ROWS; row++) {
    for (let j = 0; j < SOURCES_PER_ROW; j++) {
      const s = snapshots[(row * SOURCES_PER_ROW + j) % PAGES]!;
      const raw = spanAt(s.text, Math.floor(r() * s.text.length), r);
      const rawQuote = found ? raw : misquoted(raw);
      cited.push({ source: { url: s.url, quote: typed(rawQuote) }, rawQuote, rawText: s.text });
    }
  }
  const expected = found ? 'quote_found' : 'quote_not_found';
  const checkAll = (checker: CitationChecker) => {
    let wrong = 0;
    for (const c of cited) if ((checker.check(c.source) as CheckedSource).check !== expected) wrong++;
    if (wrong > 0) throw new Error(`${pageKb} KB, ${expected}: ${wrong} of ${cited.length} sources checked otherwise`);
  };
  const cold: number[] = [];
  const warm: number[] = [];
  const bare: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    let checker!: CitationChecker;
    const fresh = snapshots.map(unseen);
    cold.push(ms(() => {
      checker = new CitationChecker(fresh, OPEN_POLICY);
      checkAll(checker);
    }));
    warm.push(ms(() => checkAll(checker)));
    bare.push(ms(() => {
      let hits = 0;
      for (const c of cited) if (c.rawText.includes(c.rawQuote)) hits++;
      if (hits !== (found ? cited.length : 0)) throw new Error(`baseline: ${hits} of ${cited.length} raw quotes found`);
    }));
  }
  const perRow = (values: number[]) => round((median(values) * 1000) / ROWS, 2);
  const result = {
    page_kb: pageKb, quote: found ? 'found' : 'not found', pages: PAGES, rows: ROWS, sources: cited.length,
    cold_us_per_row: perRow(cold), warm_us_per_row: perRow(warm), baseline_us_per_row: perRow(bare),
    cold_ratio: round(median(cold) / median(bare), 2), warm_ratio: round(median(warm) / median(bare), 2),
    cold_ms: cold.map((v) => round(v, 2)), warm_ms: warm.map((v) => round(v, 2)), baseline_ms: bare.map((v) => round(v, 2)),
  };
  log(`rows: ${pageKb} KB pages, quote ${result.quote}: cold ${result.cold_us_per_row} µs/row, warm ${result.warm_us_per_row}, baseline ${result.baseline_us_per_row}`);
  return result;
}

// ---- 2. per MB ------------------------------------------------------------------------------------

function sizeCase(mb: number) {
  const r = seededRandom(mb * 31 + 5);
  const text = prose(mb * 1e6, mb * 1_000_003);
  const bytes = Buffer.byteLength(text);
  const s = snapshot(0, text);
  const rawQuote = spanAt(text, text.length - 2000, r);
  const source: RowSource = { url: s.url, quote: typed(rawQuote) };
  const checkOnce = (checker: CitationChecker) => {
    if (checker.check(source).check !== 'quote_found') throw new Error(`${mb} MB: the quote near the end was not found`);
  };
  // Repeated checks and bare searches take well under a millisecond per MB: each sample repeats
  // them over about 100 MB of text in all (at least 3 times), so that it lasts tens of ms.
  const inner = Math.max(3, Math.round(100 / mb));
  const first: number[] = [];
  const normalize: number[] = [];
  const repeated: number[] = [];
  const bare: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    let checker!: CitationChecker;
    const fresh = unseen(s);
    first.push(ms(() => {
      checker = new CitationChecker([fresh], OPEN_POLICY);
      checkOnce(checker);
    }));
    repeated.push(ms(() => {
      for (let i = 0; i < inner; i++) checkOnce(checker);
    }) / inner);
    bare.push(ms(() => {
      for (let i = 0; i < inner; i++) if (!text.includes(rawQuote)) throw new Error(`${mb} MB: baseline did not find the quote`);
    }) / inner);
    normalize.push(ms(() => {
      if (normalizeQuoteText(text).length === 0) throw new Error('normalized to nothing');
    }));
  }
  const perMb = (values: number[]) => round(median(values) / (bytes / 1e6), 3);
  const result = {
    mb, bytes, chars: text.length, quote_at: text.lastIndexOf(rawQuote),
    first_ms: round(median(first), 2), normalize_ms: round(median(normalize), 2), repeated_ms: round(median(repeated), 3), baseline_ms: round(median(bare), 3),
    first_ms_per_mb: perMb(first), normalize_ms_per_mb: perMb(normalize), repeated_ms_per_mb: perMb(repeated), baseline_ms_per_mb: perMb(bare),
    first_ratio: round(median(first) / median(bare), 1), repeated_ratio: round(median(repeated) / median(bare), 2),
    samples: { first_ms: first.map((v) => round(v, 2)), normalize_ms: normalize.map((v) => round(v, 2)), repeated_ms: repeated.map((v) => round(v, 3)), baseline_ms: bare.map((v) => round(v, 3)) },
  };
  log(`size: ${mb} MB: first check ${result.first_ms} ms (${result.first_ms_per_mb} ms/MB), repeated ${result.repeated_ms} ms, baseline ${result.baseline_ms} ms`);
  return result;
}

// ---- main -----------------------------------------------------------------------------------------

function main(): void {
  startWatchdog('bench:citations', 10 * 60_000);
  const started = new Date();
  const load = loadAverage();
  noteLoad(load);
  // One short pass of each kind first, so the timed ones run optimized code.
  const warmUp = new CitationChecker([snapshot(0, prose(200_000, 1))], OPEN_POLICY);
  for (let i = 0; i < 200; i++) warmUp.check({ url: 'https://site0.example.com/reports/page-0', quote: `words ${i} that are not there` });

  const rows = PAGE_KB.flatMap((kb) => [rowsCase(kb, true), rowsCase(kb, false)]);
  const sizes = SIZES_MB.map(sizeCase);

  process.stdout.write(`\nper row: ${ROWS} rows × ${SOURCES_PER_ROW} sources, ${PAGES} pages per checker; µs per row (ratio to the bare includes)\n`);
  process.stdout.write(`${table([
    ['page', 'quote', 'first use of a checker', 'checker reused', 'bare includes'],
    ...rows.map((r) => [`${r.page_kb} KB`, r.quote, `${r.cold_us_per_row} (${r.cold_ratio}×)`, `${r.warm_us_per_row} (${r.warm_ratio}×)`, String(r.baseline_us_per_row)]),
  ])}\n`);
  process.stdout.write('\nper snapshot size: one quote near the end; ms, ms per MB (ratio to the bare includes)\n');
  process.stdout.write(`${table([
    ['snapshot', 'first check', 'normalizeQuoteText alone', 'repeated check', 'bare includes'],
    ...sizes.map((s) => [
      `${s.mb} MB`, `${s.first_ms} ms, ${s.first_ms_per_mb}/MB (${s.first_ratio}×)`, `${s.normalize_ms} ms, ${s.normalize_ms_per_mb}/MB`,
      `${s.repeated_ms} ms, ${s.repeated_ms_per_mb}/MB (${s.repeated_ratio}×)`, `${s.baseline_ms} ms, ${s.baseline_ms_per_mb}/MB`,
    ]),
  ])}\n`);
  writeReport('citations.json', {
    ...reportHeader(started, load),
    settings: { rows: ROWS, sources_per_row: SOURCES_PER_ROW, pages: PAGES, page_kb: PAGE_KB, sizes_mb: SIZES_MB, reps: REPS },
    rows, sizes,
  });
  process.exit(0);
}

main();
