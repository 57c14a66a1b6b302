import type Database from 'better-sqlite3';
import { isUtf8 } from 'node:buffer';
import { segmentProblem } from '../paths/names.js';
import type { ArchiveSource, IdBounds, UserBundle, UserPart, VideoView } from '../model/views.js';
import { columnSpec, SITE_TABLES } from './columns.js';
import { keptName, type DecodeContext } from './decode-context.js';
import { describeValue, issueOf, type IssueSink, type ValueIssue } from './decode.js';
import type { UserRow, VideoRow } from './reader-columns.js';
import { lookupStatements, type LookupStatements, type ReaderLimits } from './reader-statements.js';
import { wrongTypeRows } from './type-checks.js';
import { UserBundleReader } from './user-bundle-reader.js';
import { publishable, videoOrProblem, videoProblem, type VideoProblem } from './video-view.js';

/**
 * Reads the site database into view models. Every privacy rule lives here, in SQL, so no renderer
 * can see what it must not publish:
 * - a user is published only when `state = 'active'`;
 * - a video only when it is public and its uploader is published;
 * - a group only when it is not hidden and its owner is published;
 * - e-mail, phone, chat ids and address only when the user chose to show them (the SHA-1 of the
 *   e-mail is the one exception: FOAF publishes it as `mbox_sha1sum`, docs/formats.md).
 *
 * Statements are prepared once (src/db/reader-statements.ts, over the columns and conditions of
 * src/db/reader-columns.ts); rows are decoded into views by src/db/user-view.ts and
 * src/db/video-view.ts, and a user's bundle is read by src/db/user-bundle-reader.ts. How many rows
 * of each list it reads is the caller's to say (`ReaderLimits`). Callers hold one read transaction
 * (`snapshot`) for a consistent view.
 */

/** A published video's row, and its view (or why it cannot be published) when asked for. */
export interface VideoEntry {
  row: VideoRow;
  read(): VideoView | VideoProblem | null;
}

/**
 * A video looked up by its public id, as oEmbed answers it (docs/oembed.md): `private`
 * (401) only when the uploader is published and the video is not public; a video of a suspended
 * or deleted user, or a row that cannot be published, is `missing` (404) like an unknown id, so
 * nothing about it is revealed.
 */
export type VideoLookup = { status: 'published'; video: VideoView } | { status: 'private' } | { status: 'missing' };

export class SiteReader {
  private readonly stmt: LookupStatements;
  private readonly bundles: UserBundleReader;
  /** Where value issues go (the build's reporter); each is passed on once per reader. */
  private issueSink: IssueSink | null = null;
  private readonly seenIssues = new Set<string>();
  private readonly rawText = new Map<string, Database.Statement<unknown[], unknown>>();
  private readonly ctx: DecodeContext;

  constructor(
    private readonly db: Database.Database,
    limits: ReaderLimits,
  ) {
    this.stmt = lookupStatements(db);
    this.ctx = {
      sink: (issue) => this.report(issue),
      invalidUtf8: (table, column, rowId) => this.invalidUtf8(table, column, rowId),
      tagName: (id) => keptName(this.tags, id, this.stmt.tagName),
      categoryById: (id) => keptName(this.categories, id, this.stmt.categoryName),
      tagLists: null,
    };
    this.bundles = new UserBundleReader(db, this.ctx, limits, (id) => this.video(id));
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

  /**
   * How many users and videos are published, by the rules the reads apply in SQL (a row a value
   * check then leaves out is still counted): a first build's progress shows its total from them.
   */
  publishedCounts(): { users: number; videos: number } {
    return this.stmt.publishedCounts.get()!;
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
   * ends it. Inside it, tag and category names and groups' featured videos and owners are kept
   * between reads (docs/performance.md, "Reading").
   */
  beginSnapshot(): () => void {
    this.db.exec('BEGIN');
    this.ctx.tagLists = new Map();
    this.tags = new Map();
    this.categories = new Map();
    this.bundles.keepInSnapshot(true);
    return () => {
      this.bundles.keepInSnapshot(false);
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

  /**
   * The published videos with `from <= id <= to` as the documents show them, by id, for the
   * sitemap's video entries; rows that cannot be published are left out. A build has read (and
   * reported) these rows with the videos' own documents, so this reading reports nothing again.
   */
  *videoViewsById(from: number, to: number): Iterable<VideoView> {
    const quiet: DecodeContext = { ...this.ctx, sink: () => {} };
    for (const raw of this.stmt.videosReadById.iterate(from, to)) {
      const view = videoOrProblem(quiet, raw);
      if (!('problem' in view)) yield view;
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
    return this.bundles.read(id, parts);
  }

  /** A user's archive pages (uploads and groups beyond the feeds' newest), read a page at a time. */
  archive(id: number): ArchiveSource {
    return this.bundles.archive(id);
  }
}
