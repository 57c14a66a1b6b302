import type Database from 'better-sqlite3';
import { SITE_TABLES } from './columns.js';

/**
 * What `vidfeeds sync` reads of vidfeeds's own bookkeeping while it writes, on its write
 * connection: where the change log ends, how many rows a table holds, and how many rows left
 * each table since a position of the log, whatever removed them (the sync itself, or a foreign
 * key's cascade when a parent row went).
 */

/** The change log's last entry (0 when it is empty). */
export function changeLogPosition(db: Database.Database): number {
  return (db.prepare('SELECT coalesce(max(seq), 0) AS seq FROM change_log').get() as { seq: number }).seq;
}

/** The rows a site table holds. */
export function tableSize(db: Database.Database, table: string): number {
  if (SITE_TABLES[table] === undefined) throw new Error(`${table} is not a site table`);
  return (db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n;
}

/** Per table, the rows deleted since log position `after`. */
export function deletionsSince(db: Database.Database, after: number): Map<string, number> {
  const rows = db.prepare(`SELECT table_name AS t, count(*) AS n FROM change_log WHERE seq > ? AND op = 'delete' GROUP BY table_name`).all(after) as Array<{ t: string; n: number }>;
  return new Map(rows.map(({ t, n }) => [t, n]));
}
