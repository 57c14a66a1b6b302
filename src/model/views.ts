/**
 * View models: what renderers see. Built from the database by `src/db/site-reader.ts` with every
 * privacy rule already applied: nothing private or hidden ever reaches a view. Dates stay `Date`
 * until a renderer formats them through `src/render/dates.ts`.
 */

export interface Address {
  streetAddress: string;
  locality: string;
  region: string;
  /** Full name of the region (hCard `region` title). */
  regionName: string;
  postalCode: string;
  countryName: string;
}

/**
 * Chat ids, only when the user chose to show them. MSN and Jabber ids are e-mail-shaped
 * addresses (user@host); the seed publishes them hashed ("some are hashed"), so the view carries
 * only their SHA-1 hex, never the address.
 */
export interface ChatIds {
  aim: string | null;
  yahoo: string | null;
  /** SHA-1 hex of the MSN id. */
  msnSha1: string | null;
  icq: string | null;
  /** SHA-1 hex of the Jabber id. */
  jabberSha1: string | null;
}

export interface UserView {
  id: number;
  username: string;
  displayName: string;
  title: string;
  givenName: string;
  familyName: string;
  /** The address itself: only when the user chose to show it. */
  email: string | null;
  /** SHA-1 hex of `mailto:` + address, for FOAF; null when the user has no address. */
  emailSha1: string | null;
  /** Only when the user chose to show it. */
  phone: string | null;
  homepageUrl: string | null;
  avatarUrl: string | null;
  openidUrl: string | null;
  /** Only when the user chose to show them. */
  chatIds: ChatIds | null;
  /** Only when the user chose to show it. */
  address: Address | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A public user as seen from someone else's document (a friend, an uploader, a group owner). */
export interface PersonRef {
  username: string;
  displayName: string;
  avatarUrl: string | null;
  homepageUrl: string | null;
  emailSha1: string | null;
}

export interface VideoView {
  id: number;
  publicId: string;
  title: string;
  description: string;
  durationSeconds: number | null;
  fileUrl: string;
  fileSize: number | null;
  fileType: string;
  width: number | null;
  height: number | null;
  thumbnailUrl: string;
  thumbnailWidth: number;
  thumbnailHeight: number;
  captionsUrl: string | null;
  category: string | null;
  tags: readonly string[];
  uploader: PersonRef;
  createdAt: Date;
  updatedAt: Date;
}

/** What a group's entry shows of its owner: their name. */
export type GroupOwner = Pick<PersonRef, 'username' | 'displayName'>;

/** What a group's entry shows of its featured video: the file, its thumbnail and its title. */
export type FeaturedVideo = Pick<
  VideoView,
  'publicId' | 'title' | 'fileUrl' | 'fileType' | 'fileSize' | 'durationSeconds' | 'thumbnailUrl' | 'thumbnailWidth' | 'thumbnailHeight'
>;

export interface GroupView {
  id: number;
  slug: string;
  title: string;
  description: string;
  owner: GroupOwner;
  /** The featured video when it is public; null otherwise. */
  featuredVideo: FeaturedVideo | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface OnlineAccount {
  /** Null when the stored value is not an absolute http(s) URL. */
  serviceHomepageUrl: string | null;
  accountName: string;
  /** Null when the stored value is not an absolute http(s) URL. */
  profileUrl: string | null;
}

export interface RecommendationView {
  id: number;
  title: string;
  link: string;
  image: string;
  description: string;
  durationSeconds: number | null;
  createdAt: Date;
}

export interface AttentionConcept {
  /** Category name; every category of the site is listed, value 0 where the user has none. */
  category: string;
  value: number;
  updatedAt: Date | null;
}

export interface AttentionSource {
  video: { publicId: string; title: string };
  value: number;
  supplier: PersonRef;
  updatedAt: Date;
}

export interface ReadingListEntry {
  category: string | null;
  title: string;
  description: string;
  /** Null when the stored value is not an absolute http(s) URL. */
  htmlUrl: string | null;
  /** Always an absolute http(s) URL: entries without one are left out (nothing to subscribe to). */
  xmlUrl: string;
  createdAt: Date;
  updatedAt: Date;
}

/** The parts of a user's data a format may need; the reader loads only what is asked for. */
export type UserPart =
  | 'uploads'
  | 'groups'
  | 'friends'
  | 'accounts'
  | 'interests'
  | 'playlist'
  | 'recommendations'
  | 'attention'
  | 'readingList'
  /** Which of the user's uploads lie beyond the RSS feed's newest (`archived.uploads`). */
  | 'archivedUploads'
  /** Which of the groups lie beyond the Atom feed's newest (`archived.groups`). */
  | 'archivedGroups';

/**
 * A user's uploads or groups beyond the ones their feed shows, oldest first, in pages of the
 * given numbers of rows: the RFC 5005 archive pages. A page holds the next rows of that order
 * that can be published (the others are passed over, as `archived` leaves them out). Read a page
 * at a time, so a user's whole history is never in memory.
 */
export interface ArchiveSource {
  /** Pages of `pageRows[0]`, `pageRows[1]`, … rows, from the oldest of the bundle's `archived`. */
  uploads(pageRows: readonly number[]): Iterable<VideoView[]>;
  groups(pageRows: readonly number[]): Iterable<GroupView[]>;
}

export interface UserBundle {
  user: UserView;
  /** Latest public uploads, newest first, at most RSS_ITEMS (src/formats/rss.ts). */
  uploads: VideoView[];
  /** The ATOM_ENTRIES (src/formats/atom.ts) most recent visible groups the user belongs to, newest first. */
  groups: GroupView[];
  /** Friends who are public users, by username. */
  friends: PersonRef[];
  accounts: OnlineAccount[];
  /** Tag names. */
  interests: string[];
  /**
   * The XSPF playlist: public saved videos in the user's order; when there are none, the user's
   * public viewing history if the user made it public (a static file has no logged-in viewer
   * whose history it could show); else empty.
   */
  playlist: { source: 'saved' | 'history' | 'none'; videos: VideoView[] };
  /**
   * Public recommendations whose link and image are absolute http(s) URLs, newest first, at most
   * the configured count.
   */
  recommendations: RecommendationView[];
  attention: { concepts: AttentionConcept[]; sources: AttentionSource[] };
  readingList: ReadingListEntry[];
  /**
   * The ids of the rows beyond the feeds' newest, oldest first: the public uploads older than the
   * RSS feed's items and the groups older than the Atom feed's entries, which the archive pages
   * hold: only those that can be published, so that no page is planned empty (the feeds' own
   * newest rows are counted publishable or not, as the feeds read them).
   */
  archived: { uploads: number[]; groups: number[] };
}

export interface VideoBundle {
  video: VideoView;
}

/** A published user or video as a site-wide list names it: its row id and its key (username or public id). */
export interface KeyedRow {
  id: number;
  key: string;
}

/** The lowest and highest row id of a table. */
export interface IdBounds {
  min: number;
  max: number;
}

/** When what a video's sitemap entry shows last changed (SiteIndex.shownEntriesIn). */
export interface ShownEntries {
  /**
   * For an entry that now shows what `shown` hashes: when that last changed, recording it when it
   * differs from what was recorded. Null when no change of it is known: the entry's first record
   * (a new video, or a state from before entries were recorded), dated by its documents alone.
   */
  changed(videoId: number, shown: Buffer): Date | null;
}

/**
 * What site-wide documents read: streams of published keys, never the whole site in memory; and,
 * for documents split by row id (the sitemap of a large site), what the build knows of what changed.
 */
export interface SiteIndex {
  /** Published usernames in a stable order. */
  usernames(): Iterable<string>;
  /** Published video ids in a stable order. */
  videoIds(): Iterable<string>;
  /**
   * When the bytes of each recorded document of the users (or videos) with `from <= id <= to`
   * last changed, by its file under out/, as the build state recorded them: the sitemap's
   * `lastmod`, read for a whole part at once. Absent: no `lastmod` is written.
   */
  lastModifiedIn?(kind: 'users' | 'videos', from: number, to: number): ReadonlyMap<string, Date>;
  /**
   * What the build state recorded of the sitemap entries of the videos with `from <= id <= to`
   * (a part's, read at once), to date each entry by the last change of what it shows. Absent: an
   * entry is dated by its documents alone.
   */
  shownEntriesIn?(from: number, to: number): ShownEntries;
  /** Whether the document of `format` for this key failed to render in this build (lists leave it out). */
  documentFailed?(format: string, key: string): boolean;
  /** Lowest and highest id of any user and any video row, published or not (null: no rows). */
  idBounds?(): { users: IdBounds | null; videos: IdBounds | null };
  /** Published users (or videos) with `from <= id <= to`, by id, as `usernames` (`videoIds`) filters them. */
  usersById?(from: number, to: number): Iterable<KeyedRow>;
  videosById?(from: number, to: number): Iterable<KeyedRow>;
  /** The published videos with `from <= id <= to`, by id, as the documents show them (the sitemap's video entries). */
  videoViewsById?(from: number, to: number): Iterable<VideoView>;
  /**
   * The users and videos whose documents or names may differ from what the site files on disk
   * list ('all' when the build cannot tell), and those site files, so a document split by id
   * rewrites only the parts that hold them. Absent: everything is rendered.
   */
  changes?: {
    users: ReadonlySet<number> | 'all';
    videos: ReadonlySet<number> | 'all';
    siteFilesOnDisk: ReadonlySet<string>;
    /**
     * A site file's text on disk and the hash of its bytes, when they are what the build state
     * records for it (else null), so that a part whose layout an earlier build of the process kept
     * may be spliced into it (src/formats/sitemap-parts.ts). Absent when a document failed in this
     * build: every owner's entries of a part are then rendered again.
     */
    recorded?(file: string): { text: string; hash: Buffer } | null;
  };
}
