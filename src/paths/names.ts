/**
 * Which usernames and video ids can become a path segment under out/ (PRODUCT.md, "Names").
 * A name that cannot is never written: the build reports it and skips the row.
 */

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
  if (name.trim() !== name) return 'starts or ends with white space';
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > MAX_SEGMENT_BYTES) return `is ${bytes} bytes long (at most ${MAX_SEGMENT_BYTES})`;
  if (reserved(name)) return 'is the name of a site-wide file';
  return null;
}

/** Shows a name in a message: quoted, control characters visible, long names cut. */
export function showName(name: string): string {
  const shown = JSON.stringify(name);
  return shown.length > 80 ? `${shown.slice(0, 60)}…" (${Buffer.byteLength(name)} bytes)` : shown;
}
