import { execFileSync, spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { boundHeapGrowth } from '../../src/cli/heap-growth.js';

const ROOT = resolve(import.meta.dirname, '../..');
const MODULE = pathToFileURL(join(ROOT, 'dist/cli/heap-growth.js')).href;

/**
 * A streaming workload in a process of its own: objects that outlive two young collections (a
 * window of 120,000, about 36 MB) and then die in the old generation, 1.5 million of them. Prints
 * the old generation's largest used size against what a full collection at the end leaves live.
 */
const CHURN = `
import { getHeapSpaceStatistics } from 'node:v8';
const { boundHeapGrowth } = await import(${JSON.stringify(MODULE)});
if (process.argv[1] === 'bound') boundHeapGrowth([], '');
const old = () => getHeapSpaceStatistics().filter((s) => s.space_name === 'old_space' || s.space_name === 'large_object_space').reduce((sum, s) => sum + s.space_used_size, 0);
const window = new Array(120000);
let peak = 0;
for (let i = 0; i < 1500000; i++) {
  window[i % window.length] = { text: 'row ' + i + ' '.repeat(i % 50), values: [i, i + 1, i + 2, i + 3] };
  if (i % 2000 === 0) peak = Math.max(peak, old());
}
globalThis.gc();
// Read after the collection, so the window is live through it.
console.log(JSON.stringify({ peak, live: old(), kept: window[0].text.length }));
`;

function churn(mode: 'bound' | 'default'): { peak: number; live: number } {
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', CHURN, mode], { encoding: 'utf8' });
  return JSON.parse(out) as { peak: number; live: number };
}

describe('the heap bound every vidfeeds process sets (heap-growth.ts)', () => {
  it('keeps the old generation near its live size, where V8 alone lets it grow to several times', () => {
    const bound = churn('bound');
    // The limit is live × 1.25 after each full collection (V8 adds some megabytes at least); the
    // young generation's survivors and the allocation that goes on while a collection marks take
    // the peak past it (about 1.7 on Node 20, 2.5 on Node 26).
    expect(bound.peak / bound.live).toBeLessThan(3);
    // The workload does make V8 grow its heap: without the bound, on a machine whose heap limit is
    // 2 GB or more (V8 then lets the old generation grow up to four times), it grows further
    // (about 4.5 on Node 20, 4.9 on Node 26).
    if (getHeapStatistics().heap_size_limit >= 2048 * 1024 * 1024) {
      const unbound = churn('default');
      expect(unbound.peak / unbound.live).toBeGreaterThan(bound.peak / bound.live + 1);
    }
  }, 60_000);

  it("leaves the heap to an operator who sizes it with V8's own flags", () => {
    expect(boundHeapGrowth(['--max-old-space-size=4096'], '')).toBe(false);
    expect(boundHeapGrowth([], '--trace-warnings --max_old_space_size=512')).toBe(false);
    expect(boundHeapGrowth(['--heap-growing-percent=20'], '')).toBe(false);
  });

  it('names a flag this Node knows: an unknown one would print an error on every run', () => {
    const options = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
    expect(options).toMatch(/^\s*--heap-growing-percent\b/m);
    const run = spawnSync(process.execPath, [join(ROOT, 'bin/vidfeeds.js'), '--version'], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stderr).toBe('');
  });
});
