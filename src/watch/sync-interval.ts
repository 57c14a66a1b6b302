import type { SyncReport } from '../sync/run-sync.js';

/**
 * `watch --sync-every SECONDS`: a sync at start and then every SECONDS after the previous one
 * ended, never two at once. A sync that changed something commits, and the watch sees the commit
 * as it sees any other and builds; a sync that changed nothing logs nothing, so nothing is
 * built (it commits at all only when its own digests moved). A sync that fails (the source unreachable, a mapping being edited) is reported and the
 * next one runs on time.
 */
export interface SyncIntervalOptions {
  everyMs: number;
  /**
   * Runs one sync; `stopping` tells it to roll back and stop early, and `stop`, aborted then, ends
   * a wait for the source at once (a slow mapping query would otherwise hold the watch's stop).
   */
  run(stopping: () => boolean, stop: AbortSignal): Promise<SyncReport>;
  onSynced(report: SyncReport): void;
  onProblem(error: unknown): void;
}

export class SyncInterval {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopping = false;
  private readonly abort = new AbortController();

  constructor(private readonly options: SyncIntervalOptions) {}

  start(): void {
    this.schedule(0);
  }

  /** Stops the timer and a running sync (which rolls back), and waits for it. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopping) return;
    this.timer = setTimeout(() => {
      this.running = this.once().finally(() => {
        this.running = undefined;
        this.schedule(this.options.everyMs);
      });
    }, ms);
  }

  private async once(): Promise<void> {
    try {
      this.options.onSynced(await this.options.run(() => this.stopping, this.abort.signal));
    } catch (error) {
      if (!this.stopping) this.options.onProblem(error);
    }
  }
}
