import type Database from 'better-sqlite3';
import { SITE_TABLES } from './columns.js';
import { quoteIdentifier as quote } from './quote-identifier.js';

/**
 * What a write transaction did to each row of a site table, net: the change log holds every write,
 * the writer's own and its foreign keys' (a row deleted with its parent, a reference cleared by ON
 * DELETE SET NULL), in the order they came. A row a cascade deleted and the writer wrote again (a
 * video of a user whose id changed, deleted with the old user and inserted under the new one) is
 * one row updated, or none when it came back as it was; not one deleted and one inserted. For that
 * comparison the rows deleted meanwhile are kept, as they were (each value as SQL's `quote()`
 * spells it, so any type compares exactly), in a temporary table of the connection
 * (`keepDeletedRows`), which no other connection sees and the file never holds.
 */

export interface NetCounts {
  inserted: number;
  updated: number;
  deleted: number;
}

const KEPT = 'vidfeeds_deleted_rows';

/** From now on, every row deleted from a site table on this connection is kept as it was (for `netChangesSince`). */
export function keepDeletedRows(db: Database.Database): void {
  db.exec(`CREATE TEMP TABLE IF NOT EXISTS ${KEPT} (seq INTEGER PRIMARY KEY, table_name TEXT NOT NULL, key TEXT NOT NULL, row TEXT NOT NULL)`);
  // Looked up by key for each row deleted and written again: a mass re-keying is many of them.
  db.exec(`CREATE INDEX IF NOT EXISTS temp.${KEPT}_key ON ${KEPT} (table_name, key, seq)`);
  for (const table of Object.keys(SITE_TABLES)) {
    const columns = (db.prepare(`SELECT name FROM pragma_table_info(?, 'main')`).pluck().all(table) as string[]).map((c) => `quote(OLD.${quote(c)})`);
    const key = SITE_TABLES[table]!.key.map((c) => `OLD.${quote(c)}`);
    db.exec(
      `CREATE TEMP TRIGGER IF NOT EXISTS ${quote(`${KEPT}_${table}`)} AFTER DELETE ON main.${quote(table)} BEGIN
         INSERT INTO ${KEPT} (table_name, key, row) VALUES ('${table}', json_array(${key.join(', ')}), json_array(${columns.join(', ')}));
       END`,
    );
  }
}

/** Per table, the change log's entries of each kind past position `after`. */
export function loggedSince(db: Database.Database, after: number): Map<string, NetCounts> {
  const rows = db.prepare(`SELECT table_name AS t, op, count(*) AS n FROM change_log WHERE seq > ? GROUP BY table_name, op`).all(after) as Array<{ t: string; op: string; n: number }>;
  const counts = new Map<string, NetCounts>();
  for (const { t, op, n } of rows) {
    const entry = counts.get(t) ?? { inserted: 0, updated: 0, deleted: 0 };
    entry[op === 'insert' ? 'inserted' : op === 'update' ? 'updated' : 'deleted'] += n;
    counts.set(t, entry);
  }
  return counts;
}

/**
 * The rows of `table` the change log past position `after` shows inserted (absent before, present
 * now), deleted (the other way round) and updated (present before and now, and different: a row
 * deleted and written again is compared with the row kept when it was first deleted).
 */
export function netChangesSince(db: Database.Database, table: string, after: number): NetCounts {
  const keys = SITE_TABLES[table]!.key;
  const keyOf = `json_array(${keys.map((k) => `json_extract(coalesce(new_keys, old_keys), '$.${k}')`).join(', ')})`;
  const spans = db
    .prepare(
      `WITH entries AS (SELECT seq, ${keyOf} AS key FROM change_log WHERE seq > ? AND table_name = ?),
            spans AS (SELECT key, min(seq) AS first, max(seq) AS last FROM entries GROUP BY key)
       SELECT s.key, f.op AS first, l.op AS last FROM spans s JOIN change_log f ON f.seq = s.first JOIN change_log l ON l.seq = s.last`,
    )
    .all(after, table) as Array<{ key: string; first: string; last: string }>;
  const net: NetCounts = { inserted: 0, updated: 0, deleted: 0 };
  const kept = db.prepare(`SELECT row FROM temp.${KEPT} WHERE table_name = ? AND key = ? ORDER BY seq LIMIT 1`).pluck();
  const columns = db.prepare(`SELECT name FROM pragma_table_info(?, 'main')`).pluck().all(table) as string[];
  const now = db.prepare(`SELECT json_array(${columns.map((c) => `quote(${quote(c)})`).join(', ')}) FROM main.${quote(table)} WHERE ${keys.map((k, i) => `${quote(k)} = json_extract(@key, '$[${i}]')`).join(' AND ')}`).pluck();
  for (const { key, first, last } of spans) {
    if (first === 'insert') net.inserted += last === 'delete' ? 0 : 1;
    else if (last === 'delete') net.deleted++;
    else if (first === 'update' || kept.get(table, key) !== now.get({ key })) net.updated++;
  }
  return net;
}
