import { SITE_TABLES, typeCondition } from './columns.js';
import { KEY_FUNCTION } from './publishable-key.js';

/**
 * The columns the site reader reads, as the arrays its statements return, and the SQL conditions
 * that decide who and what is published. Every statement of the reader (src/db/reader-statements.ts)
 * builds on these, so they all agree on what may be published.
 */

/** The row a build iterates over before deciding whether a user can be published. */
export interface UserRow {
  id: number;
  username: string;
}

export interface VideoRow {
  id: number;
  publicId: string;
}

/**
 * A user's row as `userRaw` reads it, a value per column of USER_COLUMNS: any storage class in
 * any column (decoded by `userView`). An array, not an object keyed by name: building thirty
 * named properties for every user was a large share of reading the row (docs/performance.md,
 * "Figures behind the code").
 */
export type RawUser = readonly unknown[];

/** The columns of `users`, in the order `userRaw` reads them. */
export const USER_COLUMNS = Object.keys(SITE_TABLES.users!.columns);
const USER_COLUMN_AT = new Map(USER_COLUMNS.map((column, i) => [column, i]));

/** A column of a user's row. */
export function userColumn(raw: RawUser, column: string): unknown {
  const at = USER_COLUMN_AT.get(column);
  if (at === undefined) throw new Error(`users has no column ${column} among those read`);
  return raw[at];
}

/** A person seen from another document: [id, username, display_name, avatar_url, homepage_url, email]. */
export type RawPerson = [id: number, username: string, displayName: unknown, avatarUrl: unknown, homepageUrl: unknown, email: unknown];
/** The columns a group's owner is named by: the first three of RawPerson. */
export type RawOwner = [id: number, username: string, displayName: unknown];
export const PERSON_COLUMNS = (alias: string) => `${alias}.id, ${alias}.username, ${alias}.display_name, ${alias}.avatar_url, ${alias}.homepage_url, ${alias}.email`;

/**
 * A row of VIDEO_COLUMNS, in its order. Video statements return arrays (better-sqlite3's `raw`
 * mode): it builds them faster than objects with named keys, and
 * video rows are most of what a build reads (docs/performance.md, "Reading"). Every value is as
 * stored, of any storage class, until `videoOrProblem` decodes it.
 */
export type RawVideo = [
  id: number,
  publicId: unknown,
  title: unknown,
  description: unknown,
  durationSeconds: unknown,
  fileUrl: unknown,
  fileSize: unknown,
  fileType: unknown,
  width: unknown,
  height: unknown,
  thumbnailUrl: unknown,
  thumbnailWidth: unknown,
  thumbnailHeight: unknown,
  captionsUrl: unknown,
  /** As stored; its name comes from `categoryName`. */
  categoryId: unknown,
  /** The video's tag ids, comma-separated (null without tags); names come from `tagNames`. */
  tagIds: string | null,
  createdAt: unknown,
  updatedAt: unknown,
  ...uploader: RawPerson,
];

/** A row of OWN_VIDEO_COLUMNS: a video of a known uploader, without the uploader's columns. */
export type RawOwnVideo = RawVideo extends [...infer Own, ...RawPerson] ? Own : never;

/**
 * A user is published when active and when the columns whose rule is `owner` (src/db/columns.ts:
 * a text username, a valid creation time) hold values of their kind: decided in SQL, so every
 * statement (friends, uploaders, group owners, suppliers) agrees. `unpublishedRows` reports the others.
 */
export function publishedUser(alias: string): string {
  const owner = Object.entries(SITE_TABLES.users!.columns).filter(([, spec]) => spec.rule === 'owner');
  return [`${alias}.state = 'active'`, ...owner.map(([column, spec]) => typeCondition(spec, `${alias}.${column}`))].join(' AND ');
}

/**
 * A user another row lists (a video's uploader, a friend, a group's owner, a source's supplier):
 * published, and with a name the build can publish (src/db/publishable-key.ts). A user the build
 * skips for their name is thereby listed nowhere and their videos are not published, as when the
 * user is not active: no document links to pages that are never written. Names of letters,
 * digits, `-` and `_` are decided in SQL; the others by the build's rule, through the connection's
 * KEY_FUNCTION (`registerKeyFunction`).
 */
export function listedUser(alias: string): string {
  const name = `${alias}.username`;
  return `${publishedUser(alias)} AND (length(${name}) BETWEEN 1 AND 255 AND ${name} NOT GLOB '*[^A-Za-z0-9_-]*' OR ${KEY_FUNCTION}(${name}))`;
}

export const PUBLISHED_USER = publishedUser('u');
export const LISTED_USER = listedUser('u');
export const PUBLISHED_VIDEO = `v.visibility = 'public' AND typeof(v.public_id) = 'text' AND ${LISTED_USER}`;

/**
 * Columns of a video without its uploader's, in the order of `RawOwnVideo`: for a statement whose
 * rows all have one uploader already read (a user's uploads): the uploader's six columns, read
 * again on every row, would cost about a sixth of the statement's time on a feed-heavy site.
 */
export const OWN_VIDEO_COLUMNS = `
  v.id, v.public_id, v.title, v.description, v.duration_seconds, v.file_url, v.file_size, v.file_type,
  v.width, v.height, v.thumbnail_url, v.thumbnail_width, v.thumbnail_height, v.captions_url,
  v.category_id,
  (SELECT group_concat(vt.tag_id) FROM video_tags vt WHERE vt.video_id = v.id AND typeof(vt.tag_id) = 'integer'),
  v.created_at, v.updated_at`;
export const OWN_VIDEO_COLUMN_COUNT = 18;

/** Columns of a video with its uploader, in the order of `RawVideo`; use with `FROM videos v JOIN users u ON u.id = v.user_id`. */
export const VIDEO_COLUMNS = `${OWN_VIDEO_COLUMNS},
  ${PERSON_COLUMNS('u')}`;

/** Columns of a video that decide whether it can be published, in the order of VIDEO_COLUMNS' first 18. */
export const VIDEO_DECIDING = `v.id, v.public_id, v.title, v.file_url, v.thumbnail_url, v.thumbnail_width, v.thumbnail_height, v.created_at`;
/** A row's VIDEO_DECIDING columns, as videoProblem reads them. */
export type VideoDeciding = [
  id: number, publicId: unknown, title: unknown, fileUrl: unknown, thumbnailUrl: unknown, thumbnailWidth: unknown, thumbnailHeight: unknown, createdAt: unknown,
];
