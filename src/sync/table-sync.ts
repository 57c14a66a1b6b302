import type { ValueIssue } from '../db/decode.js';
import type { DigestTable } from './digest-table.js';
import { segmentProblem } from '../paths/names.js';
import { looksLikeMojibake } from './mojibake.js';
import { keyProblem, rowName, shapeRow, type ShapedValues, type SkippedSourceRow } from './source-row.js';
import { MappingError } from './sync-errors.js';
import { normaliseValue, sameValue, WRONG, type StoredValue } from './sync-values.js';
import type { TablePlan } from './table-plan.js';
import type { Refusal, TableWriter } from './table-writer.js';

/**
 * What every way of syncing a table shares: the source's rows shaped into vidfeeds's values, in
 * key order, each then written only when it differs from the stored row, with the counts of what
 * was done. A row that cannot be written is skipped and named; one that collided with a unique
 * name another row held is tried again at the end, since that row may have moved meanwhile.
 */

export interface TableCounts {
  inserted: number;
  updated: number;
  deleted: number;
  unchanged: number;
  skipped: number;
}

export interface DiffHooks {
  skipped(row: SkippedSourceRow): void;
  issue(issue: ValueIssue): void;
  /** Throws when the sync must stop (a signal); called between rows. */
  checkStop(): void;
  /** A text value that looks like UTF-8 read as latin1 (src/sync/mojibake.ts). */
  mojibake?(table: string, column: string, row: string, found: string): void;
}

/** A source row as the driver gave it, with its key as vidfeeds stores it. */
export interface SourceRow {
  raw: Record<string, unknown>;
  key: number[];
  /** The row's name for messages, made when one needs it. */
  name: () => string;
}

interface PendingWrite {
  op: 'insert' | 'update';
  row: SourceRow;
  values: StoredValue[];
  refusal: Refusal;
}

/**
 * Rows of one key held to choose the one kept (see forEachRow). More is not a duplicate but a key
 * that is not the table's: the sync stops, rather than hold the table in memory.
 */
export const MAX_ROWS_OF_ONE_KEY = 10_000;

export class TableSync {
  readonly counts: TableCounts = { inserted: 0, updated: 0, deleted: 0, unchanged: 0, skipped: 0 };
  private readonly deferred: PendingWrite[] = [];
  private readonly keyCount: number;
  /** Where a users row holds its username, which must be able to be a path; -1 in other tables. */
  private readonly username: number;

  constructor(
    readonly plan: TablePlan,
    readonly writer: TableWriter,
    readonly digests: DigestTable,
    private readonly hooks: DiffHooks,
  ) {
    this.keyCount = plan.keys.length;
    this.username = plan.table === 'users' ? plan.columns.indexOf('username') : -1;
  }

  /**
   * Calls `each` with every row of `rows` whose key can be stored, in key order; `each` answers
   * whether it took the row. A row with a key that cannot be stored is skipped and named (to
   * `skip`, by default `this.skip`). Rows of one key are offered in the order of their values
   * until one is taken, and the others are skipped and named with the key they share: a source
   * returns such rows in any order, and the row kept must not change from one sync to the next.
   * Keys out of numeric order stop the sync: the merges rely on them.
   */
  async forEachRow(
    batches: AsyncIterable<Array<Record<string, unknown>>>,
    each: (row: SourceRow) => boolean,
    skip: (name: string, reason: string, sameKeyAs?: readonly number[]) => void = (name, reason) => this.skip(name, reason),
  ): Promise<void> {
    const { plan, keyCount } = this;
    const specs = plan.specs;
    /** The rows of the last key read, offered once a row of another key (or the end) shows there are no more. */
    let group: SourceRow[] = [];
    const offer = () => {
      if (group.length > 1) {
        // Each row's text made once, not once per comparison (a group may hold thousands).
        const texts = new Map(group.map((row) => [row, rowText(row.raw)]));
        group.sort((a, b) => compareText(texts.get(a)!, texts.get(b)!));
      }
      const taken = group.find((row) => each(row));
      for (const row of group) {
        if (row !== taken && taken !== undefined) skip(row.name(), `another row of the query has the same key (${plan.keys.join(', ')}); the one kept comes first by its values`, taken.key);
      }
      group = [];
    };
    for await (const rows of batches) {
      this.hooks.checkStop();
      for (const raw of rows) {
        // Most rows are unchanged and never named: the name is made when a message needs it.
        let named: string | undefined;
        const name = () => (named ??= rowName(plan, raw));
        const key: number[] = new Array(keyCount);
        for (let i = 0; i < keyCount; i++) key[i] = normaliseValue(specs[i]!, raw[plan.keys[i]!]) as number;
        const wrong = key.findIndex((value) => (value as unknown) === WRONG || value === null);
        if (wrong >= 0) {
          skip(name(), keyProblem(plan, wrong, raw));
          continue;
        }
        const order = group.length === 0 ? 1 : compareKeys(key, group[0]!.key, keyCount);
        if (order < 0) {
          throw new MappingError(
            `sync.tables.${plan.table}: the source returns the key (${plan.keys.join(', ')}) out of numeric order (${name()} after ${group[0]!.key.join(', ')}): return it as an integer (CAST it in the query)`,
          );
        }
        if (order > 0) offer();
        if (group.length >= MAX_ROWS_OF_ONE_KEY) {
          throw new MappingError(
            `sync.tables.${plan.table}: the source returns more than ${MAX_ROWS_OF_ONE_KEY} rows with the key (${plan.keys.join(', ')}) ${key.join(', ')}: the key must name one row (is it the table's key?)`,
          );
        }
        group.push({ raw, key, name });
      }
    }
    offer();
  }

  /** The row's values as vidfeeds stores them; undefined when it cannot be stored (it is skipped and named). */
  shape(row: SourceRow): ShapedValues | undefined {
    const shaped = shapeRow(this.plan, row.raw, row.name);
    if (!('skipped' in shaped)) {
      if (this.hooks.mojibake !== undefined) this.checkText(row, shaped.values);
      const unpublishable = this.unpublishableName(shaped.values);
      if (unpublishable === null) return shaped;
      this.skip(row.name(), unpublishable);
      return undefined;
    }
    this.skip(row.name(), shaped.skipped);
    return undefined;
  }

  /**
   * A user whose name cannot be a path has no documents of their own; stored, their videos and
   * their friends' links to them would be published, pointing at pages that do not exist. Such a
   * user is not stored, so that everything of theirs follows the same rule (docs/adopting.md).
   */
  private unpublishableName(values: readonly unknown[]): string | null {
    const name = this.username < 0 ? undefined : values[this.username];
    const problem = typeof name === 'string' ? segmentProblem(name, () => false) : null;
    return problem === null ? null : `username ${JSON.stringify(name)} cannot be a path (it ${problem}): the user is not published, nor their videos or links to them`;
  }

  /** Names each text the source gave that looks like UTF-8 read as latin1. */
  private checkText(row: SourceRow, values: readonly unknown[]): void {
    for (let i = this.keyCount; i < values.length; i++) {
      const value = values[i];
      if (typeof value === 'string' && typeof row.raw[this.plan.columns[i]!] === 'string' && looksLikeMojibake(value)) {
        this.hooks.mojibake!(this.plan.table, this.plan.columns[i]!, row.name(), value);
      }
    }
  }

  /** Throws when the sync must stop (a signal). */
  checkStop(): void {
    this.hooks.checkStop();
  }

  /** A row whose digest shows it unchanged. */
  unchanged(key: readonly number[], digest: number): void {
    this.counts.unchanged++;
    this.digests.keep(key, digest, digest);
  }

  /**
   * Brings the stored row (`stored`; none: the key is new) to the shaped row, writing only when a
   * value differs; `digest` is the key's stored digest (undefined: none).
   */
  apply(row: SourceRow, shaped: ShapedValues, stored: readonly unknown[] | undefined, digest: number | null | undefined): void {
    const { values, issues } = shaped;
    if (stored !== undefined && values.every((v, i) => sameValue(stored[i], v))) {
      this.counts.unchanged++;
      for (const issue of issues) this.hooks.issue(issue);
      this.keepDigest(row, issues.length === 0, digest);
      return;
    }
    const op = stored === undefined ? 'insert' : 'update';
    const outcome = this.writer.write(op, values, stored);
    for (const issue of issues) this.hooks.issue(issue);
    for (const issue of outcome.issues) this.hooks.issue({ ...issue, row: row.name() });
    if (outcome.ok) {
      this.counts[outcome.unchanged ? 'unchanged' : op === 'insert' ? 'inserted' : 'updated']++;
      this.keepDigest(row, issues.length === 0 && outcome.issues.length === 0, digest);
      return;
    }
    if (outcome.refusal.kind === 'unique') this.deferred.push({ op, row, values, refusal: outcome.refusal });
    else this.drop(op, row, outcome.refusal);
  }

  remove(key: readonly unknown[]): void {
    if (this.writer.remove(key)) this.counts.deleted++;
    this.digests.forget(key);
  }

  skip(name: string, reason: string): void {
    this.counts.skipped++;
    this.hooks.skipped({ table: this.plan.table, row: name, reason });
  }

  /**
   * The writes that collided with a unique name another row held: that row may have moved since.
   * One pass, last key first, clears a run of rows each taking the name of the row after it (the
   * merge wrote that row later). The rows still waiting are then moved aside to names no one
   * holds, which frees every name they held (a swap, a cycle, runs in any order), and tried again
   * until no write succeeds: a few passes, however many rows wait.
   */
  finish(): TableCounts {
    this.deferred.reverse();
    this.retryDeferred(1);
    if (this.deferred.some((pending) => pending.op === 'update')) {
      for (const { op, values, refusal } of this.deferred) if (op === 'update' && refusal.kind === 'unique') this.writer.moveAside(values, refusal.column);
      this.retryDeferred();
    }
    // Named in key order.
    for (const pending of this.deferred.reverse()) this.drop(pending.op, pending.row, pending.refusal);
    return this.counts;
  }

  /** The digest of the source row a stored row now equals; NULL (compare in full) when it was stored with an issue. */
  private keepDigest(row: SourceRow, clean: boolean, stored: number | null | undefined): void {
    this.digests.keep(row.key, clean ? this.digests.digestOf(row.raw) : null, stored);
  }

  /** A row the source holds but that cannot be written is not left behind in its old form either. */
  private drop(op: 'insert' | 'update', row: SourceRow, refusal: Refusal): void {
    this.skip(row.name(), this.refusalReason(refusal));
    if (op === 'update') this.remove(row.key);
  }

  /** Why the schema refused a row, for the operator. */
  private refusalReason(refusal: Refusal): string {
    const { table, keys } = this.plan;
    switch (refusal.kind) {
      case 'unique': {
        const { column, value, holder } = refusal;
        const who = holder === null ? 'another row' : `${table} ${keys.map((k, j) => `${k}=${holder[j]}`).join(', ')}`;
        return `${column} ${JSON.stringify(value)} is already taken by ${who} (${column} must be unique)`;
      }
      case 'reference':
        return `${refusal.column} ${refusal.value}: no ${refusal.parent} row has that id (not in the source, or skipped)`;
      case 'constraint':
        return refusal.reference ? `a row it refers to is missing: ${refusal.message}` : `vidfeeds's schema refuses it: ${refusal.message}`;
    }
  }

  private retryDeferred(passes = Infinity): void {
    for (let progress = true; this.deferred.length > 0 && progress && passes-- > 0; ) {
      progress = false;
      for (const pending of this.deferred.splice(0)) {
        const outcome = this.writer.write(pending.op, pending.values);
        if (outcome.ok) {
          for (const issue of outcome.issues) this.hooks.issue({ ...issue, row: pending.row.name() });
          this.counts[pending.op === 'insert' ? 'inserted' : 'updated']++;
          this.keepDigest(pending.row, outcome.issues.length === 0, this.digests.find(pending.row.key));
          progress = true;
        } else this.deferred.push({ ...pending, refusal: outcome.refusal });
      }
    }
  }
}

/** Keys compare as numbers; a stored key of another type (from before the type checks) sorts after them, as SQLite sorts it. */
export function compareKeys(a: readonly unknown[], b: readonly unknown[], count: number): number {
  for (let i = 0; i < count; i++) {
    const x = a[i];
    const y = b[i];
    if (x === y) continue;
    const xn = typeof x === 'number';
    const yn = typeof y === 'number';
    if (xn && yn) return (x as number) < (y as number) ? -1 : 1;
    if (xn !== yn) return xn ? -1 : 1;
    return String(x) < String(y) ? -1 : 1;
  }
  return 0;
}

/**
 * A row's values as one text that orders rows the same way on every sync: each value with its
 * type, in the query's column order. Only rows of one key are compared, which is rare.
 */
function rowText(raw: Record<string, unknown>): string {
  let text = '';
  for (const value of Object.values(raw)) {
    if (value === null || value === undefined) text += '\u0000null';
    else if (value instanceof Uint8Array) text += `\u0000bytes ${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}`;
    else if (value instanceof Date) text += `\u0000date ${value.getTime()}`;
    else if (typeof value === 'object') text += `\u0000json ${JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}`;
    else text += `\u0000${typeof value} ${String(value)}`;
  }
  return text;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
