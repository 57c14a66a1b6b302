import { describe, expect, it } from 'vitest';
import { numberText } from '../../src/render/number-text.js';

describe('numberText', () => {
  it('writes every number as String does: whole, negative, zero of either sign, the largest safe, fractions and the rest', () => {
    const numbers = [
      0, -0, 1, -1, 7, 10, 99, 100, 120, 108_964_621, 2 ** 31, 2 ** 31 - 1, -(2 ** 31), 2 ** 53 - 1, -(2 ** 53 - 1),
      2 ** 53, 2 ** 53 + 2, 1e20, 1e21, 1.5, -0.25, 0.1 + 0.2, 1e-7, 123.456e10, Number.MIN_VALUE, Number.MAX_VALUE,
      Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY,
    ];
    for (const n of numbers) expect(numberText(n), String(n)).toBe(String(n));
  });

  it('agrees with String on a spread of whole numbers of every length', () => {
    let n = 1;
    for (let digits = 1; digits <= 16; digits++, n = n * 10 + (digits % 10)) {
      for (const value of [n, -n, n - 1, n + 1]) expect(numberText(value)).toBe(String(value));
    }
  });
});
