import type Database from 'better-sqlite3';
import { quoteIdentifier as quote } from '../db/quote-identifier.js';
import { CHUNK_PAGE, CHUNK_SPAN, ChunkStream, decodeEntries, DigestPages, encodeEntries, searchEntries, type Entry } from './digest-chunks.js';

/**
 * Where a synced table's digests are kept: `sync_digest_<table>` in vidfeeds's database, every key
 * of the table with the digest of the source row its stored row was made from, or NULL where the
 * row must be compared in full, packed a chunk of keys a row (src/sync/digest-chunks.ts). What
 * the digests mean, and when they are trusted, is src/sync/digest-table.ts's.
 */
export interface DigestStore {
  /** Whether the table exists (it may have been dropped with vidfeeds's own tables). */
  exists(): boolean;
  /** Empties it, created afresh. */
  reset(): void;
  /** The kept digest of a key: null to compare in full, undefined when the key has none. */
  find(key: readonly number[]): number | null | undefined;
  /** Sets a key's digest, or removes the key (`undefined`). */
  set(key: readonly number[], digest: number | null | undefined): void;
  /** The keys and digests in key order (each entry: the keys, then the digest). */
  pages(): DigestPages;
  /** Starts writing every key again in key order (`rewrite.keep`), ended by `rewrite.end`: keys not given are removed. */
  rewrite(): { keep(key: readonly number[], digest: number | null): void; end(): void };
  /** Writes what `set` holds back. */
  flush(): void;
  /** Something was written. */
  readonly wrote: boolean;
}

export class ChunkedDigestStore implements DigestStore {
  wrote = false;
  private readonly name: string;
  private readonly span: number;
  private stream: ChunkStream | undefined;
  /** The chunk key-by-key edits last read, written when they move to another chunk or the digests are read or saved. */
  private cached: { chunk: number; entries: Entry[]; dirty: boolean } | undefined;
  private statements: { read: Database.Statement; write: Database.Statement; remove: Database.Statement; page: Database.Statement } | undefined;

  constructor(
    private readonly target: Database.Database,
    table: string,
    /** Columns of a key and its digest. */
    private readonly width: number,
  ) {
    this.name = `sync_digest_${table}`;
    this.span = CHUNK_SPAN[(width - 1) as 1 | 2];
  }

  exists(): boolean {
    return this.target.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(this.name) !== undefined;
  }

  reset(): void {
    this.cached = undefined;
    this.target.exec(`DROP TABLE IF EXISTS ${quote(this.name)}; CREATE TABLE ${quote(this.name)} (chunk INTEGER PRIMARY KEY, entries BLOB NOT NULL)`);
    this.statements = undefined;
    this.wrote = true;
  }

  find(key: readonly number[]): number | null | undefined {
    const entries = this.readChunk(this.chunkOf(key));
    const at = searchEntries(entries, key);
    return at.found ? (entries[at.index]![key.length] as number | null) : undefined;
  }

  set(key: readonly number[], digest: number | null | undefined): void {
    const entries = this.readChunk(this.chunkOf(key));
    const at = searchEntries(entries, key);
    if (digest === undefined) {
      if (!at.found) return;
      entries.splice(at.index, 1);
    } else if (at.found) entries[at.index] = [...key, digest];
    else entries.splice(at.index, 0, [...key, digest]);
    this.cached!.dirty = true;
    this.wrote = true;
  }

  pages(): DigestPages {
    this.flush();
    return new DigestPages(this.prepared().page, this.width, (chunk, bytes) => this.stream?.old(chunk, bytes));
  }

  rewrite(): { keep(key: readonly number[], digest: number | null): void; end(): void } {
    this.flush();
    const stream = new ChunkStream(this.width, this.span, (chunk, bytes) => this.writeChunk(chunk, bytes));
    this.stream = stream;
    return {
      keep: (key, digest) => stream.keep(key, digest),
      end: () => {
        stream.end();
        this.stream = undefined;
      },
    };
  }

  flush(): void {
    const cached = this.cached;
    this.cached = undefined;
    if (cached?.dirty) this.writeChunk(cached.chunk, cached.entries.length === 0 ? null : encodeEntries(cached.entries, this.width));
  }

  private chunkOf(key: readonly number[]): number {
    return Math.floor(key[0]! / this.span);
  }

  private readChunk(chunk: number): Entry[] {
    if (this.cached?.chunk === chunk) return this.cached.entries;
    this.flush();
    const bytes = this.prepared().read.get(chunk) as Buffer | undefined;
    this.cached = { chunk, entries: bytes === undefined ? [] : decodeEntries(bytes, this.width), dirty: false };
    return this.cached.entries;
  }

  private writeChunk(chunk: number, bytes: Buffer | null): void {
    if (bytes === null) this.prepared().remove.run(chunk);
    else this.prepared().write.run(chunk, bytes);
    this.wrote = true;
  }

  private prepared() {
    const table = quote(this.name);
    return (this.statements ??= {
      read: this.target.prepare(`SELECT entries FROM ${table} WHERE chunk = ?`).pluck(),
      write: this.target.prepare(`INSERT OR REPLACE INTO ${table} (chunk, entries) VALUES (?, ?)`),
      remove: this.target.prepare(`DELETE FROM ${table} WHERE chunk = ?`),
      page: this.target.prepare(`SELECT chunk, entries FROM ${table} WHERE chunk > ? ORDER BY chunk LIMIT ${CHUNK_PAGE}`).raw(true),
    });
  }
}
