import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets a heap's old generation grow past what was live after the last full collection
 * before it collects again, in percent. By default it lets it reach about four times that: a
 * feed-heavy build keeps 15 to 20 MB live, yet its thread's old generation grew to 70 MB of
 * promoted garbage between full collections, a quarter of the process's peak RSS. At 25% a
 * 50,000-user feed-heavy build does about five more full collections, a few milliseconds each,
 * and peaks 30 MB lower (docs/performance.md, "Feed-heavy, sixth session").
 */
export const HEAP_GROWING_PERCENT = 25;

/**
 * Sets V8's heap growing factor for the whole process (V8 flags are per process, so the build,
 * write and render threads started after it have it too). The command line calls it once before
 * any command runs; a `--heap-growing-percent` given to node itself wins.
 */
export function boundHeapGrowth(): void {
  if (process.execArgv.some((arg) => arg.startsWith('--heap-growing-percent'))) return;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
