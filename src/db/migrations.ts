import type Database from 'better-sqlite3';
import { changeLogTriggers, LOGGED_TABLES_V2, LOGGED_TABLES_V3, tableTriggers } from './change-log-triggers.js';
import { SITE_TABLES } from './columns.js';
import type { ValueIssue } from './decode.js';
import { REPLACEABLE_TABLES, replacedRowsMigration } from './replaced-rows.js';
import { ownerColumnsLog, typeCheckMigration, wrongTypeRows } from './type-checks.js';
import { EXIT, VidfeedsError } from '../config/vidfeeds-error.js';

/**
 * Versioned schema of the site database. `PRAGMA user_version` holds the number of migrations
 * applied; each migration runs once, in order, inside one transaction. Never edit a released
 * migration: add a new one. Every table and column is documented in docs/database.md.
 *
 * Times are INTEGER Unix seconds (UTC). Booleans are INTEGER 0/1.
 */
export const MIGRATIONS: readonly string[] = [
  // 1: everything every document of the seed needs.
  `
  CREATE TABLE users (
    id              INTEGER PRIMARY KEY,
    username        TEXT NOT NULL UNIQUE,
    display_name    TEXT NOT NULL DEFAULT '',
    title           TEXT NOT NULL DEFAULT '',
    given_name      TEXT NOT NULL DEFAULT '',
    family_name     TEXT NOT NULL DEFAULT '',
    email           TEXT,
    show_email      INTEGER NOT NULL DEFAULT 0 CHECK (show_email IN (0, 1)),
    phone           TEXT,
    show_phone      INTEGER NOT NULL DEFAULT 0 CHECK (show_phone IN (0, 1)),
    homepage_url    TEXT,
    avatar_url      TEXT,
    openid_url      TEXT,
    aim_chat_id     TEXT,
    yahoo_chat_id   TEXT,
    msn_chat_id     TEXT,
    icq_chat_id     TEXT,
    jabber_chat_id  TEXT,
    show_chat_ids   INTEGER NOT NULL DEFAULT 0 CHECK (show_chat_ids IN (0, 1)),
    street_address  TEXT,
    locality        TEXT,
    region          TEXT,
    region_name     TEXT,
    postal_code     TEXT,
    country_name    TEXT,
    show_address    INTEGER NOT NULL DEFAULT 0 CHECK (show_address IN (0, 1)),
    history_public  INTEGER NOT NULL DEFAULT 0 CHECK (history_public IN (0, 1)),
    state           TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'suspended', 'deleted')),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
  );

  CREATE TABLE online_accounts (
    id                   INTEGER PRIMARY KEY,
    user_id              INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    service_homepage_url TEXT NOT NULL,
    account_name         TEXT NOT NULL,
    profile_url          TEXT NOT NULL
  );
  CREATE INDEX online_accounts_user ON online_accounts(user_id);

  CREATE TABLE categories (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL UNIQUE
  );

  CREATE TABLE tags (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL UNIQUE
  );

  CREATE TABLE interests (
    user_id  INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    tag_id   INTEGER NOT NULL REFERENCES tags(id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, tag_id)
  ) WITHOUT ROWID;

  CREATE TABLE friendships (
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    friend_id   INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (user_id, friend_id),
    CHECK (user_id <> friend_id)
  ) WITHOUT ROWID;
  CREATE INDEX friendships_friend ON friendships(friend_id);

  CREATE TABLE videos (
    id                INTEGER PRIMARY KEY,
    public_id         TEXT NOT NULL UNIQUE,
    user_id           INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    title             TEXT NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    duration_seconds  INTEGER CHECK (duration_seconds IS NULL OR duration_seconds >= 0),
    file_url          TEXT NOT NULL,
    file_size         INTEGER CHECK (file_size IS NULL OR file_size >= 0),
    file_type         TEXT NOT NULL DEFAULT 'video/x-flv',
    width             INTEGER CHECK (width IS NULL OR width > 0),
    height            INTEGER CHECK (height IS NULL OR height > 0),
    thumbnail_url     TEXT NOT NULL,
    thumbnail_width   INTEGER NOT NULL DEFAULT 120 CHECK (thumbnail_width > 0),
    thumbnail_height  INTEGER NOT NULL DEFAULT 90 CHECK (thumbnail_height > 0),
    captions_url      TEXT,
    category_id       INTEGER REFERENCES categories(id) ON DELETE SET NULL,
    visibility        TEXT NOT NULL DEFAULT 'public' CHECK (visibility IN ('public', 'private')),
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
  );
  CREATE INDEX videos_user_created ON videos(user_id, created_at DESC, id DESC);

  CREATE TABLE video_tags (
    video_id  INTEGER NOT NULL REFERENCES videos(id) ON DELETE CASCADE,
    tag_id    INTEGER NOT NULL REFERENCES tags(id) ON DELETE CASCADE,
    PRIMARY KEY (video_id, tag_id)
  ) WITHOUT ROWID;
  CREATE INDEX video_tags_tag ON video_tags(tag_id);

  CREATE TABLE groups (
    id                 INTEGER PRIMARY KEY,
    slug               TEXT NOT NULL UNIQUE,
    title              TEXT NOT NULL,
    description        TEXT NOT NULL DEFAULT '',
    owner_id           INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    featured_video_id  INTEGER REFERENCES videos(id) ON DELETE SET NULL,
    hidden             INTEGER NOT NULL DEFAULT 0 CHECK (hidden IN (0, 1)),
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
  );
  CREATE INDEX groups_featured ON groups(featured_video_id);

  CREATE TABLE group_members (
    group_id   INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    joined_at  INTEGER NOT NULL,
    PRIMARY KEY (group_id, user_id)
  ) WITHOUT ROWID;
  CREATE INDEX group_members_user ON group_members(user_id);

  CREATE TABLE saved_videos (
    user_id   INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    video_id  INTEGER NOT NULL REFERENCES videos(id) ON DELETE CASCADE,
    position  INTEGER NOT NULL,
    saved_at  INTEGER NOT NULL,
    PRIMARY KEY (user_id, video_id)
  ) WITHOUT ROWID;
  CREATE INDEX saved_videos_video ON saved_videos(video_id);

  CREATE TABLE viewing_history (
    id         INTEGER PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    video_id   INTEGER NOT NULL REFERENCES videos(id) ON DELETE CASCADE,
    viewed_at  INTEGER NOT NULL
  );
  CREATE INDEX viewing_history_user ON viewing_history(user_id, viewed_at DESC);
  CREATE INDEX viewing_history_video ON viewing_history(video_id);

  CREATE TABLE recommendations (
    id                INTEGER PRIMARY KEY,
    user_id           INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    title             TEXT NOT NULL,
    link              TEXT NOT NULL,
    image             TEXT NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    duration_seconds  INTEGER CHECK (duration_seconds IS NULL OR duration_seconds >= 0),
    is_public         INTEGER NOT NULL DEFAULT 1 CHECK (is_public IN (0, 1)),
    created_at        INTEGER NOT NULL
  );
  CREATE INDEX recommendations_user ON recommendations(user_id, created_at DESC, id DESC);

  CREATE TABLE attention_concepts (
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    category_id  INTEGER NOT NULL REFERENCES categories(id) ON DELETE CASCADE,
    value        REAL NOT NULL CHECK (value >= 0 AND value <= 1),
    updated_at   INTEGER,
    PRIMARY KEY (user_id, category_id)
  ) WITHOUT ROWID;

  CREATE TABLE attention_sources (
    id           INTEGER PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    video_id     INTEGER NOT NULL REFERENCES videos(id) ON DELETE CASCADE,
    supplier_id  INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    value        REAL NOT NULL CHECK (value >= 0 AND value <= 1),
    updated_at   INTEGER NOT NULL
  );
  CREATE INDEX attention_sources_user ON attention_sources(user_id);
  CREATE INDEX attention_sources_video ON attention_sources(video_id);
  CREATE INDEX attention_sources_supplier ON attention_sources(supplier_id);

  CREATE TABLE reading_list (
    id           INTEGER PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    category_id  INTEGER REFERENCES categories(id) ON DELETE SET NULL,
    title        TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    html_url     TEXT NOT NULL,
    xml_url      TEXT NOT NULL,
    position     INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
  );
  CREATE INDEX reading_list_user ON reading_list(user_id, position);
  `,

  // 2: change recording for incremental builds (docs/incremental.md, docs/database.md "change_log").
  // Every table logs its inserts, updates and deletes, so a change made by the site's own code through
  // any SQL client is seen. Each entry keeps the row's keys before and after: enough to find every
  // document the change affects after the fact, deletes and moves included. The triggers are
  // generated from src/db/change-log-triggers.ts; a table added by a later migration needs the same
  // three (test/db/change-log.test.ts checks every table has them).
  `
  CREATE TABLE change_log (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    table_name  TEXT NOT NULL,
    op          TEXT NOT NULL CHECK (op IN ('insert', 'update', 'delete')),
    old_keys    TEXT,
    new_keys    TEXT,
    changed_at  INTEGER NOT NULL DEFAULT (CAST(strftime('%s', 'now') AS INTEGER))
  );

  CREATE TABLE site_meta (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
  );
  INSERT INTO site_meta (key, value) VALUES ('database_id', lower(hex(randomblob(16))));

${changeLogTriggers(LOGGED_TABLES_V2)}
  `,

  // 3: moderation of submitted recommendations (docs/database.md "recommendations", docs/serve.md
  // "Moderating"). A row is published only when approved; rows from before this
  // migration stay published. The submitter's address feeds the per-client limits. The change log
  // keys now carry the status, so a change that leaves a row unpublished on both sides (a pending
  // row received, then rejected) renders nothing again.
  `
  ALTER TABLE recommendations ADD COLUMN status TEXT NOT NULL DEFAULT 'approved'
    CHECK (status IN ('pending', 'approved', 'rejected'));
  ALTER TABLE recommendations ADD COLUMN submitter_address TEXT;
  ALTER TABLE recommendations ADD COLUMN reviewed_at INTEGER;
  CREATE INDEX recommendations_submitter ON recommendations(submitter_address, created_at)
    WHERE submitter_address IS NOT NULL;
  CREATE INDEX recommendations_status ON recommendations(status, user_id) WHERE status = 'pending';

  DROP TRIGGER recommendations_log_insert;
  DROP TRIGGER recommendations_log_update;
  DROP TRIGGER recommendations_log_delete;
${tableTriggers('recommendations', LOGGED_TABLES_V3.recommendations!)}
  `,

  // 4: the schema refuses values of the wrong type at write time (src/db/type-checks.ts): triggers
  // generated from the description of every column (src/db/columns.ts). Rows that already hold
  // such values stay as they are; `migrate` reports them (TYPE_CHECK_VERSION).
  typeCheckMigration(SITE_TABLES),

  // 5: rows deleted by REPLACE are logged (src/db/replaced-rows.ts), so incremental builds remove
  // their documents: SQLite fires no delete trigger for them unless recursive triggers are on. And
  // a user whose creation time or name is corrected, which publishes it, is logged as a change
  // of the person (src/db/type-checks.ts, ownerColumnsLog).
  `${replacedRowsMigration(REPLACEABLE_TABLES)}\n${ownerColumnsLog(SITE_TABLES)}`,
];

/** The migration that makes the schema refuse wrong types; upgrading past it reports the rows that already break it. */
export const TYPE_CHECK_VERSION = 4;

export const SCHEMA_VERSION = MIGRATIONS.length;

export class SchemaVersionError extends VidfeedsError {
  constructor(
    readonly file: string,
    readonly found: number,
    readonly supported: number,
  ) {
    super(EXIT.usage, {
      where: `database ${file}`,
      what: `has schema version ${found}, but this vidfeeds supports up to version ${supported}`,
      hint: 'upgrade vidfeeds, or point --db at a database it made',
    });
  }
}

export function schemaVersion(db: Database.Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

export interface MigrationResult {
  from: number;
  to: number;
  /**
   * When this upgrade added the type checks (from an older version with rows in it): every stored
   * value that breaks them. They are kept as they are; builds decode them by their column's rule.
   */
  wrongTypes: ValueIssue[];
}

/** Applies the migrations a database lacks. Returns the versions before and after, and the rows the new type checks find. */
export function migrate(db: Database.Database, file: string): MigrationResult {
  const from = schemaVersion(db);
  if (from > SCHEMA_VERSION) throw new SchemaVersionError(file, from, SCHEMA_VERSION);
  for (let version = from; version < SCHEMA_VERSION; version++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[version]!);
      db.pragma(`user_version = ${version + 1}`);
    })();
  }
  const wrongTypes = from > 0 && from < TYPE_CHECK_VERSION ? [...wrongTypeRows(db, SITE_TABLES)] : [];
  return { from, to: SCHEMA_VERSION, wrongTypes };
}
