import type { SiteReader } from '../db/site-reader.js';
import type { AnyUserFormat, SiteContext, SiteFormat, VideoFormat } from '../formats/format.js';
import type { SiteIndex, UserPart } from '../model/views.js';
import type { Encoding } from '../paths/compression.js';
import type { BuildState, Owner } from './build-state.js';
import { ReportTally, type Skipped } from './build-report.js';
import { ownsSiteFiles, type ShardSpec } from '../shard/shard.js';
import type { PruneTarget } from './prune/prune-stale.js';
import { describeCollision, nameCollisions } from './read/name-collisions.js';
import type { OwnerRead, OwnerSelection, ReadScope } from './read/read-owners.js';
import { publishedNames, readUsers, readVideos, siteIndex } from './read/read-owners.js';
import { renderOwner, renderSiteFormat, type KeptFile, type RenderResult } from './render/render-documents.js';
import { compareAndWrite, keepFailed, type WriteTarget } from './write/write-documents.js';
import { documentHash } from '../render/document-hash.js';

/** The owners a build reads (build-scopes.ts); `whole` in a full build not limited to one user. */
export interface OwnersToRead {
  users: OwnerSelection;
  videos: OwnerSelection;
  whole: boolean;
}

/** Which owners may differ from what the site files on disk list (`readSite`). */
export interface SiteChanges {
  users: ReadonlySet<number> | 'all';
  videos: ReadonlySet<number> | 'all';
}

/** What the render stage hands the write stage for one owner (or one site file). */
export type Rendered = { kind: 'skipped'; skipped: Skipped } | { kind: 'documents'; documents: Iterable<RenderResult | KeptFile> };

/**
 * One build's passage through the stages: the read, render and write stages as generators that
 * run-build.ts chains (`write(render(read(owners)))`), one owner at a time, and what they have
 * read, rendered and written so far, which the later stages need (the sitemap leaves out documents
 * that failed, the site files are rendered again when names came or went).
 *
 * The write stage yields after each owner: the build's driver (build-steps.ts) lets the event
 * loop run there, so a signal is heard between owners.
 */
export class BuildRun {
  readonly tally: ReportTally;
  readonly scope: ReadScope;
  /** Documents that failed in this build, by format and key: the sitemap leaves them out. */
  readonly failedDocuments = new Set<string>();
  /**
   * Site formats that failed in this build: one that stops part-way (the sitemap, several files)
   * did not reach its later files, and its index still lists them, so none of its files is pruned.
   */
  readonly failedSiteFormats = new Set<string>();
  /** An owner gained a document: the published names may have changed. */
  newPaths = false;
  /** A document the sitemap lists changed its bytes: its `lastmod` moved. */
  lastmodMoved = false;
  /**
   * Owners whose listing in the site files may have changed in this build: a document gained
   * (or a name taken over from another row), lost, or failed. A sitemap split by id rewrites
   * only their parts (an owner whose documents merely show another's changed name is not one).
   * Kept only for the kinds `followRelisted` names: a build that renders every part of the site
   * files needs none, and a full build would keep every user's and video's id for nothing.
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

  /**
   * The read stage: the owners of a selection, users then videos, one at a time. A whole build
   * names the rows SQL leaves out for a value of the wrong type before the documents, and the names
   * that would be one directory on macOS or Windows after them, every published row of them named.
   */
  *read(owners: OwnersToRead): Generator<OwnerRead> {
    if (owners.whole) this.reader.unpublishedRows();
    yield* readUsers(this.scope, owners.users);
    yield* readVideos(this.scope, owners.videos);
    if (!owners.whole || !ownsSiteFiles(this.scope.shard)) return;
    for (const group of nameCollisions(() => publishedNames(this.reader, this.site.paths))) this.tally.nameCollision(describeCollision(group));
  }

  /** The render stage: each owner's documents as bytes; an owner skipped by the read passes through. */
  *render(reads: Iterable<OwnerRead>): Generator<Rendered> {
    for (const read of reads) yield read.kind === 'skipped' ? read : { kind: 'documents', documents: renderOwner(read, this.formats, this.site) };
  }

  /**
   * The site files' read: the published names, less the documents that failed in this build; with
   * `changes`, a format split by owner id (the sitemap of a large site) renders only the parts
   * holding those owners and keeps the others as they are on disk, and splices the owners' entries
   * into a part whose file holds what the state records (`recorded`, src/formats/sitemap-parts.ts).
   */
  readSite(changes?: SiteChanges): SiteIndex {
    const recorded = (file: string) => {
      const record = this.state.previous(file);
      if (record === undefined) return null;
      const bytes = this.target.writer.read?.(file, record.size) ?? null;
      return bytes !== null && documentHash(bytes).equals(record.hash) ? { text: bytes.toString('utf8'), hash: record.hash } : null;
    };
    const onDisk =
      changes === undefined ? undefined : { ...changes, siteFilesOnDisk: this.state.siteFiles(), ...(this.failedDocuments.size === 0 ? { recorded } : {}) };
    return siteIndex(
      this.reader,
      this.site.paths,
      this.failedDocuments,
      onDisk,
      (kind, from, to) => this.state.changedIn(kind === 'users' ? 'user' : 'video', from, to),
      (from, to) => this.state.shownEntriesIn(from, to),
    );
  }

  /** The site files' render, a file at a time. */
  *renderSite(index: SiteIndex): Generator<Rendered> {
    for (const format of this.formats.site) for (const result of renderSiteFormat(format, index, this.site)) yield { kind: 'documents', documents: [result] };
  }

  /** The write stage: each owner's documents (or a site file), yielding after each. */
  *write(rendered: Iterable<Rendered>): Generator<void> {
    for (const owner of rendered) {
      if (owner.kind === 'skipped') this.tally.skip(owner.skipped);
      else {
        for (const result of owner.documents) {
          if ('kept' in result) this.state.keep(result.kept);
          else this.writeOne(result);
        }
      }
      yield;
    }
  }

  /** What the prune stage removes from, and with which compressed forms. */
  get pruneTarget(): PruneTarget {
    return { writer: this.target.writer, state: this.state, formsOnDisk: this.formsOnDisk, paths: this.site.paths, shard: this.scope.shard };
  }

  /** The write stage for one rendered (or failed) document, and what it tells the report. */
  private writeOne(result: RenderResult): void {
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
      if (failed.owner.kind === 'site') this.failedSiteFormats.add(failed.format.name);
      this.relist(failed.owner);
      if (keepFailed(this.target, failed)) this.newPaths = true;
    }
  }
}
