import type { ChangeLog } from '../db/change-log.js';
import type { SiteReader } from '../db/site-reader.js';
import type { AnyUserFormat, Format, SiteContext, SiteFormat, VideoFormat } from '../formats/format.js';
import type { Encoding } from '../paths/compression.js';
import { ALL_ENCODINGS } from '../paths/compression.js';
import { ReportTally, type BuildReport, type BuildReporter } from './build-report.js';
import { BuildRun } from './build-run.js';
import { ownersToRead, pruneWork, settle, siteFilesPlan, staleOwners, type Planned, type ScopeOptions, type SiteFilesPlan } from './build-scopes.js';
import type { BuildState } from './build-state.js';
import { runSteps } from './build-steps.js';
import { BuildInterrupted } from './interrupt.js';
import { affectedOwners } from './plan/changes.js';
import { planBuild, type BuildFingerprint, type BuildPlan } from './plan/incremental.js';
import { prune } from './prune/prune-stale.js';
import { RemovalGuardError, type RemovalGuard } from './prune/removal-guard.js';
import { ownsSiteFiles, type ShardSpec } from '../shard/shard.js';
import { commitState } from './record/commit-state.js';
import type { OutputWriter } from './write/output-writer.js';

/**
 * The build, as a sequence of named stages, each a module with one job (docs/architecture.md):
 * plan (plan/), read (read/), render (render/), write (write/), prune (prune/) and record
 * (record/). `buildSteps` calls them in that order and does nothing else: build-run.ts chains read,
 * render and write one owner at a time, and build-scopes.ts says what each stage goes through
 * (which owners, which site files, which removals, what the state says for the next build). It
 * knows nothing of the command line, the terminal, threads or where files go. The writer, the
 * state, the clock and the reporter are handed in, so tests run it in memory. With a change log
 * and a saved basis the build is incremental (docs/incremental.md): inside the same snapshot it
 * reads the changes since the last build, finds the owners they affect (plan/changes.ts) and
 * renders only those owners' documents, and the site files when the set of published names may
 * have changed.
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
  /** Build only this shard's part of the site (src/shard/shard.ts); site-wide files only in shard 1. */
  shard?: ShardSpec;
  /**
   * Stop before removing anything when the build would remove more of the published documents
   * than this allows (prune/removal-guard.ts); no guard when absent (`--allow-removals`).
   */
  removalGuard?: RemovalGuard;
  /**
   * When the only site-file work an incremental build has is moving `lastmod`s (no URL came or
   * went), leave it to a later build: the owners are recorded as owed in the state, and the next
   * build that renders the site files renders their parts. `vidfeeds watch` sets it between its
   * site-file passes, so a run of edits reaches its documents without rewriting the sitemap each
   * time.
   */
  deferLastmods?: boolean;
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
}

export function selectFormats(all: readonly Format[], only: ReadonlySet<string> | undefined): Format[] {
  if (only === undefined) return [...all];
  return all.filter((f) => only.has(f.name));
}

/**
 * The selected formats the configuration asks for: the ones rendered. The others stay in the
 * build's scope, so the files an earlier configuration asked for are pruned.
 */
function enabledFormats(selected: readonly Format[], site: SiteContext): Format[] {
  return selected.filter((f) => f.enabled?.(site.config) ?? true);
}

const monotonicSeconds = () => Number(process.hrtime.bigint()) / 1e9;

/** The build, run to its end at once. */
export function runBuild(deps: BuildDeps, options: BuildOptions = {}): BuildReport {
  return runSteps(buildSteps(deps, options));
}

/** The build as steps that yield between owners (build-steps.ts runs them): the six stages in order. */
export function* buildSteps(deps: BuildDeps, options: BuildOptions = {}): Generator<void, BuildReport> {
  const clock = deps.clock ?? monotonicSeconds;
  const started = clock();
  const { reader, state } = deps;
  const { run, saved, scope } = startBuild(deps, options);
  state.begin();
  try {
    const endSnapshot = reader.beginSnapshot();
    let planned: Planned;
    let siteFiles: SiteFilesPlan;
    let pruned: number;
    try {
      planned = plan(deps, options, run, saved);
      // read → render → write: the owners' documents, one owner at a time.
      yield* run.write(run.render(run.read(ownersToRead(run, planned, scope))));
      // What prune will remove, counted by the removal guard before anything is removed.
      const stale = staleOwners(run, planned, scope);
      // read → render → write: the site files, after the documents (the sitemap lists none that failed).
      siteFiles = siteFilesPlan(run, planned, stale, scope);
      if (siteFiles.kind === 'render') yield* run.write(run.renderSite(run.readSite(siteFiles.changes)));
      pruned = prune(pruneWork(run, planned, stale, siteFiles, scope), run.pruneTarget, run.tally);
    } finally {
      endSnapshot();
    }
    record(deps, run, planned, siteFiles, pruned, scope);
  } catch (error) {
    // Stopped by a signal or by the removal guard, the build keeps what it wrote (documents of
    // owners still published) and removed nothing: the next build goes on from there.
    if (error instanceof BuildInterrupted || error instanceof RemovalGuardError) keepInterrupted(deps.writer, state, saved.interrupted);
    else state.rollback();
    throw error;
  }
  run.tally.report.seconds = clock() - started;
  return run.tally.report;
}

/** The record stage: what the state says for the next build, then the commit (record/commit-state.ts). */
function record(deps: BuildDeps, run: BuildRun, planned: Planned, siteFiles: SiteFilesPlan, pruned: number, scope: ScopeOptions): void {
  settle(run, planned, siteFiles, pruned, scope);
  run.tally.report.snapshot = planned.log;
  commitState({ writer: deps.writer, state: deps.state }, run.tally.report, deps.incremental?.fingerprint, planned.log);
}

/**
 * The plan stage, inside the build's snapshot: full, incremental or partial, and why; for an
 * incremental build, the owners the changes since the saved basis affect.
 */
function plan(deps: BuildDeps, options: BuildOptions, run: BuildRun, saved: SavedState): Planned {
  const { report } = run.tally;
  const changeLog = deps.incremental?.changeLog;
  const log = changeLog?.current();
  const planned = planBuild({
    state: saved,
    fingerprint: deps.incremental?.fingerprint,
    log,
    options,
    logIdentityAt: (seq) => changeLog?.identityAt(seq) ?? null,
  });
  report.mode = planned.mode;
  report.reason = planned.reason;
  run.target.verify = planned.verify;
  deps.reporter?.started?.({ mode: planned.mode, reason: planned.reason, expected: expectedDocuments(deps, planned, saved.empty, options) });
  if (planned.mode !== 'incremental') return { plan: planned, log };
  report.changes = log!.position - planned.from!;
  return { plan: planned, log, affected: affectedOwners(changeLog!.since(planned.from!, log!.position), changeLog!.lookups) };
}

/**
 * What a build starts from: what earlier builds left, the report, and the run that carries the
 * owners through the stages. Documents whose bytes this build changes are dated by its clock (the
 * sitemap's lastmod).
 */
function startBuild(deps: BuildDeps, options: BuildOptions): { run: BuildRun; saved: SavedState; scope: ScopeOptions } {
  const { reader, writer, state } = deps;
  const selected = selectFormats(deps.formats, options.only);
  const formats = enabledFormats(selected, deps.site);
  const tally = new ReportTally(deps.reporter, options.strict === true);
  reader.onIssue((issue) => tally.issue(issue));
  const saved = savedState(state, writer);
  const compression = deps.compression ?? [];
  const recorded = saved.empty ? null : state.compression();
  const forms = formsPlan(recorded, compression, saved.outputEmpty);
  // Forms of other encodings than recorded go beside what this build writes, and killed, stopped,
  // partial or failing, it records none: until a full build does, which forms are where is unknown
  // (to the next builds, which bring the forms they meet in line, and to the incremental deploy).
  if (!saved.empty && !sameEncodings(recorded, compression)) state.unsettleCompression();
  const target = { writer, state, verify: false, startedEmpty: saved.outputEmpty, compression, formsUnknown: forms.unknown };
  const beforeEach = () => {
    const signal = deps.stopRequested?.() ?? null;
    if (signal !== null) throw new BuildInterrupted(signal);
  };
  const run = new BuildRun(reader, state, deps.site, formatsByScope(formats, options), target, forms.onDisk, { tally, shard: options.shard, beforeEach });
  const scope: ScopeOptions = {
    ...options,
    formats: new Set(selected.map((f) => f.name)),
    siteFilesStale: saved.siteFilesStale,
    compression,
    // After a killed build (or a state set aside): the full build removes what no row produces.
    sweep: (saved.sweep || saved.interrupted) && options.only === undefined,
    // `build --full` of the whole site: nothing stays where vidfeeds writes that no build recorded.
    strays: options.full === true && options.only === undefined && options.user === undefined,
  };
  state.changeTime = Math.floor(deps.site.now.getTime() / 1000);
  return { run, saved, scope };
}

/** What earlier builds left, read before this build marks itself as running. */
function savedState(state: BuildState, writer: OutputWriter) {
  return {
    basis: state.basis(),
    basisDropped: state.basisDropped(),
    interrupted: state.interrupted(),
    replacedVersion: state.replacedVersion,
    // Not a count: counting the records reads the whole state (docs/performance.md, "Figures
    // behind the code"), and watch builds many times a second.
    empty: state.isEmpty(),
    // A build into an empty directory compares nothing with the disk, whatever the state recorded:
    // a first build, or one after the output was emptied (every document is written either way).
    outputEmpty: writer.isEmpty?.() ?? false,
    siteFilesStale: state.siteFilesStale(),
    sweep: state.needsSweep(),
  };
}

type SavedState = ReturnType<typeof savedState>;

/** The formats by what they are rendered for; site files only in a build of the whole site (or its first shard). */
function formatsByScope(formats: readonly Format[], options: BuildOptions) {
  return {
    user: formats.filter((f): f is AnyUserFormat => f.scope === 'user'),
    video: formats.filter((f): f is VideoFormat => f.scope === 'video'),
    site: options.user === undefined && ownsSiteFiles(options.shard) ? formats.filter((f): f is SiteFormat => f.scope === 'site') : [],
  };
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
  const same = sameEncodings(saved, configured);
  return {
    unknown: !startedEmpty && !same,
    onDisk: saved === null ? (startedEmpty ? configured : ALL_ENCODINGS) : [...new Set([...saved, ...configured])],
  };
}

/**
 * A full build renders about what the last one recorded; a first one, a document per format of
 * each published user and video (counted in the build's snapshot). Other builds cannot tell.
 */
function expectedDocuments(deps: BuildDeps, plan: BuildPlan, stateEmpty: boolean, options: BuildOptions): number | undefined {
  if (plan.mode !== 'full' || deps.reporter?.started === undefined) return undefined;
  if (!stateEmpty) return deps.state.count();
  if (options.shard !== undefined && options.shard.count > 1) return undefined;
  const { users, videos } = deps.reader.publishedCounts();
  const formats = enabledFormats(selectFormats(deps.formats, options.only), deps.site);
  const count = (scope: string) => formats.filter((f) => f.scope === scope).length;
  return users * count('user') + videos * count('video') + (options.user === undefined ? count('site') : 0);
}

function sameEncodings(saved: readonly Encoding[] | null, configured: readonly Encoding[]): boolean {
  return saved !== null && saved.length === configured.length && saved.every((encoding) => configured.includes(encoding));
}
