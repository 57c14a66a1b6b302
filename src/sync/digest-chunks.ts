import type Database from 'better-sqlite3';

/**
 * The packed encoding of a table's digests (src/sync/digest-store.ts): a row of the digest table
 * per run of keys (the first key divided by the table's span), each a BLOB of little-endian
 * doubles: the key's columns, then the digest (NaN for NULL). Reading 16 or 24 bytes a key out of
 * a BLOB costs a small part of what a row of SQLite's costs to hand to JavaScript, and that read
 * is what a no-change sync does for every key.
 */

/** A key and its digest (null: compare in full). */
export type Entry = [...key: number[], digest: number | null];

/** First-key values per chunk: ids are dense; a pair's first key (a user, a video, a group) has a few to a few hundred rows. */
export const CHUNK_SPAN = { 1: 1024, 2: 16 } as const;

/** Chunks read at a time. */
export const CHUNK_PAGE = 32;

export function encodeEntries(entries: readonly Entry[], width: number): Buffer {
  const bytes = Buffer.allocUnsafe(entries.length * width * 8);
  let at = 0;
  for (const entry of entries) {
    for (let i = 0; i < width; i++, at += 8) bytes.writeDoubleLE((entry[i] as number | null) ?? Number.NaN, at);
  }
  return bytes;
}

export function decodeEntries(bytes: Buffer, width: number): Entry[] {
  const entries: Entry[] = [];
  for (let at = 0; at + width * 8 <= bytes.length; ) {
    const entry = new Array(width) as Entry;
    for (let i = 0; i < width; i++, at += 8) entry[i] = bytes.readDoubleLE(at);
    if (Number.isNaN(entry[width - 1])) entry[width - 1] = null;
    entries.push(entry);
  }
  return entries;
}

/** Where `key` is, or would go, in entries sorted by key. */
export function searchEntries(entries: readonly Entry[], key: readonly number[]): { found: boolean; index: number } {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const entry = entries[mid]!;
    let order = 0;
    for (let i = 0; i < key.length && order === 0; i++) order = (entry[i] as number) - key[i]!;
    if (order === 0) return { found: true, index: mid };
    if (order < 0) low = mid + 1;
    else high = mid;
  }
  return { found: false, index: low };
}

/**
 * The digest table's entries in key order, read a page of chunks at a time (`page`: the chunks
 * after a chunk number, CHUNK_PAGE of them); `seen` hears of each chunk read. `head()` returns one
 * array, filled again by the next call: copy what must outlive it.
 */
export class DigestPages {
  private bytes = new DataView(new ArrayBuffer(0));
  private count = 0;
  private at = 0;
  private last = -Infinity;
  private done = false;
  private readonly entry: Entry;

  constructor(
    private readonly page: Database.Statement,
    private readonly width: number,
    private readonly seen: (chunk: number, bytes: Buffer) => void,
  ) {
    this.entry = new Array(width) as Entry;
  }

  head(): Entry | undefined {
    while (this.at === this.count && !this.done) this.load();
    if (this.at === this.count) return undefined;
    const { entry, width, bytes } = this;
    const base = this.at * width * 8;
    for (let i = 0; i < width; i++) entry[i] = bytes.getFloat64(base + i * 8, true);
    if (Number.isNaN(entry[width - 1])) entry[width - 1] = null;
    return entry;
  }

  advance(): void {
    this.at++;
  }

  private load(): void {
    const rows = this.page.all(this.last) as Array<[number, Buffer]>;
    this.done = rows.length < CHUNK_PAGE;
    let length = 0;
    for (const [, bytes] of rows) length += bytes.length;
    if (this.bytes.byteLength < length) this.bytes = new DataView(new ArrayBuffer(length));
    let at = 0;
    for (const [chunk, bytes] of rows) {
      this.seen(chunk, bytes);
      new Uint8Array(this.bytes.buffer, at, bytes.length).set(bytes);
      at += bytes.length;
      this.last = chunk;
    }
    this.count = Math.floor(at / (this.width * 8));
    this.at = 0;
  }
}

/**
 * The chunks a full compare writes, from the keys that stay in key order: each chunk is written
 * when the keys move past it, and only when it differs from what was read (`old`); chunks read but
 * given no key are removed.
 */
export class ChunkStream {
  private chunk: number | undefined;
  private bytes = new DataView(new ArrayBuffer(1 << 16));
  /** Bytes of the current chunk written so far. */
  private length = 0;
  private readonly read = new Map<number, Buffer>();

  constructor(
    private readonly width: number,
    private readonly span: number,
    private readonly write: (chunk: number, bytes: Buffer | null) => void,
  ) {}

  old(chunk: number, bytes: Buffer): void {
    this.read.set(chunk, bytes);
  }

  keep(key: readonly number[], digest: number | null): void {
    const chunk = Math.floor(key[0]! / this.span);
    if (chunk !== this.chunk) {
      this.flush(chunk);
      this.chunk = chunk;
    }
    if (this.length + this.width * 8 > this.bytes.byteLength) {
      const grown = new Uint8Array(this.bytes.byteLength * 2);
      grown.set(new Uint8Array(this.bytes.buffer));
      this.bytes = new DataView(grown.buffer);
    }
    for (let i = 0; i < key.length; i++, this.length += 8) this.bytes.setFloat64(this.length, key[i]!, true);
    this.bytes.setFloat64(this.length, digest ?? Number.NaN, true);
    this.length += 8;
  }

  end(): void {
    this.flush(Infinity);
  }

  /** Writes the current chunk, and removes the chunks read before `next` that got no key. */
  private flush(next: number): void {
    if (this.chunk !== undefined) {
      const bytes = new Uint8Array(this.bytes.buffer, 0, this.length);
      const old = this.read.get(this.chunk);
      if (old === undefined || Buffer.compare(old, bytes) !== 0) this.write(this.chunk, Buffer.from(bytes));
      this.read.delete(this.chunk);
      this.length = 0;
    }
    for (const chunk of this.read.keys()) {
      if (chunk >= next) continue;
      this.write(chunk, null);
      this.read.delete(chunk);
    }
  }
}
