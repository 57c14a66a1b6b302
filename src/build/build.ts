import { createHash } from 'node:crypto';
import type { ChangeLog, ChangeLogPosition } from '../db/change-log.js';
import { describeIssue, type ValueIssue } from '../db/decode.js';
import type { SiteReader, UserRow, VideoEntry } from '../db/site-reader.js';
import type { Format, SiteFormat, UserFormat, VideoFormat } from '../formats/format.js';
import type { SiteContext } from '../model/site-context.js';
import type { SiteIndex, UserPart } from '../model/views.js';
import { showName } from '../paths/names.js';
import type { BuildState, Owner } from './build-state.js';
import { affectedOwners, countOwners, type AffectedOwners } from './changes.js';
import { describeCollision, nameCollisions, type NamedRow } from './name-collisions.js';
import { basisOf, planBuild, type BuildFingerprint, type BuildMode } from './incremental.js';
import { ownsKey, ownsSiteFiles, type ShardSpec } from './shard.js';
import type { OutputWriter } from './output-writer.js';
import { BuildInterrupted } from './interrupt.js';
import type { RenderedDocument, RenderedUser, RenderPool } from './render-pool.js';
import { ALL_ENCODINGS, compress, compressedPath, type Encoding } from './compression.js';
import { isCompressible } from '../hosting/routes.js';

/**
 * The build: read (one snapshot of the database) → view models → render → write → prune.
 * It knows nothing of the command line, the terminal or where files go: the writer, the state
 * and the reporter are handed in, so tests run it in memory.
 *
 * With a change log and a saved basis it is incremental (docs/incremental.md): inside the same
 * snapshot it reads the changes since the last build, finds the owners they affect
 * (src/build/changes.ts) and renders only those owners' documents, and the site files when the
 * set of published names may have changed.
 */

/**
 * How many skipped rows, failures and value issues the report object keeps in full; the rest are
 * only counted, so a site of millions of bad rows does not grow the build's memory. Every one of
 * them is still named as it happens, through the reporter (`warn`, and `issue` for values).
 */
export const REPORT_KEEPS = 100;

export interface BuildOptions {
  /** Format names to build; all when absent. */
  only?: ReadonlySet<string>;
  /** Build only this user's documents (and their videos'); site-wide files are left alone. */
  user?: string;
  /** An unpublishable row stops the build instead of being skipped. */
  strict?: boolean;
  /** Render everything even when an incremental build is possible. */
  full?: boolean;
  /** Build only this shard's part of the site (src/build/shard.ts); site-wide files only in shard 1. */
  shard?: ShardSpec;
}

export interface Skipped {
  kind: 'user' | 'video';
  key: string;
  reason: string;
  /** The reason is about the name (it cannot be a path), not the row's other data. */
  isName: boolean;
  /** When a value of the wrong type decided it: the table, row, column and what was found. */
  issue?: ValueIssue;
}

export interface Failure {
  format: string;
  key: string;
  path: string;
  message: string;
}

export interface BuildReport {
  written: number;
  unchanged: number;
  removed: number;
  /** The first REPORT_KEEPS skipped rows; `skippedCount` counts them all. */
  skipped: Skipped[];
  skippedCount: number;
  /** The first REPORT_KEEPS failures; `failedCount` counts them all. */
  failed: Failure[];
  failedCount: number;
  /**
   * The first REPORT_KEEPS values of the wrong type or out of their domain (src/db/decode.ts),
   * each once; `issueCount` counts them all. Each also names its outcome (field or row left out).
   */
  issues: ValueIssue[];
  issueCount: number;
  /** Full builds: groups of names that one case-insensitive or normalising file system would merge (reported, all written). */
  nameCollisions: number;
  documents: number;
  bytesWritten: number;
  seconds: number;
  mode: BuildMode;
  /** Why the build was full, incremental or partial. */
  reason: string;
  /** Incremental builds: how many changes were applied and how many owners they affected. */
  changes?: number;
  owners?: { users: number | 'all'; videos: number | 'all'; siteFiles: boolean; unknownTables: readonly string[] };
  /** The change log as the build's snapshot read it: what the tree is as of (absent without a change log). */
  snapshot?: ChangeLogPosition;
  /** Threads besides the build's own that read and rendered users' documents (src/build/render-pool.ts). */
  renderThreads: number;
}

export interface BuildReporter {
  /** Called now and then with the number of documents done. */
  progress?(done: number): void;
  /** A row that was skipped or a document that failed, as it happens. */
  warn?(message: string): void;
  /** Once, when the build knows its mode; `expected` estimates the documents it will render, when it can. */
  started?(plan: { mode: BuildMode; reason: string; expected?: number }): void;
  /** Each skipped row, whole (a report keeps only the first REPORT_KEEPS). */
  skipped?(skipped: Skipped): void;
  /** Each document that failed to render, whole. */
  failed?(failure: Failure): void;
  /** A file whose bytes changed was written, at `path` under the output directory. */
  wrote?(path: string, format: string): void;
  /** A file an earlier build wrote was removed. */
  removed?(path: string): void;
  /** A value of the wrong type or out of its domain, as it is found (also passed to `warn` as a line). */
  issue?(issue: ValueIssue): void;
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
  /**
   * Read between owners: a signal that arrived (src/build/interrupt.ts). The build then stops,
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

/** An unpublishable row under --strict. Exit code 1. */
export class StrictModeError extends Error {
  constructor(readonly skipped: Skipped) {
    super(`${skipped.kind} ${showName(skipped.key)} cannot be published: ${describeSkip(skipped)} (--strict makes this fatal)`);
    this.name = 'StrictModeError';
  }
}

export function describeSkip(skipped: Skipped): string {
  return skipped.isName ? `its name ${skipped.reason}` : `it ${skipped.reason}`;
}

export function selectFormats(all: readonly Format[], only: ReadonlySet<string> | undefined): Format[] {
  if (only === undefined) return [...all];
  return all.filter((f) => only.has(f.name));
}

export function runBuild(deps: BuildDeps, options: BuildOptions = {}): BuildReport {
  const started = process.hrtime.bigint();
  const { reader, writer, state, site, reporter } = deps;
  const formats = selectFormats(deps.formats, options.only);
  const userFormats = formats.filter((f): f is UserFormat => f.scope === 'user');
  const videoFormats = formats.filter((f): f is VideoFormat => f.scope === 'video');
  const siteFormats =
    options.user === undefined && ownsSiteFiles(options.shard) ? formats.filter((f): f is SiteFormat => f.scope === 'site') : [];
  const parts = new Set<UserPart>(userFormats.flatMap((f) => f.needs));

  const report: BuildReport = {
    written: 0,
    unchanged: 0,
    removed: 0,
    skipped: [],
    skippedCount: 0,
    failed: [],
    failedCount: 0,
    issues: [],
    issueCount: 0,
    nameCollisions: 0,
    documents: 0,
    bytesWritten: 0,
    seconds: 0,
    mode: 'full',
    reason: '',
    renderThreads: 0,
  };
  let lastProgress = 0;
  let verify = false;
  /** An owner gained a document: the published names may have changed. */
  let newPaths = false;
  /** The change log as the build's snapshot saw it. */
  let log: ChangeLogPosition | undefined;

  /**
   * The compressed forms go first, so a build killed in between leaves a document that differs
   * from its record and is rewritten, with its forms, by the next build (docs/deploy.md).
   */
  const writeDocument = (format: Format, path: string, body: Buffer) => {
    if (isCompressible(format.mediaType)) {
      for (const encoding of compression) {
        const form = compress(body, encoding);
        writer.write(compressedPath(path, encoding), form);
        report.bytesWritten += form.length;
      }
    }
    writer.write(path, body);
  };
  /**
   * The compressed forms of a document that did not change, when the configured encodings differ
   * from those of the last full build (or are not known, or a build was interrupted): written
   * where they do not hold its bytes, removed for encodings no longer wanted.
   */
  const syncForms = (format: Format, path: string, body: Buffer) => {
    const wanted = isCompressible(format.mediaType) ? compression : [];
    for (const encoding of ALL_ENCODINGS) {
      const formPath = compressedPath(path, encoding);
      if (!wanted.includes(encoding)) {
        // Asked first: a removal waits for the write thread, a question about an absent file does not.
        if (!startedEmpty && writer.size(formPath) !== null) writer.remove(formPath);
        continue;
      }
      const form = compress(body, encoding);
      if (writer.holds?.(formPath, form) ?? false) continue;
      writer.write(formPath, form);
      report.bytesWritten += form.length;
    }
  };

  const emit = (format: Format, path: string, key: string, owner: Owner, user: string | null, render: () => string) => {
    let body: Buffer;
    try {
      body = Buffer.from(render(), 'utf8');
    } catch (error) {
      const failure = { format: format.name, key, path, message: (error as Error).message };
      fail(failure);
      reporter?.failed?.(failure);
      failedDocuments.add(`${format.name}\u0000${key}`);
      reporter?.warn?.(`failed: ${format.name} of ${showName(key)} (${path}): ${failure.message}`);
      if (state.previous(path) === undefined) newPaths = true;
      state.keep(path);
      return;
    }
    const hash = createHash('sha1').update(body).digest();
    const previous = state.previous(path);
    if (previous === undefined) newPaths = true;
    // Without a trustworthy saved hash (an interrupted build, or no record of this path: a lost or
    // replaced state), the bytes on disk decide, so identical files keep their times and ETags;
    // unless the output held nothing when the build began.
    const same = verify || previous === undefined
      ? !startedEmpty && (writer.holds?.(path, body) ?? false)
      : previous.size === body.length && previous.hash.equals(hash) && writer.size(path) === body.length;
    if (same) {
      report.unchanged++;
      // After an interrupted build, too: it may have written forms and been killed before their document.
      if (formsUnknown || verify) syncForms(format, path, body);
    } else {
      writeDocument(format, path, body);
      reporter?.wrote?.(path, format.name);
      report.written++;
      report.bytesWritten += body.length;
    }
    state.record(path, format.name, owner, user, hash, body.length);
    report.documents++;
    if (reporter?.progress && report.documents - lastProgress >= 500) {
      lastProgress = report.documents;
      reporter.progress(report.documents);
    }
  };

  // Kept in memory up to a cap, counted beyond: a site of bad rows must not grow the build.
  function fail(failure: Failure): void {
    if (++report.failedCount <= REPORT_KEEPS) report.failed.push(failure);
  }
  reader.onIssue((issue) => {
    if (++report.issueCount <= REPORT_KEEPS) report.issues.push(issue);
    reporter?.issue?.(issue);
    reporter?.warn?.(`bad value: ${describeIssue(issue)}`);
  });
  /** Documents that failed in this build, by format and key: the sitemap leaves them out. */
  const failedDocuments = new Set<string>();
  const skip = (skipped: Skipped) => {
    if (options.strict) throw new StrictModeError(skipped);
    if (++report.skippedCount <= REPORT_KEEPS) report.skipped.push(skipped);
    reporter?.skipped?.(skipped);
    reporter?.warn?.(`skipped ${skipped.kind} ${showName(skipped.key)}: ${describeSkip(skipped)}`);
  };

  const renderSiteFiles = () => {
    for (const format of siteFormats) {
      const index = siteIndex(reader, site, failedDocuments);
      let files;
      try {
        files = format.render(index, site);
      } catch (error) {
        const failure = { format: format.name, key: '', path: format.file, message: (error as Error).message };
        fail(failure);
        reporter?.failed?.(failure);
        reporter?.warn?.(`failed: ${format.name} (${format.file}): ${(error as Error).message}`);
        continue;
      }
      for (const file of files) emit(format, file.file, '', { kind: 'site' }, null, () => file.body);
    }
  };

  const checkStop = () => {
    const signal = deps.stopRequested?.() ?? null;
    if (signal !== null) throw new BuildInterrupted(signal);
  };

  /** The rows of `rows` this build publishes: another shard's users are left out, unpublishable names reported. */
  function* publishable(rows: Iterable<UserRow>): Generator<UserRow> {
    for (const row of rows) {
      checkStop();
      if (!ownsKey(options.shard, row.username)) continue;
      const problem = site.paths.problem(row.username);
      if (problem !== null) {
        skip({ kind: 'user', key: row.username, reason: problem, isName: true });
        continue;
      }
      yield row;
    }
  }

  /** A user's documents rendered on this thread, as a render thread renders them (render-worker.ts). */
  const renderHere = (row: UserRow): RenderedDocument[] => {
    const bundle = reader.userBundle(row.id, parts);
    return userFormats.map((format) => {
      try {
        return { body: format.render(bundle, site) };
      } catch (error) {
        return { error: (error as Error).message };
      }
    });
  };

  const emitUser = ({ row, documents }: RenderedUser) => {
    const owner: Owner = { kind: 'user', id: row.id };
    userFormats.forEach((format, i) => {
      const document = documents[i]!;
      emit(format, site.paths.file(format, row.username), row.username, owner, row.username, () => {
        if ('error' in document) throw new Error(document.error);
        return document.body;
      });
    });
  };

  /** Every user of `rows`: on the render threads when there are any, in the same order either way. */
  const renderUsers = (rows: Iterable<UserRow>) => {
    const pool = deps.renderPool;
    if (pool === undefined || log === undefined) {
      for (const row of publishable(rows)) emitUser({ row, documents: renderHere(row) });
      return;
    }
    const names = userFormats.map((format) => format.name);
    // What a thread's reader reports about values goes to this build's reader, as if read here.
    const issues = (found: readonly ValueIssue[]) => found.forEach((issue) => reader.report(issue));
    for (const rendered of pool.render(publishable(rows), names, parts, log.position, renderHere, issues)) emitUser(rendered);
    report.renderThreads = pool.threadsUsed;
  };

  // Unsharded, a build reads every video and one statement reads them all; a shard of several
  // reads a fraction of them, and looks up each one it wants (SiteReader.videoEntries).
  const videoEntries = (ofUser?: string) => reader.videoEntries(ofUser, { lookUp: options.shard !== undefined && options.shard.count > 1 });

  const renderVideo = ({ row, read }: VideoEntry) => {
    checkStop();
    if (!ownsKey(options.shard, row.publicId)) return;
    const problem = site.paths.problem(row.publicId);
    if (problem !== null) {
      skip({ kind: 'video', key: row.publicId, reason: problem, isName: true });
      return;
    }
    const video = read();
    if (video === null) return;
    if ('problem' in video) {
      skip({ kind: 'video', key: row.publicId, reason: video.problem, isName: false, ...(video.issue ? { issue: video.issue } : {}) });
      return;
    }
    const owner: Owner = { kind: 'video', id: row.id };
    for (const format of videoFormats) {
      emit(format, site.paths.file(format, row.publicId), row.publicId, owner, video.uploader.username, () => format.render({ video }, site));
    }
  };

  /** Names that would be one directory on macOS or Windows, every published row of them named. */
  const reportCollisions = () => {
    const names = function* (): Iterable<NamedRow> {
      for (const row of reader.users()) if (site.paths.problem(row.username) === null) yield { kind: 'user', id: row.id, name: row.username };
      for (const row of reader.videos()) if (site.paths.problem(row.publicId) === null) yield { kind: 'video', id: row.id, name: row.publicId };
    };
    for (const group of nameCollisions(names)) {
      report.nameCollisions++;
      reporter?.warn?.(`name collision: ${describeCollision(group)}`);
    }
  };

  /**
   * Removes a file an earlier build wrote that this one does not produce, and its record. Called
   * as the state yields stale paths, a page at a time, so no list of them is held: a build after
   * the site shrank may have millions.
   */
  let pruned = 0;
  const prune = (paths: Iterable<string>) => {
    for (const path of paths) {
      for (const encoding of formsOnDisk) writer.remove(compressedPath(path, encoding));
      if (writer.remove(path)) {
        report.removed++;
        reporter?.removed?.(path);
      }
      state.forget(path);
      pruned++;
    }
  };

  /**
   * Renders the affected owners, and the site files when the published names may have changed
   * (an owner gained or lost a document: created, renamed, published or withdrawn), and prunes
   * the paths they no longer produce.
   */
  const renderAffected = (affected: AffectedOwners): { siteFiles: boolean } => {
    if (affected.users === 'all') {
      if (userFormats.length > 0) renderUsers(reader.users());
    } else {
      for (const id of [...affected.users].sort((a, b) => a - b)) {
        const row = reader.userRow(id);
        if (row !== null) renderUsers([row]);
      }
    }
    if (affected.videos === 'all') {
      if (videoFormats.length > 0) for (const entry of videoEntries()) renderVideo(entry);
    } else {
      for (const id of [...affected.videos].sort((a, b) => a - b)) {
        const row = reader.videoRow(id);
        if (row !== null) renderVideo({ row, read: () => reader.video(row.id) });
      }
    }
    const pruneOwned = (kind: 'user' | 'video', owners: ReadonlySet<number> | 'all') => {
      if (owners === 'all') prune(state.staleOwned(kind));
      else for (const id of owners) prune(state.staleOwned(kind, id));
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
      renderSiteFiles();
      prune(state.staleOwned('site'));
      state.setSiteFilesStale(false);
    }
    return { siteFiles };
  };

  // What earlier builds left, read before this build marks itself as running.
  const saved = {
    basis: state.basis(),
    basisDropped: state.basisDropped(),
    interrupted: state.interrupted(),
    replacedVersion: state.replacedVersion,
    count: state.count(),
    get empty() {
      return this.count === 0;
    },
    siteFilesStale: state.siteFilesStale(),
  };
  // A first build into an empty directory compares nothing with the disk.
  const startedEmpty = saved.empty && (writer.isEmpty?.() ?? false);
  const compression = deps.compression ?? [];
  const savedCompression = saved.empty ? null : state.compression();
  // The forms beside unchanged documents are brought in line when the encodings changed since the
  // last full build, or no build recorded them (a lost state): an unchanged document is otherwise
  // never rewritten, and its forms with it.
  const formsUnknown = !startedEmpty && (savedCompression === null || !sameEncodings(savedCompression, compression));
  // Which forms a pruned document may have beside it.
  const formsOnDisk = savedCompression === null ? (startedEmpty ? compression : ALL_ENCODINGS) : [...new Set([...savedCompression, ...compression])];
  state.begin();
  try {
    reader.snapshot(() => {
      log = deps.incremental?.changeLog.current();
      const plan = planBuild({
        state: saved,
        fingerprint: deps.incremental?.fingerprint,
        log,
        options,
      });
      report.mode = plan.mode;
      report.reason = plan.reason;
      verify = plan.verify;
      // A full build renders about what the last one recorded; other builds cannot tell beforehand.
      reporter?.started?.({ mode: plan.mode, reason: plan.reason, expected: plan.mode === 'full' && !saved.empty ? saved.count : undefined });

      if (plan.mode === 'incremental') {
        const { changeLog } = deps.incremental!;
        const affected = affectedOwners(changeLog.since(plan.from!, log!.position), changeLog.lookups);
        report.changes = log!.position - plan.from!;
        const { siteFiles } = renderAffected(affected);
        report.owners = { ...countOwners(affected), siteFiles, unknownTables: affected.unknownTables };
        return;
      }

      // Rows SQL leaves out for a value of the wrong type are named once, before the documents.
      if (plan.mode === 'full' && options.user === undefined) reader.unpublishedRows();
      if (userFormats.length > 0) renderUsers(reader.users(options.user));
      if (videoFormats.length > 0) for (const entry of videoEntries(options.user)) renderVideo(entry);
      // After the documents, so the sitemap lists none that failed.
      renderSiteFiles();
      if (plan.mode === 'full' && options.user === undefined && ownsSiteFiles(options.shard)) reportCollisions();
      // What an earlier build wrote, in this build's scope, that this build did not produce.
      const scope = { formats: new Set(formats.map((f) => f.name)), user: options.user };
      prune(state.stale(scope));
      if (plan.mode === 'full') {
        state.setSiteFilesStale(false);
        // Every document was seen: the forms beside them are now the configured ones (unless one
        // failed, whose old file and forms were kept: the next full build looks again).
        if (report.failedCount === 0) state.setCompression(compression);
      }
      // A partial build does not render the site files: the next build must, if names came or went.
      else if (newPaths || pruned > 0) state.setSiteFilesStale(true);
    });

    // Every file is on disk before the state says so (a writer may write in the background).
    writer.flush?.();
    report.snapshot = log;
    finishState(deps, report, log);
    state.commit();
  } catch (error) {
    if (error instanceof BuildInterrupted) {
      // Keep what was done: the files on disk, their records, and the old basis, so the next build
      // follows from it and finds these files already as they should be. The site files may not
      // list the names this build added or dropped: the next build renders them.
      // Every file this build recorded is on disk once the writer is flushed. If the build before
      // it was killed, the records this build did not reach may still claim bytes that never got
      // to disk: the mark stays, and the next build checks them against the disk.
      writer.flush?.();
      state.setSiteFilesStale(true);
      if (saved.interrupted) state.commit();
      else {
        state.finish('keep');
        state.commit();
      }
    } else {
      state.rollback();
    }
    throw error;
  }
  report.seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return report;
}

/**
 * What the next build may follow from. A complete build without failures moves the basis to its
 * snapshot; a partial build, or an incremental one with failures (its changes are applied again
 * next time), keeps the old one; a full build with failures leaves none, so the next is full too.
 */
function finishState(deps: BuildDeps, report: BuildReport, log: ChangeLogPosition | undefined): void {
  const { state, incremental } = deps;
  if (report.mode === 'partial') return state.finish('keep');
  if (report.failedCount > 0) {
    return state.finish(report.mode === 'incremental' ? 'keep' : { dropped: `the last full build had ${report.failedCount} failed documents` });
  }
  if (incremental === undefined || log === undefined) return state.finish({ dropped: 'the last build had no change log to follow' });
  // The position read inside the build's snapshot: changes committed after it are the next build's.
  state.finish(basisOf(incremental.fingerprint, log));
}

function sameEncodings(a: readonly Encoding[], b: readonly Encoding[]): boolean {
  return a.length === b.length && a.every((encoding) => b.includes(encoding));
}

/**
 * Published keys for site-wide documents: only names that can be paths and rows that can be
 * published (the rest are reported elsewhere), and none of the documents that failed in this build.
 */
function siteIndex(reader: SiteReader, site: SiteContext, failed: ReadonlySet<string>): SiteIndex {
  return {
    documentFailed: (format, key) => failed.has(`${format}\u0000${key}`),
    *usernames() {
      for (const row of reader.users()) if (site.paths.problem(row.username) === null) yield row.username;
    },
    *videoIds() {
      for (const id of reader.publishableVideoIds()) if (site.paths.problem(id) === null) yield id;
    },
  };
}
