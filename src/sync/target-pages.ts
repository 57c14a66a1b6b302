import type Database from 'better-sqlite3';
import { compareKeys } from './key-groups.js';
import { quoteIdentifier as quote } from '../db/quote-identifier.js';

/** Rows of vidfeeds's database read at a time. */
const PAGE = 2000;

/**
 * A table of vidfeeds's database in key order, a page at a time, so that it is never whole in
 * memory; rows the sync inserts behind the page are never read back.
 */
export class TargetPages {
  private rows: unknown[][] = [];
  private at = 0;
  private done = false;
  private readonly after: Database.Statement;

  /** `columns`: the columns each row holds, the keys first. */
  constructor(target: Database.Database, table: string, private readonly keys: readonly string[], columns: readonly string[]) {
    const list = columns.map(quote).join(', ');
    const order = keys.map(quote).join(', ');
    this.after = target.prepare(`SELECT ${list} FROM ${quote(table)} WHERE (${order}) > (${keys.map(() => '?').join(', ')}) ORDER BY ${order} LIMIT ${PAGE}`).raw(true);
    this.load(target.prepare(`SELECT ${list} FROM ${quote(table)} ORDER BY ${order} LIMIT ${PAGE}`).raw(true).all() as unknown[][]);
  }

  head(): unknown[] | undefined {
    if (this.at < this.rows.length) return this.rows[this.at];
    if (this.done) return undefined;
    const last = this.rows[this.rows.length - 1]!;
    this.load(this.after.all(...last.slice(0, this.keys.length)) as unknown[][]);
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

/** Stored rows in key order, the keys first: vidfeeds's table (TargetPages) or its digests. */
export interface KeyedPages {
  head(): unknown[] | undefined;
  advance(): void;
}

/**
 * Moves past the stored rows whose key comes before `key`, handing each one's key to `gone`, and
 * past the row with `key` itself, which it returns (undefined when none is stored). The row is the
 * pages' own: read it before the next `head()`.
 */
export function passTo(pages: KeyedPages, key: readonly unknown[], keyCount: number, gone: (key: number[]) => void): unknown[] | undefined {
  for (let head = pages.head(); head !== undefined; head = pages.head()) {
    const order = compareKeys(head, key, keyCount);
    if (order > 0) return undefined;
    pages.advance();
    if (order === 0) return head;
    gone(head.slice(0, keyCount) as number[]);
  }
  return undefined;
}

/** Hands the key of every stored row left to `gone`, until it returns false. */
export function passRest(pages: KeyedPages, keyCount: number, gone: (key: number[]) => boolean | void): void {
  for (let head = pages.head(); head !== undefined; head = pages.head()) {
    pages.advance();
    if (gone(head.slice(0, keyCount) as number[]) === false) return;
  }
}
