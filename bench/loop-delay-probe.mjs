// Loaded into the measured Quarry with `--import` (bench/provider-limits.ts): its event-loop
// delay, as perf_hooks samples it, written to BENCH_LOOP_DELAY_FILE on SIGUSR2.
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import process from 'node:process';

const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();
process.on('SIGUSR2', () => {
  const ms = (ns) => Math.round(ns / 1e4) / 100;
  fs.writeFileSync(process.env.BENCH_LOOP_DELAY_FILE, JSON.stringify({ p50_ms: ms(histogram.percentile(50)), p99_ms: ms(histogram.percentile(99)), max_ms: ms(histogram.max) }));
  histogram.reset();
});
