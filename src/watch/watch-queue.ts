/**
 * The watch loop's heart: when it is idle, a change starts a build at once (after `delayMs`,
 * 0 by default: only the events of the same moment, such as a commit's database and -wal events,
 * share a build); two builds never run at once; whatever arrives during a build is gathered into
 * exactly one next build, started as soon as the running one ends. Later changes never push a
 * build back, so a steady stream of commits is built continuously, one build per build's length,
 * and a bulk import of thousands of commits costs a few builds. It knows nothing of files or
 * builds: the clock is injected, so tests drive it without timing luck.
 */

/** The clock the queue waits on; `setTimeout` by default, a manual one in tests. */
export interface Scheduler {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realScheduler: Scheduler = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface WatchQueueOptions {
  /** Time from the first change, when idle, to the start of its build; later changes do not extend it. */
  delayMs: number;
  /** Runs one build for the changes gathered since the last one (names of what changed, in order). */
  run: (changes: readonly string[]) => Promise<void> | void;
  /** A build that threw; the queue goes on watching. */
  onError?: (error: unknown) => void;
  scheduler?: Scheduler;
}

export class WatchQueue {
  private readonly scheduler: Scheduler;
  private pending: string[] = [];
  private timer: unknown = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];
  /** Number of builds started, for logs and tests. */
  builds = 0;

  constructor(private readonly options: WatchQueueOptions) {
    this.scheduler = options.scheduler ?? realScheduler;
  }

  /** Something changed: a build starts after the delay if none runs, else right after the running one. */
  notify(what: string): void {
    if (this.stopped) return;
    if (!this.pending.includes(what)) this.pending.push(what);
    if (this.running !== null || this.timer !== null) return;
    this.timer = this.scheduler.setTimeout(() => {
      this.timer = null;
      this.start();
    }, this.options.delayMs);
  }

  /** Whether a build is running now. */
  get busy(): boolean {
    return this.running !== null;
  }

  /** Resolves when no build runs and none is waiting to (nothing pending). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops: no new build starts; a build that is running is finished (never cut short, so the tree
   * and the state stay whole). Resolves when it has.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) this.scheduler.clearTimeout(this.timer);
    this.timer = null;
    this.pending = [];
    await this.running;
    this.settle();
  }

  private start(): void {
    if (this.running !== null || this.stopped || this.pending.length === 0) return this.settle();
    const batch = this.pending;
    this.pending = [];
    this.builds++;
    this.running = (async () => {
      try {
        await this.options.run(batch);
      } catch (error) {
        this.options.onError?.(error);
      }
    })().finally(() => {
      this.running = null;
      // What came during the build: one more build, for all of it, at once.
      this.start();
    });
  }

  private isIdle(): boolean {
    return this.running === null && this.timer === null && (this.pending.length === 0 || this.stopped);
  }

  private settle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
