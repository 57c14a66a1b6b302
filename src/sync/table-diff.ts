import Database from 'better-sqlite3';
import type { ValueIssue } from '../db/decode.js';
import { rowName, shapeRow, type SkippedSourceRow } from './source-row.js';
import { MappingError } from './sync-errors.js';
import type { SyncSource } from './sync-source.js';
import { sameValue, type StoredValue } from './sync-values.js';
import type { TablePlan } from './table-plan.js';

/**
 * One table brought to the source's rows: a merge of two streams in key order, the source's query
 * and vidfeeds's table (read in pages by key, so neither side is ever whole in memory). A key only
 * in the source is inserted, a key only in vidfeeds's table deleted, a key in both updated only
 * when a normalised value differs. So the change log, which triggers fill on every write, records
 * exactly the rows that changed.
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

/** Rows of vidfeeds's table read at a time. */
const PAGE = 2000;

interface PendingWrite {
  op: 'insert' | 'update';
  values: StoredValue[];
  name: string;
  error: string;
}

export async function syncTable(target: Database.Database, source: SyncSource, plan: TablePlan, hooks: DiffHooks): Promise<TableCounts> {
  const counts: TableCounts = { inserted: 0, updated: 0, deleted: 0, unchanged: 0, skipped: 0 };
  const writer = new TableWriter(target, plan);
  const pages = new TargetPages(target, plan);
  const keyCount = plan.keys.length;
  const deferred: PendingWrite[] = [];
  const skip = (name: string, reason: string) => {
    counts.skipped++;
    hooks.skipped({ table: plan.table, row: name, reason });
  };
  const write = (op: 'insert' | 'update', values: StoredValue[], name: string, issues: ValueIssue[], stored?: readonly unknown[]) => {
    const outcome = writer.write(op, values, stored);
    for (const issue of issues) hooks.issue(issue);
    if (outcome.ok) {
      for (const issue of outcome.issues) hooks.issue({ ...issue, row: name });
      return void counts[outcome.unchanged ? 'unchanged' : op === 'insert' ? 'inserted' : 'updated']++;
    }
    for (const issue of outcome.issues) hooks.issue({ ...issue, row: name });
    if (outcome.unique) deferred.push({ op, values, name, error: outcome.reason });
    else dropRow(op, values, name, outcome.reason);
  };
  // A row the source holds but that cannot be written is not left behind in its old form either.
  const dropRow = (op: 'insert' | 'update', values: StoredValue[], name: string, reason: string) => {
    skip(name, reason);
    if (op === 'update') {
      writer.remove(values.slice(0, keyCount));
      counts.deleted++;
    }
  };

  let previous: StoredValue[] | undefined;
  let n = 0;
  for await (const raw of source.rows(plan.query, plan.keys)) {
    if ((++n & 1023) === 0) hooks.checkStop();
    // Most rows are unchanged and never named: the name is made when a message needs it.
    let named: string | undefined;
    const name = () => (named ??= rowName(plan, raw));
    const shaped = shapeRow(plan, raw, name);
    if ('skipped' in shaped) {
      skip(name(), shaped.skipped);
      continue;
    }
    const { values, issues } = shaped;
    if (previous !== undefined) {
      const order = compareKeys(values, previous, keyCount);
      if (order === 0) {
        skip(name(), `another row of the query has the same key (${plan.keys.join(', ')}): the first one is kept`);
        continue;
      }
      if (order < 0) {
        throw new MappingError(
          `sync.tables.${plan.table}: the source returns the key (${plan.keys.join(', ')}) out of numeric order (${name()} after ${previous.slice(0, keyCount).join(', ')}): return it as an integer (CAST it in the query)`,
        );
      }
    }
    previous = values;
    let head = pages.head();
    while (head !== undefined && compareKeys(head, values, keyCount) < 0) {
      writer.remove(head.slice(0, keyCount));
      counts.deleted++;
      pages.advance();
      head = pages.head();
    }
    if (head !== undefined && compareKeys(head, values, keyCount) === 0) {
      pages.advance();
      if (values.every((v, i) => sameValue(head![i], v))) {
        counts.unchanged++;
        for (const issue of issues) hooks.issue(issue);
      } else write('update', values, name(), issues, head);
    } else write('insert', values, name(), issues);
  }
  for (let head = pages.head(); head !== undefined; pages.advance(), head = pages.head()) {
    writer.remove(head.slice(0, keyCount));
    counts.deleted++;
  }
  // Rows that collided with a unique name another row held: that row may have moved since. Rows
  // that hold each other's names (a swap) are first moved aside to a name no one holds.
  retryDeferred(writer, deferred, counts, hooks);
  if (deferred.some((pending) => pending.op === 'update')) {
    for (const pending of deferred) if (pending.op === 'update') writer.moveAside(pending.values, pending.error);
    retryDeferred(writer, deferred, counts, hooks);
  }
  for (const pending of deferred) dropRow(pending.op, pending.values, pending.name, pending.error);
  return counts;
}

function retryDeferred(writer: TableWriter, deferred: PendingWrite[], counts: TableCounts, hooks: DiffHooks): void {
  for (let progress = true; deferred.length > 0 && progress; ) {
    progress = false;
    for (const pending of deferred.splice(0)) {
      const outcome = writer.write(pending.op, pending.values);
      if (outcome.ok) {
        for (const issue of outcome.issues) hooks.issue({ ...issue, row: pending.name });
        counts[pending.op === 'insert' ? 'inserted' : 'updated']++;
        progress = true;
      } else deferred.push({ ...pending, error: outcome.reason });
    }
  }
}

/** Keys compare as numbers; a stored key of another type (from before the type checks) sorts after them, as SQLite sorts it. */
function compareKeys(a: readonly unknown[], b: readonly unknown[], count: number): number {
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

/** vidfeeds's table in key order, a page at a time; rows the sync inserts behind the page are never read back. */
class TargetPages {
  private rows: unknown[][] = [];
  private at = 0;
  private done = false;
  private readonly first: Database.Statement;
  private readonly after: Database.Statement;

  constructor(target: Database.Database, private readonly plan: TablePlan) {
    const columns = plan.columns.map(quote).join(', ');
    const keys = plan.keys.map(quote).join(', ');
    this.first = target.prepare(`SELECT ${columns} FROM ${quote(plan.table)} ORDER BY ${keys} LIMIT ${PAGE}`).raw(true);
    this.after = target.prepare(`SELECT ${columns} FROM ${quote(plan.table)} WHERE (${keys}) > (${plan.keys.map(() => '?').join(', ')}) ORDER BY ${keys} LIMIT ${PAGE}`).raw(true);
    this.load(this.first.all() as unknown[][]);
  }

  head(): unknown[] | undefined {
    if (this.at < this.rows.length) return this.rows[this.at];
    if (this.done) return undefined;
    const last = this.rows[this.rows.length - 1]!;
    this.load(this.after.all(...last.slice(0, this.plan.keys.length)) as unknown[][]);
    return this.rows[this.at];
  }

  advance(): void {
    this.at++;
  }

  private load(rows: unknown[][]): void {
    this.rows = rows;
    this.at = 0;
    // A short page is the last: what the sync inserts past it must not be read back as vidfeeds's own.
    this.done = rows.length < PAGE;
  }
}

type WriteOutcome = { ok: true; unchanged: boolean; issues: ValueIssue[] } | { ok: false; unique: boolean; reason: string; issues: ValueIssue[] };

/** The prepared writes of one table, and what a refused write means. */
class TableWriter {
  private readonly insert: Database.Statement;
  private readonly update: Database.Statement | undefined;
  private readonly delete: Database.Statement;
  private readonly keyCount: number;

  constructor(
    private readonly target: Database.Database,
    private readonly plan: TablePlan,
  ) {
    const table = quote(plan.table);
    const where = plan.keys.map((k) => `${quote(k)} = ?`).join(' AND ');
    this.keyCount = plan.keys.length;
    this.insert = target.prepare(`INSERT INTO ${table} (${plan.columns.map(quote).join(', ')}) VALUES (${plan.columns.map(() => '?').join(', ')})`);
    const others = plan.columns.slice(this.keyCount);
    this.update = others.length === 0 ? undefined : target.prepare(`UPDATE ${table} SET ${others.map((c) => `${quote(c)} = ?`).join(', ')} WHERE ${where}`);
    this.delete = target.prepare(`DELETE FROM ${table} WHERE ${where}`);
  }

  remove(key: unknown[]): void {
    this.delete.run(...key);
  }

  /** Gives the stored row a name no other row holds in the unique column a write of `values` collided on (`reason` names it). */
  moveAside(values: StoredValue[], reason: string): void {
    const column = /^(\w+) /.exec(reason)?.[1];
    if (column === undefined || !this.plan.columns.includes(column)) return;
    const key = values.slice(0, this.keyCount);
    const where = this.plan.keys.map((k) => `${quote(k)} = ?`).join(' AND ');
    this.target.prepare(`UPDATE ${quote(this.plan.table)} SET ${quote(column)} = ? WHERE ${where}`).run(`vidfeeds sync: moving ${this.plan.table} ${key.join(',')}`, ...key);
  }

  /** Writes the row; `stored` is the row an update replaces, which the row may turn out to equal once a reference to a missing row is cleared. */
  write(op: 'insert' | 'update', values: StoredValue[], stored?: readonly unknown[]): WriteOutcome {
    const issues: ValueIssue[] = [];
    for (;;) {
      if (issues.length > 0 && stored !== undefined && values.every((v, i) => sameValue(stored[i], v))) return { ok: true, unchanged: true, issues };
      try {
        if (op === 'insert') this.insert.run(...values);
        else this.update!.run(...values.slice(this.keyCount), ...values.slice(0, this.keyCount));
        return { ok: true, unchanged: false, issues };
      } catch (error) {
        if (!(error instanceof Database.SqliteError)) throw error;
        if (error.code === 'SQLITE_CONSTRAINT_UNIQUE') return { ok: false, unique: true, reason: this.uniqueHolder(error.message, values), issues };
        if (error.code !== 'SQLITE_CONSTRAINT_FOREIGNKEY') {
          if (error.code.startsWith('SQLITE_CONSTRAINT')) return { ok: false, unique: false, reason: `vidfeeds's schema refuses it: ${error.message}`, issues };
          throw error;
        }
        const missing = this.missingReferences(values);
        const required = missing.find((i) => !this.plan.specs[i]!.nullable);
        if (required !== undefined || missing.length === 0) {
          const i = required ?? -1;
          const reason =
            i < 0
              ? `a row it refers to is missing: ${error.message}`
              : `${this.plan.columns[i]} ${values[i]}: no ${this.plan.references.get(this.plan.columns[i]!)} row has that id (not in the source, or skipped)`;
          return { ok: false, unique: false, reason, issues };
        }
        // An optional reference to a row that is gone is cleared, as the schema's ON DELETE SET NULL would.
        for (const i of missing) {
          issues.push({ table: this.plan.table, row: '', column: this.plan.columns[i]!, found: `${values[i]}`, expected: `the id of a ${this.plan.references.get(this.plan.columns[i]!)} row or NULL`, rule: 'omit', outcome: 'stored as NULL (no such row)' });
          values[i] = null;
        }
      }
    }
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

  private uniqueHolder(message: string, values: StoredValue[]): string {
    const column = /UNIQUE constraint failed: \w+\.(\w+)/.exec(message)?.[1];
    const i = column === undefined ? -1 : this.plan.columns.indexOf(column);
    if (i < 0) return `vidfeeds's schema refuses it: ${message}`;
    const holder = this.target.prepare(`SELECT ${this.plan.keys.map(quote).join(', ')} FROM ${quote(this.plan.table)} WHERE ${quote(column!)} = ?`).raw(true).get(values[i]) as unknown[] | undefined;
    const who = holder === undefined ? 'another row' : `${this.plan.table} ${this.plan.keys.map((k, j) => `${k}=${holder[j]}`).join(', ')}`;
    return `${column} ${JSON.stringify(values[i])} is already taken by ${who} (${column} must be unique)`;
  }
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
