import { HOSTILE } from '../../src/db/demo-data.js';

/**
 * What the tests that hold a format's markup to xmlDocument (rss.test.ts, atom.test.ts) draw their
 * random documents from.
 */

/** Text a document must carry: hostile values, blanks, entity-shaped text, characters XML cannot carry. */
export const MARKUP_TEXTS: readonly string[] = [
  ...Object.values(HOSTILE),
  '',
  ' ',
  '&amp; &#65; &copy; ]]> ]]]]>>',
  'a\u0000b\uFFFE\uD800c\r\nd\re',
  '\u0001',
  'plain',
];

/** A repeatable stream of random choices from `seed` (a linear congruential generator). */
export function randomChoices(seed: number) {
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  return {
    random,
    pick: <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!,
    /** The value, or null three times in ten. */
    maybe: <T>(value: T): T | null => (random() < 0.3 ? null : value),
  };
}

/** Text as a name or id that goes into a URL: the database gives them well formed (a lone surrogate cannot come from UTF-8). */
export function wellFormed(text: string): string {
  return text.replace(/[\uD800-\uDFFF]/g, '');
}
