import type Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { VIDFEEDS_VERSION } from '../config/version.js';
import { SCHEMA_VERSION } from '../db/migrations.js';
import { quoteIdentifier as quote } from '../db/quote-identifier.js';
import { deleteMeta, readMetaJson, writeMetaJson } from '../db/site-meta.js';
import { keysLoggedSince, logPrunedSince } from '../db/sync-log.js';
import type { DigestPages } from './digest-chunks.js';
import { ChunkedDigestStore, type DigestStore } from './digest-store.js';
import { newDigestSeed, ROW_DIGEST_METHOD, rowDigest, type DigestSeed } from './row-digest.js';
import type { SourceRow } from './key-groups.js';
import { DIGEST_COLUMN, type RowBatch, type RowFilter, type SourceDigests, type SyncSource } from './sync-source.js';
import type { TablePlan } from './table-plan.js';

/**
 * What lets a full sync tell an unchanged source row without reading vidfeeds's copy of it. Per
 * synced table, `sync_digest_<table>` holds every key of vidfeeds's table with the digest of the
 * source row (src/sync/row-digest.ts, or the source's own where it makes them: see SourceDigests
 * in src/sync/sync-source.ts) that the stored row was last made from, or none (NULL)
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
 * The digests are kept behind DigestStore (src/sync/digest-store.ts), packed a chunk of keys to a
 * BLOB (src/sync/digest-chunks.ts); this class says what they mean and when they are trusted.
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
  /** How the digests were made (ROW_DIGEST_METHOD, or a source's); absent in states of vidfeeds before XXH64. */
  method?: string;
  seed: DigestSeed;
  log: number;
}

/** Whatever changes how a row is shaped, or how digests are kept, changes this, so digests made otherwise are not trusted. */
const DIGEST_FORMAT = 2;

export class DigestTable {
  /** Digests mirror the table's keys and can be read in place of its rows. */
  readonly trusted: boolean;
  /** The sync's writes keep the digests (trusted, or being made by a full compare). */
  private maintained: boolean;
  private seed: DigestSeed;
  private readonly store: DigestStore;
  private readonly planId: string;
  private readonly method: string;
  private readonly state: DigestState | null;
  private rewrite: ReturnType<DigestStore['rewrite']> | undefined;

  /** `source`: the source's own digests, where it makes them (src/sync/sync-source.ts); else they are made here. */
  constructor(
    private readonly target: Database.Database,
    private readonly plan: TablePlan,
    private readonly source?: SourceDigests,
  ) {
    this.store = new ChunkedDigestStore(target, plan.table, plan.keys.length + 1);
    this.method = source?.method ?? ROW_DIGEST_METHOD;
    this.planId = digestPlanId(plan, this.method);
    this.state = readState(target, plan.table);
    this.seed = this.state?.seed ?? [0, 0];
    this.trusted = this.state !== null && this.state.plan === this.planId && madeAlike(this.state, this.method, this.keyed) && this.store.exists() && followChangeLog(target, plan, this.store, this.state.log);
    this.maintained = this.trusted;
  }

  /** The source gives keys and digests without the rest of the rows (the server makes the digests). */
  get keyed(): boolean {
    return this.source?.keys !== undefined;
  }

  /** Digests were written: the transaction must commit even if no row changed. */
  get wrote(): boolean {
    return this.store.wrote;
  }

  /**
   * Why digests kept from an earlier sync are made again by this one, when they were made with
   * another digest method (an earlier vidfeeds): a full compare then reads every stored row once.
   */
  get remade(): string | null {
    if (this.trusted || this.state === null || madeAlike(this.state, this.method, this.keyed)) return null;
    return `sync.tables.${this.plan.table}: the row digests kept from the last sync were made ${this.state.method === undefined ? "with vidfeeds's earlier 53-bit row hash" : `by ${this.state.method}`}; this sync compares every stored row once and makes them again (${this.method})`;
  }

  /**
   * The digest of a source row as it is kept here: of every value the query returns, the
   * watermark too (a row whose watermark moved is compared once), in the query's order; or the
   * one the source made: handed over beside the row by the driver, or sent in it by the server.
   */
  digestOf(row: SourceRow): number | null {
    if (row.digest !== undefined) return row.digest;
    if (this.source !== undefined) return (row.raw[DIGEST_COLUMN] as number | null | undefined) ?? null;
    return rowDigest(Object.values(row.raw), this.seed);
  }

  /** The rows of the table's query (those `filter` picks), with their digests where the source makes them. */
  rows(source: SyncSource, filter?: RowFilter): AsyncIterable<RowBatch> {
    const { query, keys } = this.plan;
    return this.source === undefined ? source.rows(query, keys, filter) : this.source.rows(query, keys, this.seed, filter);
  }

  /** The keys of the table's query and the server's digest of each row (`keyed` only). */
  keysAndDigests(): AsyncIterable<Array<Record<string, unknown>>> {
    return this.source!.keys!(this.plan.query, this.plan.keys, this.seed);
  }

  /**
   * Starts a full compare, which tells `keep` every key that stays, in key order, and `forget`
   * every key that goes; untrusted digests start afresh, empty, with a new seed.
   */
  beginCompare(): void {
    this.store.flush();
    if (!this.trusted) {
      this.store.reset();
      this.seed = newDigestSeed();
      this.maintained = true;
    }
    this.rewrite = this.store.rewrite();
  }

  /** Ends the full compare: the last chunks are written, and the chunks left without keys removed. */
  endCompare(): void {
    this.rewrite?.end();
    this.rewrite = undefined;
  }

  /** The keys and digests in key order, a chunk at a time (each row: the keys, then the digest). */
  pages(): DigestPages {
    return this.store.pages();
  }

  /** The kept digest of a key: null to compare in full, undefined when the key has none (or digests are not kept). */
  find(key: readonly number[]): number | null | undefined {
    return this.maintained ? this.store.find(key) : undefined;
  }

  /** The key stays in vidfeeds's table, made from a source row of `digest`; `stored` is the digest it had. */
  keep(key: readonly number[], digest: number | null, stored: number | null | undefined): void {
    if (!this.maintained) return;
    if (this.rewrite !== undefined) this.rewrite.keep(key, digest);
    else if (digest !== stored) this.store.set(key, digest);
  }

  /** The key left vidfeeds's table. */
  forget(key: readonly unknown[]): void {
    if (!this.maintained || this.rewrite !== undefined) return;
    if (key.every((value) => typeof value === 'number')) this.store.set(key as number[], undefined);
  }

  /** Keeps the digests' state for the next sync, in the transaction about to commit; `log` is the change log's position then. */
  save(log: number): void {
    this.store.flush();
    const key = `sync.digests.${this.plan.table}`;
    if (this.maintained) writeMetaJson(this.target, key, { plan: this.planId, method: this.method, seed: this.seed, log } satisfies DigestState);
    else if (this.state !== null) deleteMeta(this.target, key);
  }
}

/** States without a method are of vidfeeds before XXH64, whose server digests (PostgreSQL's, `keyed`) were made as now. */
function madeAlike(state: DigestState, method: string, keyed: boolean): boolean {
  return state.method === method || (state.method === undefined && keyed);
}

function readState(target: Database.Database, table: string): DigestState | null {
  const state = readMetaJson(target, `sync.digests.${table}`) as DigestState | null;
  return state !== null && typeof state.plan === 'string' && Array.isArray(state.seed) && typeof state.log === 'number' ? state : null;
}

/**
 * The rows of the table the change log says something else wrote since `log` get a NULL digest,
 * and keys the table lost are removed; false when the log cannot say (pruned past `log`, or a
 * logged key that is not an integer).
 */
function followChangeLog(target: Database.Database, plan: TablePlan, store: DigestStore, log: number): boolean {
  if (logPrunedSince(target, log)) return false;
  const logged = keysLoggedSince(target, plan.table, plan.keys, log) as number[][];
  if (logged.some((key) => key.some((value) => !Number.isSafeInteger(value)))) return false;
  const exists = target.prepare(`SELECT 1 FROM ${quote(plan.table)} WHERE ${plan.keys.map((k) => `${quote(k)} = ?`).join(' AND ')}`);
  for (const key of logged) store.set(key, exists.get(...key) === undefined ? undefined : null);
  return true;
}

function digestPlanId(plan: TablePlan, method: string): string {
  const made = [DIGEST_FORMAT, method, VIDFEEDS_VERSION, SCHEMA_VERSION, plan.table, plan.query, plan.columns, plan.watermark, [...plan.decode].sort()];
  return createHash('sha256').update(JSON.stringify(made)).digest('hex').slice(0, 32);
}
