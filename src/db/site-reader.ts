import type Database from 'better-sqlite3';
import { hash } from 'node:crypto';
import { segmentProblem } from '../paths/names.js';
import { fromUnix } from '../render/dates.js';
import { webUrl } from '../render/urls.js';
import type {
  AttentionConcept,
  AttentionSource,
  GroupView,
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

export const RSS_ITEMS = 20;
export const ATOM_ENTRIES = 20;

/** The row a build iterates over before deciding whether a user can be published. */
export interface UserRow {
  id: number;
  username: string;
}

export interface VideoRow {
  id: number;
  publicId: string;
}

/** A published video's row, and its view (or why it cannot be published) when asked for. */
export interface VideoEntry {
  row: VideoRow;
  read(): VideoView | { problem: string } | null;
}

/**
 * A video looked up by its public id, as oEmbed answers it (PRODUCT.md decision 2): `private`
 * (401) only when the uploader is published and the video is not public; a video of a suspended
 * or deleted user, or a row that cannot be published, is `missing` (404) like an unknown id, so
 * nothing about it is revealed.
 */
export type VideoLookup = { status: 'published'; video: VideoView } | { status: 'private' } | { status: 'missing' };

interface RawUser {
  id: number;
  username: string;
  display_name: string;
  title: string;
  given_name: string;
  family_name: string;
  email: string | null;
  show_email: number;
  phone: string | null;
  show_phone: number;
  homepage_url: string | null;
  avatar_url: string | null;
  openid_url: string | null;
  aim_chat_id: string | null;
  yahoo_chat_id: string | null;
  msn_chat_id: string | null;
  icq_chat_id: string | null;
  jabber_chat_id: string | null;
  show_chat_ids: number;
  street_address: string | null;
  locality: string | null;
  region: string | null;
  region_name: string | null;
  postal_code: string | null;
  country_name: string | null;
  show_address: number;
  history_public: number;
  created_at: number;
  updated_at: number;
}

interface RawPerson {
  username: string;
  display_name: string;
  avatar_url: string | null;
  homepage_url: string | null;
  email: string | null;
}

/**
 * A row of VIDEO_COLUMNS, in its order. Video statements return arrays (better-sqlite3's `raw`
 * mode): it builds them in about 60% of the time it takes to build objects with named keys, and
 * video rows are most of what a build reads (docs/performance.md, "Reading").
 */
type RawVideo = [
  id: number,
  publicId: string,
  title: string,
  description: string,
  durationSeconds: number | null,
  fileUrl: string,
  fileSize: number | null,
  fileType: string,
  width: number | null,
  height: number | null,
  thumbnailUrl: string,
  thumbnailWidth: number,
  thumbnailHeight: number,
  captionsUrl: string | null,
  category: string | null,
  tagsJson: string,
  createdAt: number,
  updatedAt: number,
  uploaderUsername: string,
  uploaderDisplayName: string,
  uploaderAvatarUrl: string | null,
  uploaderHomepageUrl: string | null,
  uploaderEmail: string | null,
];

const PUBLISHED_USER = `u.state = 'active'`;
const PUBLISHED_VIDEO = `v.visibility = 'public' AND u.state = 'active'`;

/** Columns of a video with its uploader, in the order of `RawVideo`; use with `FROM videos v JOIN users u ON u.id = v.user_id`. */
const VIDEO_COLUMNS = `
  v.id, v.public_id, v.title, v.description, v.duration_seconds, v.file_url, v.file_size, v.file_type,
  v.width, v.height, v.thumbnail_url, v.thumbnail_width, v.thumbnail_height, v.captions_url,
  (SELECT c.name FROM categories c WHERE c.id = v.category_id),
  (SELECT json_group_array(name) FROM
     (SELECT t.name FROM video_tags vt JOIN tags t ON t.id = vt.tag_id WHERE vt.video_id = v.id ORDER BY t.name)),
  v.created_at, v.updated_at,
  u.username, u.display_name, u.avatar_url, u.homepage_url, u.email`;

/** SHA-1 hex of `mailto:` + address, as FOAF's mbox_sha1sum defines it. */
export function mboxSha1(email: string): string {
  return sha1Hex(`mailto:${email}`);
}

/** One-shot `hash` (the text as UTF-8, like `createHash().update()`): a third of the time of a Hash object, and every published person has one. */
function sha1Hex(text: string): string {
  return hash('sha1', text, 'hex');
}

function person(raw: RawPerson): PersonRef {
  return {
    username: raw.username,
    displayName: raw.display_name,
    avatarUrl: webUrl(raw.avatar_url),
    homepageUrl: webUrl(raw.homepage_url),
    emailSha1: raw.email ? mboxSha1(raw.email) : null,
  };
}

/** Why a public video cannot be published, given its file and thumbnail URLs as `webUrl` returns them; or null. */
function videoProblem(fileUrl: string | null, thumbnailUrl: string | null): string | null {
  if (fileUrl === null) return 'has a file_url that is not an absolute http(s) URL';
  if (thumbnailUrl === null) return 'has a thumbnail_url that is not an absolute http(s) URL';
  return null;
}

/** The view of a published video row, or why it cannot be published (see `videoProblem`). */
function videoOrProblem(raw: RawVideo): VideoView | { problem: string } {
  const [
    id, publicId, title, description, durationSeconds, rawFileUrl, fileSize, fileType, width, height,
    rawThumbnailUrl, thumbnailWidth, thumbnailHeight, captionsUrl, category, tagsJson, createdAt, updatedAt,
    username, displayName, avatarUrl, homepageUrl, email,
  ] = raw;
  const fileUrl = webUrl(rawFileUrl);
  const thumbnailUrl = webUrl(rawThumbnailUrl);
  const problem = videoProblem(fileUrl, thumbnailUrl);
  if (problem !== null) return { problem };
  return {
    id,
    publicId,
    title,
    description,
    durationSeconds,
    fileUrl: fileUrl!,
    fileSize,
    fileType,
    width,
    height,
    thumbnailUrl: thumbnailUrl!,
    thumbnailWidth,
    thumbnailHeight,
    captionsUrl: webUrl(captionsUrl),
    category,
    tags: JSON.parse(tagsJson) as string[],
    uploader: person({ username, display_name: displayName, avatar_url: avatarUrl, homepage_url: homepageUrl, email }),
    createdAt: fromUnix(createdAt),
    updatedAt: fromUnix(updatedAt),
  };
}

function userView(raw: RawUser): UserView {
  const shown = (flag: number, value: string | null) => (flag === 1 && value ? value : null);
  const hasAddress = raw.show_address === 1 && [raw.street_address, raw.locality, raw.region, raw.postal_code, raw.country_name].some(Boolean);
  const chatShown = raw.show_chat_ids === 1;
  return {
    id: raw.id,
    username: raw.username,
    displayName: raw.display_name,
    title: raw.title,
    givenName: raw.given_name,
    familyName: raw.family_name,
    email: shown(raw.show_email, raw.email),
    emailSha1: raw.email ? mboxSha1(raw.email) : null,
    phone: shown(raw.show_phone, raw.phone),
    homepageUrl: webUrl(raw.homepage_url),
    avatarUrl: webUrl(raw.avatar_url),
    openidUrl: webUrl(raw.openid_url),
    chatIds: chatShown
      ? {
          aim: raw.aim_chat_id || null,
          yahoo: raw.yahoo_chat_id || null,
          // E-mail-shaped ids: published only as their hash (seed 2.3, "some are hashed").
          msnSha1: raw.msn_chat_id ? sha1Hex(raw.msn_chat_id) : null,
          icq: raw.icq_chat_id || null,
          jabberSha1: raw.jabber_chat_id ? sha1Hex(raw.jabber_chat_id) : null,
        }
      : null,
    address: hasAddress
      ? {
          streetAddress: raw.street_address ?? '',
          locality: raw.locality ?? '',
          region: raw.region ?? '',
          regionName: raw.region_name ?? raw.region ?? '',
          postalCode: raw.postal_code ?? '',
          countryName: raw.country_name ?? '',
        }
      : null,
    createdAt: fromUnix(raw.created_at),
    updatedAt: fromUnix(raw.updated_at),
  };
}

export class SiteReader {
  private readonly stmt;

  constructor(
    private readonly db: Database.Database,
    private readonly recommendationsCount: number,
  ) {
    const p = <T>(sql: string) => db.prepare<unknown[], T>(sql);
    const rawVideos = (sql: string) => db.prepare<unknown[], RawVideo>(sql).raw(true);
    this.stmt = {
      usersAll: p<UserRow>(`SELECT u.id, u.username FROM users u WHERE ${PUBLISHED_USER} ORDER BY u.username`),
      userByName: p<UserRow>(`SELECT u.id, u.username FROM users u WHERE u.username = ? AND ${PUBLISHED_USER}`),
      userById: p<UserRow>(`SELECT u.id, u.username FROM users u WHERE u.id = ? AND ${PUBLISHED_USER}`),
      userRaw: p<RawUser>(`SELECT * FROM users WHERE id = ?`),
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
      publishableKeys: p<{ public_id: string; file_url: string; thumbnail_url: string }>(
        `SELECT v.public_id, v.file_url, v.thumbnail_url FROM videos v JOIN users u ON u.id = v.user_id WHERE ${PUBLISHED_VIDEO} ORDER BY v.public_id`,
      ),
      videoStatus: p<{ id: number; status: 'published' | 'private' | 'missing' }>(
        `SELECT v.id, CASE WHEN ${PUBLISHED_VIDEO} THEN 'published' WHEN ${PUBLISHED_USER} THEN 'private' ELSE 'missing' END AS status
         FROM videos v JOIN users u ON u.id = v.user_id WHERE v.public_id = ?`,
      ),
      videoById: rawVideos(`SELECT ${VIDEO_COLUMNS} FROM videos v JOIN users u ON u.id = v.user_id WHERE v.id = ? AND ${PUBLISHED_VIDEO}`),
      uploads: rawVideos(
        `SELECT ${VIDEO_COLUMNS} FROM videos v JOIN users u ON u.id = v.user_id
         WHERE v.user_id = ? AND ${PUBLISHED_VIDEO} ORDER BY v.created_at DESC, v.id DESC LIMIT ${RSS_ITEMS}`,
      ),
      groups: p<[
        id: number, slug: string, title: string, description: string, featuredVideoId: number | null,
        createdAt: number, updatedAt: number, ownerUsername: string, ownerDisplayName: string,
        ownerAvatarUrl: string | null, ownerHomepageUrl: string | null, ownerEmail: string | null,
      ]>(
        `SELECT g.id, g.slug, g.title, g.description, g.featured_video_id, g.created_at, g.updated_at,
                o.username, o.display_name, o.avatar_url, o.homepage_url, o.email
         FROM group_members m JOIN groups g ON g.id = m.group_id JOIN users o ON o.id = g.owner_id
         WHERE m.user_id = ? AND g.hidden = 0 AND o.state = 'active'
         ORDER BY g.created_at DESC, g.id DESC LIMIT ${ATOM_ENTRIES}`,
      ).raw(true),
      friends: p<RawPerson>(
        `SELECT u.username, u.display_name, u.avatar_url, u.homepage_url, u.email
         FROM friendships f JOIN users u ON u.id = f.friend_id
         WHERE f.user_id = ? AND ${PUBLISHED_USER} ORDER BY u.username`,
      ),
      accounts: p<{ service_homepage_url: string; account_name: string; profile_url: string }>(
        `SELECT service_homepage_url, account_name, profile_url FROM online_accounts WHERE user_id = ? ORDER BY id`,
      ),
      interests: p<{ name: string }>(
        `SELECT t.name FROM interests i JOIN tags t ON t.id = i.tag_id WHERE i.user_id = ? ORDER BY t.name`,
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
        id: number; title: string; link: string; image: string; description: string;
        duration_seconds: number | null; created_at: number;
      }>(
        `SELECT id, title, link, image, description, duration_seconds, created_at FROM recommendations
         WHERE user_id = ? AND is_public = 1 AND status = 'approved' ORDER BY created_at DESC, id DESC`,
      ),
      // Every category for every user: an array per row (see RawVideo) costs less than an object.
      concepts: p<[category: string, value: number | null, updatedAt: number | null]>(
        `SELECT c.name AS category, a.value, a.updated_at FROM categories c
         LEFT JOIN attention_concepts a ON a.category_id = c.id AND a.user_id = ? ORDER BY c.name`,
      ).raw(true),
      sources: p<{ public_id: string; title: string; value: number; updated_at: number } & RawPerson>(
        `SELECT v.public_id, v.title, s.value, s.updated_at,
                su.username, su.display_name, su.avatar_url, su.homepage_url, su.email
         FROM attention_sources s JOIN videos v ON v.id = s.video_id JOIN users u ON u.id = v.user_id
              JOIN users su ON su.id = s.supplier_id
         WHERE s.user_id = ? AND ${PUBLISHED_VIDEO} AND su.state = 'active'
         ORDER BY s.value DESC, v.public_id, su.username`,
      ),
      readingList: p<{
        category: string | null; title: string; description: string; html_url: string; xml_url: string;
        created_at: number; updated_at: number;
      }>(
        `SELECT c.name AS category, r.title, r.description, r.html_url, r.xml_url, r.created_at, r.updated_at
         FROM reading_list r LEFT JOIN categories c ON c.id = r.category_id
         WHERE r.user_id = ? ORDER BY c.name IS NULL, c.name, r.position, r.id`,
      ),
    };
  }

  /** Runs `work` inside one read transaction, so every read sees the same snapshot. */
  snapshot<T>(work: () => T): T {
    this.db.exec('BEGIN');
    try {
      return work();
    } finally {
      this.db.exec('COMMIT');
    }
  }

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
    for (const raw of rows) yield { row: { id: raw[0], publicId: raw[1] }, read: () => videoOrProblem(raw) };
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
      if (videoProblem(webUrl(row.file_url), webUrl(row.thumbnail_url)) === null) yield row.public_id;
    }
  }

  /** A published video, or why a public video cannot be published, or null if it is not public. */
  video(id: number): VideoView | { problem: string } | null {
    const raw = this.stmt.videoById.get(id);
    return raw === undefined ? null : videoOrProblem(raw);
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
      user: userView(raw),
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
    if (parts.has('uploads')) bundle.uploads = videos(this.stmt.uploads.all(id));
    if (parts.has('groups')) bundle.groups = this.groupsOf(id);
    if (parts.has('friends')) bundle.friends = this.stmt.friends.all(id).map(person);
    if (parts.has('accounts')) bundle.accounts = this.stmt.accounts.all(id).map(accountView);
    if (parts.has('interests')) bundle.interests = this.stmt.interests.all(id).map((r) => r.name);
    if (parts.has('playlist')) bundle.playlist = this.playlistOf(id, raw.history_public === 1);
    if (parts.has('recommendations')) bundle.recommendations = this.recommendationsOf(id);
    if (parts.has('attention')) bundle.attention = { concepts: this.conceptsOf(id), sources: this.sourcesOf(id) };
    if (parts.has('readingList')) bundle.readingList = this.readingListOf(id);
    return bundle;
  }

  private groupsOf(userId: number): GroupView[] {
    return this.stmt.groups.all(userId).map(
      ([id, slug, title, description, featuredVideoId, createdAt, updatedAt, username, displayName, avatarUrl, homepageUrl, email]) => ({
        id,
        slug,
        title,
        description,
        owner: person({ username, display_name: displayName, avatar_url: avatarUrl, homepage_url: homepageUrl, email }),
        featuredVideo: featuredVideoId === null ? null : publishable(this.video(featuredVideoId)),
        createdAt: fromUnix(createdAt),
        updatedAt: fromUnix(updatedAt),
      }),
    );
  }

  private playlistOf(userId: number, historyPublic: boolean): UserBundle['playlist'] {
    const saved = videos(this.stmt.saved.all(userId));
    if (saved.length > 0) return { source: 'saved', videos: saved };
    if (historyPublic) {
      const history = videos(this.stmt.history.all(userId));
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
      const link = webUrl(r.link);
      const image = webUrl(r.image);
      if (link === null || image === null) continue;
      kept.push({
        id: r.id,
        title: r.title,
        link,
        image,
        description: r.description,
        durationSeconds: r.duration_seconds,
        createdAt: fromUnix(r.created_at),
      });
      // Returning from the loop closes the iterator, which frees the statement.
      if (kept.length >= count) break;
    }
    return kept;
  }

  private conceptsOf(userId: number): AttentionConcept[] {
    return this.stmt.concepts.all(userId).map(([category, value, updatedAt]) => ({
      category,
      value: value ?? 0,
      updatedAt: updatedAt === null ? null : fromUnix(updatedAt),
    }));
  }

  private sourcesOf(userId: number): AttentionSource[] {
    return this.stmt.sources.all(userId).map((s) => ({
      video: { publicId: s.public_id, title: s.title },
      value: s.value,
      supplier: person(s),
      updatedAt: fromUnix(s.updated_at),
    }));
  }

  /** The reading list; an entry whose feed URL is not a web URL has nothing to subscribe to and is left out. */
  private readingListOf(userId: number): ReadingListEntry[] {
    const entries: ReadingListEntry[] = [];
    for (const r of this.stmt.readingList.all(userId)) {
      const xmlUrl = webUrl(r.xml_url);
      if (xmlUrl === null) continue;
      entries.push({
        category: r.category,
        title: r.title,
        description: r.description,
        htmlUrl: webUrl(r.html_url),
        xmlUrl,
        createdAt: fromUnix(r.created_at),
        updatedAt: fromUnix(r.updated_at),
      });
    }
    return entries;
  }
}

/** Views of the publishable rows, in order; the others are left out. */
function videos(rows: RawVideo[]): VideoView[] {
  const views: VideoView[] = [];
  for (const raw of rows) {
    const view = videoOrProblem(raw);
    if (!('problem' in view)) views.push(view);
  }
  return views;
}

function publishable(result: VideoView | { problem: string } | null): VideoView | null {
  return result === null || 'problem' in result ? null : result;
}

function accountView(r: { service_homepage_url: string; account_name: string; profile_url: string }): OnlineAccount {
  return { serviceHomepageUrl: webUrl(r.service_homepage_url), accountName: r.account_name, profileUrl: webUrl(r.profile_url) };
}
