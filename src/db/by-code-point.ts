/**
 * Compares strings by code point, as SQLite compares UTF-8 text and S3 lists keys (ascending
 * UTF-8 bytes). UTF-16 units order the same way
 * except a surrogate (half of a code point above U+FFFF) against a unit from U+E000 to U+FFFF.
 */
export function byCodePoint(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit < 0xe000 ? unit + 0x2000 : unit - 0x800;
}
