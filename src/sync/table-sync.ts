import { quoted } from '../config/shown-text.js';
import type { ValueIssue } from '../db/decode.js';
import type { DigestTable } from './digest-table.js';
import type { SourceRow } from './key-groups.js';
import { RowShaper, type MojibakeHook } from './row-shaper.js';
import type { ShapedValues, SkippedSourceRow } from './source-row.js';
import { sameValue, type StoredValue } from './sync-values.js';
import type { TablePlan } from './table-plan.js';
import type { Refusal, TableWriter } from './table-writer.js';

/**
 * The writes of one table's sync, which the reconcile step (src/sync/reconcile.ts) asks for: a
 * source row shaped into vidfeeds's values and written only when it differs from the stored row,
 * a key removed, a row skipped, each counted and its digest kept. A row that cannot be written is skipped and named; one that collided with a unique
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
  mojibake?: MojibakeHook;
}

interface PendingWrite {
  op: 'insert' | 'update';
  row: SourceRow;
  values: StoredValue[];
  refusal: Refusal;
}

export class TableSync {
  readonly counts: TableCounts = { inserted: 0, updated: 0, deleted: 0, unchanged: 0, skipped: 0 };
  readonly shaper: RowShaper;
  private readonly deferred: PendingWrite[] = [];

  constructor(
    readonly plan: TablePlan,
    readonly writer: TableWriter,
    readonly digests: DigestTable,
    private readonly hooks: DiffHooks,
  ) {
    this.shaper = new RowShaper(plan, hooks.mojibake);
  }

  /** The row's values as vidfeeds stores them; undefined when it cannot be stored (it is skipped and named). */
  shape(row: SourceRow): ShapedValues | undefined {
    const shaped = this.shaper.shape(row);
    if ('values' in shaped) return shaped;
    this.skip(row.name(), shaped.skipped);
    return undefined;
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
    this.digests.keep(row.key, clean ? this.digests.digestOf(row) : null, stored);
  }

  /** A row the source holds but that cannot be written is not left behind in its old form either. */
  private drop(op: 'insert' | 'update', row: SourceRow, refusal: Refusal): void {
    this.skip(row.name(), refusalReason(this.plan, refusal));
    if (op === 'update') this.remove(row.key);
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

/** Why the schema refused a row, for the operator. */
function refusalReason(plan: TablePlan, refusal: Refusal): string {
  const { table, keys } = plan;
  switch (refusal.kind) {
    case 'unique': {
      const { column, value, holder } = refusal;
      const who = holder === null ? 'another row' : `${table} ${keys.map((k, j) => `${k}=${holder[j]}`).join(', ')}`;
      return `${column} ${typeof value === 'string' ? quoted(value) : JSON.stringify(value)} is already taken by ${who} (${column} must be unique)`;
    }
    case 'reference':
      return `${refusal.column} ${refusal.value}: no ${refusal.parent} row has that id (not in the source, or skipped)`;
    case 'constraint':
      return refusal.reference ? `a row it refers to is missing: ${refusal.message}` : `vidfeeds's schema refuses it: ${refusal.message}`;
  }
}
