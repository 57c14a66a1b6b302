import type Database from 'better-sqlite3';
import { SITE_TABLES } from './columns.js';
import { openForReading } from './open-database.js';

/** vidfeeds's tables, as the JSON array a look-up for views of their names binds. */
const SITE_TABLE_NAMES = JSON.stringify(Object.keys(SITE_TABLES));

/**
 * Reads the database's change log (migration 2, docs/database.md "change_log") and answers the
 * owner look-ups of src/pipeline/plan/changes.ts. Use it on the connection the build reads with, inside the
 * same read transaction (`SiteReader.snapshot`), so the log position and the rendered rows agree.
 */

export type ChangeOp = 'insert' | 'update' | 'delete';

/** A row's keys as a trigger recorded them (see migration 2 and docs/database.md "change_log"). */
export type ChangeKeys = Readonly<Record<string, string | number | null>>;

/** One entry of the database's `change_log`. */
export interface ChangeRecord {
  readonly seq: number;
  readonly table: string;
  readonly op: ChangeOp;
  /** The row's keys before the change; null for an insert. */
  readonly old: ChangeKeys | null;
  /** The row's keys after the change; null for a delete. */
  readonly new: ChangeKeys | null;
}

/**
 * Questions about the database as it is now, each for many ids at once (one query, not one per
 * row). They answer with ids of rows that exist now; what is gone is known from the records' old keys.
 */
export interface OwnerLookups {
  /** Users who list one of these users as a friend (their FOAF `knows` shows them). */
  usersBefriending(userIds: readonly number[]): number[];
  /** Users who hold one of these videos in saved videos, history or attention sources. */
  usersReferencingVideos(videoIds: readonly number[]): number[];
  /** Users whose attention sources name one of these users as the supplier. */
  usersSuppliedBy(userIds: readonly number[]): number[];
  /** Users with an interest in one of these tags. */
  usersInterestedIn(tagIds: readonly number[]): number[];
  /** Members of these groups. */
  membersOfGroups(groupIds: readonly number[]): number[];
  /** Groups these users own. */
  groupsOwnedBy(userIds: readonly number[]): number[];
  /** Groups that feature one of these videos. */
  groupsFeaturing(videoIds: readonly number[]): number[];
  /** Videos these users uploaded. */
  videosUploadedBy(userIds: readonly number[]): number[];
  /** Videos in these categories. */
  videosInCategories(categoryIds: readonly number[]): number[];
  /** Videos carrying one of these tags. */
  videosTagged(tagIds: readonly number[]): number[];
  /** The uploaders of these videos. */
  uploadersOf(videoIds: readonly number[]): number[];
}

/** Where the change log stands: the database's identity and its last sequence number. */
export interface ChangeLogPosition {
  databaseId: string;
  /** Highest sequence number ever given (0 when nothing was ever logged). */
  position: number;
  /** Lowest sequence number still in the log, or null when it is empty. */
  oldest: number | null;
  /**
   * vidfeeds's tables that are views in this database (over another application's tables): their
   * rows change without a log entry, since triggers sit on tables, so no build can follow them.
   */
  views?: readonly string[];
  /**
   * The identity of the entry at `position` (its table, operation, keys and time), or null when it
   * is not in the log: a log restored from a backup and written to again reuses positions, but not
   * entries (ChangeLog.identityAt).
   */
  identity?: string | null;
}

interface RawChange {
  seq: number;
  table_name: string;
  op: ChangeOp;
  old_keys: string | null;
  new_keys: string | null;
}

export class ChangeLog {
  private readonly stmt;
  /** The owner look-ups over the rows as they are now (src/pipeline/plan/changes.ts). */
  readonly lookups: OwnerLookups;

  constructor(db: Database.Database) {
    const p = <T>(sql: string) => db.prepare<unknown[], T>(sql);
    // Each look-up binds one JSON array of ids (`ids` below): one query for any number of them.
    const lookup = (sql: string) => {
      const statement = db.prepare<[string], number>(`WITH ids(id) AS (SELECT value FROM json_each(?)) ${sql}`).pluck();
      return (values: readonly number[]) => (values.length === 0 ? [] : statement.all(JSON.stringify(values)));
    };
    this.stmt = {
      databaseId: p<{ value: string }>(`SELECT value FROM site_meta WHERE key = 'database_id'`),
      position: p<{ seq: number }>(`SELECT seq FROM sqlite_sequence WHERE name = 'change_log'`),
      oldest: p<{ seq: number | null }>(`SELECT min(seq) AS seq FROM change_log`),
      views: db
        .prepare<[string], string>(`SELECT name FROM sqlite_master WHERE type = 'view' AND name IN (SELECT value FROM json_each(?)) ORDER BY name`)
        .pluck(),
      since: p<RawChange>(`SELECT seq, table_name, op, old_keys, new_keys FROM change_log WHERE seq > ? AND seq <= ? ORDER BY seq`),
      count: p<{ n: number }>(`SELECT count(*) AS n FROM change_log WHERE seq > ? AND seq <= ?`),
      entry: p<{ identity: string }>(
        `SELECT json_array(table_name, op, old_keys, new_keys, changed_at) AS identity FROM change_log WHERE seq = ?`,
      ),
    };
    this.lookups = {
      usersBefriending: lookup(`SELECT DISTINCT user_id FROM friendships WHERE friend_id IN ids`),
      usersReferencingVideos: lookup(
        `SELECT user_id FROM saved_videos WHERE video_id IN ids
         UNION SELECT user_id FROM viewing_history WHERE video_id IN ids
         UNION SELECT user_id FROM attention_sources WHERE video_id IN ids`,
      ),
      usersSuppliedBy: lookup(`SELECT DISTINCT user_id FROM attention_sources WHERE supplier_id IN ids`),
      usersInterestedIn: lookup(`SELECT DISTINCT user_id FROM interests WHERE tag_id IN ids`),
      membersOfGroups: lookup(`SELECT DISTINCT user_id FROM group_members WHERE group_id IN ids`),
      groupsOwnedBy: lookup(`SELECT id FROM groups WHERE owner_id IN ids`),
      groupsFeaturing: lookup(`SELECT id FROM groups WHERE featured_video_id IN ids`),
      videosUploadedBy: lookup(`SELECT id FROM videos WHERE user_id IN ids`),
      videosInCategories: lookup(`SELECT id FROM videos WHERE category_id IN ids`),
      videosTagged: lookup(`SELECT DISTINCT video_id FROM video_tags WHERE tag_id IN ids`),
      uploadersOf: lookup(`SELECT DISTINCT user_id FROM videos WHERE id IN ids`),
    };
  }

  /** The log's identity and extent now. */
  current(): ChangeLogPosition {
    const position = this.stmt.position.get()?.seq ?? 0;
    return {
      databaseId: this.stmt.databaseId.get()?.value ?? '',
      position,
      oldest: this.stmt.oldest.get()?.seq ?? null,
      views: this.stmt.views.all(SITE_TABLE_NAMES),
      identity: this.identityAt(position),
    };
  }

  /** The identity of the log entry at `seq`, or null when there is none (never logged, or pruned). */
  identityAt(seq: number): string | null {
    return this.stmt.entry.get(seq)?.identity ?? null;
  }

  /** Number of changes after `from` up to and including `to`. */
  count(from: number, to: number): number {
    return this.stmt.count.get(from, to)!.n;
  }

  /** The changes after `from` up to and including `to`, oldest first, one at a time. */
  *since(from: number, to: number): Generator<ChangeRecord> {
    for (const raw of this.stmt.since.iterate(from, to)) {
      yield {
        seq: raw.seq,
        table: raw.table_name,
        op: raw.op,
        old: raw.old_keys === null ? null : (JSON.parse(raw.old_keys) as ChangeKeys),
        new: raw.new_keys === null ? null : (JSON.parse(raw.new_keys) as ChangeKeys),
      };
    }
  }
}

/** Where the change log of a database file stands now (one short read; for the watcher). */
export function readChangeLogPosition(file: string): ChangeLogPosition {
  const db = openForReading(file);
  try {
    return new ChangeLog(db).current();
  } finally {
    db.close();
  }
}
