/**
 * The change log's triggers (docs/database.md "change_log", docs/incremental.md), generated from
 * one description of what each table logs: every insert, update and delete of a table writes one
 * `change_log` row with the row's keys before and after. The keys are the columns that say whose
 * documents the row feeds (src/pipeline/plan/changes.ts reads them); a change of any other column still
 * logs the row, so every column a document shows is covered by its table's triggers.
 *
 * Released migrations never change: migration 2 and 3 are generated from the descriptions below as
 * they were released (test/db/change-log-triggers.test.ts compares the SQL with the released text),
 * and a table or key added later goes into a new migration with a description of its own.
 */

export interface LoggedTable {
  /** Columns whose values before and after each change are logged (`old_keys`, `new_keys`). */
  readonly keys: readonly string[];
  /**
   * Updates only: flags added to `new_keys`, each true when one of its columns changed. A user's
   * `person_changed` tells the build that the documents showing the user as a person (friends' FOAF,
   * uploads in others' playlists) must be rendered again, not only the user's own.
   */
  readonly changed?: Readonly<Record<string, readonly string[]>>;
}

/** What each table logs as of migration 2, which created the change log. */
export const LOGGED_TABLES_V2: Readonly<Record<string, LoggedTable>> = {
  users: { keys: ['id', 'username', 'state'], changed: { person_changed: ['display_name', 'avatar_url', 'homepage_url', 'email'] } },
  online_accounts: { keys: ['id', 'user_id'] },
  categories: { keys: ['id'] },
  tags: { keys: ['id'] },
  interests: { keys: ['user_id', 'tag_id'] },
  friendships: { keys: ['user_id', 'friend_id'] },
  videos: { keys: ['id', 'public_id', 'user_id', 'category_id', 'visibility'] },
  video_tags: { keys: ['video_id', 'tag_id'] },
  groups: { keys: ['id', 'owner_id', 'featured_video_id'] },
  group_members: { keys: ['group_id', 'user_id'] },
  saved_videos: { keys: ['user_id', 'video_id'] },
  viewing_history: { keys: ['id', 'user_id', 'video_id'] },
  recommendations: { keys: ['id', 'user_id'] },
  attention_concepts: { keys: ['user_id', 'category_id'] },
  attention_sources: { keys: ['id', 'user_id', 'video_id', 'supplier_id'] },
  reading_list: { keys: ['id', 'user_id', 'category_id'] },
};

/**
 * Migration 3 adds the moderation status to the recommendations' keys, so a change that leaves a
 * row unpublished on both sides (a pending row received, then rejected) renders nothing again.
 */
export const LOGGED_TABLES_V3: Readonly<Record<string, LoggedTable>> = {
  ...LOGGED_TABLES_V2,
  recommendations: { keys: ['id', 'user_id', 'status'] },
};

/** What each table logs now. */
export const LOGGED_TABLES = LOGGED_TABLES_V3;

const OPS = ['insert', 'update', 'delete'] as const;

function keysJson(row: 'OLD' | 'NEW', table: LoggedTable, withFlags: boolean): string {
  const pairs = table.keys.map((key) => `'${key}', ${row}.${key}`);
  if (withFlags) {
    for (const [flag, columns] of Object.entries(table.changed ?? {})) {
      pairs.push(`'${flag}', ${columns.map((column) => `OLD.${column} IS NOT NEW.${column}`).join(' OR ')}`);
    }
  }
  return `json_object(${pairs.join(', ')})`;
}

/** The names of a table's three triggers. */
export function triggerNames(tableName: string): string[] {
  return OPS.map((op) => `${tableName}_log_${op}`);
}

/** The three triggers of one table, as migration SQL (indented as the migrations are). */
export function tableTriggers(tableName: string, table: LoggedTable): string {
  const values = {
    insert: `(table_name, op, new_keys) VALUES ('${tableName}', 'insert', ${keysJson('NEW', table, false)})`,
    update: `(table_name, op, old_keys, new_keys) VALUES ('${tableName}', 'update', ${keysJson('OLD', table, false)}, ${keysJson('NEW', table, true)})`,
    delete: `(table_name, op, old_keys) VALUES ('${tableName}', 'delete', ${keysJson('OLD', table, false)})`,
  };
  return OPS.map(
    (op) => `  CREATE TRIGGER ${tableName}_log_${op} AFTER ${op.toUpperCase()} ON ${tableName} BEGIN\n    INSERT INTO change_log ${values[op]};\n  END;`,
  ).join('\n');
}

/** The triggers of every table described, in the description's order. */
export function changeLogTriggers(tables: Readonly<Record<string, LoggedTable>>): string {
  return Object.entries(tables)
    .map(([name, table]) => tableTriggers(name, table))
    .join('\n');
}
