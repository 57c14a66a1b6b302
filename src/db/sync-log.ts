import type Database from 'better-sqlite3';
import { SITE_TABLES } from './columns.js';
import { quoteIdentifier } from './quote-identifier.js';

/**
 * What `vidfeeds sync` reads of vidfeeds's own bookkeeping while it writes, on its write
 * connection: where the change log ends, how many rows a table holds, and whether, and which
 * rows, something else wrote since the last sync (its digests and watermarks are trusted only for
 * rows nothing else wrote). What the sync itself did to each row, cascades included, is read in
 * src/db/net-changes.ts.
 */

/** The change log's last entry (0 when it is empty). */
export function changeLogPosition(db: Database.Database): number {
  return (db.prepare('SELECT coalesce(max(seq), 0) AS seq FROM change_log').get() as { seq: number }).seq;
}

/** The rows a site table holds. */
export function tableSize(db: Database.Database, table: string): number {
  if (SITE_TABLES[table] === undefined) throw new Error(`${table} is not a site table`);
  return (db.prepare(`SELECT count(*) AS n FROM ${quoteIdentifier(table)}`).get() as { n: number }).n;
}

/** Whether entries past position `log` are missing from the change log, so that what was written since cannot be told. */
export function logPrunedSince(db: Database.Database, log: number): boolean {
  const last = (db.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'change_log'`).get() as { seq: number } | undefined)?.seq ?? 0;
  if (last === log) return false;
  const kept = (db.prepare('SELECT count(*) AS n FROM change_log WHERE seq > ?').get(log) as { n: number }).n;
  return kept < last - log;
}

/** Whether the change log holds an entry of `table` past position `log`. */
export function tableLoggedSince(db: Database.Database, table: string, log: number): boolean {
  return db.prepare('SELECT 1 FROM change_log WHERE seq > ? AND table_name = ? LIMIT 1').get(log, table) !== undefined;
}

/**
 * The keys (the values of `keys`, in that order) of the rows of `table` the change log holds past
 * position `log`, before and after each change, each once.
 */
export function keysLoggedSince(db: Database.Database, table: string, keys: readonly string[], log: number): unknown[][] {
  const extract = (column: string) => keys.map((key) => `json_extract(${column}, ${quoteLiteral(`$.${key}`)})`).join(', ');
  return db
    .prepare(
      `SELECT ${extract('old_keys')} FROM change_log WHERE seq > ? AND table_name = ? AND old_keys IS NOT NULL
       UNION SELECT ${extract('new_keys')} FROM change_log WHERE seq > ? AND table_name = ? AND new_keys IS NOT NULL`,
    )
    .raw(true)
    .all(log, table, log, table) as unknown[][];
}

function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
