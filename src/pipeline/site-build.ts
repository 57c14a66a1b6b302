import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { SiteConfig } from '../config/site-config.js';
import { ChangeLog } from '../db/change-log.js';
import { databaseFileState, explainReadFailure, openForReading } from '../db/open-database.js';
import { rollbackJournalWarning } from '../db/journal-mode.js';
import { SiteReader } from '../db/site-reader.js';
import { readLimits } from '../formats/read-limits.js';
import type { Format, SiteContext } from '../formats/format.js';
import { FORMATS } from '../formats/registry.js';
import { buildRecordName, buildRecordOf, removeBuildRecord, writeBuildRecord } from './record/build-record.js';
import { BuildState, defaultStateFile } from './build-state.js';
import type { BuildReport, BuildReporter } from './build-report.js';
import { buildSteps } from './run-build.js';
import { renewingLease, runSteps, runStepsYielding } from './build-steps.js';
import { buildFingerprint, type BuildFingerprint } from './plan/incremental.js';
import { BuildInterrupted } from './interrupt.js';
import { acquireBuildLock, describeHolder, waitForBuildLock, type BuildLock, type LockOptions } from '../lock/lock.js';
import { createDirectoryWriter } from './threads/write-pool.js';
import type { ShardSpec } from '../shard/shard.js';
import { checkStateShard } from './plan/shard-state.js';
import { VIDFEEDS_VERSION } from '../config/version.js';
import { createSiteContext } from './render/site-context.js';
import { RemovalGuardError, type RemovalGuard } from './prune/removal-guard.js';
import { DryRunWriter } from './write/dry-run-writer.js';
import type { OutputWriter } from './write/output-writer.js';

/**
 * One build of a database into an output directory, with its edges: the lock, the database, the
 * saved state and the directory writer. `vidfeeds build`, `vidfeeds watch` and the benchmark call
 * this; it is incremental whenever the saved state allows (docs/incremental.md). A build that
 * finishes leaves a record of what it read in the output directory (record/build-record.ts).
 *
 * `buildSite` runs it to its end at once; `buildSiteYielding` lets the event loop turn between
 * owners, so the process that runs it hears signals (`vidfeeds build`, build-steps.ts).
 */

export interface SiteBuildRequest {
  /** Site database file. */
  db: string;
  /** Output directory. */
  out: string;
  /** Build state file; by default `.vidfeeds/<out>.state.sqlite` beside the output directory. */
  stateFile?: string;
  config: SiteConfig;
  /** The site context to render with (built from `config` when absent). */
  site?: SiteContext;
  formats?: readonly Format[];
  full?: boolean;
  only?: ReadonlySet<string>;
  user?: string;
  /** Build only this part of the site (docs/scale.md). */
  shard?: ShardSpec;
  reporter?: BuildReporter;
  /**
   * The lock of the output directory when the caller holds it already. Without it, the build
   * takes the lock and releases it when done.
   */
  lock?: BuildLock;
  /** Names the lock's holder, e.g. `vidfeeds build`. */
  command?: string;
  /** How long `buildSiteYielding` waits for another build's lock before giving up (LockHeldError); 0 by default. */
  waitSeconds?: number;
  /** Whether files are written on a thread of their own (threads/write-pool.ts); by the machine's cores when absent. */
  writeThread?: boolean;
  /** A signal that asks the build to stop (interrupt.ts). */
  stopRequested?: () => 'SIGINT' | 'SIGTERM' | null;
  /**
   * What `vidfeeds watch` keeps open between builds (src/watch/watch-session.ts): used as given
   * and left open. Without it, the build opens the database and the state and closes them.
   */
  held?: HeldInputs;
  /**
   * Read and render everything as the build would, and write, remove and record nothing: the
   * build runs against a copy of the state (dropped afterwards) and a writer that only remembers
   * (write/dry-run-writer.ts). It takes no lock: the state is copied in one read, and nothing else
   * it does keeps a real build waiting.
   */
  dryRun?: boolean;
  /** Stop before removing too much of the site (prune/removal-guard.ts); none when absent. */
  removalGuard?: RemovalGuard;
  /** Leave site-file work that only moves `lastmod`s to a later build (`vidfeeds watch`; run-build.ts). */
  deferLastmods?: boolean;
}

/** An open database with its prepared statements, an open state, and the fingerprint of the loaded configuration and templates. */
export interface HeldInputs {
  db: Database.Database;
  reader: SiteReader;
  changeLog: ChangeLog;
  state: BuildState;
  fingerprint: BuildFingerprint;
}

/** The build, run to its end at once. It never waits for the lock: a held lock throws LockHeldError. */
export function buildSite(request: Omit<SiteBuildRequest, 'waitSeconds'>): BuildReport {
  return runSteps(siteBuildSteps(request));
}

/**
 * The build, letting the event loop turn between owners and while it waits for the lock
 * (`waitSeconds`), so that a signal is heard: during the wait, `stopRequested` ends it with
 * BuildInterrupted, and nothing was built.
 */
export async function buildSiteYielding(request: SiteBuildRequest): Promise<BuildReport> {
  const waitSeconds = request.waitSeconds ?? 0;
  if (waitSeconds === 0 || request.lock !== undefined || request.dryRun === true) return runStepsYielding(siteBuildSteps(request));
  // Configuration and templates are checked before the wait, as before the lock.
  const site = request.site ?? createSiteContext(request.config, request.formats ?? FORMATS);
  const stop = () => {
    const signal = request.stopRequested?.() ?? null;
    return signal === null ? null : new BuildInterrupted(signal, ' while waiting for the lock: nothing was built');
  };
  const lock = await waitForBuildLock(request.out, lockOptions(request), { seconds: waitSeconds, stop, waiting: (held) => request.reporter?.waiting?.(held.what) });
  try {
    return await runStepsYielding(siteBuildSteps({ ...request, site, lock }));
  } finally {
    lock.release();
  }
}

function lockOptions(request: SiteBuildRequest): LockOptions {
  return {
    command: request.command ?? 'vidfeeds build',
    maxAgeSeconds: request.config.maxLockAgeSeconds,
    onRecovered: (holder, why) => request.reporter?.warn?.(`took over the lock of a build that is gone (${describeHolder(holder)}): ${why}`),
  };
}

function* siteBuildSteps(request: Omit<SiteBuildRequest, 'waitSeconds'>): Generator<void, BuildReport> {
  const formats = request.formats ?? FORMATS;
  const { config } = request;
  // Configuration and templates are checked before the lock is taken or a file is touched.
  const site = request.site ?? createSiteContext(config, formats);
  const { held } = request;
  const fingerprint = held?.fingerprint ?? buildFingerprint(config, formats, VIDFEEDS_VERSION);
  // A dry run takes no lock: it writes nothing and reads the state through a copy.
  const dry = request.dryRun === true;
  const lock = dry
    ? null
    : (request.lock ?? acquireBuildLock(request.out, lockOptions(request)));
  const scratch = dry ? mkdtempSync(join(tmpdir(), 'vidfeeds-dry-run-')) : null;
  const before = databaseFileState(request.db);
  try {
    const db = held?.db ?? openForReading(request.db);
    let failed = false;
    try {
      const stateFile = request.stateFile ?? defaultStateFile(request.out);
      const state = held?.state ?? new BuildState(scratch === null ? stateFile : copiedState(stateFile, scratch));
      try {
        checkStateShard(state, stateFile, request.shard);
        const writer: OutputWriter & { close(): void } = dry ? new DryRunWriter(request.out) : createDirectoryWriter(request.out, request.writeThread);
        checkStateOutput(state, request.out);
        try {
          const steps = buildInto({ request, db, state, writer, site, formats, fingerprint, before });
          return yield* (lock === null ? steps : renewingLease(steps, () => lock.renew()));
        } finally {
          writer.close();
        }
      } finally {
        if (held === undefined) state.close();
      }
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      // Closing a connection with a cursor left open by a failure throws an error of its own
      // ("busy executing a query"): the failure is what the operator needs to see.
      if (held === undefined) {
        if (failed) closeAfterFailure(db);
        else db.close();
      }
    }
  } finally {
    if (request.lock === undefined) lock?.release();
    if (scratch !== null) rmSync(scratch, { recursive: true, force: true });
  }
}

interface BuildInputs {
  request: SiteBuildRequest;
  db: Database.Database;
  state: BuildState;
  writer: OutputWriter & { close(): void };
  site: SiteContext;
  formats: readonly Format[];
  fingerprint: BuildFingerprint;
  /** The database file as it was before the build opened it. */
  before: ReturnType<typeof databaseFileState>;
}

/** The build into an open writer and state, then the journal warning and the build record. */
function* buildInto({ request, db, state, writer, site, formats, fingerprint, before }: BuildInputs): Generator<void, BuildReport> {
  const { config, held } = request;
  const dry = request.dryRun === true;
  // The last record is put back when the removal guard stops the build: the tree is still that build's.
  const recordFile = join(request.out, buildRecordName(request.shard));
  const lastRecord = existsSync(recordFile) ? readFileSync(recordFile) : null;
  if (!dry) removeBuildRecord(request.out, request.shard);
  const onError = (error: unknown) => {
    if (error instanceof RemovalGuardError && !dry && lastRecord !== null) writeFileSync(recordFile, lastRecord);
  };
  let report: BuildReport;
  try {
    report = yield* guarded(
      onError,
      buildSteps(
        {
          reader: held?.reader ?? new SiteReader(db, readLimits(config.recommendationsCount)),
          writer,
          state,
          site,
          formats,
          reporter: request.reporter,
          incremental: { changeLog: held?.changeLog ?? new ChangeLog(db), fingerprint },
          stopRequested: request.stopRequested,
          compression: config.compress,
        },
        { only: request.only, user: request.user, strict: config.strict, full: request.full, shard: request.shard, removalGuard: request.removalGuard, deferLastmods: request.deferLastmods },
      ),
    );
  } catch (error) {
    // A database truncated or replaced under the build is named as such.
    throw explainReadFailure(request.db, before, error);
  }
  if (dry) return report;
  // The site's writers waited for this build (not WAL): say so, once per build.
  const journal = rollbackJournalWarning(db, request.db);
  if (journal !== null) request.reporter?.warn?.(journal);
  // Every document is on disk (the build flushed the writer): the record may now say so.
  const record = buildRecordOf({ report, fingerprint, shard: request.shard, only: request.only, user: request.user, finishedAt: new Date() });
  if (record !== null) writeBuildRecord(request.out, record);
  return report;
}

/** Runs `steps`, telling `onError` of an error before it goes on up. */
function* guarded<T>(onError: (error: unknown) => void, steps: Generator<void, T>): Generator<void, T> {
  try {
    return yield* steps;
  } catch (error) {
    onError(error);
    throw error;
  }
}

/**
 * A copy of the state for a dry run, in `dir`: one read of the state (`VACUUM INTO`, on a
 * read-only connection, so it waits for no writer and keeps none waiting); a fresh state when
 * there is none yet.
 */
function copiedState(stateFile: string, dir: string): string {
  const copy = join(dir, 'state.sqlite');
  if (!existsSync(stateFile)) return copy;
  const source = new Database(stateFile, { readonly: true, fileMustExist: true });
  try {
    source.prepare('VACUUM INTO ?').run(copy);
  } finally {
    source.close();
  }
  return copy;
}
/**
 * A state is made for one output directory: one copied from another (or passed with --state for
 * another --out) describes files that are not here. The basis is dropped, so the build is full,
 * compares every document with the disk, sweeps what no row produces, and says why.
 */
function checkStateOutput(state: BuildState, out: string): void {
  // A dry run into a folder that does not exist yet writes nothing, and the folder stays absent.
  const here = existsSync(out) ? realpathSync(out) : resolve(out);
  const madeFor = state.getMeta('output_dir');
  if (madeFor !== null && madeFor !== here && !state.isEmpty()) {
    state.dropBasisAndSweep(`the saved state was made for another output directory, ${madeFor}`);
  }
  if (madeFor !== here) state.setMeta('output_dir', here);
}

function closeAfterFailure(db: Database.Database): void {
  try {
    db.close();
  } catch {
    // The process ends with the failure; the connection goes with it.
  }
}

