import { randomBytes } from 'node:crypto';
import xxhash from 'xxhash-wasm';

/**
 * A digest of a source row as its driver returned it, every column the mapping's query returns in
 * the query's order, for telling an unchanged row from a changed one without reading vidfeeds's
 * stored copy (src/sync/digest-table.ts): XXH64, seeded, over an unambiguous encoding of the
 * values (each with its type and, where it varies, its length), cut to 53 bits so that it is a
 * safe integer and fits the digest store's doubles.
 *
 * XXH64 is not cryptographic: the seed, random per vidfeeds database and table and kept only in
 * it, is what keeps a site's user from searching offline for a text whose digest stays the same
 * when a moderator hides the row. Two different rows share a digest with a chance of one in 2^53.
 */

/** The seed's two 32-bit halves (as kept in `site_meta`, and sent to a server that digests rows). */
export type DigestSeed = readonly [number, number];

/** How vidfeeds digests a row: kept with the digests, so that digests made another way are made again. */
export const ROW_DIGEST_METHOD = 'xxh64';

const { h64Raw } = await xxhash();

const TAG = { null: 0, text: 1, number: 2, date: 3, bigint: 4, true: 5, false: 6, bytes: 7 } as const;

/** The encoding of the row being digested; grown, never shrunk, for the largest row seen. */
let buffer = Buffer.allocUnsafe(1 << 16);
let seedOf: DigestSeed | undefined;
let seed64 = 0n;

export function newDigestSeed(): DigestSeed {
  const bytes = randomBytes(8);
  return [bytes.readUInt32LE(0), bytes.readUInt32LE(4)];
}

/** The seed as one unsigned 64-bit integer. */
export function seedBits(seed: DigestSeed): bigint {
  return (BigInt(seed[1] >>> 0) << 32n) | BigInt(seed[0] >>> 0);
}

/**
 * The digest of a row's values, in the order the driver gave them; null when a value is of a kind
 * it does not read (the row is then always compared).
 */
export function rowDigest(values: readonly unknown[], seed: DigestSeed): number | null {
  let at = 0;
  for (const value of values) {
    // The most one value takes: a tag, a length and its content (text as UTF-16, two bytes a unit).
    const most = 9 + (typeof value === 'string' ? 2 * value.length : value instanceof Uint8Array ? value.length : 24);
    if (at + most > buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(2 * buffer.length, at + most));
      buffer.copy(grown, 0, 0, at);
      buffer = grown;
    }
    if (value === null || value === undefined) buffer[at++] = TAG.null;
    else if (typeof value === 'string') at = writeText(TAG.text, value, at);
    else if (typeof value === 'number') at = writeDouble(TAG.number, value, at);
    else if (value instanceof Date) at = writeDouble(TAG.date, value.getTime(), at);
    else if (typeof value === 'bigint') at = writeText(TAG.bigint, value.toString(), at);
    else if (typeof value === 'boolean') buffer[at++] = value ? TAG.true : TAG.false;
    else if (value instanceof Uint8Array) {
      buffer[at] = TAG.bytes;
      buffer.writeUInt32LE(value.length, at + 1);
      buffer.set(value, at + 5);
      at += 5 + value.length;
    } else return null;
  }
  if (seedOf !== seed) {
    seedOf = seed;
    seed64 = seedBits(seed);
  }
  return Number(BigInt.asUintN(53, h64Raw(buffer.subarray(0, at), seed64)));
}

/** A tag, the text's length in UTF-16 units, and the units: exact for any string, lone surrogates too. */
function writeText(tag: number, text: string, at: number): number {
  buffer[at] = tag;
  buffer.writeUInt32LE(text.length, at + 1);
  return at + 5 + buffer.write(text, at + 5, 'utf16le');
}

/** A tag and the number's IEEE bytes, which tell -0 from 0. */
function writeDouble(tag: number, value: number, at: number): number {
  buffer[at] = tag;
  buffer.writeDoubleLE(value, at + 1);
  return at + 9;
}
