/**
 * The text of a number exactly as `String(n)` writes it, made without V8's number-to-string
 * cache. That cache is a table in the old generation holding the text of numbers converted
 * lately, so the text of a number converted once (a video's file size, its duration) stays
 * alive there until another number takes its slot: long enough to be moved to the old
 * generation, where it becomes garbage only a full collection reclaims. A feed-heavy build moved
 * about 70 KB of such text there between two young collections, most of what grew its old
 * generation and its peak RSS (docs/performance.md, "Feed-heavy sites"). `toFixed` writes a whole
 * number's digits into a string of its own; any other number goes through `String`.
 */
export function numberText(n: number): string {
  return Number.isSafeInteger(n) ? n.toFixed(0) : String(n);
}
