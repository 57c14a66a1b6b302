/**
 * Text cut to a format's limit in characters (code points, as the limits of Google's video
 * sitemap, Apple's podcast tags and OpenSearch count them), never inside a user-perceived
 * character: a flag, a family emoji joined by zero-width joiners, a letter and its accents are
 * kept whole or left out whole.
 */

let graphemes: Intl.Segmenter | undefined;

/** At most `max` code points of `text`, cut at the last grapheme boundary that fits. */
export function truncate(text: string, max: number): string {
  // Every code point takes one or two UTF-16 units: a text this short is within the limit.
  if (text.length <= max) return text;
  let points = 0;
  for (const _ of text) if (++points > max) break;
  if (points <= max) return text;
  graphemes ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  let kept = 0;
  let end = 0;
  for (const { segment, index } of graphemes.segment(text)) {
    let size = 0;
    for (const _ of segment) size++;
    if (kept + size > max) break;
    kept += size;
    end = index + segment.length;
  }
  return text.slice(0, end);
}
