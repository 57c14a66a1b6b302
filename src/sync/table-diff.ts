import type Database from 'better-sqlite3';
import type { SyncSource } from './sync-source.js';
import type { TablePlan } from './table-plan.js';
import { compareKeys, type TableSync } from './table-sync.js';
import { quote } from './table-writer.js';

/**
 * One table brought to the source's rows by a full compare: a merge of two streams in key order,
 * the source's query and vidfeeds's table (read in pages by key, so neither side is ever whole in
 * memory). A key only in the source is inserted, a key only in vidfeeds's table deleted, a key in
 * both updated only when a normalised value differs. So the change log, which triggers fill on
 * every write, records exactly the rows that changed. This is the reference every other way of
 * syncing a table is checked against.
 */

/** Rows of vidfeeds's table read at a time. */
const PAGE = 2000;

export async function syncTable(target: Database.Database, source: SyncSource, sync: TableSync): Promise<void> {
  const { plan } = sync;
  const pages = new TargetPages(target, plan);
  const keyCount = plan.keys.length;
  await sync.forEachRow(source.rows(plan.query, plan.keys), (values, issues, name) => {
    let head = pages.head();
    while (head !== undefined && compareKeys(head, values, keyCount) < 0) {
      sync.remove(head.slice(0, keyCount));
      pages.advance();
      head = pages.head();
    }
    const same = head !== undefined && compareKeys(head, values, keyCount) === 0;
    if (same) pages.advance();
    sync.apply(values, issues, name, same ? head : undefined);
  });
  for (let head = pages.head(); head !== undefined; pages.advance(), head = pages.head()) sync.remove(head.slice(0, keyCount));
}

/** vidfeeds's table in key order, a page at a time; rows the sync inserts behind the page are never read back. */
export class TargetPages {
  private rows: unknown[][] = [];
  private at = 0;
  private done = false;
  private readonly first: Database.Statement;
  private readonly after: Database.Statement;

  /** `columns`: the columns to read (default: the plan's). */
  constructor(target: Database.Database, private readonly plan: TablePlan, columns: readonly string[] = plan.columns) {
    const list = columns.map(quote).join(', ');
    const keys = plan.keys.map(quote).join(', ');
    this.first = target.prepare(`SELECT ${list} FROM ${quote(plan.table)} ORDER BY ${keys} LIMIT ${PAGE}`).raw(true);
    this.after = target.prepare(`SELECT ${list} FROM ${quote(plan.table)} WHERE (${keys}) > (${plan.keys.map(() => '?').join(', ')}) ORDER BY ${keys} LIMIT ${PAGE}`).raw(true);
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
