import type Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { VIDFEEDS_VERSION } from '../config/version.js';
import { SCHEMA_VERSION } from '../db/migrations.js';
import { newDigestSeed, ROW_DIGEST_METHOD, rowDigest, type DigestSeed } from './row-digest.js';
import { DIGEST_COLUMN, type RowFilter, type ServerDigests, type SyncSource } from './sync-source.js';
import type { TablePlan } from './table-plan.js';
import { quoteIdentifier as quote } from '../db/quote-identifier.js';
import { deleteMeta, readMetaJson, writeMetaJson } from '../db/site-meta.js';
import { keysLoggedSince, logPrunedSince } from '../db/sync-log.js';

/**
 * What lets a full sync tell an unchanged source row without reading vidfeeds's copy of it. Per
 * synced table, `sync_digest_<table>` holds every key of vidfeeds's table with the digest of the
 * source row (src/sync/row-digest.ts, or the server's own where the source makes them: see
 * ServerDigests in src/sync/sync-source.ts) that the stored row was last made from, or none (NULL)
 * where the row must be compared in full: stored with a value issue, a driver value the digest
 * does not read, written by something other than a sync. So a source row whose digest equals its
 * key's is unchanged, and only the others are read back and compared.
 *
 * The keys mirror vidfeeds's table. A full compare writes them again as it goes, in key order,
 * and the sync's other writes edit them key by key, all in the sync's transaction. Everything else
 * that writes the table (a hand edit, the server's recommendations, a foreign key's cascade from a
 * table synced before it) logs the row in the change log; before a sync reads the table, each
 * such row's digest becomes NULL, or its key goes when the row did.
 *
 * The entries are packed, a row of the digest table per run of keys (the first key divided by
 * CHUNK_SPAN), each a BLOB of little-endian doubles: the key's columns, then the digest (NaN for
 * NULL). Reading 16 or 24 bytes a key out of a BLOB costs a small part of what a row of SQLite's
 * costs to hand to JavaScript, and that read is what a no-change sync does for every key.
 *
 * `site_meta` key `sync.digests.<table>` says what the digests were made with (the digest method,
 * vidfeeds's version, the schema version, the mapping's query, columns and entity decoding:
 * whatever shapes a stored row from a source row, or orders the values a digest reads), their
 * seed, and the change log's position after the sync that wrote them. When it does not match, or
 * the log was pruned past that position, the digests are not trusted: a full sync compares every
 * stored row and makes them again.
 */

interface DigestState {
  plan: string;
  /** How the digests were made (ROW_DIGEST_METHOD, or a server's); absent in states of vidfeeds before XXH64. */
  method?: string;
  seed: DigestSeed;
  log: number;
}

/** Whatever changes how a row is shaped, or how digests are kept, changes this, so digests made otherwise are not trusted. */
const DIGEST_FORMAT = 2;

/** First-key values per chunk: ids are dense; a pair's first key (a user, a video, a group) has a few to a few hundred rows. */
const CHUNK_SPAN = { 1: 1024, 2: 16 } as const;

/** Chunks read at a time. */
const CHUNK_PAGE = 32;

/** A key and its digest (null: compare in full). */
type Entry = [...key: number[], digest: number | null];

export class DigestTable {
  /** Digests mirror the table's keys and can be read in place of its rows. */
  readonly trusted: boolean;
  /** Digests were written: the transaction must commit even if no row changed. */
  wrote = false;
  /** The sync's writes keep the digests (trusted, or being made by a full compare). */
  private maintained: boolean;
  private seed: DigestSeed;
  private readonly name: string;
  private readonly width: number;
  private readonly span: number;
  private readonly planId: string;
  private readonly method: string;
  private readonly state: DigestState | null;
  private stream: ChunkStream | undefined;
  /** The chunk key-by-key edits last read, written when they move to another chunk or the digests are read or saved. */
  private cached: { chunk: number; entries: Entry[]; dirty: boolean } | undefined;
  private statements: { read: Database.Statement; write: Database.Statement; remove: Database.Statement; page: Database.Statement } | undefined;

  /** `server`: the source's own digests, where it makes them (src/sync/sync-source.ts); else they are made here. */
  constructor(
    private readonly target: Database.Database,
    private readonly plan: TablePlan,
    readonly server?: ServerDigests,
  ) {
    this.name = `sync_digest_${plan.table}`;
    this.width = plan.keys.length + 1;
    this.span = CHUNK_SPAN[plan.keys.length as 1 | 2];
    this.method = server?.method ?? ROW_DIGEST_METHOD;
    this.planId = digestPlanId(plan, this.method);
    this.state = this.readState();
    this.seed = this.state?.seed ?? [0, 0];
    this.maintained = false;
    this.trusted = this.state !== null && this.state.plan === this.planId && this.sameMethod(this.state) && this.tableExists() && this.reconcile(this.state.log);
    this.maintained = this.trusted;
  }

  /**
   * Why digests kept from an earlier sync are made again by this one, when they were made with
   * another digest method (an earlier vidfeeds): a full compare then reads every stored row once.
   */
  get remade(): string | null {
    if (this.trusted || this.state === null || this.sameMethod(this.state)) return null;
    return `sync.tables.${this.plan.table}: the row digests kept from the last sync were made ${this.state.method === undefined ? "with vidfeeds's earlier 53-bit row hash" : `by ${this.state.method}`}; this sync compares every stored row once and makes them again (${this.method})`;
  }

  /**
   * The digest of a source row as it is kept here: of every value the query returns, the
   * watermark too (a row whose watermark moved is compared once), in the query's order; or the
   * one the server sent with it.
   */
  digestOf(raw: Record<string, unknown>): number | null {
    if (this.server !== undefined) return (raw[DIGEST_COLUMN] as number | undefined) ?? null;
    return rowDigest(Object.values(raw), this.seed);
  }

  /** The rows of the table's query (those `filter` picks), with their digests where the server makes them. */
  rows(source: SyncSource, filter?: RowFilter): AsyncIterable<Array<Record<string, unknown>>> {
    const { query, keys } = this.plan;
    return this.server === undefined ? source.rows(query, keys, filter) : this.server.rows(query, keys, this.seed, filter);
  }

  /** The keys of the table's query and the server's digest of each row (`server` only). */
  keysAndDigests(): AsyncIterable<Array<Record<string, unknown>>> {
    return this.server!.keys(this.plan.query, this.plan.keys, this.seed);
  }

  /**
   * Starts a full compare, which tells `keep` every key that stays, in key order, and `forget`
   * every key that goes; untrusted digests start afresh, empty, with a new seed.
   */
  beginCompare(): void {
    this.flushCached();
    if (!this.trusted) {
      this.target.exec(`DROP TABLE IF EXISTS ${quote(this.name)}; CREATE TABLE ${quote(this.name)} (chunk INTEGER PRIMARY KEY, entries BLOB NOT NULL)`);
      this.statements = undefined;
      this.seed = newDigestSeed();
      this.maintained = true;
      this.wrote = true;
    }
    this.stream = new ChunkStream(this.width, this.span, (chunk, entries) => this.writeChunk(chunk, entries));
  }

  /** Ends the full compare: the last chunks are written, and the chunks left without keys removed. */
  endCompare(): void {
    this.stream?.end();
    this.stream = undefined;
  }

  /** The keys and digests in key order, a chunk at a time (each row: the keys, then the digest). */
  pages(): DigestPages {
    this.flushCached();
    return new DigestPages(this.prepared().page, this.width, (chunk, bytes) => this.stream?.old(chunk, bytes));
  }

  /** The kept digest of a key: null to compare in full, undefined when the key has none (or digests are not kept). */
  find(key: readonly number[]): number | null | undefined {
    if (!this.maintained) return undefined;
    const entries = this.readChunk(this.chunkOf(key));
    const at = search(entries, key);
    return at.found ? entries[at.index]![key.length] as number | null : undefined;
  }

  /** The key stays in vidfeeds's table, made from a source row of `digest`; `stored` is the digest it had. */
  keep(key: readonly number[], digest: number | null, stored: number | null | undefined): void {
    if (!this.maintained) return;
    if (this.stream !== undefined) this.stream.keep(key, digest);
    else if (digest !== stored) this.edit(key, digest);
  }

  /** The key left vidfeeds's table. */
  forget(key: readonly unknown[]): void {
    if (!this.maintained || this.stream !== undefined) return;
    if (key.every((value) => typeof value === 'number')) this.edit(key as number[], undefined);
  }

  /** Keeps the digests' state for the next sync, in the transaction about to commit; `log` is the change log's position then. */
  save(log: number): void {
    this.flushCached();
    const key = `sync.digests.${this.plan.table}`;
    if (this.maintained) {
      const state: DigestState = { plan: this.planId, method: this.method, seed: this.seed, log };
      writeMetaJson(this.target, key, state);
    } else if (this.state !== null) deleteMeta(this.target, key);
  }

  /** States without a method are of vidfeeds before XXH64, whose server digests were made as now. */
  private sameMethod(state: DigestState): boolean {
    return state.method === this.method || (state.method === undefined && this.server !== undefined);
  }

  private chunkOf(key: readonly number[]): number {
    return Math.floor(key[0]! / this.span);
  }

  /** One key's entry set (`digest` undefined: removed), in its chunk. */
  private edit(key: readonly number[], digest: number | null | undefined): void {
    const entries = this.readChunk(this.chunkOf(key));
    const at = search(entries, key);
    if (digest === undefined) {
      if (!at.found) return;
      entries.splice(at.index, 1);
    } else if (at.found) entries[at.index] = [...key, digest];
    else entries.splice(at.index, 0, [...key, digest]);
    this.cached!.dirty = true;
    this.wrote = true;
  }

  private readChunk(chunk: number): Entry[] {
    if (this.cached?.chunk === chunk) return this.cached.entries;
    this.flushCached();
    const bytes = this.prepared().read.get(chunk) as Buffer | undefined;
    this.cached = { chunk, entries: bytes === undefined ? [] : decode(bytes, this.width), dirty: false };
    return this.cached.entries;
  }

  private flushCached(): void {
    const cached = this.cached;
    this.cached = undefined;
    if (cached?.dirty) this.writeChunk(cached.chunk, cached.entries.length === 0 ? null : encode(cached.entries, this.width));
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

  private readState(): DigestState | null {
    const state = readMetaJson(this.target, `sync.digests.${this.plan.table}`) as DigestState | null;
    return state !== null && typeof state.plan === 'string' && Array.isArray(state.seed) && typeof state.log === 'number' ? state : null;
  }

  private tableExists(): boolean {
    return this.target.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(this.name) !== undefined;
  }

  /**
   * The rows of the table the change log says something else wrote since `log` get a NULL digest,
   * and keys the table lost are removed; false when the log cannot say (pruned past `log`, or a
   * logged key that is not an integer).
   */
  private reconcile(log: number): boolean {
    if (logPrunedSince(this.target, log)) return false;
    const logged = keysLoggedSince(this.target, this.plan.table, this.plan.keys, log) as number[][];
    if (logged.some((key) => key.some((value) => !Number.isSafeInteger(value)))) return false;
    const exists = this.target.prepare(`SELECT 1 FROM ${quote(this.plan.table)} WHERE ${this.plan.keys.map((k) => `${quote(k)} = ?`).join(' AND ')}`);
    for (const key of logged) this.edit(key, exists.get(...key) === undefined ? undefined : null);
    return true;
  }
}

/**
 * The digest table's entries in key order, read a page of chunks at a time; `seen` hears of each
 * chunk read. `head()` returns one array, filled again by the next call: copy what must outlive it.
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
class ChunkStream {
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

function encode(entries: readonly Entry[], width: number): Buffer {
  const bytes = Buffer.allocUnsafe(entries.length * width * 8);
  let at = 0;
  for (const entry of entries) {
    for (let i = 0; i < width; i++, at += 8) bytes.writeDoubleLE((entry[i] as number | null) ?? Number.NaN, at);
  }
  return bytes;
}

function decode(bytes: Buffer, width: number): Entry[] {
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
function search(entries: readonly Entry[], key: readonly number[]): { found: boolean; index: number } {
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

function digestPlanId(plan: TablePlan, method: string): string {
  const made = [DIGEST_FORMAT, method, VIDFEEDS_VERSION, SCHEMA_VERSION, plan.table, plan.query, plan.columns, plan.watermark, [...plan.decode].sort()];
  return createHash('sha256').update(JSON.stringify(made)).digest('hex').slice(0, 32);
}
