import type Database from 'better-sqlite3';
import { registerKeyFunction } from './publishable-key.js';
import {
  OWN_VIDEO_COLUMNS,
  PERSON_COLUMNS,
  LISTED_USER,
  listedUser,
  PUBLISHED_USER,
  PUBLISHED_VIDEO,
  USER_COLUMNS,
  VIDEO_COLUMNS,
  VIDEO_DECIDING,
  type RawOwnVideo,
  type RawOwner,
  type RawPerson,
  type RawUser,
  type RawVideo,
  type UserRow,
  type VideoDeciding,
  type VideoRow,
} from './reader-columns.js';

/**
 * The statements of the site reader (src/db/site-reader.ts), each prepared once per connection:
 * those that list and look up users and videos, and those that read the parts of one user's
 * bundle. Rows are arrays where a build reads many of them (see RawVideo).
 */

/**
 * How many rows of a user's lists the reader reads: as many as the documents that show them
 * publish. The caller says (the build takes them from the formats: src/formats/read-limits.ts),
 * so the reader depends on no format.
 */
export interface ReaderLimits {
  /** A user's newest uploads (the RSS feed's items). */
  uploads: number;
  /** A user's newest groups (the Atom feed's entries). */
  groups: number;
  /** A user's newest public recommendations (the recommendations document). */
  recommendations: number;
}

/** Statements that list published users and videos, look them up, and name tags and categories. */
export function lookupStatements(db: Database.Database) {
  registerKeyFunction(db);
  const p = <T>(sql: string) => db.prepare<unknown[], T>(sql);
  const rawVideos = (sql: string) => db.prepare<unknown[], RawVideo>(sql).raw(true);
  return {
    tagName: db.prepare<[number], string>(`SELECT name FROM tags WHERE id = ? AND typeof(name) = 'text'`).pluck(),
    categoryName: db.prepare<[number], string>(`SELECT name FROM categories WHERE id = ? AND typeof(name) = 'text'`).pluck(),
    usersAll: p<UserRow>(`SELECT u.id, u.username FROM users u WHERE ${PUBLISHED_USER} ORDER BY u.username`),
    publishedCounts: db.prepare<[], { users: number; videos: number }>(
      `SELECT (SELECT COUNT(*) FROM users u WHERE ${PUBLISHED_USER}) AS users, (SELECT COUNT(*) FROM videos v JOIN users u ON u.id = v.user_id WHERE ${PUBLISHED_VIDEO}) AS videos`,
    ),
    userByName: p<UserRow>(`SELECT u.id, u.username FROM users u WHERE u.username = ? AND ${PUBLISHED_USER}`),
    userById: p<UserRow>(`SELECT u.id, u.username FROM users u WHERE u.id = ? AND ${PUBLISHED_USER}`),
    videosAll: p<VideoRow>(
      `SELECT v.id, v.public_id AS publicId FROM videos v JOIN users u ON u.id = v.user_id WHERE ${PUBLISHED_VIDEO} ORDER BY v.public_id`,
    ),
    videosOfUser: p<VideoRow>(
      `SELECT v.id, v.public_id AS publicId FROM videos v JOIN users u ON u.id = v.user_id WHERE u.username = ? AND ${PUBLISHED_VIDEO} ORDER BY v.public_id`,
    ),
    videosAllRead: rawVideos(
      `SELECT ${VIDEO_COLUMNS} FROM videos v JOIN users u ON u.id = v.user_id WHERE ${PUBLISHED_VIDEO} ORDER BY v.public_id`,
    ),
    videosReadById: rawVideos(
      `SELECT ${VIDEO_COLUMNS} FROM videos v JOIN users u ON u.id = v.user_id WHERE v.id BETWEEN ? AND ? AND ${PUBLISHED_VIDEO} ORDER BY v.id`,
    ),
    videosOfUserRead: rawVideos(
      `SELECT ${VIDEO_COLUMNS} FROM videos v JOIN users u ON u.id = v.user_id WHERE u.username = ? AND ${PUBLISHED_VIDEO} ORDER BY v.public_id`,
    ),
    videoRowById: p<VideoRow>(
      `SELECT v.id, v.public_id AS publicId FROM videos v JOIN users u ON u.id = v.user_id WHERE v.id = ? AND ${PUBLISHED_VIDEO}`,
    ),
    publishableKeys: p<unknown[]>(
      `SELECT ${VIDEO_DECIDING} FROM videos v JOIN users u ON u.id = v.user_id WHERE ${PUBLISHED_VIDEO} ORDER BY v.public_id`,
    ).raw(true),
    publishableKeysById: p<unknown[]>(
      `SELECT ${VIDEO_DECIDING} FROM videos v JOIN users u ON u.id = v.user_id WHERE v.id BETWEEN ? AND ? AND ${PUBLISHED_VIDEO} ORDER BY v.id`,
    ).raw(true),
    usersById: p<UserRow>(`SELECT u.id, u.username FROM users u WHERE u.id BETWEEN ? AND ? AND ${PUBLISHED_USER} ORDER BY u.id`),
    // One subquery each: SQLite reads min() or max() of a rowid from the end of the table only
    // when it is the query's sole aggregate (both in one SELECT scan the whole table).
    userIdBounds: p<{ min: number | null; max: number | null }>(`SELECT (SELECT min(id) FROM users) AS min, (SELECT max(id) FROM users) AS max`),
    videoIdBounds: p<{ min: number | null; max: number | null }>(`SELECT (SELECT min(id) FROM videos) AS min, (SELECT max(id) FROM videos) AS max`),
    videoStatus: p<{ id: number; status: 'published' | 'private' | 'missing' }>(
      `SELECT v.id, CASE WHEN ${PUBLISHED_VIDEO} THEN 'published' WHEN ${LISTED_USER} THEN 'private' ELSE 'missing' END AS status
       FROM videos v JOIN users u ON u.id = v.user_id WHERE v.public_id = ?`,
    ),
    videoById: rawVideos(`SELECT ${VIDEO_COLUMNS} FROM videos v JOIN users u ON u.id = v.user_id WHERE v.id = ? AND ${PUBLISHED_VIDEO}`),
  };
}

export type LookupStatements = ReturnType<typeof lookupStatements>;

/**
 * A group row as the bundle reads it: the group's columns, then its owner's id. The owner is read
 * by `groupOwner` (listed owners only, listedUser), which the reader keeps per snapshot: joined
 * into the statement, the owner was a random read of `users` for every membership, most of the Atom
 * feed's reading (docs/performance.md, "Figures behind the code").
 */
export type RawGroup = [
  id: number, slug: unknown, title: unknown, description: unknown, featuredVideoId: unknown,
  createdAt: unknown, updatedAt: unknown, ownerId: unknown,
];

/** The visible groups a user (the one parameter) belongs to, whoever owns them (see RawGroup). */
const GROUPS_OF = `SELECT g.id, g.slug, g.title, g.description, g.featured_video_id, g.created_at, g.updated_at, g.owner_id
       FROM group_members m JOIN groups g ON g.id = m.group_id
       WHERE m.user_id = ? AND g.hidden = 0`;

/** Statements that read the parts of one user's bundle, newest first where a document lists the newest. */
export function bundleStatements(db: Database.Database, limits: ReaderLimits) {
  const p = <T>(sql: string) => db.prepare<unknown[], T>(sql);
  const rawVideos = (sql: string) => db.prepare<unknown[], RawVideo>(sql).raw(true);
  registerKeyFunction(db);
  for (const [name, limit] of Object.entries(limits)) {
    // Written into the SQL as a number: only a whole number may go there.
    if (!Number.isSafeInteger(limit) || limit < 0) throw new Error(`the reader's ${name} limit must be a whole number, not ${String(limit)}`);
  }
  return {
    userRaw: db.prepare<[number], RawUser>(`SELECT ${USER_COLUMNS.map((column) => `"${column}"`).join(', ')} FROM users WHERE id = ?`).raw(true),
    // The uploader is the user whose bundle is read (userBundle): their columns are not read again.
    uploads: db.prepare<unknown[], RawOwnVideo>(
      `SELECT ${OWN_VIDEO_COLUMNS} FROM videos v JOIN users u ON u.id = v.user_id
       WHERE v.user_id = ? AND ${PUBLISHED_VIDEO} ORDER BY v.created_at DESC, v.id DESC LIMIT ${limits.uploads}`,
    ).raw(true),
    // Every group, the feed's and the archive's: the feed's are the newest of listed owners (RawGroup).
    groupsNewestFirst: p<RawGroup>(`${GROUPS_OF} ORDER BY g.created_at DESC, g.id DESC`).raw(true),
    groupOwner: db.prepare<[unknown], RawOwner>(`SELECT o.id, o.username, o.display_name FROM users o WHERE o.id = ? AND ${listedUser('o')}`).raw(true),
    // The archives: uploads oldest first (every row, or those older than the feed's last row), with
    // the columns that decide whether each can be published (a page holds only rows that can);
    // and pages oldest first after the last row of the page before (a walk along the index,
    // however long the history).
    uploadsDeciding: db.prepare<[number], unknown[]>(`SELECT ${VIDEO_DECIDING} FROM videos v JOIN users u ON u.id = v.user_id WHERE v.user_id = ? AND ${PUBLISHED_VIDEO} ORDER BY v.created_at, v.id`).raw(true),
    uploadsDecidingBefore: db.prepare<[number, unknown, number], unknown[]>(
      `SELECT ${VIDEO_DECIDING} FROM videos v JOIN users u ON u.id = v.user_id
       WHERE v.user_id = ? AND ${PUBLISHED_VIDEO} AND (v.created_at, v.id) < (?, ?) ORDER BY v.created_at, v.id`,
    ).raw(true),
    uploadsFrom: db.prepare<unknown[], RawOwnVideo>(
      `SELECT ${OWN_VIDEO_COLUMNS} FROM videos v JOIN users u ON u.id = v.user_id
       WHERE v.user_id = ? AND ${PUBLISHED_VIDEO} AND (v.created_at, v.id) > (?, ?) ORDER BY v.created_at, v.id LIMIT ?`,
    ).raw(true),
    groupsFrom: p<RawGroup>(`${GROUPS_OF} AND (g.created_at, g.id) > (?, ?) ORDER BY g.created_at, g.id LIMIT ?`).raw(true),
    friends: p<RawPerson>(
      `SELECT ${PERSON_COLUMNS('u')}
       FROM friendships f JOIN users u ON u.id = f.friend_id
       WHERE f.user_id = ? AND ${LISTED_USER} ORDER BY u.username`,
    ).raw(true),
    accounts: p<{ id: number; service_homepage_url: unknown; account_name: unknown; profile_url: unknown }>(
      `SELECT id, service_homepage_url, account_name, profile_url FROM online_accounts WHERE user_id = ? ORDER BY id`,
    ),
    interests: p<{ name: string }>(
      `SELECT t.name FROM interests i JOIN tags t ON t.id = i.tag_id WHERE i.user_id = ? AND typeof(t.name) = 'text' ORDER BY t.name`,
    ),
    saved: rawVideos(
      `SELECT ${VIDEO_COLUMNS} FROM saved_videos s JOIN videos v ON v.id = s.video_id JOIN users u ON u.id = v.user_id
       WHERE s.user_id = ? AND ${PUBLISHED_VIDEO} ORDER BY s.position, s.saved_at, v.id`,
    ),
    history: rawVideos(
      `SELECT ${VIDEO_COLUMNS} FROM
         (SELECT video_id, max(viewed_at) AS last_viewed FROM viewing_history WHERE user_id = ? GROUP BY video_id) h
       JOIN videos v ON v.id = h.video_id JOIN users u ON u.id = v.user_id
       WHERE ${PUBLISHED_VIDEO} ORDER BY h.last_viewed DESC, v.id DESC LIMIT 100`,
    ),
    recommendations: p<{
      id: number; title: unknown; link: unknown; image: unknown; description: unknown;
      duration_seconds: unknown; created_at: unknown;
    }>(
      `SELECT id, title, link, image, description, duration_seconds, created_at FROM recommendations
       WHERE user_id = ? AND is_public = 1 AND status = 'approved' ORDER BY created_at DESC, id DESC`,
    ),
    // Every category for every user: an array per row (see RawVideo) costs less than an object.
    concepts: p<[categoryId: number, category: string, value: unknown, updatedAt: unknown]>(
      `SELECT c.id, c.name AS category, a.value, a.updated_at FROM categories c
       LEFT JOIN attention_concepts a ON a.category_id = c.id AND a.user_id = ? WHERE typeof(c.name) = 'text' ORDER BY c.name`,
    ).raw(true),
    // The video's columns that decide whether it can be published (VIDEO_DECIDING), then the source's.
    sources: p<[...video: VideoDeciding, id: number, value: unknown, updatedAt: unknown, ...supplier: RawPerson]>(
      `SELECT ${VIDEO_DECIDING}, s.id, s.value, s.updated_at, ${PERSON_COLUMNS('su')}
       FROM attention_sources s JOIN videos v ON v.id = s.video_id JOIN users u ON u.id = v.user_id
            JOIN users su ON su.id = s.supplier_id
       WHERE s.user_id = ? AND ${PUBLISHED_VIDEO} AND ${listedUser('su')}
       ORDER BY s.value DESC, v.public_id, su.username`,
    ).raw(true),
    readingList: p<{
      id: number; category: string | null; title: unknown; description: unknown; html_url: unknown; xml_url: unknown;
      created_at: unknown; updated_at: unknown;
    }>(
      `SELECT r.id, CASE WHEN typeof(c.name) = 'text' THEN c.name END AS category, r.title, r.description, r.html_url, r.xml_url, r.created_at, r.updated_at
       FROM reading_list r LEFT JOIN categories c ON c.id = r.category_id
       WHERE r.user_id = ? ORDER BY c.name IS NULL, c.name, r.position, r.id`,
    ),
  };
}

export type BundleStatements = ReturnType<typeof bundleStatements>;
