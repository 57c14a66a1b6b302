import type { ValueIssue } from '../db/decode.js';
import { rowName, shapeRow, type SkippedSourceRow } from './source-row.js';
import { MappingError } from './sync-errors.js';
import { sameValue, type StoredValue } from './sync-values.js';
import type { TablePlan } from './table-plan.js';
import type { TableWriter } from './table-writer.js';

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
}

interface PendingWrite {
  op: 'insert' | 'update';
  values: StoredValue[];
  name: string;
  error: string;
}

export class TableSync {
  readonly counts: TableCounts = { inserted: 0, updated: 0, deleted: 0, unchanged: 0, skipped: 0 };
  private readonly deferred: PendingWrite[] = [];
  private readonly keyCount: number;

  constructor(
    readonly plan: TablePlan,
    readonly writer: TableWriter,
    private readonly hooks: DiffHooks,
  ) {
    this.keyCount = plan.keys.length;
  }

  /**
   * Calls `each` with every row of `rows` that can be stored, shaped, in key order; the others
   * are skipped and named, and `unfit` hears of those skipped for their values (not for a
   * duplicate key). Keys out of numeric order stop the sync: the merge relies on them.
   */
  async forEachRow(
    batches: AsyncIterable<Array<Record<string, unknown>>>,
    each: (values: StoredValue[], issues: ValueIssue[], name: () => string) => void,
    unfit?: (raw: Record<string, unknown>) => void,
  ): Promise<void> {
    let previous: StoredValue[] | undefined;
    for await (const rows of batches) {
      this.hooks.checkStop();
      for (const raw of rows) previous = this.takeRow(raw, previous, each, unfit);
    }
  }

  /** One row for forEachRow: shaped and handed to `each`, or skipped; returns the key the next row must follow. */
  private takeRow(
    raw: Record<string, unknown>,
    previous: StoredValue[] | undefined,
    each: (values: StoredValue[], issues: ValueIssue[], name: () => string) => void,
    unfit: ((raw: Record<string, unknown>) => void) | undefined,
  ): StoredValue[] | undefined {
    const { plan, keyCount } = this;
    // Most rows are unchanged and never named: the name is made when a message needs it.
    let named: string | undefined;
    const name = () => (named ??= rowName(plan, raw));
    const shaped = shapeRow(plan, raw, name);
    if ('skipped' in shaped) {
      this.skip(name(), shaped.skipped);
      unfit?.(raw);
      return previous;
    }
    if (previous !== undefined) {
      const order = compareKeys(shaped.values, previous, keyCount);
      if (order === 0) {
        this.skip(name(), `another row of the query has the same key (${plan.keys.join(', ')}): the first one is kept`);
        return previous;
      }
      if (order < 0) {
        throw new MappingError(
          `sync.tables.${plan.table}: the source returns the key (${plan.keys.join(', ')}) out of numeric order (${name()} after ${previous.slice(0, keyCount).join(', ')}): return it as an integer (CAST it in the query)`,
        );
      }
    }
    each(shaped.values, shaped.issues, name);
    return shaped.values;
  }

  /** Brings the stored row (`stored`; none: the key is new) to `values`, writing only when a value differs. */
  apply(values: StoredValue[], issues: ValueIssue[], name: () => string, stored: readonly unknown[] | undefined): void {
    if (stored !== undefined && values.every((v, i) => sameValue(stored[i], v))) {
      this.counts.unchanged++;
      for (const issue of issues) this.hooks.issue(issue);
      return;
    }
    const op = stored === undefined ? 'insert' : 'update';
    const outcome = this.writer.write(op, values, stored);
    for (const issue of issues) this.hooks.issue(issue);
    for (const issue of outcome.issues) this.hooks.issue({ ...issue, row: name() });
    if (outcome.ok) {
      this.counts[outcome.unchanged ? 'unchanged' : op === 'insert' ? 'inserted' : 'updated']++;
      return;
    }
    if (outcome.unique) this.deferred.push({ op, values, name: name(), error: outcome.reason });
    else this.drop(op, values, name(), outcome.reason);
  }

  remove(key: unknown[]): void {
    this.writer.remove(key);
    this.counts.deleted++;
  }

  skip(name: string, reason: string): void {
    this.counts.skipped++;
    this.hooks.skipped({ table: this.plan.table, row: name, reason });
  }

  /**
   * The writes that collided with a unique name another row held: that row may have moved since.
   * Rows that hold each other's names (a swap) are first moved aside to a name no one holds.
   */
  finish(): TableCounts {
    this.retryDeferred();
    if (this.deferred.some((pending) => pending.op === 'update')) {
      for (const pending of this.deferred) if (pending.op === 'update') this.writer.moveAside(pending.values, pending.error);
      this.retryDeferred();
    }
    for (const pending of this.deferred) this.drop(pending.op, pending.values, pending.name, pending.error);
    return this.counts;
  }

  /** A row the source holds but that cannot be written is not left behind in its old form either. */
  private drop(op: 'insert' | 'update', values: StoredValue[], name: string, reason: string): void {
    this.skip(name, reason);
    if (op === 'update') this.remove(values.slice(0, this.keyCount));
  }

  private retryDeferred(): void {
    for (let progress = true; this.deferred.length > 0 && progress; ) {
      progress = false;
      for (const pending of this.deferred.splice(0)) {
        const outcome = this.writer.write(pending.op, pending.values);
        if (outcome.ok) {
          for (const issue of outcome.issues) this.hooks.issue({ ...issue, row: pending.name });
          this.counts[pending.op === 'insert' ? 'inserted' : 'updated']++;
          progress = true;
        } else this.deferred.push({ ...pending, error: outcome.reason });
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
