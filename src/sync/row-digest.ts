import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
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

const { h64, h64Raw } = await xxhash();

/**
 * Each value becomes a tag character, then for a text, a big integer, bytes or a number its
 * length in one or two characters and its text; the row is one string, hashed in one call (a
 * call per value would cost most of what a no-change sync does per row).
 */
const TAG = { null: '\u0000', text: '\u0001', number: '\u0002', minusZero: '\u0003', date: '\u0004', bigint: '\u0005', true: '\u0006', false: '\u0007', bytes: '\u0008' } as const;

/** The seed's bits, for the last seed seen (a sync digests one table's rows with one seed). */
let seedOf: DigestSeed | undefined;
let seed64 = 0n;
/** Rows whose text is not well-formed UTF-16 are hashed as UTF-16 bytes, under another seed: UTF-8 has no lone surrogates. */
let seed64Utf16 = 0n;

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
  let row = '';
  for (const value of values) {
    if (value === null || value === undefined) row += TAG.null;
    else if (typeof value === 'string') row += TAG.text + sized(value);
    else if (typeof value === 'number') row += Object.is(value, -0) ? TAG.minusZero : TAG.number + sized(String(value));
    else if (value instanceof Date) row += TAG.date + sized(String(value.getTime()));
    else if (typeof value === 'bigint') row += TAG.bigint + sized(value.toString());
    else if (typeof value === 'boolean') row += value ? TAG.true : TAG.false;
    else if (value instanceof Uint8Array) row += TAG.bytes + sized(Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('latin1'));
    else return null;
  }
  if (seedOf !== seed) {
    seedOf = seed;
    seed64 = seedBits(seed);
    seed64Utf16 = seed64 ^ 0x9e3779b97f4a7c15n;
  }
  // h64 hashes the text's UTF-8, which has no lone surrogate: a row holding one is hashed otherwise.
  const hash = isWellFormed(row) ? h64(row, seed64) : h64Raw(Buffer.from(row, 'utf16le'), seed64Utf16);
  return Number(BigInt.asUintN(53, hash));
}

/**
 * The seed of the digests of one result's rows made from their bytes (BufferDigests): XXH64 of
 * `columns`, a text that names the result's columns in order with whatever tells the driver how to
 * read each (its type, character set, flags), under the sync's seed. So a column whose type
 * changes moves every row's digest, though the bytes of its values do not.
 */
export function resultSeed(seed: DigestSeed, columns: string): bigint {
  return h64(columns, seedBits(seed));
}

/**
 * XXH64 of ranges of buffers, cut to 53 bits, each hashed where it lies: a buffer is copied once
 * into the hasher's memory, and each range of it is hashed there (`digest`). Rows read from a
 * server lie hundreds to a chunk of the socket's bytes; xxhash-wasm's `h64Raw` would copy each row
 * into its memory through a view made for it, and turn its result into an unsigned BigInt, which
 * together cost three times the hash itself (120 ns a row against 40).
 *
 * It runs the WebAssembly module xxhash-wasm ships (`workerd/xxhash.wasm`, the one its own code
 * runs), whose `xxh64(offset, length, seed)` hashes `length` bytes of its memory at `offset`:
 * test/sync/row-digests.test.ts checks it against xxhash-wasm's `h64Raw`.
 */
export class BufferDigests {
  private readonly memory: WebAssembly.Memory;
  private readonly xxh64: (offset: number, length: number, seed: bigint) => bigint;
  private bytes: Uint8Array;
  /** The buffer the memory holds, from offset 0. Kept, so its bytes are not reused by another while it is. */
  private copied: Buffer | undefined;

  constructor() {
    const exports = new WebAssembly.Instance(new WebAssembly.Module(readModule())).exports as unknown as XxhashExports;
    this.memory = exports.mem;
    this.xxh64 = exports.xxh64;
    this.bytes = new Uint8Array(this.memory.buffer);
  }

  /** XXH64 of `buffer`'s bytes from `from` to `end` under `seed`, cut to 53 bits. Nothing may write `buffer` once it is given. */
  digest(buffer: Buffer, from: number, end: number, seed: bigint): number {
    if (buffer !== this.copied) this.copy(buffer);
    return Number(BigInt.asUintN(53, this.xxh64(from, end - from, seed)));
  }

  private copy(buffer: Buffer): void {
    if (this.bytes.byteLength < buffer.length) {
      this.memory.grow(Math.ceil((buffer.length - this.bytes.byteLength) / WASM_PAGE));
      this.bytes = new Uint8Array(this.memory.buffer);
    }
    this.bytes.set(buffer);
    this.copied = buffer;
  }
}

/** What vidfeeds calls of xxhash-wasm's module. */
interface XxhashExports {
  mem: WebAssembly.Memory;
  xxh64(offset: number, length: number, seed: bigint): bigint;
}

const WASM_PAGE = 65_536;

/** The module beside xxhash-wasm's CommonJS entry, in the package it is part of. */
const XXHASH_WASM = join(dirname(createRequire(import.meta.url).resolve('xxhash-wasm')), '..', 'workerd', 'xxhash.wasm');

function readModule(): Uint8Array<ArrayBuffer> {
  try {
    return new Uint8Array(readFileSync(XXHASH_WASM));
  } catch (error) {
    throw new Error(`xxhash-wasm's WebAssembly module cannot be read at ${XXHASH_WASM} (${(error as Error).message}): reinstall vidfeeds's dependencies (npm ci), with the xxhash-wasm version its package-lock.json names`);
  }
}

/** A text preceded by its length in UTF-16 units, in two characters (one when it is under 0x8000). */
function sized(text: string): string {
  const length = text.length;
  return (length < 0x8000 ? String.fromCharCode(length) : String.fromCharCode(0x8000 | (length & 0x7fff), length >>> 15)) + text;
}

/** String.prototype.isWellFormed (ES2024, in every Node vidfeeds supports), which TypeScript's ES2022 library lacks. */
function isWellFormed(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}
