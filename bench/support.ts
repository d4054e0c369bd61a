/**
 * The support benchmark (`npm run bench:support`): what checking row values against their
 * quotes costs (src/domain/value-match.ts, decisions §17.1), in this process, no server.
 *
 * BENCH_SUPPORT_CELLS cells (default 100,000) in rows of four columns (text, number, integer,
 * date), each row citing one quote of 80–200 characters of generated prose that holds the row's
 * values written another way than the row writes them (thousands separators, scale words,
 * decimal commas, written-out dates, accents dropped). Half the rows are supported; in the other
 * half every value is changed a little, so it is in no quote and every number and date of the
 * quote is read. Every quote is new to the checker, as in one write_rows call.
 *
 * Same-run baseline: `String.prototype.includes` of each value's plain text in its quote. Every
 * figure is the median of BENCH_SUPPORT_REPS repetitions. Results: stdout and .bench/support.json.
 */
import { valueInQuote } from '../src/domain/value-match.js';
import type { ColumnType } from '../src/contract/index.js';
import { loadAverage, log, noteLoad, percentile, reportHeader, round, seededRandom, startWatchdog, table, writeReport } from './lib.js';

const CELLS = Number(process.env.BENCH_SUPPORT_CELLS ?? 100_000);
const REPS = Math.max(1, Number(process.env.BENCH_SUPPORT_REPS ?? 5));
const COLUMNS: ColumnType[] = ['string', 'number', 'integer', 'date'];

const NAMES = ['Ørsted', 'Société Générale', 'Zürich Energie', 'São Paulo Metro', 'Łódź Power', 'Nestlé', 'Hydro-Québec', 'Vattenfall', 'Siemens Energy', 'Müller GmbH'];
const FILLER = 'the company said in its annual report that capacity and output of the plant grew as the grid operator had forecast for the region'.split(' ');
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

interface Cell {
  value: unknown;
  type: ColumnType;
  quote: string;
  /** The baseline's search: the value as plain text. */
  plain: string;
  supported: boolean;
}

function filler(r: () => number, n: number): string {
  return Array.from({ length: n }, () => FILLER[Math.floor(r() * FILLER.length)]!).join(' ');
}

function cells(): Cell[] {
  const r = seededRandom(17);
  const out: Cell[] = [];
  for (let row = 0; out.length < CELLS; row++) {
    const supported = row % 2 === 0;
    const name = NAMES[row % NAMES.length]!;
    const millions = Math.floor(r() * 9000) / 10 + 1;
    const count = Math.floor(r() * 9_000_000) + 10_000;
    const year = 2000 + Math.floor(r() * 30);
    const month = Math.floor(r() * 12);
    const day = 1 + Math.floor(r() * 28);
    const iso = `${year}-${String(month + 1).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
    const quote = `${filler(r, 4)} “${name.normalize('NFD').replace(/[\u0300-\u036f]/g, '')}” — revenue of €${String(millions).replace('.', ',')} million, ${count.toLocaleString('de-CH')} customers, ${filler(r, 3)} on ${MONTHS[month]} ${day}, ${year} ${filler(r, 6)}.`;
    const values: [unknown, ColumnType][] = supported
      ? [[name, 'string'], [Math.round(millions * 1e6), 'number'], [count, 'integer'], [iso, 'date']]
      : [[`${name} Holding`, 'string'], [Math.round(millions * 1e6) + 1, 'number'], [count + 7, 'integer'], [`${year}-${String(month + 1).padStart(2, '0')}-${String(day + 1).padStart(2, '0')}`, 'date']];
    for (const [value, type] of values) if (out.length < CELLS) out.push({ value, type, quote, plain: String(value), supported });
  }
  return out;
}

function ms(fn: () => void): number {
  const t = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

function main(): void {
  startWatchdog('bench:support', 5 * 60_000);
  const started = new Date();
  const load = loadAverage();
  noteLoad(load);
  const all = cells();
  const checkAll = (list: Cell[]) => {
    let wrong = 0;
    for (const c of list) if (valueInQuote(c.value, c.quote, c.type) !== c.supported) wrong++;
    if (wrong > 0) throw new Error(`${wrong} of ${list.length} cells checked otherwise than written`);
  };
  // Each repetition checks copies of the quotes (new strings), so no quote is read from the
  // checker's memory of recent quotes across repetitions.
  const fresh = () => all.map((c) => ({ ...c, quote: ` ${c.quote}`.slice(1) }));
  // One pass first, so the timed ones run optimized code.
  checkAll(all);
  const checked: number[] = [];
  // CPU time of the checks too: on a shared host it is steadier than the wall clock.
  const checkedCpu: number[] = [];
  const bare: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    const list = fresh();
    const cpu = process.cpuUsage();
    checked.push(ms(() => checkAll(list)));
    const used = process.cpuUsage(cpu);
    checkedCpu.push((used.user + used.system) / 1000);
    bare.push(ms(() => {
      let hits = 0;
      for (const c of list) if (c.quote.includes(c.plain)) hits++;
      if (hits < 0) throw new Error('unreachable');
    }));
  }
  const median = (values: number[]) => percentile(values, 50);
  const result = {
    cells: all.length, checked_ms: round(median(checked), 1), checked_us_per_cell: round((median(checked) * 1000) / all.length, 2),
    checked_cpu_ms: round(median(checkedCpu), 1), baseline_ms: round(median(bare), 1), ratio: round(median(checked) / median(bare), 1),
    samples: { checked_ms: checked.map((v) => round(v, 1)), checked_cpu_ms: checkedCpu.map((v) => round(v, 1)), baseline_ms: bare.map((v) => round(v, 1)) },
  };
  log(`support: ${result.cells} cells in ${result.checked_ms} ms (${result.checked_us_per_cell} µs a cell, ${result.checked_cpu_ms} ms CPU), baseline ${result.baseline_ms} ms`);
  process.stdout.write(`\n${table([
    ['cells', 'checked', 'CPU', 'µs a cell', 'bare includes'],
    [String(result.cells), `${result.checked_ms} ms`, `${result.checked_cpu_ms} ms`, String(result.checked_us_per_cell), `${result.baseline_ms} ms (${result.ratio}× less)`],
  ])}\n`);
  writeReport('support.json', { ...reportHeader(started, load), settings: { cells: CELLS, reps: REPS, columns: COLUMNS }, result });
  process.exit(0);
}

main();
