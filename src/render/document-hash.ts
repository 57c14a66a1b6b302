import xxhash from 'xxhash-wasm';

/**
 * The hash a build state records of each document's bytes (build-state.ts), and `vidfeeds check`
 * compares: XXH64, 8 bytes. It only tells whether a document changed since the last build (its
 * size must match too), so it need not be cryptographic, and a cryptographic hash would cost a
 * feed-heavy build a noticeable share of its CPU (docs/performance.md, "Figures behind the code").
 *
 * What a non-cryptographic hash gives away: someone able to craft two versions of a document
 * with one size and one hash could change it without the next build rewriting it. Only the
 * content that differs between the versions decides a collision, so that takes controlling both
 * versions of the changed part, which is one's own content; a change someone else makes (a video
 * turned private, a profile hidden) is not theirs to shape. Accidental collisions among
 * same-sized versions of one path: one in 2^64.
 */
const { h64Raw, create64 } = await xxhash();

/**
 * Bytes hashed in one call at most. The WebAssembly memory grows to hold what it hashes and never
 * shrinks: a sitemap part of megabytes hashed whole would keep that much in the process to the end.
 */
const PIECE_BYTES = 256 * 1024;

function xxh64(body: Uint8Array): bigint {
  if (body.length <= PIECE_BYTES) return h64Raw(body);
  const hasher = create64();
  for (let at = 0; at < body.length; at += PIECE_BYTES) hasher.update(body.subarray(at, at + PIECE_BYTES));
  return hasher.digest();
}

/** The hash of a document's bytes, as the state records it. */
export function documentHash(body: Uint8Array): Buffer {
  const hash = Buffer.allocUnsafe(8);
  hash.writeBigUInt64BE(xxh64(body));
  return hash;
}

/** The same hash of bytes given piece by piece (a file read a piece at a time). */
export function documentHasher(): { update(piece: Uint8Array): void; digest(): Buffer } {
  const hasher = create64();
  return {
    update: (piece) => {
      for (let at = 0; at < piece.length; at += PIECE_BYTES) hasher.update(piece.subarray(at, at + PIECE_BYTES));
    },
    digest: () => {
      const hash = Buffer.allocUnsafe(8);
      hash.writeBigUInt64BE(hasher.digest());
      return hash;
    },
  };
}

/** What build states of this kind record as `hash` (their meta `document_hash`); states of other kinds have their hashes dropped. */
export const DOCUMENT_HASH = 'xxh64';
