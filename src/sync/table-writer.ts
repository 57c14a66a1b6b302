import Database from 'better-sqlite3';
import type { ValueIssue } from '../db/decode.js';
import { quoteIdentifier as quote } from '../db/quote-identifier.js';
import { sameValue, type StoredValue } from './sync-values.js';
import type { TablePlan } from './table-plan.js';

/**
 * The prepared writes of one vidfeeds table during a sync, and what a write the schema refuses
 * means, as data (TableSync words it): a unique name another row holds, a reference to a row that
 * is missing (cleared when optional), any other constraint.
 */

/** Why vidfeeds's schema refuses a write. */
export type Refusal =
  /** `value` of unique `column` is held by the row of key `holder` (null: not found). */
  | { kind: 'unique'; column: string; value: StoredValue; holder: readonly unknown[] | null }
  /** `value` of `column` names no row of `parent`. */
  | { kind: 'reference'; column: string; value: StoredValue; parent: string }
  /** Another constraint, in SQLite's words (a reference that could not be told: `reference` true). */
  | { kind: 'constraint'; message: string; reference: boolean };

export type WriteOutcome = { ok: true; unchanged: boolean; issues: ValueIssue[] } | { ok: false; refusal: Refusal; issues: ValueIssue[] };

export class TableWriter {
  private readonly insert: Database.Statement;
  /** UPDATEs by the columns they set (`updateOf`). */
  private readonly updates = new Map<string, Database.Statement>();
  private readonly delete: Database.Statement;
  private readonly keyCount: number;
  /** The statements that move a row aside, by column. */
  private readonly moves = new Map<string, Database.Statement>();
  private select: Database.Statement | undefined;

  constructor(
    private readonly target: Database.Database,
    private readonly plan: TablePlan,
  ) {
    const table = quote(plan.table);
    const where = plan.keys.map((k) => `${quote(k)} = ?`).join(' AND ');
    this.keyCount = plan.keys.length;
    this.insert = target.prepare(`INSERT INTO ${table} (${plan.columns.map(quote).join(', ')}) VALUES (${plan.columns.map(() => '?').join(', ')})`);
    this.delete = target.prepare(`DELETE FROM ${table} WHERE ${where}`);
  }

  /** The stored row of a key (its columns in `plan.columns` order), if there is one. */
  find(key: readonly unknown[]): unknown[] | undefined {
    this.select ??= this.target.prepare(`SELECT ${this.plan.columns.map(quote).join(', ')} FROM ${quote(this.plan.table)} WHERE ${this.plan.keys.map((k) => `${quote(k)} = ?`).join(' AND ')}`).raw(true);
    return this.select.get(...key) as unknown[] | undefined;
  }

  /** Deletes the row of a key; false when there was none. */
  remove(key: readonly unknown[]): boolean {
    return this.delete.run(...key).changes > 0;
  }

  /** Gives the stored row of `values` a name no other row holds in unique `column`, which a write of them collided on. */
  moveAside(values: StoredValue[], column: string): void {
    const key = values.slice(0, this.keyCount);
    let move = this.moves.get(column);
    if (move === undefined) {
      const where = this.plan.keys.map((k) => `${quote(k)} = ?`).join(' AND ');
      move = this.target.prepare(`UPDATE ${quote(this.plan.table)} SET ${quote(column)} = ? WHERE ${where}`);
      this.moves.set(column, move);
    }
    move.run(`vidfeeds sync: moving ${this.plan.table} ${key.join(',')}`, ...key);
  }

  /** Writes the row; `stored` is the row an update replaces, which the row may turn out to equal once a reference to a missing row is cleared. */
  write(op: 'insert' | 'update', values: StoredValue[], stored?: readonly unknown[]): WriteOutcome {
    const issues: ValueIssue[] = [];
    for (;;) {
      if (issues.length > 0 && stored !== undefined && values.every((v, i) => sameValue(stored[i], v))) return { ok: true, unchanged: true, issues };
      try {
        if (op === 'insert') this.insert.run(...values);
        else this.updateOf(values, stored);
        return { ok: true, unchanged: false, issues };
      } catch (error) {
        if (!(error instanceof Database.SqliteError)) throw error;
        if (error.code === 'SQLITE_CONSTRAINT_UNIQUE') return { ok: false, refusal: this.uniqueHolder(error.message, values), issues };
        if (error.code !== 'SQLITE_CONSTRAINT_FOREIGNKEY') {
          if (error.code.startsWith('SQLITE_CONSTRAINT')) return { ok: false, refusal: { kind: 'constraint', message: error.message, reference: false }, issues };
          throw error;
        }
        const missing = this.missingReferences(values);
        const required = missing.find((i) => !this.plan.specs[i]!.nullable);
        if (required !== undefined || missing.length === 0) {
          const column = required === undefined ? undefined : this.plan.columns[required]!;
          const refusal: Refusal =
            column === undefined
              ? { kind: 'constraint', message: error.message, reference: true }
              : { kind: 'reference', column, value: values[required!]!, parent: this.plan.references.get(column)! };
          return { ok: false, refusal, issues };
        }
        // An optional reference to a row that is gone is cleared, as the schema's ON DELETE SET NULL would.
        for (const i of missing) {
          issues.push({ table: this.plan.table, row: '', column: this.plan.columns[i]!, found: `${values[i]}`, expected: `the id of a ${this.plan.references.get(this.plan.columns[i]!)} row or NULL`, rule: 'omit', outcome: 'stored as NULL (no such row)' });
          values[i] = null;
        }
      }
    }
  }

  /**
   * Updates the columns whose values differ from `stored` (every column when the stored row is not
   * known, as on a retry after rows were moved aside): SQLite leaves alone the indexes and the
   * references of the columns it does not set, so a title edit costs a third of an update of every
   * column (docs/performance.md, "vidfeeds sync").
   */
  private updateOf(values: StoredValue[], stored: readonly unknown[] | undefined): void {
    const changed: number[] = [];
    for (let i = this.keyCount; i < values.length; i++) if (stored === undefined || !sameValue(stored[i], values[i]!)) changed.push(i);
    // Never so (`write` returns before an update that changes nothing), but an empty SET is no statement.
    if (changed.length === 0) return;
    const signature = changed.join(',');
    let update = this.updates.get(signature);
    if (update === undefined) {
      const set = changed.map((i) => `${quote(this.plan.columns[i]!)} = ?`).join(', ');
      update = this.target.prepare(`UPDATE ${quote(this.plan.table)} SET ${set} WHERE ${this.plan.keys.map((k) => `${quote(k)} = ?`).join(' AND ')}`);
      this.updates.set(signature, update);
    }
    update.run(...changed.map((i) => values[i]), ...values.slice(0, this.keyCount));
  }

  private missingReferences(values: StoredValue[]): number[] {
    const missing: number[] = [];
    this.plan.columns.forEach((column, i) => {
      const parent = this.plan.references.get(column);
      if (parent === undefined || values[i] === null) return;
      if (this.target.prepare(`SELECT 1 FROM ${quote(parent)} WHERE id = ?`).get(values[i]) === undefined) missing.push(i);
    });
    return missing;
  }

  /** Which row holds the value of the unique column SQLite names in `message`. */
  private uniqueHolder(message: string, values: StoredValue[]): Refusal {
    const column = /UNIQUE constraint failed: \w+\.(\w+)/.exec(message)?.[1];
    const i = column === undefined ? -1 : this.plan.columns.indexOf(column);
    if (i < 0) return { kind: 'constraint', message, reference: false };
    const holder = this.target.prepare(`SELECT ${this.plan.keys.map(quote).join(', ')} FROM ${quote(this.plan.table)} WHERE ${quote(column!)} = ?`).raw(true).get(values[i]) as unknown[] | undefined;
    return { kind: 'unique', column: column!, value: values[i]!, holder: holder ?? null };
  }
}
