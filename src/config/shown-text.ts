/**
 * Characters that act on a terminal or change what a reader sees of a line: controls (C0, DEL and
 * C1: an escape sequence, an 8-bit CSI), format characters (bidirectional controls and marks, which
 * show text in another order than it is stored; zero-width characters, the soft hyphen, the BOM)
 * and the line and paragraph separators.
 */
const UNSHOWABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
const HAS_UNSHOWABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/** A character as JSON escapes it: `\uXXXX`, a surrogate pair for one beyond U+FFFF. */
const escaped = (c: string) => Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join('');

/** True when `text` holds a character that a terminal would act on or a reader would not see. */
export function hasUnshowable(text: string): boolean {
  return HAS_UNSHOWABLE.test(text);
}

/**
 * Text from a database, a file name or a request, quoted for a message or a log line: JSON's
 * quoting (control characters and lone surrogates escaped), with every other unshowable character
 * written as a `\uXXXX` escape too, so that what an operator reads is what is stored.
 */
export function quoted(text: string): string {
  return JSON.stringify(text).replace(UNSHOWABLE, escaped);
}

/**
 * A line for a terminal or a log as it is stored: every unshowable character but the line breaks
 * (`\n`) and tabs that lay out a message of several lines written as a `\uXXXX` escape.
 */
export function escapedUnshowable(text: string): string {
  return HAS_UNSHOWABLE.test(text) ? text.replace(UNSHOWABLE, (c) => (c === '\n' || c === '\t' ? c : escaped(c))) : text;
}

/** Text shown as it is, unquoted (a column of a table on a terminal), each unshowable character replaced by U+FFFD. */
export function replacedUnshowable(text: string): string {
  return text.replace(UNSHOWABLE, '\ufffd');
}
