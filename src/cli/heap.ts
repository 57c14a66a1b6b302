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
 * V8's flags for the whole process, set once by the command line before any command runs (V8
 * flags are per process, so the build, write and render threads started after it have them too).
 * A flag given to node itself wins.
 *
 * - The heap growing factor: HEAP_GROWING_PERCENT.
 * - No parallel scavenges: by default a thread's young-generation collection is shared out to
 *   V8's helper threads, which helps where cores are idle. A build keeps every core busy with
 *   threads of its own (build, write, render), so the helpers only wait for a core and the
 *   collecting thread waits for them: a 50,000-user feed-heavy build on 2 cores took 4 to 6% less
 *   time with each thread collecting its own young generation, at the same peak RSS
 *   (docs/performance.md, "Tenth session").
 */
export function setGarbageCollection(execArgv: readonly string[] = process.execArgv): void {
  const given = (flag: string) => execArgv.some((arg) => arg.startsWith(`--${flag}`) || arg.startsWith(`--no-${flag}`));
  if (!given('heap-growing-percent')) setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  if (!given('parallel-scavenge')) setFlagsFromString('--no-parallel-scavenge');
}
