import type { ChangeLog, ChangeLogPosition } from '../db/change-log.js';
import type { UserRow } from '../db/reader-columns.js';
import type { SiteReader } from '../db/site-reader.js';
import type { Format, SiteContext, SiteFormat, UserFormat, VideoFormat } from '../formats/format.js';
import type { Encoding } from '../paths/compression.js';
import { ALL_ENCODINGS } from '../paths/compression.js';
import { ReportTally, type BuildReport, type BuildReporter } from './build-report.js';
import { BuildRun } from './build-run.js';
import { buildAffected, buildEverything } from './build-scopes.js';
import type { BuildState } from './build-state.js';
import { runSteps } from './build-steps.js';
import { BuildInterrupted } from './interrupt.js';
import { affectedOwners, countOwners } from './plan/changes.js';
import { planBuild, type BuildFingerprint, type BuildPlan } from './plan/incremental.js';
import { RemovalGuardError, type RemovalGuard } from './prune/removal-guard.js';
import { ownsSiteFiles, type ShardSpec } from './plan/shard.js';
import { commitState } from './record/commit-state.js';
import type { OutputWriter } from './write/output-writer.js';

/**
 * The build, as a sequence of named stages, each a module with one job:
 *
 *   plan     (plan/incremental.ts)        full, incremental or partial, and from where
 *   read     (read/read-owners.ts)        one owner at a time from one snapshot of the database
 *   render   (render/render-documents.ts) the owner's documents as bytes; pure
 *   write    (write/write-documents.ts)   compare with what is there, write what changed, record it
 *   prune    (prune/prune-stale.ts)       remove what an earlier build wrote and this one did not
 *   record   (record/commit-state.ts)     what the next build may follow from; commit
 *
 * This function only wires them (build-run.ts carries each owner through read, render and write;
 * build-scopes.ts says which owners): it knows nothing of the command line, the terminal, threads
 * or where files go. The writer, the state, the clock and the reporter are handed in, so tests run it in
 * memory. With a change log and a saved basis the build is incremental (docs/incremental.md):
 * inside the same snapshot it reads the changes since the last build, finds the owners they affect
 * (plan/changes.ts) and renders only those owners' documents, and the site files when the set of
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
  /** Build only this shard's part of the site (plan/shard.ts); site-wide files only in shard 1. */
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

/** The build as steps that yield between owners (build-steps.ts runs them). */
export function* buildSteps(deps: BuildDeps, options: BuildOptions = {}): Generator<void, BuildReport> {
  const clock = deps.clock ?? monotonicSeconds;
  const started = clock();
  const { reader, writer, state } = deps;
  const selected = selectFormats(deps.formats, options.only);
  const formats = enabledFormats(selected, deps.site);
  const tally = new ReportTally(deps.reporter, options.strict === true);
  const report = tally.report;
  reader.onIssue((issue) => tally.issue(issue));
  const saved = savedState(state, writer);
  const compression = deps.compression ?? [];
  const forms = formsPlan(saved.empty ? null : state.compression(), compression, saved.outputEmpty);
  const target = { writer, state, verify: false, startedEmpty: saved.outputEmpty, compression, formsUnknown: forms.unknown };
  const run = new BuildRun(reader, state, deps.site, formatsByScope(formats, options), target, forms.onDisk, {
    tally,
    shard: options.shard,
    beforeEach: () => {
      const signal = deps.stopRequested?.() ?? null;
      if (signal !== null) throw new BuildInterrupted(signal);
    },
  });
  const scope = {
    ...options,
    formats: new Set(selected.map((f) => f.name)),
    siteFilesStale: saved.siteFilesStale,
    compression,
    // After a killed build (or a state set aside): the full build removes what no row produces.
    sweep: (saved.sweep || saved.interrupted) && options.only === undefined,
  };
  let log: ChangeLogPosition | undefined;
  // Documents whose bytes this build changes are dated by its clock (the sitemap's lastmod).
  state.changeTime = Math.floor(deps.site.now.getTime() / 1000);
  state.begin();
  try {
    const endSnapshot = reader.beginSnapshot();
    try {
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
      deps.reporter?.started?.({ mode: plan.mode, reason: plan.reason, expected: expectedDocuments(deps, plan, saved.empty, options) });
      if (plan.mode !== 'incremental') yield* buildEverything(run, plan, scope);
      else {
        const { changeLog } = deps.incremental!;
        const affected = affectedOwners(changeLog.since(plan.from!, log!.position), changeLog.lookups);
        report.changes = log!.position - plan.from!;
        const siteFiles = yield* buildAffected(run, affected, scope);
        report.owners = {
          ...countOwners(affected),
          siteFiles: siteFiles === 'rendered',
          ...(siteFiles === 'deferred' ? { lastmodsDeferred: true } : {}),
          unknownTables: affected.unknownTables,
        };
      }
    } finally {
      endSnapshot();
    }
    report.snapshot = log;
    commitState({ writer, state }, report, deps.incremental?.fingerprint, log);
  } catch (error) {
    // Stopped by a signal or by the removal guard, the build keeps what it wrote (documents of
    // owners still published) and removed nothing: the next build goes on from there.
    if (error instanceof BuildInterrupted || error instanceof RemovalGuardError) keepInterrupted(writer, state, saved.interrupted);
    else state.rollback();
    throw error;
  }
  report.seconds = clock() - started;
  return report;
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

/** The formats by what they are rendered for; site files only in a build of the whole site (or its first shard). */
function formatsByScope(formats: readonly Format[], options: BuildOptions) {
  return {
    user: formats.filter((f): f is UserFormat => f.scope === 'user'),
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
  const same = saved !== null && saved.length === configured.length && saved.every((encoding) => configured.includes(encoding));
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
