import type { UserRow } from '../../db/reader-columns.js';
import type { SiteReader, VideoEntry } from '../../db/site-reader.js';
import type { ArchiveSource, SiteIndex, UserBundle, UserPart, VideoView } from '../../model/views.js';
import type { SitePaths } from '../../paths/site-paths.js';
import type { Owner } from '../build-state.js';
import type { Skipped } from '../build-report.js';
import type { NamedRow } from './name-collisions.js';
import { ownsKey, type ShardSpec } from '../../shard/shard.js';

/**
 * The read stage: one owner at a time (a user with the parts of their data the build's formats
 * need, or a video), from the build's snapshot of the database. Rows whose name cannot be
 * published, or that cannot be published for their data, come out as skipped; rows of another
 * shard do not come out at all. Streams: nothing is held beyond the owner being read.
 */

export type OwnerRead =
  | { kind: 'user'; owner: Owner; key: string; bundle: UserBundle; archive: ArchiveSource }
  | { kind: 'video'; owner: Owner; key: string; video: VideoView }
  | { kind: 'skipped'; skipped: Skipped };

/** Which users or videos to read: every one (or every one of one user's), these ids, or none. */
export type OwnerSelection = { every: true; ofUser?: string } | { ids: ReadonlySet<number> } | 'none';

export interface ReadScope {
  reader: SiteReader;
  paths: SitePaths;
  /** Parts of a user's data the build's user formats read (the reader loads nothing else). */
  parts: ReadonlySet<UserPart>;
  shard?: ShardSpec;
  /** Called before each row is looked at; throws to stop the build between owners (a signal). */
  beforeEach?: () => void;
}

export function readUser(scope: ReadScope, row: UserRow): OwnerRead | null {
  scope.beforeEach?.();
  if (!ownsKey(scope.shard, row.username)) return null;
  const problem = scope.paths.problem(row.username);
  if (problem !== null) return { kind: 'skipped', skipped: { kind: 'user', key: row.username, reason: problem, isName: true } };
  const owner: Owner = { kind: 'user', id: row.id };
  return { kind: 'user', owner, key: row.username, bundle: scope.reader.userBundle(row.id, scope.parts), archive: scope.reader.archive(row.id) };
}

export function readVideo(scope: ReadScope, { row, read }: VideoEntry): OwnerRead | null {
  scope.beforeEach?.();
  if (!ownsKey(scope.shard, row.publicId)) return null;
  const problem = scope.paths.problem(row.publicId);
  if (problem !== null) return { kind: 'skipped', skipped: { kind: 'video', key: row.publicId, reason: problem, isName: true } };
  const video = read();
  if (video === null) return null;
  if ('problem' in video) {
    return { kind: 'skipped', skipped: { kind: 'video', key: row.publicId, reason: video.problem, isName: false, ...(video.issue ? { issue: video.issue } : {}) } };
  }
  return { kind: 'video', owner: { kind: 'video', id: row.id }, key: row.publicId, video };
}

/** The rows of the users a selection names (before the shard and the name rule), in the order they are built. */
export function* userRows(scope: ReadScope, selection: OwnerSelection): Generator<UserRow> {
  if (selection === 'none') return;
  if ('every' in selection) {
    yield* scope.reader.users(selection.ofUser);
    return;
  }
  for (const id of [...selection.ids].sort((a, b) => a - b)) {
    const row = scope.reader.userRow(id);
    if (row !== null) yield row;
  }
}

export function* readUsers(scope: ReadScope, selection: OwnerSelection): Generator<OwnerRead> {
  for (const row of userRows(scope, selection)) {
    const read = readUser(scope, row);
    if (read !== null) yield read;
  }
}

export function* readVideos(scope: ReadScope, selection: OwnerSelection): Generator<OwnerRead> {
  if (selection === 'none') return;
  if ('every' in selection) {
    // Unsharded, a build reads every video and one statement reads them all; a shard of several
    // reads a fraction of them, and looks up each one it wants (SiteReader.videoEntries).
    const lookUp = scope.shard !== undefined && scope.shard.count > 1;
    for (const entry of scope.reader.videoEntries(selection.ofUser, { lookUp })) {
      const read = readVideo(scope, entry);
      if (read !== null) yield read;
    }
    return;
  }
  for (const id of [...selection.ids].sort((a, b) => a - b)) {
    const row = scope.reader.videoRow(id);
    const read = row === null ? null : readVideo(scope, { row, read: () => scope.reader.video(row.id) });
    if (read !== null) yield read;
  }
}

/**
 * Published keys for site-wide documents: only names that can be paths and rows that can be
 * published (the rest are reported elsewhere), and none of the documents that failed in this
 * build (`failed` holds `format NUL key`). `changes` says which owners may differ from what the
 * site files on disk list (build-scopes.ts), for the documents split by id.
 */
export function siteIndex(
  reader: SiteReader,
  paths: SitePaths,
  failed: ReadonlySet<string>,
  changes?: SiteIndex['changes'],
  lastModifiedIn?: SiteIndex['lastModifiedIn'],
  shownEntriesIn?: SiteIndex['shownEntriesIn'],
): SiteIndex {
  return {
    ...(lastModifiedIn === undefined ? {} : { lastModifiedIn }),
    ...(shownEntriesIn === undefined ? {} : { shownEntriesIn }),
    documentFailed: (format, key) => failed.has(`${format}\u0000${key}`),
    *usernames() {
      for (const row of reader.users()) if (paths.problem(row.username) === null) yield row.username;
    },
    *videoIds() {
      for (const id of reader.publishableVideoIds()) if (paths.problem(id) === null) yield id;
    },
    idBounds: () => reader.idBounds(),
    *usersById(from, to) {
      for (const row of reader.usersById(from, to)) if (paths.problem(row.username) === null) yield { id: row.id, key: row.username };
    },
    *videosById(from, to) {
      for (const row of reader.publishableVideosById(from, to)) if (paths.problem(row.publicId) === null) yield { id: row.id, key: row.publicId };
    },
    *videoViewsById(from, to) {
      for (const video of reader.videoViewsById(from, to)) if (paths.problem(video.publicId) === null) yield video;
    },
    ...(changes === undefined ? {} : { changes }),
  };
}

/** Every user and video whose name can be published, for the name-collision report. */
export function* publishedNames(reader: SiteReader, paths: SitePaths): Iterable<NamedRow> {
  for (const row of reader.users()) if (paths.problem(row.username) === null) yield { kind: 'user', id: row.id, name: row.username };
  for (const row of reader.videos()) if (paths.problem(row.publicId) === null) yield { kind: 'video', id: row.id, name: row.publicId };
}
