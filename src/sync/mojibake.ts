/**
 * Text that looks like UTF-8 read as latin1: the state of most old PHP sites, whose latin1 tables
 * hold the bytes of UTF-8 text. Read as latin1 (MySQL's latin1 is Windows-1252), each character
 * of two, three or four bytes becomes a lead letter from Â to ô followed by one, two or three
 * characters that stand for continuation bytes (0x80 to 0xBF): `JoÃ£o` for `João`, `â€™` for `’`,
 * `ðŸ˜€` for an emoji (the four bytes of characters past U+FFFF, led by ð to ô). Real latin1 text
 * almost never has such a pair (`Ã` then `£`), so one is worth a warning, not a change.
 */

/** Windows-1252's characters for the bytes 0x80 to 0x9F (and the C1 controls, where it has none). */
const CP1252_HIGH = '\u20AC\u0081\u201A\u0192\u201E\u2026\u2020\u2021\u02C6\u2030\u0160\u2039\u0152\u008D\u017D\u008F\u0090\u2018\u2019\u201C\u201D\u2022\u2013\u2014\u02DC\u2122\u0161\u203A\u0153\u009D\u017E\u0178';
/** A continuation byte read as Windows-1252. */
const CONTINUATION = `[${CP1252_HIGH}\\u00A0-\\u00BF]`;
const MOJIBAKE = new RegExp(`[\\u00C2-\\u00DF]${CONTINUATION}|[\\u00E0-\\u00EF]${CONTINUATION}{2}|[\\u00F0-\\u00F4]${CONTINUATION}{3}`);

/**
 * How a mapping reads such a column as its bytes, which vidfeeds decodes as UTF-8 (naming the
 * values that are not): PostgreSQL has no CAST to binary, and its WIN1252 (not LATIN1, which has
 * no `€` or `Ÿ`) turns the characters back into the bytes MySQL's latin1 read them from.
 */
export function bytesExpression(source: string): string {
  return source.startsWith('PostgreSQL') ? "convert_to(column, 'WIN1252')" : 'CAST(column AS BINARY)';
}

export function looksLikeMojibake(text: string): boolean {
  return MOJIBAKE.test(text);
}

/** A column whose text looks like UTF-8 read as latin1: how many rows, and the first one. */
export interface MojibakeColumn {
  table: string;
  column: string;
  rows: number;
  /** The first such row's name and value. */
  row: string;
  found: string;
}
