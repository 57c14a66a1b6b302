import type { BuildReport } from '../build/build-report.js';
import { templateDirs } from '../build/incremental.js';
import type { BuildLock } from '../build/lock.js';
import { buildSite } from '../build/site-build.js';
import { createSiteContext } from '../build/site-context.js';
import type { SiteConfig } from '../config/config.js';
import { readChangeLogPosition } from '../db/change-log.js';
import type { Format, SiteContext } from '../formats/format.js';
import { FORMATS } from '../formats/registry.js';
import { WatchQueue, type Scheduler } from './watch-queue.js';

/**
 * `vidfeeds watch` without its edges: it is told what changed (the database, the configuration,
 * a template) and rebuilds through the queue, incrementally where it can. A configuration or
 * template that no longer loads is reported and the last good one is kept. The file watcher
 * (src/watch/file-watcher.ts) and the command (src/cli/commands/watch.ts) are thin layers on it,
 * so tests drive it with a manual clock and no file watcher.
 */

export type ChangeKind = 'database' | 'config' | 'template';

export interface WatchSessionOptions {
  db: string;
  out: string;
  stateFile: string;
  /** Reads and checks the configuration (file and flags); throws when it is invalid. */
  loadConfig: () => SiteConfig;
  formats?: readonly Format[];
  /** The output directory's lock, held for the whole session. */
  lock: BuildLock;
  debounceMs: number;
  scheduler?: Scheduler;
  /** After each build: its report and what changed (`kind:path`). */
  onBuild: (report: BuildReport, changes: readonly string[]) => void;
  /** A problem the session survives: an invalid configuration, a broken template, a failed build. */
  onProblem: (message: string) => void;
  /** The build's clock for documents (tests pin it). */
  now?: () => Date;
}

export class WatchSession {
  private config: SiteConfig;
  private site: SiteContext;
  private readonly formats: readonly Format[];
  /** The change log position read before the last build: database events that leave it are not changes. */
  private lastPosition: string | null = null;
  readonly queue: WatchQueue;

  /** Loads the configuration and templates; a problem here is the operator's to fix (exit 2). */
  constructor(private readonly options: WatchSessionOptions) {
    this.formats = options.formats ?? FORMATS;
    this.config = options.loadConfig();
    this.site = this.siteContext(this.config);
    this.queue = new WatchQueue({
      debounceMs: options.debounceMs,
      scheduler: options.scheduler,
      run: (changes) => this.rebuild(changes),
      onError: (error) => options.onProblem(`build failed: ${(error as Error).message ?? String(error)}`),
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

  /** Builds once now-ish (after the quiet period), e.g. when watching starts. */
  start(): void {
    this.queue.notify('start');
  }

  changed(kind: ChangeKind, path: string): void {
    this.queue.notify(`${kind}:${path}`);
  }

  /** Resolves when no build runs or waits. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** Finishes a running build, starts no other. */
  stop(): Promise<void> {
    return this.queue.stop();
  }

  private changeLogPosition(): string | null {
    try {
      const { databaseId, position } = readChangeLogPosition(this.options.db);
      return `${databaseId}:${position}`;
    } catch {
      return null; // The build reports what is wrong with the database.
    }
  }

  private siteContext(config: SiteConfig): SiteContext {
    return createSiteContext(config, this.formats, this.options.now?.());
  }

  private rebuild(changes: readonly string[]): void {
    const configChanged = changes.some((c) => c.startsWith('config:'));
    const templateChanged = changes.some((c) => c.startsWith('template:'));
    const dataChanged = changes.some((c) => c === 'start' || c.startsWith('database:'));
    let reloaded = false;
    if (configChanged || templateChanged) {
      try {
        const config = configChanged ? this.options.loadConfig() : this.config;
        const site = this.siteContext(config);
        this.config = config;
        this.site = site;
        reloaded = true;
      } catch (error) {
        this.options.onProblem(`${(error as Error).message}; keeping the last good configuration and templates`);
      }
    }
    if (!dataChanged && !reloaded) return;
    // SQLite touches its files without changing data (checkpoints, readers): build only when the
    // change log moved, or something else changed.
    const position = this.changeLogPosition();
    if (!reloaded && !changes.includes('start') && position !== null && position === this.lastPosition) return;
    this.lastPosition = position;
    const report = buildSite({
      db: this.options.db,
      out: this.options.out,
      stateFile: this.options.stateFile,
      config: this.config,
      site: this.site,
      formats: this.formats,
      lock: this.options.lock,
    });
    this.options.onBuild(report, changes);
  }
}
