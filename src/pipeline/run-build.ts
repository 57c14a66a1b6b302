import type { ChangeLog, ChangeLogPosition } from '../db/change-log.js';
import type { ValueIssue } from '../db/decode.js';
import type { SiteReader, UserRow } from '../db/site-reader.js';
import type { Format, SiteContext, SiteFormat, UserFormat, VideoFormat } from '../formats/format.js';
import type { UserPart } from '../model/views.js';
import type { Encoding } from '../paths/compression.js';
import { ALL_ENCODINGS } from '../paths/compression.js';
import { ReportTally, type BuildReport, type BuildReporter } from './build-report.js';
import type { BuildState, Owner } from './build-state.js';
import { affectedOwners, countOwners, type AffectedOwners } from './plan/changes.js';
import { commitState } from './record/commit-state.js';
import { planBuild, type BuildFingerprint, type BuildPlan } from './plan/incremental.js';
import { BuildInterrupted } from './interrupt.js';
import { describeCollision, nameCollisions } from './read/name-collisions.js';
import type { OutputWriter } from './write/output-writer.js';
import { pruneStale } from './prune/prune-stale.js';
import { sweepTree } from './prune/sweep-tree.js';
import {
  publishableUsers,
  publishedNames,
  readUsers,
  readVideos,
  siteIndex,
  userRows,
  type OwnerRead,
  type OwnerSelection,
  type ReadScope,
} from './read/read-owners.js';
import { renderOwner, renderSiteFormat, renderUserTexts, resultsOfRenderedUser, type ThreadResult } from './render/render-documents.js';
import type { RenderedUser, RenderJob, RenderPool } from './threads/render-pool.js';
import { ownsSiteFiles, type ShardSpec } from './plan/shard.js';
import { compareAndWrite, keepFailed, recordWritten, writeRendered, type WriteTarget } from './write/write-documents.js';

/**
 * The build, as a sequence of named stages, each a module with one job:
 *
 *   plan     (incremental.ts)       full, incremental or partial, and from where
 *   read     (read-owners.ts)       one owner at a time from one snapshot of the database
 *   render   (render-documents.ts)  the owner's documents as bytes; pure
 *   write    (write-documents.ts)   compare with what is there, write what changed, record it
 *   prune    (prune-stale.ts)       remove what an earlier build wrote and this one did not
 *   record   (commit-state.ts)      what the next build may follow from; commit
 *
 * This function only wires them: it knows nothing of the command line, the terminal or where
 * files go. The writer, the state, the clock and the reporter are handed in, so tests run it in
 * memory. With a change log and a saved basis the build is incremental (docs/incremental.md):
 * inside the same snapshot it reads the changes since the last build, finds the owners they affect
 * (changes.ts) and renders only those owners' documents, and the site files when the set of
 * published names may have changed.
 */

export interface BuildOptions {
  /** Format names to build; all when absent. */
  only?: ReadonlySet<string>;
  /** Build only this user's documents (and their videos'); site-wide files are left alone. */
  user?: string;
  /** An unpublishable row stops the build instead of being skipped. */
  strict?: boolean;
  /** Render everything even when an incremental build is possible. */
  full?: boolean;
  /** Build only this shard's part of the site (src/pipeline/shard.ts); site-wide files only in shard 1. */
  shard?: ShardSpec;
}

export interface BuildDeps {
  reader: SiteReader;
  writer: OutputWriter;
  state: BuildState;
  site: SiteContext;
  formats: readonly Format[];
  reporter?: BuildReporter;
  /**
   * The change log on the reader's connection and the fingerprint of this build's configuration,
   * templates and formats. Without them every build renders everything.
   */
  incremental?: { changeLog: ChangeLog; fingerprint: BuildFingerprint };
  /** Seconds on a monotonic clock, for the report's duration; `process.hrtime` when absent. */
  clock?: () => number;
  /**
   * Read between owners: a signal that arrived (src/pipeline/interrupt.ts). The build then stops,
   * records what it wrote and throws BuildInterrupted.
   */
  stopRequested?: () => 'SIGINT' | 'SIGTERM' | null;
  /**
   * Pre-compressed forms to write beside each text document (the configuration's `compress`):
   * written before their document, rewritten only with it, removed with it. None when absent.
   */
  compression?: readonly Encoding[];
  /**
   * Threads that read and render users' documents when the build renders every user; they render
   * only the snapshot of the change log the build reads, so only with `incremental`.
   */
  renderPool?: RenderPool;
}

export function selectFormats(all: readonly Format[], only: ReadonlySet<string> | undefined): Format[] {
  if (only === undefined) return [...all];
  return all.filter((f) => only.has(f.name));
}

const monotonicSeconds = () => Number(process.hrtime.bigint()) / 1e9;

export function runBuild(deps: BuildDeps, options: BuildOptions = {}): BuildReport {
  const clock = deps.clock ?? monotonicSeconds;
  const started = clock();
  const { reader, writer, state, site } = deps;
  const formats = selectFormats(deps.formats, options.only);
  const keyed = {
    user: formats.filter((f): f is UserFormat => f.scope === 'user'),
    video: formats.filter((f): f is VideoFormat => f.scope === 'video'),
  };
  const siteFormats =
    options.user === undefined && ownsSiteFiles(options.shard) ? formats.filter((f): f is SiteFormat => f.scope === 'site') : [];
  const tally = new ReportTally(deps.reporter, options.strict === true);
  const report = tally.report;
  const scope: ReadScope = {
    reader,
    paths: site.paths,
    parts: new Set<UserPart>(keyed.user.flatMap((f) => f.needs)),
    shard: options.shard,
    beforeEach: () => {
      const signal = deps.stopRequested?.() ?? null;
      if (signal !== null) throw new BuildInterrupted(signal);
    },
  };
  reader.onIssue((issue) => tally.issue(issue));

  // What earlier builds left, read before this build marks itself as running.
  const saved = {
    basis: state.basis(),
    basisDropped: state.basisDropped(),
    interrupted: state.interrupted(),
    replacedVersion: state.replacedVersion,
    // Not a count: counting the records reads the whole state (a second at 2.5 million files),
    // and watch builds many times a second.
    empty: state.isEmpty(),
    outputEmpty: writer.isEmpty?.() ?? false,
    siteFilesStale: state.siteFilesStale(),
    sweep: state.needsSweep(),
  };
  // A build into an empty directory compares nothing with the disk, whatever the state recorded:
  // a first build, or one after the output was emptied (every document is written either way).
  const startedEmpty = saved.outputEmpty;
  const compression = deps.compression ?? [];
  const forms = formsPlan(saved.empty ? null : state.compression(), compression, startedEmpty);
  const target: WriteTarget = { writer, state, verify: false, startedEmpty, compression, formsUnknown: forms.unknown };
  const formsOnDisk = forms.onDisk;
  /** Documents that failed in this build, by format and key: the sitemap leaves them out. */
  const failedDocuments = new Set<string>();
  /** An owner gained a document: the published names may have changed. */
  let newPaths = false;
  /**
   * Owners whose listing in the site files may have changed in this build: a document gained
   * (or a name taken over from another row), lost, or failed. A sitemap split by id rewrites
   * only their parts (an owner whose documents merely show another's changed name is not one).
   */
  const relisted = { user: new Set<number>(), video: new Set<number>() };
  const relist = (owner: Owner, movedFrom: number | null = null) => {
    if (owner.kind === 'site') return;
    relisted[owner.kind].add(owner.id);
    if (movedFrom !== null) relisted[owner.kind].add(movedFrom);
  };
  /** Paths pruned so far: an owner lost a document. */
  let pruned = 0;
  /** The change log as the build's snapshot read it (absent without a change log). */
  let log: ChangeLogPosition | undefined;

  const write = (results: Iterable<ThreadResult>) => {
    for (const result of results) {
      if (result.ok) {
        const document = 'written' in result ? result.written : result.document;
        const outcome = 'written' in result ? recordWritten(target, result.written) : compareAndWrite(target, result.document);
        if (outcome.failure !== undefined) {
          // Not written (a link, a folder that cannot be written, a directory in its place): the
          // others are, and the next build tries this one again.
          const { format, key, path } = document;
          tally.fail({ format: format.name, key, path, message: `cannot be written: ${outcome.failure}` }, path);
          failedDocuments.add(`${format.name}\u0000${key}`);
          relist(document.owner);
          if (outcome.isNew) newPaths = true;
          continue;
        }
        if (outcome.isNew) {
          newPaths = true;
          relist(document.owner, outcome.movedFrom);
        }
        tally.document(document.path, document.format.name, outcome.written, outcome.bytes);
      } else {
        tally.fail(result.failed.failure, result.failed.where);
        failedDocuments.add(`${result.failed.format.name}\u0000${result.failed.key}`);
        relist(result.failed.owner);
        if (keepFailed(target, result.failed)) newPaths = true;
      }
    }
  };
  const build = (reads: Iterable<OwnerRead>) => {
    for (const read of reads) {
      if (read.kind === 'skipped') tally.skip(read.skipped);
      else write(renderOwner(read, keyed, site));
    }
  };
  /**
   * The users of a selection: read and rendered on the render threads when there are any (each
   * thread reads the bundles from the build's snapshot on its own connection), else here through
   * the read and render stages; in the same order either way. In a build into an empty directory
   * the threads also write their users' files (every document is written there: nothing to
   * compare), and this thread records them.
   */
  const buildUsers = (selection: OwnerSelection) => {
    const pool = deps.renderPool;
    if (pool === undefined || log === undefined) return build(readUsers(scope, selection));
    const rows = publishableUsers(scope, userRows(scope, selection), (skipped) => tally.skip(skipped));
    const take = (rendered: RenderedUser) => write(resultsOfRenderedUser(rendered, keyed.user, site));
    const renderHere = (row: UserRow) => renderUserTexts(reader.userBundle(row.id, scope.parts), keyed.user, site);
    // Writing, the users rendered here are written at once too, so the batches queued behind a
    // thread's hold hashes, not documents (held documents outlived the young generation: the
    // garbage collector's helpers took a fifth of the build's CPU).
    const writeHere = (path: string, format: Format, text: string) => writeRendered((to, body) => writer.write(to, body), { format, path, text }, compression);
    const job: RenderJob = {
      formats: keyed.user.map((format) => format.name),
      parts: scope.parts,
      position: log.position,
      local: !target.startedEmpty
        ? renderHere
        : (row) => renderHere(row).map((text, i) => ('body' in text ? { written: writeHere(site.paths.file(keyed.user[i]!, row.username), keyed.user[i]!, text.body) } : text)),
      // What a thread's reader reports about values goes to this build's reader, as if read here.
      issues: (found: readonly ValueIssue[]) => found.forEach((issue) => reader.report(issue)),
      ...(target.startedEmpty
        ? {
            writes: {
              compression,
              unclaimed: take,
              lane: () => writer.openLane?.() ?? null,
              lendThread: (data) => writer.lendThread?.(data) ?? null,
              spareTime: () => writer.spareTime?.() ?? null,
            },
          }
        : {}),
    };
    for (const rendered of pool.render(rows, job)) take(rendered);
    report.renderThreads = pool.threadsUsed;
  };
  /**
   * The site files; with `changes`, a format split by owner id (the sitemap of a large site)
   * renders only the parts holding those owners and keeps the others as they are on disk.
   */
  const buildSiteFiles = (changes?: { users: ReadonlySet<number> | 'all'; videos: ReadonlySet<number> | 'all' }) => {
    const onDisk = changes === undefined ? undefined : { ...changes, siteFilesOnDisk: state.siteFiles() };
    const index = siteIndex(reader, site.paths, failedDocuments, onDisk);
    for (const format of siteFormats) {
      for (const result of renderSiteFormat(format, index, site)) {
        if ('kept' in result) state.keep(result.kept);
        else write([result]);
      }
    }
  };
  const prune = (paths: Iterable<string>): number => {
    const count = pruneStale(
      paths,
      { writer, state, formsOnDisk },
      (path) => tally.removed(path),
      (path, why) => deps.reporter?.warn?.(`not removed: ${path}: ${why}`),
    );
    pruned += count;
    return count;
  };

  /**
   * Builds the affected owners, and the site files when the published names may have changed
   * (an owner gained or lost a document: created, renamed, published or withdrawn), and prunes
   * the paths they no longer produce.
   */
  const buildAffected = (affected: AffectedOwners): { siteFiles: boolean } => {
    const selection = (owners: ReadonlySet<number> | 'all', formatCount: number): OwnerSelection =>
      owners !== 'all' ? { ids: owners } : formatCount > 0 ? { every: true } : 'none';
    buildUsers(selection(affected.users, keyed.user.length));
    build(readVideos(scope, selection(affected.videos, keyed.video.length)));
    const pruneOwned = (kind: 'user' | 'video', owners: ReadonlySet<number> | 'all') => {
      if (owners === 'all') prune(state.staleOwned(kind));
      else for (const id of owners) if (prune(state.staleOwned(kind, id)) > 0) relist({ kind, id });
    };
    pruneOwned('user', affected.users);
    pruneOwned('video', affected.videos);
    // A partial build since the last one may have added or removed documents without them.
    // In a sharded build, another shard's owners may gain or lose documents unseen here: the shard
    // that writes the site files renders them whenever anything changed (unchanged bytes are not
    // rewritten).
    const sharded = options.shard !== undefined && options.shard.count > 1 && siteFormats.length > 0;
    const anyOwner = affected.users === 'all' || affected.users.size > 0 || affected.videos === 'all' || affected.videos.size > 0;
    const siteFiles = affected.siteFiles || newPaths || pruned > 0 || saved.siteFilesStale || (sharded && anyOwner);
    if (siteFiles) {
      // The owners this build relisted are the only ones whose listing may have changed, unless
      // earlier builds left the site files behind (stale, another shard's owners, unknown tables).
      const relistedOnly = !(affected.siteFiles || saved.siteFilesStale || sharded);
      const users = affected.users === 'all' ? 'all' : relisted.user;
      const videos = affected.videos === 'all' ? 'all' : relisted.video;
      buildSiteFiles(relistedOnly ? { users, videos } : undefined);
      prune(state.staleOwned('site'));
      state.setSiteFilesStale(false);
    }
    return { siteFiles };
  };

  /** Every owner in the build's scope, the site files, and what an earlier build wrote in that scope that this one did not. */
  const buildEverything = (plan: BuildPlan) => {
    const whole = plan.mode === 'full' && options.user === undefined;
    // Rows SQL leaves out for a value of the wrong type are named once, before the documents.
    if (whole) reader.unpublishedRows();
    const every: OwnerSelection = { every: true, ofUser: options.user };
    buildUsers(keyed.user.length > 0 ? every : 'none');
    build(readVideos(scope, keyed.video.length > 0 ? every : 'none'));
    // After the documents, so the sitemap lists none that failed.
    buildSiteFiles();
    // Names that would be one directory on macOS or Windows, every published row of them named.
    if (whole && ownsSiteFiles(options.shard)) {
      for (const group of nameCollisions(() => publishedNames(reader, site.paths))) tally.nameCollision(describeCollision(group));
    }
    prune(state.stale({ formats: new Set(formats.map((f) => f.name)), user: options.user }));
    if (plan.mode === 'full' && (saved.sweep || saved.interrupted) && options.user === undefined && options.only === undefined && writer.root !== undefined) {
      writer.flush?.();
      sweepTree({ root: writer.root, writer, state, paths: site.paths, formsOnDisk: compression, shard: options.shard }, (path) => tally.removed(path));
      state.swept();
    }
    if (plan.mode === 'full') {
      state.setSiteFilesStale(false);
      // Every document was seen: the forms beside them are now the configured ones (unless one
      // failed, whose old file and forms were kept: the next full build looks again).
      if (report.failedCount === 0) state.setCompression(compression);
    }
    // A partial build does not render the site files: the next build must, if names came or went.
    else if (newPaths || pruned > 0) state.setSiteFilesStale(true);
  };

  state.begin();
  try {
    reader.snapshot(() => {
      log = deps.incremental?.changeLog.current();
      const plan = planBuild({
        state: saved,
        fingerprint: deps.incremental?.fingerprint,
        log,
        options,
        logIdentityAt: (seq) => deps.incremental?.changeLog.identityAt(seq) ?? null,
      });
      report.mode = plan.mode;
      report.reason = plan.reason;
      target.verify = plan.verify;
      // A full build renders about what the last one recorded; other builds cannot tell beforehand.
      deps.reporter?.started?.({ mode: plan.mode, reason: plan.reason, expected: plan.mode === 'full' && !saved.empty ? state.count() : undefined });
      if (plan.mode !== 'incremental') return buildEverything(plan);
      const { changeLog } = deps.incremental!;
      const affected = affectedOwners(changeLog.since(plan.from!, log!.position), changeLog.lookups);
      report.changes = log!.position - plan.from!;
      const { siteFiles } = buildAffected(affected);
      report.owners = { ...countOwners(affected), siteFiles, unknownTables: affected.unknownTables };
    });
    report.snapshot = log;
    commitState({ writer, state }, report, deps.incremental?.fingerprint, log);
  } catch (error) {
    if (error instanceof BuildInterrupted) keepInterrupted(writer, state, saved.interrupted);
    else state.rollback();
    throw error;
  }
  report.seconds = clock() - started;
  return report;
}

/**
 * A build stopped by a signal keeps what was done: the files on disk, their records, and the old
 * basis, so the next build follows from it and finds these files already as they should be. The
 * site files may not list the names this build added or dropped: the next build renders them.
 * Every file this build recorded is on disk once the writer is flushed. If the build before it
 * was killed, the records this build did not reach may still claim bytes that never got to disk:
 * the mark stays, and the next build checks them against the disk.
 */
function keepInterrupted(writer: OutputWriter, state: BuildState, previousInterrupted: boolean): void {
  writer.flush?.();
  state.setSiteFilesStale(true);
  if (!previousInterrupted) state.finish('keep');
  state.commit();
}

/**
 * The compressed forms around this build: whether the forms beside unchanged documents must be
 * brought in line (the encodings changed since the last full build, or no build recorded them, a
 * lost state: an unchanged document is otherwise never rewritten, and its forms with it), and
 * which forms a pruned document may have beside it.
 */
export function formsPlan(
  saved: readonly Encoding[] | null,
  configured: readonly Encoding[],
  startedEmpty: boolean,
): { unknown: boolean; onDisk: readonly Encoding[] } {
  const same = saved !== null && saved.length === configured.length && saved.every((encoding) => configured.includes(encoding));
  return {
    unknown: !startedEmpty && !same,
    onDisk: saved === null ? (startedEmpty ? configured : ALL_ENCODINGS) : [...new Set([...saved, ...configured])],
  };
}
