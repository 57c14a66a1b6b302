import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 may let its old generation grow past what the last full collection kept before it
 * collects again, in percent.
 *
 * vidfeeds streams: what stays live in a build, a watch or a deploy is tens of megabytes, and
 * nearly everything else it allocates dies young or soon after promotion. V8 takes its growing
 * factor from the heap's size limit, which Node derives from the machine's memory: with a limit of
 * 2 GB or more (a machine of 8 GB or more) the factor may reach 4, so a build writing oEmbed and
 * embed pages, with about 15 MB live, let its old generation reach 66 MB between full
 * collections, and that room was most of its peak RSS (docs/performance.md, "V8's heap,
 * bounded"). A quarter more than live (V8 adds some megabytes at least to a small heap) costs
 * full collections of a small heap, about 8 ms each, and the young collections get cheaper with a
 * small old generation.
 *
 * Node's documentation warns that a V8 flag changed after start may do nothing or behave
 * unpredictably. This one is a number V8 reads only when it sets the next collection's limit;
 * test/cli/heap-growth.test.ts checks that the running Node knows it (an unknown flag would print
 * an error on every run) and that it bounds the heap.
 */
export const HEAP_GROWING_PERCENT = 25;

/** V8's own flags for the heap's size: an operator who passes one sizes the heap, not vidfeeds. */
const HEAP_SIZE_FLAG = /--(?:heap[-_]growing[-_]percent|max[-_]old[-_]space[-_]size|max[-_]heap[-_]size)\b/;

/**
 * Bounds the heap's growth between full collections (`HEAP_GROWING_PERCENT`) for this process,
 * unless its command line or `NODE_OPTIONS` already sizes the heap. V8 reads this flag each time it
 * sets the next collection's limit, so setting it once the process runs takes effect from the
 * next full collection. Returns whether it was set.
 */
export function boundHeapGrowth(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): boolean {
  if ([...execArgv, nodeOptions].some((flag) => HEAP_SIZE_FLAG.test(flag))) return false;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
