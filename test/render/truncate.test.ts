import { describe, expect, it } from 'vitest';
import { truncate } from '../../src/render/truncate.js';

describe('truncate', () => {
  it('keeps text within the limit as it is, counting code points, not UTF-16 units', () => {
    expect(truncate('abc', 3)).toBe('abc');
    // Three code points in six units.
    expect(truncate('😀😀😀', 3)).toBe('😀😀😀');
    expect(truncate('😀😀😀😀', 3)).toBe('😀😀😀');
  });

  it('cuts between the characters a reader sees: a flag, a joined emoji and an accented letter go whole', () => {
    const family = '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}'; // five code points, one character
    expect(truncate(`ab${family}cd`, 4)).toBe('ab');
    expect(truncate(`ab${family}cd`, 7)).toBe(`ab${family}`);
    expect(truncate('abc\u{1F1EF}\u{1F1F5}', 4)).toBe('abc');
    expect(truncate('e\u0301e\u0301e\u0301', 5)).toBe('e\u0301e\u0301');
  });

  it('cuts a text of millions of characters at its limit, a flag across it whole or not at all', () => {
    const long = `${'x'.repeat(99)}\u{1F1EF}\u{1F1F5}${'y'.repeat(5_000_000)}`;
    expect(truncate(long, 100)).toBe('x'.repeat(99));
    expect(truncate(long, 101)).toBe(`${'x'.repeat(99)}\u{1F1EF}\u{1F1F5}`);
  });
});
