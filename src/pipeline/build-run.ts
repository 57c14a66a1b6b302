import type { SiteReader } from '../db/site-reader.js';
import type { AnyUserFormat, SiteContext, SiteFormat, VideoFormat } from '../formats/format.js';
import type { UserPart } from '../model/views.js';
import type { BuildState, Owner } from './build-state.js';
import { ReportTally } from './build-report.js';
import type { ShardSpec } from './plan/shard.js';
import { pruneStale } from './prune/prune-stale.js';
import type { OwnerRead, ReadScope } from './read/read-owners.js';
import { readUsers, readVideos, siteIndex, type OwnerSelection } from './read/read-owners.js';
import { renderOwner, renderSiteFormat, type RenderResult } from './render/render-documents.js';
import type { Encoding } from '../paths/compression.js';
import { compareAndWrite, keepFailed, type WriteTarget } from './write/write-documents.js';

/**
 * One build's passage through the stages: what it has read, rendered, written and pruned so far,
 * which the later stages need (the sitemap leaves out documents that failed, the site files are
 * rendered again when names came or went). run-build.ts decides what to build; this carries each
 * owner through read → render → write, and the stale paths through prune.
 *
 * The methods that go through owners are generators that yield after each one: the build's driver
 * (build-steps.ts) lets the event loop run there, so a signal is heard between owners.
 */
export class BuildRun {
  readonly tally: ReportTally;
  readonly scope: ReadScope;
  /** Documents that failed in this build, by format and key: the sitemap leaves them out. */
  readonly failedDocuments = new Set<string>();
  /** An owner gained a document: the published names may have changed. */
  newPaths = false;
  /** A document the sitemap lists changed its bytes: its `lastmod` moved. */
  lastmodMoved = false;
  /** Paths pruned so far: an owner lost a document. */
  pruned = 0;
  /**
   * Owners whose listing in the site files may have changed in this build: a document gained
   * (or a name taken over from another row), lost, or failed. A sitemap split by id rewrites
   * only their parts (an owner whose documents merely show another's changed name is not one).
   * Kept only for the kinds `followRelisted` names: a build that renders every part of the site
   * files needs none, and at 100,000 users a full build would keep 600,000 ids for nothing.
   */
  readonly relisted = { user: new Set<number>(), video: new Set<number>() };
  private readonly following = { user: false, video: false };

  constructor(
    readonly reader: SiteReader,
    readonly state: BuildState,
    readonly site: SiteContext,
    readonly formats: { user: readonly AnyUserFormat[]; video: readonly VideoFormat[]; site: readonly SiteFormat[] },
    readonly target: WriteTarget,
    /** The forms a pruned document may have beside it. */
    private readonly formsOnDisk: readonly Encoding[],
    options: { tally: ReportTally; shard?: ShardSpec; beforeEach: () => void },
  ) {
    this.tally = options.tally;
    this.scope = {
      reader,
      paths: site.paths,
      parts: new Set<UserPart>(formats.user.flatMap((f) => f.needs)),
      shard: options.shard,
      beforeEach: options.beforeEach,
    };
  }

  /** From now on, keeps the relisted owners of these kinds (`relisted`). */
  followRelisted(kinds: { user: boolean; video: boolean }): void {
    Object.assign(this.following, kinds);
  }

  relist(owner: Owner, movedFrom: number | null = null): void {
    if (owner.kind === 'site' || !this.following[owner.kind]) return;
    this.relisted[owner.kind].add(owner.id);
    if (movedFrom !== null) this.relisted[owner.kind].add(movedFrom);
  }

  /** The users of a selection, through read, render and write. */
  *users(selection: OwnerSelection): Generator<void> {
    yield* this.owners(readUsers(this.scope, selection));
  }

  /** The videos of a selection, through read, render and write. */
  *videos(selection: OwnerSelection): Generator<void> {
    yield* this.owners(readVideos(this.scope, selection));
  }

  /**
   * The site files; with `changes`, a format split by owner id (the sitemap of a large site)
   * renders only the parts holding those owners and keeps the others as they are on disk.
   */
  *siteFiles(changes?: { users: ReadonlySet<number> | 'all'; videos: ReadonlySet<number> | 'all' }): Generator<void> {
    const onDisk = changes === undefined ? undefined : { ...changes, siteFilesOnDisk: this.state.siteFiles() };
    const index = siteIndex(this.reader, this.site.paths, this.failedDocuments, onDisk, (kind, from, to) => this.state.changedIn(kind === 'users' ? 'user' : 'video', from, to));
    for (const format of this.formats.site) {
      for (const result of renderSiteFormat(format, index, this.site)) {
        if ('kept' in result) this.state.keep(result.kept);
        else this.write(result);
        yield;
      }
    }
  }

  /** Removes the stale paths and their records; returns how many. */
  prune(paths: Iterable<string>): number {
    const count = pruneStale(
      paths,
      { writer: this.target.writer, state: this.state, formsOnDisk: this.formsOnDisk },
      (path) => this.tally.removed(path),
      (path, why) => this.tally.notRemoved(path, why),
    );
    this.pruned += count;
    return count;
  }

  private *owners(reads: Iterable<OwnerRead>): Generator<void> {
    for (const read of reads) {
      if (read.kind === 'skipped') this.tally.skip(read.skipped);
      else for (const result of renderOwner(read, this.formats, this.site)) this.write(result);
      yield;
    }
  }

  /** The write stage for one rendered (or failed) document, and what it tells the report. */
  private write(result: RenderResult): void {
    if (result.ok) {
      const { document } = result;
      const outcome = compareAndWrite(this.target, document);
      if (outcome.failure !== undefined) {
        // Not written (a link, a folder that cannot be written, a directory in its place): the
        // others are, and the next build tries this one again.
        const { format, key, path } = document;
        this.tally.fail({ format: format.name, key, path, message: `cannot be written: ${outcome.failure}` }, path);
        this.failedDocuments.add(`${format.name}\u0000${key}`);
        this.relist(document.owner);
        if (outcome.isNew) this.newPaths = true;
        return;
      }
      if (outcome.isNew) {
        this.newPaths = true;
        this.relist(document.owner, outcome.movedFrom);
      } else if (outcome.written && document.format.inSitemap) {
        // Its sitemap `lastmod` moves: the sitemap (the part that lists it) is rendered again.
        this.lastmodMoved = true;
        this.relist(document.owner);
      }
      this.tally.document(document.path, document.format.name, outcome.written, outcome.bytes);
    } else {
      const { failed } = result;
      this.tally.fail(failed.failure, failed.where);
      this.failedDocuments.add(`${failed.format.name}\u0000${failed.key}`);
      this.relist(failed.owner);
      if (keepFailed(this.target, failed)) this.newPaths = true;
    }
  }
}
