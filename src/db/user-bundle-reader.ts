import type Database from 'better-sqlite3';
import type {
  ArchiveSource,
  AttentionConcept,
  AttentionSource,
  FeaturedVideo,
  GroupOwner,
  GroupView,
  OnlineAccount,
  PersonRef,
  ReadingListEntry,
  RecommendationView,
  UserBundle,
  UserPart,
  VideoView,
} from '../model/views.js';
import { webUrl } from '../render/urls.js';
import { decoder, validName, type DecodeContext } from './decode-context.js';
import type { RowDecoder } from './decode.js';
import { userColumn, type RawOwnVideo, type RawUser, type RawVideo } from './reader-columns.js';
import { bundleStatements, type BundleStatements, type RawGroup, type ReaderLimits } from './reader-statements.js';
import { groupOwner, person, userView } from './user-view.js';
import { ownVideoOrProblem, publishable, videoOrProblem, videoProblem, type VideoProblem } from './video-view.js';

/**
 * Reads one user's bundle for the site reader (src/db/site-reader.ts): their own view and the
 * lists their documents show (uploads, groups, friends, accounts, interests, playlist,
 * recommendations, attention, reading list), each only when asked for, inside the reader's
 * snapshot and with its decoding context.
 */
export class UserBundleReader {
  private readonly stmt: BundleStatements;
  /** Featured videos read while a snapshot is open, by id (`featured`); null outside one, where rows may change between statements. */
  private keptFeatured: Map<number, FeaturedVideo | null> | null = null;
  /** Groups' owners read while a snapshot is open, by user id (`owner`), null for one not listed; null outside a snapshot. */
  private keptOwners: Map<number, GroupOwner | null> | null = null;

  constructor(
    db: Database.Database,
    private readonly ctx: DecodeContext,
    private readonly limits: ReaderLimits,
    /** A published video by id (a group's featured video), or why not, or null if it is not public. */
    private readonly video: (id: number) => VideoView | VideoProblem | null,
  ) {
    this.stmt = bundleStatements(db, limits);
  }

  /** A snapshot begins (true) or ends (false): featured videos and groups' owners are kept only inside one. */
  keepInSnapshot(on: boolean): void {
    this.keptFeatured = on ? new Map() : null;
    this.keptOwners = on ? new Map() : null;
  }

  /** Loads a user's data, only the parts asked for (the others stay empty). */
  read(id: number, parts: ReadonlySet<UserPart>): UserBundle {
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
      archived: { uploads: [], groups: [] },
    };
    // What the feed's statement returned (publishable or not), for `archived`.
    const rowsRead: { uploads: FeedRead | null } = { uploads: null };
    if (parts.has('uploads')) bundle.uploads = this.uploadsOf(id, raw, rowsRead);
    if (parts.has('friends')) bundle.friends = this.friendsOf(id);
    if (parts.has('accounts')) bundle.accounts = this.accountsOf(id);
    if (parts.has('interests')) bundle.interests = this.stmt.interests.all(id).map((r) => r.name).filter(validName);
    if (parts.has('playlist')) bundle.playlist = this.playlistOf(id, userColumn(raw, 'history_public') === 1);
    if (parts.has('recommendations')) bundle.recommendations = this.recommendationsOf(id);
    if (parts.has('attention')) bundle.attention = { concepts: this.conceptsOf(id), sources: this.sourcesOf(id) };
    if (parts.has('readingList')) bundle.readingList = this.readingListOf(id);
    const { uploadsDeciding, uploadsDecidingBefore } = this.stmt;
    // Only the rows the pages will hold are paged (`pagesOf` skips the others alike); their issues
    // are reported once, when the pages are read, not here.
    const quiet: DecodeContext = { ...this.ctx, sink: () => {} };
    const video = (row: unknown[]) => (videoProblem(quiet, row) === null ? (row[0] as number) : null);
    const group = (row: RawGroup) => (groupColumns(decoder(quiet, 'groups', row[0]), row).rejected === null ? row[0] : null);
    if (parts.has('archivedUploads')) {
      bundle.archived.uploads = beyondFeed(
        rowsRead.uploads,
        this.limits.uploads,
        () => uploadsDeciding.all(id).map(video),
        (createdAt, last) => uploadsDecidingBefore.all(id, createdAt, last).map(video),
      );
    }
    if (parts.has('groups') || parts.has('archivedGroups')) {
      // Every group of the user in one statement, newest first: the feed holds the newest rows, the
      // archive the rest. A group whose owner is not listed is in neither, as if the statement had
      // not returned it. (Read apart, the archive's rows cost a second statement as long as the
      // first: the join of every membership is its work, not the rows it returns.)
      const rows = this.stmt.groupsNewestFirst.all(id).filter((row) => this.owner(row[7]) !== null);
      const { groups: limit } = this.limits;
      if (parts.has('groups')) bundle.groups = this.groupViews(rows.slice(0, limit));
      if (parts.has('archivedGroups')) bundle.archived.groups = rows.slice(limit).reverse().map(group).filter((groupId) => groupId !== null);
    }
    return bundle;
  }

  /**
   * A user's archives (ArchiveSource): the rows beyond the feeds' newest, oldest first, a page at
   * a time, each page read after the last row of the one before. Read inside the reader's
   * snapshot, like the bundle, whose `archived` says how many rows they hold.
   */
  archive(id: number): ArchiveSource {
    return {
      uploads: (pageRows) => {
        const own = this.ownVideos(id, this.stmt.userRaw.get(id)!);
        // created_at is the 17th column of a row (OWN_VIDEO_COLUMNS), the id the first.
        return pagesOf(pageRows, (after, limit) => this.stmt.uploadsFrom.all(id, ...after, limit), (row) => [row[16], row[0]], own);
      },
      groups: (pageRows) => pagesOf(pageRows, (after, limit) => this.stmt.groupsFrom.all(id, ...after, limit), (row) => [row[5], row[0]], (row) => this.group(row)),
    };
  }

  /** The user's newest published uploads; the user's row is read already (`raw`). */
  private uploadsOf(id: number, raw: RawUser, rowsRead: { uploads: FeedRead | null }): VideoView[] {
    const own = this.ownVideos(id, raw);
    const uploads: VideoView[] = [];
    const rows = this.stmt.uploads.all(id);
    // created_at is the 17th column of a row (OWN_VIDEO_COLUMNS), the id the first.
    rowsRead.uploads = { rows: rows.length, last: rows.length === 0 ? null : [rows.at(-1)![16], rows.at(-1)![0]] };
    for (const row of rows) {
      const view = own(row);
      if (view !== null) uploads.push(view);
    }
    return uploads;
  }

  /** Views of a user's own video rows (null for one that cannot be published); the user's row is `raw`. */
  private ownVideos(id: number, raw: RawUser): (row: RawOwnVideo) => VideoView | null {
    // Decoded once for the user's rows, on the first that needs it.
    let uploader: PersonRef | null = null;
    const at = (column: string) => userColumn(raw, column);
    return (row) => {
      uploader ??= person(this.ctx, [id, at('username') as string, at('display_name'), at('avatar_url'), at('homepage_url'), at('email')]);
      const view = ownVideoOrProblem(this.ctx, row, uploader);
      return 'problem' in view ? null : view;
    };
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

  /** The user's friends as people (listed users only: no link to a profile that is never written). */
  private friendsOf(id: number): PersonRef[] {
    return this.stmt.friends.all(id).map((row) => person(this.ctx, row));
  }

  /** The views of a user's groups (rows the feed holds), those that can be published. */
  private groupViews(rows: readonly RawGroup[]): GroupView[] {
    const groups: GroupView[] = [];
    for (const row of rows) {
      const group = this.group(row);
      if (group !== null) groups.push(group);
    }
    return groups;
  }

  /**
   * A group's owner as its entry names them, or null when the owner is not listed (listedUser):
   * such a group is left out. Owners are few beside memberships (22,000 owners of 2.7 million
   * memberships on the feed-heavy bench site at 100,000 users), so each is read once per snapshot
   * and kept, up to OWNERS_KEPT of them; past that, read each time.
   */
  private owner(id: unknown): GroupOwner | null {
    // The join this replaces matched an integer id only (a text or real owner_id names no user).
    if (typeof id !== 'number' || !Number.isSafeInteger(id)) return null;
    const known = this.keptOwners?.get(id);
    if (known !== undefined) return known;
    const raw = this.stmt.groupOwner.get(id);
    const owner = raw === undefined ? null : groupOwner(this.ctx, raw);
    if (this.keptOwners !== null && this.keptOwners.size < OWNERS_KEPT) this.keptOwners.set(id, owner);
    return owner;
  }

  /**
   * What a group's entry shows of the featured video with this id, or null when it is not
   * published. A group is in the feed of each of its members, so a featured video is read once
   * per snapshot and kept, up to FEATURED_KEPT of them; past that, read each time.
   */
  private featured(id: number): FeaturedVideo | null {
    const known = this.keptFeatured?.get(id);
    if (known !== undefined) return known;
    const view = publishable(this.video(id));
    const featured = view === null ? null : featuredVideo(view);
    // Full, the map stays as it is: one started again would keep promoting new entries into V8's
    // old generation to die there (docs/performance.md, "Figures behind the code").
    if (this.keptFeatured !== null && this.keptFeatured.size < FEATURED_KEPT) this.keptFeatured.set(id, featured);
    return featured;
  }

  /** A group's view, or null when it cannot be published (its row is reported). */
  private group(row: RawGroup): GroupView | null {
    const [id, , , , featuredVideoId, , updatedAt, ownerId] = row;
    const owner = this.owner(ownerId);
    if (owner === null) return null;
    const d = decoder(this.ctx, 'groups', id);
    const group = groupColumns(d, row);
    if (d.rejected !== null) return null;
    return {
      id,
      slug: group.slug!,
      title: group.title!,
      description: group.description,
      owner,
      featuredVideo: typeof featuredVideoId === 'number' ? this.featured(featuredVideoId) : null,
      createdAt: group.createdAt!,
      updatedAt: d.time('updated_at', updatedAt) ?? group.createdAt!,
    };
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
  private recommendationsOf(userId: number, count = this.limits.recommendations): RecommendationView[] {
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
    for (const row of this.stmt.sources.all(userId)) {
      // A video the build skips (its name, its URLs) is no source; suppliers are listed users.
      const [, publicId, title, , , , , , id, value, updatedAt, ...supplier] = row;
      if (videoProblem(this.ctx, row) !== null) continue;
      const d = decoder(this.ctx, 'attention_sources', id);
      const fraction = d.fraction('value', value);
      const updated = d.time('updated_at', updatedAt);
      if (d.rejected !== null) continue;
      sources.push({ video: { publicId: publicId as string, title: title as string }, value: fraction!, supplier: person(this.ctx, supplier), updatedAt: updated! });
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
 * The columns of a group row that decide whether it can be published, decoded by `d` (whose
 * `rejected` then says), with its description: the one rule for the group's view and for which
 * groups the archive pages.
 */
function groupColumns(d: RowDecoder, [, slug, title, description, , createdAt]: RawGroup) {
  return {
    slug: d.text('slug', slug),
    title: d.text('title', title),
    description: d.text('description', description) ?? '',
    createdAt: d.time('created_at', createdAt),
    rejected: d.rejected,
  };
}

/**
 * Featured videos kept per snapshot at most. What an entry shows of one is about 400 bytes of
 * heap (19,110 of them, 7.8 MB): 32,768 hold about 13 MB, and every featured video of a site of
 * that many groups (the feed-heavy bench site has 25,000 at 100,000 users).
 */
export const FEATURED_KEPT = 32_768;

/**
 * Groups' owners kept per snapshot at most. An owner kept is about 150 bytes of heap (21,203 of
 * them, 3.2 MB): 32,768 hold about 5 MB, and every owner of a site of that many (the feed-heavy
 * bench site has 22,141 at 100,000 users).
 */
export const OWNERS_KEPT = 32_768;

/** What a group's entry shows of its featured video, without the rest of its view. */
function featuredVideo(video: VideoView): FeaturedVideo {
  const { publicId, title, fileUrl, fileType, fileSize, durationSeconds, thumbnailUrl, thumbnailWidth, thumbnailHeight } = video;
  return { publicId, title, fileUrl, fileType, fileSize, durationSeconds, thumbnailUrl, thumbnailWidth, thumbnailHeight };
}

/** Before every row: the keyset a walk starts after (upload times are whole numbers: migrations.ts). */
const BEFORE_ALL: [unknown, unknown] = [Number.MIN_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];

/**
 * A walk oldest first in pages of `pageRows[0]`, `pageRows[1]`, … rows that `decode` takes, each
 * page read after the last row of the one before (`keyOf` gives a row's sort key). Rows `decode`
 * refuses are passed over, as the bundle's `archived` leaves them out: a page counts only the
 * rows it holds, so none is empty.
 */
function* pagesOf<Row, View>(
  pageRows: readonly number[],
  read: (after: [unknown, unknown], limit: number) => Row[],
  keyOf: (row: Row) => [unknown, unknown],
  decode: (row: Row) => View | null,
): Generator<View[]> {
  let after = BEFORE_ALL;
  for (const size of pageRows) {
    if (!Number.isSafeInteger(size) || size < 1) throw new Error(`an archive page holds at least one row, not ${String(size)}`);
    const page: View[] = [];
    while (page.length < size) {
      const rows = read(after, size - page.length);
      if (rows.length === 0) break;
      for (const row of rows) {
        const view = decode(row);
        if (view !== null) page.push(view);
      }
      after = keyOf(rows[rows.length - 1]!);
    }
    if (page.length === 0) return;
    yield page;
  }
}

/** What a feed's statement returned: how many rows, and the sort key (created_at, id) of its last. */
interface FeedRead {
  rows: number;
  last: [createdAt: unknown, id: number] | null;
}

/**
 * The ids of the rows beyond a feed's newest `limit` that can be published, oldest first
 * (archives.ts). The feed's newest are its `limit` rows, publishable or not (the feed leaves the
 * others out); `all` and `before` give each row's id, or null for a row that cannot be published.
 * After the feed's own statement only the rows older than its last are read: a feed that came back
 * short has nothing beyond it. Without it (an archive built alone), every row is read and the
 * newest `limit` left out.
 */
function beyondFeed(
  read: FeedRead | null,
  limit: number,
  all: () => Array<number | null>,
  before: (createdAt: unknown, id: number) => Array<number | null>,
): number[] {
  const ids = (rows: Array<number | null>) => rows.filter((id) => id !== null);
  if (read === null || limit === 0) return ids(all().slice(0, -limit || undefined));
  if (read.rows < limit || read.last === null) return [];
  return ids(before(read.last[0], read.last[1]));
}
