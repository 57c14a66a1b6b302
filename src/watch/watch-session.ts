import { statSync } from 'node:fs';
import type { BuildReport } from '../pipeline/build-report.js';
import { BuildState } from '../pipeline/build-state.js';
import { buildFingerprint, templateDirs, type BuildFingerprint } from '../pipeline/plan/incremental.js';
import { acquireBuildLock, LockHeldError, type BuildLock } from '../lock/lock.js';
import type { RemovalGuard } from '../pipeline/prune/removal-guard.js';
import { buildSite } from '../pipeline/site-build.js';
import { createSiteContext } from '../pipeline/render/site-context.js';
import { VIDFEEDS_VERSION } from '../config/version.js';
import type { SiteConfig } from '../config/site-config.js';
import { ChangeLog } from '../db/change-log.js';
import { schemaVersion, SCHEMA_VERSION } from '../db/migrations.js';
import { openForReading } from '../db/open-database.js';
import { SiteReader } from '../db/site-reader.js';
import { readLimits } from '../formats/read-limits.js';
import type { Format, SiteContext } from '../formats/format.js';
import { FORMATS } from '../formats/registry.js';
import { WatchQueue, type Scheduler } from './watch-queue.js';

/**
 * `vidfeeds watch` without its edges: it is told what changed (the database, the configuration,
 * a template) and rebuilds through the queue, incrementally. Between builds it keeps what a cold
 * build loads again: the open database with its prepared statements, the open build state, the
 * configuration, the templates and their fingerprint. It learns whether the database changed from
 * `PRAGMA data_version` on its open connection (which moves when another connection commits),
 * looked at on every file event and, as a fallback, every `pollMs`; SQLite's own touches of its
 * files are not changes. It holds the output directory's lock only while it builds.
 *
 * A configuration or template that no longer loads is reported and the last good one kept, with
 * its fingerprint, so restoring it costs nothing. A database that breaks (replaced by a newer
 * schema, deleted, corrupt), a lock another build holds or a build that fails are reported once
 * and retried with back-off. The file watcher (src/watch/file-watcher.ts) and the command
 * (src/cli/commands/watch.ts) are thin layers on it, so tests drive it with a manual clock.
 */

export type ChangeKind = 'database' | 'config' | 'template';

export interface WatchSessionOptions {
  db: string;
  out: string;
  stateFile: string;
  /** Reads and checks the configuration (file and flags); throws when it is invalid. */
  loadConfig: () => SiteConfig;
  formats?: readonly Format[];
  /** Time from the first change, when idle, to its build (0: at once). */
  delayMs: number;
  /** How often the database is looked at without a file event (file systems that send none). */
  pollMs?: number;
  /** The first retry after a failure; each next one waits twice as long, up to `maxRetryMs`. */
  retryMs?: number;
  maxRetryMs?: number;
  /** The output directory's lock file (the default one beside it when absent). */
  lockFile?: string;
  scheduler?: Scheduler;
  /** After each build: its report and what changed (`kind:path`, `start`, `retry`). */
  onBuild: (report: BuildReport, changes: readonly string[]) => void;
  /** A problem the session survives, reported once until it changes or is solved. */
  onProblem: (message: string) => void;
  /** Each skipped row, bad value and failed document of a build, as `build` names them on stderr. */
  onWarning?: (message: string) => void;
  /** Each file a build wrote (bytes changed) or removed, under the output directory: for announcing changes. */
  onWrote?: (path: string) => void;
  onRemoved?: (path: string) => void;
  /** The build's clock for documents (tests pin it), read at each build. */
  now?: () => Date;
  /**
   * The least time between two builds that render the site files only to move `lastmod`s
   * (`SITEMAP_LASTMOD_INTERVAL_MS` by default). The builds between them write their documents
   * at once and leave the sitemap parts that list them to the next such build.
   */
  lastmodIntervalMs?: number;
  /**
   * The removal guard of every build (src/pipeline/prune/removal-guard.ts): a build that would
   * remove too much stops before removing anything, is reported, and is retried like a failed
   * one, so the served tree stays the last good one until the database is right again.
   */
  removalGuard?: RemovalGuard;
}

export const DEFAULT_POLL_MS = 2000;
/**
 * Sitemap `lastmod`s move at most once a second in watch: crawlers read the sitemap hours apart,
 * while each rewrite of the parts a change touches costs as much as the change's documents.
 */
export const SITEMAP_LASTMOD_INTERVAL_MS = 1000;
const DEFAULT_RETRY_MS = 1000;
const DEFAULT_MAX_RETRY_MS = 60_000;
/** How a build waiting for another vidfeeds's lock is reported. */
const LOCK_WAIT = 'waiting: ';

/** The open database and what is prepared on it. */
interface Connection {
  db: ReturnType<typeof openForReading>;
  reader: SiteReader;
  changeLog: ChangeLog;
  /** Device and inode of the file opened: another file at the same path is another database. */
  identity: string;
}

export class WatchSession {
  private config: SiteConfig;
  private site: SiteContext;
  private fingerprint: BuildFingerprint;
  private readonly formats: readonly Format[];
  private connection: Connection | null = null;
  private state: BuildState;
  /** The database's version (file identity and data_version) read just before the last build. */
  private builtVersion: string | null = null;
  /** A build is owed whatever the database says: the first one, or one for new configuration or templates. */
  private owed = true;
  /** The problem last reported, so a repeated one is not reported again. */
  private problem: string | null = null;
  /** The configuration or template problem last reported: the same file read again is not reported again. */
  private loadProblem: string | null = null;
  private failures = 0;
  private retryTimer: unknown = null;
  private pollTimer: unknown = null;
  /** Set while builds leave `lastmod`-only site-file work for later: the interval since the last site-file pass. */
  private lastmodTimer: unknown = null;
  /** A build left `lastmod`s owed (recorded in the state); the end of the interval builds them. */
  private lastmodsOwed = false;
  private readonly scheduler: Scheduler | undefined;
  readonly queue: WatchQueue;

  /**
   * Loads the configuration and templates and opens the database and the state; a problem here
   * is the operator's to fix (the command exits 2).
   */
  constructor(private readonly options: WatchSessionOptions) {
    this.formats = options.formats ?? FORMATS;
    this.scheduler = options.scheduler;
    this.config = options.loadConfig();
    [this.site, this.fingerprint] = this.load(this.config);
    this.connection = this.open();
    try {
      this.state = new BuildState(options.stateFile);
    } catch (error) {
      this.connection.db.close();
      throw error;
    }
    this.queue = new WatchQueue({
      delayMs: options.delayMs,
      scheduler: options.scheduler,
      run: (changes) => this.rebuild(changes),
      onError: (error) => this.failed(error),
    });
  }

  /** The configuration in use (the last one that loaded). */
  get currentConfig(): SiteConfig {
    return this.config;
  }

  /** Template directories of the configuration in use: the watcher follows them. */
  templateDirs(): string[] {
    return templateDirs(this.config);
  }

  /** Builds now (incrementally when the state allows), then looks at the database every `pollMs`. */
  start(): void {
    this.queue.notify('start');
    this.schedulePoll();
  }

  /** A file event. A database event without new data (a checkpoint, a reader) starts nothing. */
  changed(kind: ChangeKind, path: string): void {
    if (kind === 'database' && !this.databaseMoved()) return;
    this.queue.notify(`${kind}:${path}`);
  }

  /**
   * Another vidfeeds released the output directory's lock (the watch's own deploy released it or
   * ended): a build that waits for it goes now, not when its back-off ends, which may be a minute away.
   */
  lockReleased(): void {
    if (this.retryTimer === null || this.problem?.startsWith(LOCK_WAIT) !== true) return;
    this.clearTimer('retryTimer');
    this.queue.notify('retry');
  }

  /** Resolves when no build runs or waits (a retry waiting on its back-off does not count). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /**
   * Finishes a running build and starts no other but the sitemap dates still owed (a pass of
   * under a second: the tree it leaves is whole), then closes the database and the state.
   */
  async stop(): Promise<void> {
    this.clearTimer('pollTimer');
    this.clearTimer('retryTimer');
    this.clearTimer('lastmodTimer');
    await this.queue.stop();
    if (this.lastmodsOwed && this.connection !== null) {
      this.owed = true;
      this.rebuild(['lastmods']);
    }
    this.connection?.db.close();
    this.connection = null;
    this.state.close();
  }

  private load(config: SiteConfig): [SiteContext, BuildFingerprint] {
    // The fingerprint is of the templates loaded now: a build records what it rendered with.
    const fingerprint = buildFingerprint(config, this.formats, VIDFEEDS_VERSION);
    return [createSiteContext(config, this.formats, this.options.now?.()), fingerprint];
  }

  private open(): Connection {
    const db = openForReading(this.options.db);
    try {
      return { db, reader: new SiteReader(db, readLimits(this.config.recommendationsCount)), changeLog: new ChangeLog(db), identity: fileIdentity(this.options.db) };
    } catch (error) {
      db.close();
      throw error;
    }
  }

  /** The open connection, reopened when the file at the path is another one or its schema moved. */
  private usableConnection(): Connection {
    const current = this.connection;
    if (current !== null) {
      let same = false;
      try {
        same = fileIdentity(this.options.db) === current.identity && schemaVersion(current.db) === SCHEMA_VERSION;
      } catch {
        // Gone or unreadable: reopening says what is wrong.
      }
      if (same) return current;
      this.dropConnection();
    }
    this.connection = this.open();
    return this.connection;
  }

  private dropConnection(): void {
    try {
      this.connection?.db.close();
    } catch {
      // Closing a connection to a broken file: nothing more to do with it.
    }
    this.connection = null;
  }

  /** The database as it is now: which file, and `data_version` on our connection. */
  private versionOf(connection: Connection): string {
    return `${connection.identity}:${String(connection.db.pragma('data_version', { simple: true }))}`;
  }

  /** Whether the database may hold something the last build did not see. */
  private databaseMoved(): boolean {
    const connection = this.connection;
    if (connection === null) return true; // broken: any event is worth a try
    try {
      return fileIdentity(this.options.db) !== connection.identity || this.versionOf(connection) !== this.builtVersion;
    } catch {
      return true;
    }
  }

  private schedulePoll(): void {
    const pollMs = this.options.pollMs ?? DEFAULT_POLL_MS;
    if (pollMs <= 0) return;
    this.pollTimer = this.schedule(() => {
      this.pollTimer = null;
      // A retry waiting on its back-off is not hurried by the poll.
      if (this.connection !== null && this.retryTimer === null && this.databaseMoved()) this.queue.notify(`database:${this.options.db}`);
      this.schedulePoll();
    }, pollMs);
  }

  private rebuild(changes: readonly string[]): void {
    this.clearTimer('retryTimer');
    if (changes.some((c) => c.startsWith('config:') || c.startsWith('template:'))) this.reload(changes.some((c) => c.startsWith('config:')));
    let lock: BuildLock | undefined;
    let report: BuildReport | undefined;
    try {
      const connection = this.usableConnection();
      const version = this.versionOf(connection);
      if (!this.owed && version === this.builtVersion) return;
      lock = acquireBuildLock(this.options.out, { file: this.options.lockFile, command: 'vidfeeds watch', maxAgeSeconds: this.config.maxLockAgeSeconds });
      report = buildSite({
        db: this.options.db,
        out: this.options.out,
        stateFile: this.options.stateFile,
        config: this.config,
        site: { ...this.site, now: this.options.now?.() ?? new Date() },
        formats: this.formats,
        lock,
        held: { ...connection, state: this.state, fingerprint: this.fingerprint },
        reporter: { warn: this.options.onWarning, wrote: this.options.onWrote, removed: this.options.onRemoved },
        removalGuard: this.options.removalGuard,
        deferLastmods: this.lastmodTimer !== null,
      });
      this.afterSiteFiles(report);
      this.builtVersion = version;
      this.owed = false;
      this.problem = null;
      this.failures = 0;
      // A state file of another layout was replaced by this build; reopen it so the next build
      // does not take it for replaced again.
      if (this.state.replacedVersion !== null) {
        this.state.close();
        this.state = new BuildState(this.options.stateFile);
      }
    } catch (error) {
      report = undefined;
      this.failed(error);
    } finally {
      lock?.release();
    }
    // Reported once the lock is released: whoever reads the line may start a build of their own.
    if (report === undefined) return;
    try {
      this.options.onBuild(report, changes);
    } catch (error) {
      this.failed(error);
    }
  }

  /**
   * After a build that rendered the site files, the next `lastmod`-only pass waits for the
   * interval; a build that left `lastmod`s owed gets one when the interval ends.
   */
  private afterSiteFiles(report: BuildReport): void {
    if (report.owners?.lastmodsDeferred === true) {
      this.lastmodsOwed = true;
      return;
    }
    if (report.mode === 'incremental' && report.owners?.siteFiles !== true) return;
    this.lastmodsOwed = false;
    this.clearTimer('lastmodTimer');
    this.lastmodTimer = this.schedule(() => {
      this.lastmodTimer = null;
      if (!this.lastmodsOwed) return;
      this.owed = true;
      this.queue.notify('lastmods');
    }, this.options.lastmodIntervalMs ?? SITEMAP_LASTMOD_INTERVAL_MS);
  }

  /** New configuration or templates: kept when they load, and a build is owed when they shape other bytes. */
  private reload(configChanged: boolean): void {
    try {
      const config = configChanged ? this.options.loadConfig() : this.config;
      const [site, fingerprint] = this.load(config);
      const shapesOtherBytes = JSON.stringify(fingerprint) !== JSON.stringify(this.fingerprint);
      const readerChanged = config.recommendationsCount !== this.config.recommendationsCount;
      this.config = config;
      this.site = site;
      this.fingerprint = fingerprint;
      if (readerChanged && this.connection !== null) this.connection.reader = new SiteReader(this.connection.db, readLimits(config.recommendationsCount));
      if (shapesOtherBytes) this.owed = true;
      this.loadProblem = null;
    } catch (error) {
      const message = `${(error as Error).message}; keeping the last good configuration and templates`;
      if (message !== this.loadProblem) this.options.onProblem(message);
      this.loadProblem = message;
    }
  }

  /** Reports a failure once (until it changes or a build succeeds) and retries with back-off. */
  private failed(error: unknown): void {
    const message =
      error instanceof LockHeldError ? `${LOCK_WAIT}${error.message}` : `build failed: ${(error as Error).message ?? String(error)}`;
    // Anything but a held lock may be the database breaking: the next try opens and checks it anew.
    if (!(error instanceof LockHeldError)) this.dropConnection();
    const delay = Math.min((this.options.retryMs ?? DEFAULT_RETRY_MS) * 2 ** this.failures, this.options.maxRetryMs ?? DEFAULT_MAX_RETRY_MS);
    this.failures++;
    if (message !== this.problem) this.options.onProblem(`${message} (retrying, less often while it lasts)`);
    this.problem = message;
    this.clearTimer('retryTimer');
    this.retryTimer = this.schedule(() => {
      this.retryTimer = null;
      this.queue.notify('retry');
    }, delay);
  }

  private schedule(callback: () => void, ms: number): unknown {
    if (this.scheduler !== undefined) return this.scheduler.setTimeout(callback, ms);
    // Real timers must not keep the process alive once the command is stopping.
    const timer = setTimeout(callback, ms);
    timer.unref();
    return timer;
  }

  private clearTimer(which: 'pollTimer' | 'retryTimer' | 'lastmodTimer'): void {
    const handle = this[which];
    if (handle === null) return;
    if (this.scheduler !== undefined) this.scheduler.clearTimeout(handle);
    else clearTimeout(handle as NodeJS.Timeout);
    this[which] = null;
  }
}

/** Device and inode of a file: the same path holding another file (replaced, restored) reads differently. */
function fileIdentity(file: string): string {
  const stat = statSync(file);
  return `${stat.dev}:${stat.ino}`;
}
