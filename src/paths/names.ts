/**
 * Which usernames and video ids can become a path segment under out/ (docs/database.md, "Names").
 * A name that cannot is never written: the build reports it and skips the row.
 */

import { quoted } from '../config/shown-text.js';

/** The longest file name the file systems we target allow, in UTF-8 bytes. */
export const MAX_SEGMENT_BYTES = 255;

/**
 * Why `name` cannot be a path segment, or null when it can. `reserved` tells whether a name is
 * taken by a site-wide file (robots.txt, sitemap.xml, numbered sitemaps, ...).
 */
export function segmentProblem(name: string, reserved: (name: string) => boolean): string | null {
  if (name.length === 0) return 'is empty';
  if (name === '.' || name === '..') return `is "${name}"`;
  if (name.startsWith('.')) return 'starts with a dot (hidden files are never served)';
  if (name.includes('/')) return 'contains "/"';
  if (name.includes('\\')) return 'contains "\\"';
  // C0 and C1 controls, DEL, NUL; also lone surrogates, which have no UTF-8 form.
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return 'contains a control character';
  if (/[\uD800-\uDFFF]/u.test(name)) return 'contains a lone surrogate (not valid Unicode)';
  // better-sqlite3 reads bytes that are not UTF-8 as U+FFFD: such a name is not the site's own.
  if (name.includes('\uFFFD')) return 'contains U+FFFD, the replacement character (the stored bytes are probably not valid UTF-8)';
  const invisible = INVISIBLE.exec(name);
  if (invisible !== null) return `contains ${codePoint(invisible[0])}, ${invisibleKind(invisible[0])}`;
  if (name.trim() !== name) return 'starts or ends with white space';
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > MAX_SEGMENT_BYTES) return `is ${bytes} bytes long (at most ${MAX_SEGMENT_BYTES})`;
  if (reserved(name)) return 'is the name of a site-wide file';
  return null;
}

/**
 * Characters that make a name differ from what a person reads: bidirectional controls (a listing
 * can show `gnp.exe` for a name ending in `.exe`), zero-width and other invisible format
 * characters (two names that look alike), and non-characters (never meant for interchange).
 * Emoji sequences joined by U+200D are refused with them: a path segment must read as it is.
 */
const INVISIBLE = /[\p{Bidi_Control}\p{Default_Ignorable_Code_Point}\p{Noncharacter_Code_Point}]/u;

function invisibleKind(char: string): string {
  if (/\p{Bidi_Control}/u.test(char)) return 'a bidirectional control';
  if (/\p{Noncharacter_Code_Point}/u.test(char)) return 'a Unicode non-character';
  return 'an invisible (zero-width or format) character';
}

/** `U+202E` for a character. */
export function codePoint(char: string): string {
  return `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * The form two names share when a case-insensitive or Unicode-normalising file system (macOS,
 * Windows, some sync tools) would store them as one file: NFC, then lower case.
 */
export function foldedName(name: string): string {
  return name.normalize('NFC').toLowerCase().normalize('NFC');
}

/** Shows a name in a message: quoted, control characters visible, long names cut. */
export function showName(name: string): string {
  const shown = quoted(name);
  return shown.length > 80 ? `${shown.slice(0, 60)}…" (${Buffer.byteLength(name)} bytes)` : shown;
}
