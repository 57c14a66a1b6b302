/**
 * Rows that `INSERT OR REPLACE`, `REPLACE` and `UPDATE OR REPLACE` delete to make room are deleted
 * without firing delete triggers (unless `PRAGMA recursive_triggers = ON`, which the site's
 * connections are not ours to set): migration 2's log never hears of them, and their documents
 * would stay. Each rowid table with a unique key therefore gets a BEFORE INSERT and a BEFORE UPDATE
 * trigger that logs, as a delete, every row the new values collide with: same `id` (another row,
 * for an update) or same unique name. Rows cascaded from such a delete are logged by their own
 * tables' triggers, as SQLite runs foreign key actions for them.
 *
 * When the statement then fails (a plain INSERT meeting a UNIQUE constraint) its log entries go
 * with it; when it ignores the row (`INSERT OR IGNORE`) or updates it instead (an upsert), the
 * entry names a row that still exists, which only makes the next build render its owner again.
 *
 * Tables without rowid replace a row by its whole primary key, which is also what their log
 * entries hold, so the insert's entry already names every owner concerned.
 */

interface ReplaceableTable {
  /** Columns whose values make a conflict besides `id` (UNIQUE). */
  unique: readonly string[];
  /** The keys migration 2 logs for the table (docs/database.md, "change_log"). */
  keys: readonly string[];
}

/** As of schema version 5. Frozen: migration 5 is generated from it. */
export const REPLACEABLE_TABLES: Readonly<Record<string, ReplaceableTable>> = Object.freeze({
  users: { unique: ['username'], keys: ['id', 'username', 'state'] },
  online_accounts: { unique: [], keys: ['id', 'user_id'] },
  categories: { unique: ['name'], keys: ['id'] },
  tags: { unique: ['name'], keys: ['id'] },
  videos: { unique: ['public_id'], keys: ['id', 'public_id', 'user_id', 'category_id', 'visibility'] },
  groups: { unique: ['slug'], keys: ['id', 'owner_id', 'featured_video_id'] },
  viewing_history: { unique: [], keys: ['id', 'user_id', 'video_id'] },
  recommendations: { unique: [], keys: ['id', 'user_id'] },
  attention_sources: { unique: [], keys: ['id', 'user_id', 'video_id', 'supplier_id'] },
  reading_list: { unique: [], keys: ['id', 'user_id', 'category_id'] },
});

/** The SQL of the migration that logs replaced rows for `tables`. */
export function replacedRowsMigration(tables: Readonly<Record<string, ReplaceableTable>>): string {
  const statements: string[] = [];
  for (const [table, spec] of Object.entries(tables)) {
    const keys = `json_object(${spec.keys.map((k) => `'${k}', ${k}`).join(', ')})`;
    const logged = (collides: string) =>
      `  INSERT INTO change_log (table_name, op, old_keys) SELECT '${table}', 'delete', ${keys} FROM ${table} WHERE ${collides};`;
    const onInsert = ['id = NEW.id', ...spec.unique.map((c) => `${c} = NEW.${c}`)].join(' OR ');
    // An update collides with other rows only: the row itself is logged by its update trigger.
    const onUpdate = `id IS NOT OLD.id AND (${onInsert})`;
    statements.push(`CREATE TRIGGER ${table}_log_replaced_insert BEFORE INSERT ON ${table} BEGIN\n${logged(onInsert)}\nEND;`);
    statements.push(`CREATE TRIGGER ${table}_log_replaced_update BEFORE UPDATE ON ${table} BEGIN\n${logged(onUpdate)}\nEND;`);
  }
  return statements.join('\n');
}
