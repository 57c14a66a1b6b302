import { describe, expect, it } from 'vitest';
import { formatDuration, ProgressLine } from '../../src/cli/progress.js';

/** A progress line on a manual clock; `lines` holds what it wrote, without the terminal codes. */
function progressOn() {
  let now = 0;
  const lines: string[] = [];
  const line = new ProgressLine((text) => lines.push(text.replace('\r\x1b[K', '')), () => now);
  return { line, lines, advance: (ms: number) => (now += ms) };
}

describe('the progress line', () => {
  it('estimates the time left from the recent rate, so a slow start does not stretch it', () => {
    const { line, lines, advance } = progressOn();
    line.expect(100_000);
    // Two slow seconds (500 documents a second), then a steady 5,000 a second.
    let done = 0;
    for (const perSecond of [500, 500, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000]) {
      advance(1000);
      done += perSecond;
      line.update(done);
    }
    expect(done).toBe(41_000);
    // 59,000 left at 5,000 a second: 12 s (a rate since the start, 4,100 a second, would say 14 s).
    expect(lines.at(-1)).toBe('41000/100000 documents, 5000/s, 12s left');
  });

  it('says no time left without a total, and no total once the build outgrows its estimate', () => {
    const { line, lines, advance } = progressOn();
    advance(2000);
    line.update(1000);
    expect(lines.at(-1)).toBe('1000 documents, 500/s');
    line.expect(1500);
    advance(2000);
    line.update(2000);
    expect(lines.at(-1)).toBe('2000 documents, 500/s');
  });

  it('writes durations as an operator reads them', () => {
    expect([formatDuration(0.4), formatDuration(59), formatDuration(61), formatDuration(3599), formatDuration(7260)]).toEqual(['0s', '59s', '1m01s', '59m59s', '2h01m']);
  });
});
