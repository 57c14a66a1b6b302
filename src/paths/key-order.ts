/**
 * The order S3 lists keys in: ascending by their UTF-8 bytes, which is Unicode code point order.
 * JavaScript compares strings by UTF-16 code units, which agrees except where a surrogate pair (a
 * code point above U+FFFF) meets a unit from U+E000 to U+FFFF: the pair sorts first in UTF-16 and
 * last in UTF-8. SQLite's BINARY collation of UTF-8 text is this order too.
 */
export function compareUtf8(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** A UTF-16 unit moved so that surrogates rank above every other unit, as their code points do. */
function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}
