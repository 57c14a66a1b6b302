/**
 * Text cut to a format's limit in characters (code points, as the limits of Google's video
 * sitemap, Apple's podcast tags and OpenSearch count them), never inside a user-perceived
 * character: a flag, a family emoji joined by zero-width joiners, a letter and its accents are
 * kept whole or left out whole.
 */

let graphemes: Intl.Segmenter | undefined;

/** Code points read past the limit to find where the last character that fits ends. */
const MARGIN = 32;

/** At most `max` code points of `text`, cut at the last grapheme boundary that fits. */
export function truncate(text: string, max: number): string {
  // Every code point takes one or two UTF-16 units: a text this short is within the limit.
  if (text.length <= max) return text;
  // Where the code point after the limit ends, and a little more: the segmenter reads no further
  // (it would copy the whole text first). A cluster cut off at that end is longer than the margin,
  // so it cannot fit.
  let points = 0;
  let at = 0;
  for (const char of text) {
    if (++points > max + MARGIN) break;
    at += char.length;
  }
  if (points <= max) return text;
  graphemes ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  let kept = 0;
  let end = 0;
  for (const { segment, index } of graphemes.segment(text.slice(0, at))) {
    let size = 0;
    for (const _ of segment) size++;
    if (kept + size > max) break;
    kept += size;
    end = index + segment.length;
  }
  return text.slice(0, end);
}
