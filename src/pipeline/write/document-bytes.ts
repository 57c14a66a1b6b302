/**
 * The UTF-8 bytes of a rendered document, encoded into memory that is reused from one document to
 * the next instead of a new Buffer each time. The compare-and-write stage (write-documents.ts)
 * hashes the bytes, compares them and hands them to the writer, which copies what it keeps, before
 * it encodes the next document; so one buffer serves the whole build. Encoding into place spares
 * an allocation and a pass over the text per document (`Buffer.from` measures the UTF-8 length
 * first), and the garbage of a buffer per document.
 */

/** Documents whose text may need more than this are encoded into a Buffer of their own (a sitemap part). */
const REUSED_BYTES_MAX = 1024 * 1024;

let reused = Buffer.allocUnsafe(64 * 1024);

/** The bytes of `text`, valid until the next call: use them, or copy them, before encoding another document. */
export function documentBytes(text: string): Buffer {
  // A UTF-16 code unit takes at most three bytes of UTF-8 (a surrogate pair, two units, takes four).
  const most = text.length * 3;
  if (most > reused.length) {
    if (most > REUSED_BYTES_MAX) return Buffer.from(text, 'utf8');
    let size = reused.length;
    while (size < most) size *= 2;
    reused = Buffer.allocUnsafe(Math.min(size, REUSED_BYTES_MAX));
  }
  return reused.subarray(0, reused.write(text, 0, 'utf8'));
}
