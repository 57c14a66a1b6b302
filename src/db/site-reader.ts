import type Database from 'better-sqlite3';
import { isUtf8 } from 'node:buffer';
import { hash } from 'node:crypto';
import { segmentProblem } from '../paths/names.js';
import { ATOM_ENTRIES } from '../formats/atom.js';
import { RSS_ITEMS } from '../formats/rss.js';
import { webUrl } from '../render/urls.js';
import { columnSpec, SITE_TABLES, typeCondition } from './columns.js';
import { describeValue, issueOf, RowDecoder, type IssueSink, type ValueIssue } from './decode.js';
import { wrongTypeRows } from './type-checks.js';
import type {
  AttentionConcept,
  AttentionSource,
  GroupView,
  IdBounds,
  OnlineAccount,
  PersonRef,
  ReadingListEntry,
  RecommendationView,
  UserBundle,
  UserPart,
  UserView,
  VideoView,
} from '../model/views.js';

/**
 * Reads the site database into view models. Every privacy rule lives here, in SQL, so no renderer
 * can see what it must not publish:
 * - a user is published only when `state = 'active'`;
 * - a video only when it is public and its uploader is published;
 * - a group only when it is not hidden and its owner is published;
 * - e-mail, phone, chat ids and address only when the user chose to show them (the SHA-1 of the
 *   e-mail is the one exception: FOAF publishes it, PRODUCT.md decision 3).
 *
 * Statements are prepared once. Callers hold one read transaction (`snapshot`) for a consistent view.
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

/** Why a public video cannot be published; `issue` when a value of the wrong type decided it. */
export interface VideoProblem {
  problem: string;
  issue?: ValueIssue;
}

/** A published video's row, and its view (or why it cannot be published) when asked for. */
export interface VideoEntry {
  row: VideoRow;
  read(): VideoView | VideoProblem | null;
}

/**
 * A video looked up by its public id, as oEmbed answers it (PRODUCT.md decision 2): `private`
 * (401) only when the uploader is published and the video is not public; a video of a suspended
 * or deleted user, or a row that cannot be published, is `missing` (404) like an unknown id, so
 * nothing about it is revealed.
 */
export type VideoLookup = { status: 'published'; video: VideoView } | { status: 'private' } | { status: 'missing' };

/**
 * A user's row as `userRaw` reads it, a value per column of USER_COLUMNS: any storage class in
 * any column (decoded by `userView`). An array, not an object keyed by name: building thirty
 * named properties for every user took half of reading the row (5.1 µs against 2.8).
 */
type RawUser = readonly unknown[];

/** The columns of `users`, in the order `userRaw` reads them. */
const USER_COLUMNS = Object.keys(SITE_TABLES.users!.columns);
const USER_COLUMN_AT = new Map(USER_COLUMNS.map((column, i) => [column, i]));

/** A column of a user's row. */
function userColumn(raw: RawUser, column: string): unknown {
  const at = USER_COLUMN_AT.get(column);
  if (at === undefined) throw new Error(`users has no column ${column} among those read`);
  return raw[at];
}

/** A person seen from another document: [id, username, display_name, avatar_url, homepage_url, email]. */
type RawPerson = [id: number, username: string, displayName: unknown, avatarUrl: unknown, homepageUrl: unknown, email: unknown];
const PERSON_COLUMNS = (alias: string) => `${alias}.id, ${alias}.username, ${alias}.display_name, ${alias}.avatar_url, ${alias}.homepage_url, ${alias}.email`;

/**
 * A row of VIDEO_COLUMNS, in its order. Video statements return arrays (better-sqlite3's `raw`
 * mode): it builds them in about 60% of the time it takes to build objects with named keys, and
 * video rows are most of what a build reads (docs/performance.md, "Reading"). Every value is as
 * stored, of any storage class, until `videoOrProblem` decodes it.
 */
type RawVideo = [
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
type RawOwnVideo = RawVideo extends [...infer Own, ...RawPerson] ? Own : never;

/**
 * A user is published when active and when the columns whose rule is `owner` (src/db/columns.ts:
 * a text username, a valid creation time) hold values of their kind: decided in SQL, so every
 * statement (friends, uploaders, group owners, suppliers) agrees. `unpublishedRows` reports the others.
 */
function publishedUser(alias: string): string {
  const owner = Object.entries(SITE_TABLES.users!.columns).filter(([, spec]) => spec.rule === 'owner');
  return [`${alias}.state = 'active'`, ...owner.map(([column, spec]) => typeCondition(spec, `${alias}.${column}`))].join(' AND ');
}

const PUBLISHED_USER = publishedUser('u');
const PUBLISHED_VIDEO = `v.visibility = 'public' AND typeof(v.public_id) = 'text' AND ${PUBLISHED_USER}`;

/**
 * Columns of a video without its uploader's, in the order of `RawOwnVideo`: for a statement whose
 * rows all have one uploader already read (a user's uploads), where the uploader's six columns
 * on every row were a sixth of the statement's time on a feed-heavy site (docs/performance.md).
 */
const OWN_VIDEO_COLUMNS = `
  v.id, v.public_id, v.title, v.description, v.duration_seconds, v.file_url, v.file_size, v.file_type,
  v.width, v.height, v.thumbnail_url, v.thumbnail_width, v.thumbnail_height, v.captions_url,
  v.category_id,
  (SELECT group_concat(vt.tag_id) FROM video_tags vt WHERE vt.video_id = v.id AND typeof(vt.tag_id) = 'integer'),
  v.created_at, v.updated_at`;
const OWN_VIDEO_COLUMN_COUNT = 18;

/** Columns of a video with its uploader, in the order of `RawVideo`; use with `FROM videos v JOIN users u ON u.id = v.user_id`. */
const VIDEO_COLUMNS = `${OWN_VIDEO_COLUMNS},
  ${PERSON_COLUMNS('u')}`;

/** Columns of a video that decide whether it can be published, in the order of VIDEO_COLUMNS' first 18. */
const VIDEO_DECIDING = `v.id, v.public_id, v.title, v.file_url, v.thumbnail_url, v.thumbnail_width, v.thumbnail_height, v.created_at`;

/** SHA-1 hex of `mailto:` + address, as FOAF's mbox_sha1sum defines it. */
export function mboxSha1(email: string): string {
  return sha1Hex(`mailto:${email}`);
}

/** One-shot `hash` (the text as UTF-8, like `createHash().update()`): a third of the time of a Hash object, and every published person has one. */
function sha1Hex(text: string): string {
  return hash('sha1', text, 'hex');
}

/** What decoding needs besides the row: where issues go, and the check of text that may not be UTF-8. */
interface DecodeContext {
  sink: IssueSink;
  invalidUtf8: (table: string, column: string, rowId: number) => boolean;
  /**
   * People already decoded in this snapshot, by user id (null outside one, where rows may change
   * between statements). A feed names its uploader on every item: decoding them (two URLs and a
   * SHA-1) once per feed instead of once per item is a fifth of reading a feed-heavy user.
   */
  people: Map<number, PersonRef> | null;
  /** A tag's name (null: not text), looked up by id; kept per snapshot like `people`. */
  tagName: (id: number) => string | null;
  /** A category's name (null: none, or not text), looked up by id; kept per snapshot like `people`. */
  categoryById: (id: number) => string | null;
  /**
   * A video's published tag names by its list of tag ids, kept per snapshot like `people` (null
   * outside one): videos share their few tags' combinations, and naming and sorting them was a
   * tenth of decoding a video.
   */
  tagLists: Map<string, readonly string[]> | null;
}

/** People kept per snapshot at most; the map starts again when full (a feed's items share one uploader). */
const PEOPLE_KEPT = 1024;
/** Tag names (and category names) kept per snapshot at most, likewise. */
const TAGS_KEPT = 65_536;

/** A tag's or category's name by id from `statement`, kept in `names` while a snapshot is open (null outside one). */
function keptName(names: Map<number, string | null> | null, id: number, statement: Database.Statement<[number], string>): string | null {
  const known = names?.get(id);
  if (known !== undefined) return known;
  const name = statement.get(id) ?? null;
  if (names !== null) {
    if (names.size >= TAGS_KEPT) names.clear();
    names.set(id, name);
  }
  return name;
}

function decoder(ctx: DecodeContext, table: string, rowId: number | string): RowDecoder {
  return new RowDecoder(table, rowId, ctx.sink, ctx.invalidUtf8);
}

/** A published user seen from another document. Its username passed SQL (text); the rest is decoded. */
function person(ctx: DecodeContext, raw: RawPerson): PersonRef {
  const known = ctx.people?.get(raw[0]);
  if (known !== undefined) return known;
  const decoded = decodePerson(ctx, raw);
  if (ctx.people !== null) {
    if (ctx.people.size >= PEOPLE_KEPT) ctx.people.clear();
    ctx.people.set(raw[0], decoded);
  }
  return decoded;
}

function decodePerson(ctx: DecodeContext, [id, username, displayName, avatarUrl, homepageUrl, email]: RawPerson): PersonRef {
  const d = decoder(ctx, 'users', id);
  const address = d.text('email', email);
  return {
    username,
    displayName: d.text('display_name', displayName) ?? '',
    avatarUrl: webUrl(d.text('avatar_url', avatarUrl)),
    homepageUrl: webUrl(d.text('homepage_url', homepageUrl)),
    emailSha1: address ? mboxSha1(address) : null,
  };
}

/** Why a public video cannot be published, from the columns whose rule is `row`; or null. */
function videoProblem(ctx: DecodeContext, row: readonly unknown[]): VideoProblem | null {
  const checked = checkVideo(ctx, row);
  return 'problem' in checked ? checked : null;
}

/**
 * Why a public video cannot be published (see `videoProblem`), or its file and thumbnail URLs as
 * published and its creation time: decoded once, since parsing URLs was a tenth of reading a
 * feed-heavy user.
 */
function checkVideo(
  ctx: DecodeContext,
  [id, publicId, title, fileUrl, thumbnailUrl, thumbnailWidth, thumbnailHeight, createdAt]: readonly unknown[],
  d = decoder(ctx, 'videos', id as number),
): VideoProblem | { fileUrl: string; thumbnailUrl: string; createdAt: Date } {
  d.text('public_id', publicId);
  d.text('title', title);
  const file = d.text('file_url', fileUrl);
  const thumbnail = d.text('thumbnail_url', thumbnailUrl);
  d.integer('thumbnail_width', thumbnailWidth);
  d.integer('thumbnail_height', thumbnailHeight);
  const created = d.time('created_at', createdAt);
  const issue = d.rejected;
  if (issue !== null) return { problem: `has ${issue.found} in ${issue.column} (expected ${issue.expected})`, issue };
  const published = { fileUrl: webUrl(file), thumbnailUrl: webUrl(thumbnail) };
  if (published.fileUrl === null) return { problem: 'has a file_url that is not an absolute http(s) URL' };
  if (published.thumbnailUrl === null) return { problem: 'has a thumbnail_url that is not an absolute http(s) URL' };
  // A time that passed its check: a row without one was rejected above.
  return { fileUrl: published.fileUrl, thumbnailUrl: published.thumbnailUrl, createdAt: created! };
}

/**
 * The name of a video's category, as joining `categories` on `category_id` gave it, without a
 * subquery on every video row: categories are few, and their names are kept per snapshot. A
 * `category_id` that is not a safe integer (text, a real, a BLOB; the type checks report it)
 * names no category: SQL would match none either, but for an integer beyond 2^53, which no
 * JavaScript number holds exactly.
 */
function categoryName(ctx: DecodeContext, categoryId: unknown): string | null {
  if (typeof categoryId !== 'number' || !Number.isSafeInteger(categoryId)) return null;
  const name = ctx.categoryById(categoryId);
  return name !== null && validName(name) ? name : null;
}

/**
 * The names of a video's tags, in SQLite's order of text (its BINARY collation: the bytes of
 * UTF-8, which is the order of code points), ties by id. Reading ids in SQL and names from a
 * per-snapshot map costs a fraction of joining, sorting and aggregating the names for every row
 * (docs/performance.md, "Reading"): 2 µs a video on a feed-heavy site.
 */
function tagNames(ctx: DecodeContext, ids: string | null): readonly string[] {
  if (ids === null) return NO_TAGS;
  const known = ctx.tagLists?.get(ids);
  if (known !== undefined) return known;
  const names = Object.freeze(namedTags(ctx, ids).filter(validName));
  if (ctx.tagLists !== null) {
    if (ctx.tagLists.size >= TAGS_KEPT) ctx.tagLists.clear();
    ctx.tagLists.set(ids, names);
  }
  return names;
}

const NO_TAGS: readonly string[] = Object.freeze([]);

function namedTags(ctx: DecodeContext, ids: string): string[] {
  const tags: Array<{ id: number; name: string }> = [];
  for (const text of ids.split(',')) {
    const id = Number(text);
    const name = ctx.tagName(id);
    if (name !== null) tags.push({ id, name });
  }
  if (tags.length > 1) tags.sort((a, b) => byCodePoint(a.name, b.name) || a.id - b.id);
  return tags.map((tag) => tag.name);
}

/**
 * Compares strings by code point, as SQLite compares UTF-8 text. UTF-16 units order the same way
 * except a surrogate (half of a code point above U+FFFF) against a unit from U+E000 to U+FFFF.
 */
export function byCodePoint(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit < 0xe000 ? unit + 0x2000 : unit - 0x800;
}

/** The view of a published video row, or why it cannot be published (see `videoProblem`). */
function videoOrProblem(ctx: DecodeContext, raw: RawVideo): VideoView | VideoProblem {
  return ownVideoOrProblem(ctx, raw as unknown as RawOwnVideo, raw.slice(OWN_VIDEO_COLUMN_COUNT) as RawPerson);
}

/** As `videoOrProblem`, for a row without its uploader's columns, whose uploader is `uploader` (decoded, or its columns). */
function ownVideoOrProblem(ctx: DecodeContext, raw: RawOwnVideo, uploader: RawPerson | PersonRef): VideoView | VideoProblem {
  const [
    id, publicId, title, description, durationSeconds, fileUrl, fileSize, fileType, width, height,
    thumbnailUrl, thumbnailWidth, thumbnailHeight, captionsUrl, categoryId, tagIds, createdAt, updatedAt,
  ] = raw;
  // One decoder for the row: the checked columns are decoded once (an issue is reported once either way).
  const d = decoder(ctx, 'videos', id);
  const checked = checkVideo(ctx, [id, publicId, title, fileUrl, thumbnailUrl, thumbnailWidth, thumbnailHeight, createdAt], d);
  if ('problem' in checked) return checked;
  const created = checked.createdAt;
  return {
    id,
    publicId: publicId as string,
    title: title as string,
    description: d.text('description', description) ?? '',
    durationSeconds: d.integer('duration_seconds', durationSeconds),
    fileUrl: checked.fileUrl,
    fileSize: d.integer('file_size', fileSize),
    fileType: d.text('file_type', fileType) ?? 'application/octet-stream',
    width: d.integer('width', width),
    height: d.integer('height', height),
    thumbnailUrl: checked.thumbnailUrl,
    thumbnailWidth: thumbnailWidth as number,
    thumbnailHeight: thumbnailHeight as number,
    captionsUrl: webUrl(d.text('captions_url', captionsUrl)),
    category: categoryName(ctx, categoryId),
    tags: tagNames(ctx, tagIds),
    uploader: Array.isArray(uploader) ? person(ctx, uploader) : uploader,
    createdAt: created,
    updatedAt: d.time('updated_at', updatedAt) ?? created,
  };
}

function userView(ctx: DecodeContext, raw: RawUser): UserView {
  const id = userColumn(raw, 'id') as number;
  const d = decoder(ctx, 'users', id);
  const text = (column: string) => d.text(column, userColumn(raw, column));
  const flag = (column: string) => d.flag(column, userColumn(raw, column));
  const email = text('email');
  const shown = (isShown: boolean, value: string | null) => (isShown && value ? value : null);
  const address = {
    street_address: text('street_address'),
    locality: text('locality'),
    region: text('region'),
    region_name: text('region_name'),
    postal_code: text('postal_code'),
    country_name: text('country_name'),
  };
  const hasAddress = flag('show_address') && [address.street_address, address.locality, address.region, address.postal_code, address.country_name].some(Boolean);
  const chatShown = flag('show_chat_ids');
  const chat = {
    aim: text('aim_chat_id'),
    yahoo: text('yahoo_chat_id'),
    msn: text('msn_chat_id'),
    icq: text('icq_chat_id'),
    jabber: text('jabber_chat_id'),
  };
  // Published users passed SQL's `owner` columns (publishedUser): created_at is a valid time.
  const createdAt = d.time('created_at', userColumn(raw, 'created_at'))!;
  return {
    id,
    username: userColumn(raw, 'username') as string,
    displayName: text('display_name') ?? '',
    title: text('title') ?? '',
    givenName: text('given_name') ?? '',
    familyName: text('family_name') ?? '',
    email: shown(flag('show_email'), email),
    emailSha1: email ? mboxSha1(email) : null,
    phone: shown(flag('show_phone'), text('phone')),
    homepageUrl: webUrl(text('homepage_url')),
    avatarUrl: webUrl(text('avatar_url')),
    openidUrl: webUrl(text('openid_url')),
    chatIds: chatShown
      ? {
          aim: chat.aim || null,
          yahoo: chat.yahoo || null,
          // E-mail-shaped ids: published only as their hash (seed 2.3, "some are hashed").
          msnSha1: chat.msn ? sha1Hex(chat.msn) : null,
          icq: chat.icq || null,
          jabberSha1: chat.jabber ? sha1Hex(chat.jabber) : null,
        }
      : null,
    address: hasAddress
      ? {
          streetAddress: address.street_address ?? '',
          locality: address.locality ?? '',
          region: address.region ?? '',
          regionName: address.region_name ?? address.region ?? '',
          postalCode: address.postal_code ?? '',
          countryName: address.country_name ?? '',
        }
      : null,
    createdAt,
    updatedAt: d.time('updated_at', userColumn(raw, 'updated_at')) ?? createdAt,
  };
}

export class SiteReader {
  private readonly stmt;
  /** Where value issues go (the build's reporter); each is passed on once per reader. */
  private issueSink: IssueSink | null = null;
  private readonly seenIssues = new Set<string>();
  private readonly rawText = new Map<string, Database.Statement<unknown[], unknown>>();
  private readonly ctx: DecodeContext;

  constructor(
    private readonly db: Database.Database,
    private readonly recommendationsCount: number,
  ) {
    const p = <T>(sql: string) => db.prepare<unknown[], T>(sql);
    const rawVideos = (sql: string) => db.prepare<unknown[], RawVideo>(sql).raw(true);
    this.ctx = {
      sink: (issue) => this.report(issue),
      invalidUtf8: (table, column, rowId) => this.invalidUtf8(table, column, rowId),
      people: null,
      tagName: (id) => keptName(this.tags, id, this.stmt.tagName),
      categoryById: (id) => keptName(this.categories, id, this.stmt.categoryName),
      tagLists: null,
    };
    this.stmt = {
      tagName: db.prepare<[number], string>(`SELECT name FROM tags WHERE id = ? AND typeof(name) = 'text'`).pluck(),
      categoryName: db.prepare<[number], string>(`SELECT name FROM categories WHERE id = ? AND typeof(name) = 'text'`).pluck(),
      usersAll: p<UserRow>(`SELECT u.id, u.username FROM users u WHERE ${PUBLISHED_USER} ORDER BY u.username`),
      userByName: p<UserRow>(`SELECT u.id, u.username FROM users u WHERE u.username = ? AND ${PUBLISHED_USER}`),
      userById: p<UserRow>(`SELECT u.id, u.username FROM users u WHERE u.id = ? AND ${PUBLISHED_USER}`),
      userRaw: db.prepare<[number], RawUser>(`SELECT ${USER_COLUMNS.map((column) => `"${column}"`).join(', ')} FROM users WHERE id = ?`).raw(true),
      videosAll: p<VideoRow>(
        `SELECT v.id, v.public_id AS publicId FROM videos v JOIN users u ON u.id = v.user_id WHERE ${PUBLISHED_VIDEO} ORDER BY v.public_id`,
      ),
      videosOfUser: p<VideoRow>(
        `SELECT v.id, v.public_id AS publicId FROM videos v JOIN users u ON u.id = v.user_id WHERE u.username = ? AND ${PUBLISHED_VIDEO} ORDER BY v.public_id`,
      ),
      videosAllRead: rawVideos(
        `SELECT ${VIDEO_COLUMNS} FROM videos v JOIN users u ON u.id = v.user_id WHERE ${PUBLISHED_VIDEO} ORDER BY v.public_id`,
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
        `SELECT v.id, CASE WHEN ${PUBLISHED_VIDEO} THEN 'published' WHEN ${PUBLISHED_USER} THEN 'private' ELSE 'missing' END AS status
         FROM videos v JOIN users u ON u.id = v.user_id WHERE v.public_id = ?`,
      ),
      videoById: rawVideos(`SELECT ${VIDEO_COLUMNS} FROM videos v JOIN users u ON u.id = v.user_id WHERE v.id = ? AND ${PUBLISHED_VIDEO}`),
      // The uploader is the user whose bundle is read (userBundle): their columns are not read again.
      uploads: db.prepare<unknown[], RawOwnVideo>(
        `SELECT ${OWN_VIDEO_COLUMNS} FROM videos v JOIN users u ON u.id = v.user_id
         WHERE v.user_id = ? AND ${PUBLISHED_VIDEO} ORDER BY v.created_at DESC, v.id DESC LIMIT ${RSS_ITEMS}`,
      ).raw(true),
      groups: p<[
        id: number, slug: unknown, title: unknown, description: unknown, featuredVideoId: unknown,
        createdAt: unknown, updatedAt: unknown, ...owner: RawPerson,
      ]>(
        `SELECT g.id, g.slug, g.title, g.description, g.featured_video_id, g.created_at, g.updated_at, ${PERSON_COLUMNS('o')}
         FROM group_members m JOIN groups g ON g.id = m.group_id JOIN users o ON o.id = g.owner_id
         WHERE m.user_id = ? AND g.hidden = 0 AND ${publishedUser('o')}
         ORDER BY g.created_at DESC, g.id DESC LIMIT ${ATOM_ENTRIES}`,
      ).raw(true),
      friends: p<RawPerson>(
        `SELECT ${PERSON_COLUMNS('u')}
         FROM friendships f JOIN users u ON u.id = f.friend_id
         WHERE f.user_id = ? AND ${PUBLISHED_USER} ORDER BY u.username`,
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
      sources: p<[id: number, videoId: number, publicId: unknown, title: unknown, value: unknown, updatedAt: unknown, ...supplier: RawPerson]>(
        `SELECT s.id, v.id, v.public_id, v.title, s.value, s.updated_at, ${PERSON_COLUMNS('su')}
         FROM attention_sources s JOIN videos v ON v.id = s.video_id JOIN users u ON u.id = v.user_id
              JOIN users su ON su.id = s.supplier_id
         WHERE s.user_id = ? AND ${PUBLISHED_VIDEO} AND ${publishedUser('su')}
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

  /**
   * Where to report values of the wrong type or out of their domain (src/db/decode.ts). Each
   * (table, row, column) is reported once per sink, however often the row is read: a build sets
   * its own, and hears of every bad value it reads.
   */
  onIssue(sink: IssueSink | null): void {
    this.issueSink = sink;
    this.seenIssues.clear();
  }

  /** Passes an issue on to the sink, once per reader. */
  report(issue: ValueIssue): void {
    const key = `${issue.table}\u0000${issue.row}\u0000${issue.column}`;
    if (this.seenIssues.has(key)) return;
    this.seenIssues.add(key);
    this.issueSink?.(issue);
  }

  /**
   * Whether a text value holding U+FFFD was stored as bytes that are not UTF-8: better-sqlite3
   * reads such bytes as U+FFFD, so only the stored bytes tell. Rare, so looked up when it happens.
   */
  private invalidUtf8(table: string, column: string, rowId: number): boolean {
    columnSpec(table, column);
    const key = `${table}.${column}`;
    let stmt = this.rawText.get(key);
    if (stmt === undefined) {
      // Names come from the description (columnSpec threw otherwise), never from the database.
      stmt = this.db.prepare(`SELECT CAST(${column} AS BLOB) FROM ${table} WHERE id = ?`).pluck();
      this.rawText.set(key, stmt);
    }
    const bytes = stmt.get(rowId);
    return Buffer.isBuffer(bytes) && !isUtf8(bytes);
  }

  /**
   * Rows left out by a decision SQL makes (src/db/columns.ts, rules `sql` and `owner`, and the
   * names): a reference of another type joins no row, a flag or enum of another value never equals
   * the published one, a user without a text username or a valid creation time is not published.
   * Reported here, table by table, so each such row is named once. A full scan: full builds only.
   */
  unpublishedRows(): void {
    for (const issue of wrongTypeRows(this.db, SITE_TABLES, (c) => c.rule !== 'omit' && c.rule !== 'row' || c.kind === 'name')) this.report(issue);
    // Tag and category names that are not valid UTF-8: SQL cannot tell, and reads them as text.
    for (const table of ['categories', 'tags'] as const) {
      const rows = this.db.prepare(`SELECT id, name, CAST(name AS BLOB) FROM ${table} WHERE typeof(name) = 'text' ORDER BY id`).raw(true).iterate() as Iterable<[number, string, Buffer]>;
      for (const [id, name, bytes] of rows) {
        if (!isUtf8(bytes)) this.report(issueOf(table, `id=${id}`, 'name', name, `text that is not valid UTF-8 (${describeValue(name)})`));
      }
    }
  }

  /** Runs `work` inside one read transaction, so every read sees the same snapshot. */
  snapshot<T>(work: () => T): T {
    const end = this.beginSnapshot();
    try {
      return work();
    } finally {
      end();
    }
  }

  /**
   * Begins one read transaction, as `snapshot` does, for a caller that cannot pass its work as one
   * function (a build whose steps yield between owners: src/pipeline/run-build.ts); returns what
   * ends it. Inside it, people and tag and category names are kept between reads (docs/performance.md,
   * "Reading").
   */
  beginSnapshot(): () => void {
    this.db.exec('BEGIN');
    this.ctx.people = new Map();
    this.ctx.tagLists = new Map();
    this.tags = new Map();
    this.categories = new Map();
    return () => {
      this.ctx.people = null;
      this.ctx.tagLists = null;
      this.tags = null;
      this.categories = null;
      if (this.db.inTransaction) this.db.exec('COMMIT');
    };
  }

  /** Tag names by id while a snapshot is open (null outside one, where rows may change between statements). */
  private tags: Map<number, string | null> | null = null;
  /** Category names by id, within a snapshot (see categoryName). */
  private categories: Map<number, string | null> | null = null;

  /** Published users, by username; or the one named, if published. */
  users(only?: string): Iterable<UserRow> {
    return only === undefined ? this.stmt.usersAll.iterate() : this.stmt.userByName.all(only);
  }

  /** Published videos, by public id; or those of the one user named. */
  videos(ofUser?: string): Iterable<VideoRow> {
    return ofUser === undefined ? this.stmt.videosAll.iterate() : this.stmt.videosOfUser.all(ofUser);
  }

  /**
   * Published videos as `videos` lists them, each with a way to read its view. A caller that reads
   * most of them (a build) has every column read by one statement as it goes, which costs less
   * than a look-up per row; one that reads few (`lookUp`: a shard of several) gets rows with ids
   * only, and each read is a look-up (`video`), so the rows it skips cost no more than their ids.
   * The view is built only when read, after the caller has decided it wants the row.
   */
  *videoEntries(ofUser?: string, { lookUp = false } = {}): Iterable<VideoEntry> {
    if (lookUp) {
      for (const row of this.videos(ofUser)) yield { row, read: () => this.video(row.id) };
      return;
    }
    const rows = ofUser === undefined ? this.stmt.videosAllRead.iterate() : this.stmt.videosOfUserRead.all(ofUser);
    for (const raw of rows) yield { row: { id: raw[0], publicId: raw[1] as string }, read: () => videoOrProblem(this.ctx, raw) };
  }

  /** The published user with this id, or null (gone, or not published). */
  userRow(id: number): UserRow | null {
    return this.stmt.userById.get(id) ?? null;
  }

  /** The published video with this id, or null (gone, or not published). */
  videoRow(id: number): VideoRow | null {
    return this.stmt.videoRowById.get(id) ?? null;
  }

  /**
   * Public ids of the videos a build publishes, in order, without the rows it skips for their
   * data (see `video`), so that site-wide lists (the sitemap) never point at a document that is
   * not there. Names that cannot be paths are the caller's to filter.
   */
  *publishableVideoIds(): Iterable<string> {
    for (const row of this.stmt.publishableKeys.iterate()) {
      if (videoProblem(this.ctx, row) === null) yield row[1] as string;
    }
  }

  /** Published users with `from <= id <= to`, by id. */
  usersById(from: number, to: number): Iterable<UserRow> {
    return this.stmt.usersById.iterate(from, to);
  }

  /** As `publishableVideoIds`, for the videos with `from <= id <= to`, by id. */
  *publishableVideosById(from: number, to: number): Iterable<VideoRow> {
    for (const row of this.stmt.publishableKeysById.iterate(from, to)) {
      if (videoProblem(this.ctx, row) === null) yield { id: row[0] as number, publicId: row[1] as string };
    }
  }

  /** The lowest and highest id of the users and of the videos (any row), each null when the table is empty. */
  idBounds(): { users: IdBounds | null; videos: IdBounds | null } {
    const bounds = (row: { min: number | null; max: number | null } | undefined) =>
      row?.min == null || row.max == null ? null : { min: row.min, max: row.max };
    return { users: bounds(this.stmt.userIdBounds.get()), videos: bounds(this.stmt.videoIdBounds.get()) };
  }

  /** A published video, or why a public video cannot be published, or null if it is not public. */
  video(id: number): VideoView | VideoProblem | null {
    const raw = this.stmt.videoById.get(id);
    return raw === undefined ? null : videoOrProblem(this.ctx, raw);
  }

  /**
   * A video by its public id, for answering one request (`vidfeeds serve`). A published row whose
   * id cannot be a path segment or whose URLs cannot be published is `missing`, as the build
   * skips it. Names taken by site-wide files are the caller's to check (`site.paths.problem`).
   */
  videoByPublicId(publicId: string): VideoLookup {
    const row = this.stmt.videoStatus.get(publicId);
    if (row === undefined || row.status === 'missing') return { status: 'missing' };
    if (row.status === 'private') return { status: 'private' };
    if (segmentProblem(publicId, () => false) !== null) return { status: 'missing' };
    const found = publishable(this.video(row.id));
    return found === null ? { status: 'missing' } : { status: 'published', video: found };
  }

  /** Loads a user's data, only the parts asked for (the others stay empty). */
  userBundle(id: number, parts: ReadonlySet<UserPart>): UserBundle {
    const raw = this.stmt.userRaw.get(id);
    if (!raw) throw new Error(`user ${id} vanished inside the read transaction`);
    const bundle: UserBundle = {
      user: userView(this.ctx, raw),
      uploads: [],
      groups: [],
      friends: [],
      accounts: [],
      interests: [],
      playlist: { source: 'none', videos: [] },
      recommendations: [],
      attention: { concepts: [], sources: [] },
      readingList: [],
    };
    if (parts.has('uploads')) {
      // Decoded here, not kept among the snapshot's people: each user's bundle is read once, and
      // kept people outlive the young generation (garbage the full collections must find).
      let uploader: PersonRef | null = null;
      const at = (column: string) => userColumn(raw, column);
      bundle.uploads = [];
      for (const row of this.stmt.uploads.all(id)) {
        uploader ??= decodePerson(this.ctx, [id, at('username') as string, at('display_name'), at('avatar_url'), at('homepage_url'), at('email')]);
        const view = ownVideoOrProblem(this.ctx, row, uploader);
        if (!('problem' in view)) bundle.uploads.push(view);
      }
    }
    if (parts.has('groups')) bundle.groups = this.groupsOf(id);
    if (parts.has('friends')) bundle.friends = this.stmt.friends.all(id).map((r) => person(this.ctx, r));
    if (parts.has('accounts')) bundle.accounts = this.accountsOf(id);
    if (parts.has('interests')) bundle.interests = this.stmt.interests.all(id).map((r) => r.name).filter(validName);
    if (parts.has('playlist')) bundle.playlist = this.playlistOf(id, userColumn(raw, 'history_public') === 1);
    if (parts.has('recommendations')) bundle.recommendations = this.recommendationsOf(id);
    if (parts.has('attention')) bundle.attention = { concepts: this.conceptsOf(id), sources: this.sourcesOf(id) };
    if (parts.has('readingList')) bundle.readingList = this.readingListOf(id);
    return bundle;
  }

  /** Views of the publishable rows, in order; the others are left out (and reported). */
  private videos_(rows: RawVideo[]): VideoView[] {
    const views: VideoView[] = [];
    for (const raw of rows) {
      const view = videoOrProblem(this.ctx, raw);
      if (!('problem' in view)) views.push(view);
    }
    return views;
  }

  private groupsOf(userId: number): GroupView[] {
    const groups: GroupView[] = [];
    for (const [id, slug, title, description, featuredVideoId, createdAt, updatedAt, ...owner] of this.stmt.groups.all(userId)) {
      const d = decoder(this.ctx, 'groups', id);
      const group = {
        slug: d.text('slug', slug),
        title: d.text('title', title),
        description: d.text('description', description) ?? '',
        createdAt: d.time('created_at', createdAt),
      };
      if (d.rejected !== null) continue;
      groups.push({
        id,
        slug: group.slug!,
        title: group.title!,
        description: group.description,
        owner: person(this.ctx, owner),
        featuredVideo: typeof featuredVideoId === 'number' ? publishable(this.video(featuredVideoId)) : null,
        createdAt: group.createdAt!,
        updatedAt: d.time('updated_at', updatedAt) ?? group.createdAt!,
      });
    }
    return groups;
  }

  private accountsOf(userId: number): OnlineAccount[] {
    const accounts: OnlineAccount[] = [];
    for (const r of this.stmt.accounts.all(userId)) {
      const d = decoder(this.ctx, 'online_accounts', r.id);
      const accountName = d.text('account_name', r.account_name);
      if (accountName === null) continue;
      accounts.push({
        serviceHomepageUrl: webUrl(d.text('service_homepage_url', r.service_homepage_url)),
        accountName,
        profileUrl: webUrl(d.text('profile_url', r.profile_url)),
      });
    }
    return accounts;
  }

  private playlistOf(userId: number, historyPublic: boolean): UserBundle['playlist'] {
    const saved = this.videos_(this.stmt.saved.all(userId));
    if (saved.length > 0) return { source: 'saved', videos: saved };
    if (historyPublic) {
      const history = this.videos_(this.stmt.history.all(userId));
      if (history.length > 0) return { source: 'history', videos: history };
    }
    return { source: 'none', videos: [] };
  }

  /**
   * The newest public recommendations whose link and image are web URLs. The URL check cannot be
   * SQL, so the rows are read newest first and the scan stops as soon as `count` are kept: a
   * LIMIT in SQL would come up short whenever an unpublishable row is among the newest.
   */
  private recommendationsOf(userId: number, count = this.recommendationsCount): RecommendationView[] {
    const kept: RecommendationView[] = [];
    if (count <= 0) return kept;
    for (const r of this.stmt.recommendations.iterate(userId)) {
      const d = decoder(this.ctx, 'recommendations', r.id);
      const title = d.text('title', r.title);
      const link = webUrl(d.text('link', r.link));
      const image = webUrl(d.text('image', r.image));
      const createdAt = d.time('created_at', r.created_at);
      if (d.rejected !== null || link === null || image === null) continue;
      kept.push({
        id: r.id,
        title: title!,
        link,
        image,
        description: d.text('description', r.description) ?? '',
        durationSeconds: d.integer('duration_seconds', r.duration_seconds),
        createdAt: createdAt!,
      });
      // Returning from the loop closes the iterator, which frees the statement.
      if (kept.length >= count) break;
    }
    return kept;
  }

  private conceptsOf(userId: number): AttentionConcept[] {
    return this.stmt.concepts.all(userId).filter(([, category]) => validName(category)).map(([categoryId, category, value, updatedAt]) => {
      // A category the user has no row for: 0, no time (value NULL from the LEFT JOIN).
      if (value === null && updatedAt === null) return { category, value: 0, updatedAt: null };
      const d = decoder(this.ctx, 'attention_concepts', `user_id=${userId}, category_id=${categoryId}`);
      return { category, value: d.fraction('value', value) ?? 0, updatedAt: d.time('updated_at', updatedAt) };
    });
  }

  private sourcesOf(userId: number): AttentionSource[] {
    const sources: AttentionSource[] = [];
    for (const [id, videoId, publicId, title, value, updatedAt, ...supplier] of this.stmt.sources.all(userId)) {
      const video = decoder(this.ctx, 'videos', videoId);
      const videoTitle = video.text('title', title);
      const d = decoder(this.ctx, 'attention_sources', id);
      const fraction = d.fraction('value', value);
      const updated = d.time('updated_at', updatedAt);
      if (typeof publicId !== 'string' || video.rejected !== null || d.rejected !== null) continue;
      sources.push({ video: { publicId, title: videoTitle! }, value: fraction!, supplier: person(this.ctx, supplier), updatedAt: updated! });
    }
    return sources;
  }

  /** The reading list; an entry whose feed URL is not a web URL has nothing to subscribe to and is left out. */
  private readingListOf(userId: number): ReadingListEntry[] {
    const entries: ReadingListEntry[] = [];
    for (const r of this.stmt.readingList.all(userId)) {
      const d = decoder(this.ctx, 'reading_list', r.id);
      const title = d.text('title', r.title);
      const xmlUrl = webUrl(d.text('xml_url', r.xml_url));
      const createdAt = d.time('created_at', r.created_at);
      if (d.rejected !== null || xmlUrl === null) continue;
      entries.push({
        category: r.category !== null && validName(r.category) ? r.category : null,
        title: title!,
        description: d.text('description', r.description) ?? '',
        htmlUrl: webUrl(d.text('html_url', r.html_url)),
        xmlUrl,
        createdAt: createdAt!,
        updatedAt: d.time('updated_at', r.updated_at) ?? createdAt!,
      });
    }
    return entries;
  }
}

/**
 * Whether a tag or category name, read as text, may be published: better-sqlite3 reads bytes that
 * are not UTF-8 as U+FFFD, and those are left out (`unpublishedRows` names them in full builds).
 */
function validName(name: string): boolean {
  return !name.includes('\uFFFD');
}

function publishable(result: VideoView | VideoProblem | null): VideoView | null {
  return result === null || 'problem' in result ? null : result;
}
