import { SourceStopped, SourceUnavailableError } from './sync-errors.js';

/**
 * How long a source may stay silent while vidfeeds waits for it: a server frozen (stopped, swapped
 * out, behind a stalled proxy) keeps its TCP connection open, so nothing but a deadline ends the
 * wait. The deadline counts from the moment vidfeeds asks and stops when an answer comes: a long
 * sync of a large table is fine, a source that says nothing for that long is not.
 *
 * A stop asked for (SIGINT, SIGTERM: `stop`) ends a wait at once too: a mapping query that takes
 * minutes must not hold a stopped sync until it returns. So does the connection closing (`lose`):
 * a driver that leaves a request unsettled when its socket closes under it must not make a
 * terminated connection look like a frozen server, nor hold the sync for the read timeout.
 */

/** The default of `sync.readTimeoutSeconds`. */
export const DEFAULT_READ_TIMEOUT_SECONDS = 60;

export class ReadDeadline {
  /** Ends each wait in progress with an error. */
  private readonly waiting = new Set<(error: Error) => void>();
  /** Why the connection is gone, once it is: every wait ends with it. */
  private lost: Error | undefined;

  constructor(
    private readonly seconds: number,
    private readonly where: string,
    /** Drops the connection: a frozen server would never let it close politely. */
    readonly drop: () => void,
    /** Aborted when the sync is asked to stop. */
    private readonly stop?: AbortSignal,
  ) {}

  /** The error a wait past the deadline ends with. */
  error(): SourceUnavailableError {
    return new SourceUnavailableError(
      `the source database (${this.where}) did not answer for ${this.seconds} s (sync.readTimeoutSeconds): the server is frozen, overloaded or cut off`,
    );
  }

  /**
   * `promise`, or, the connection dropped, the deadline's error if it is not settled in time, or
   * SourceStopped as soon as a stop is asked for (at once if it already was).
   */
  async within<T>(promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let stopped = () => {};
    let gone: (error: Error) => void = () => {};
    const late = new Promise<never>((_, reject) => {
      const end = (error: Error) => {
        this.drop();
        reject(error);
      };
      timer = setTimeout(() => end(this.error()), this.seconds * 1000);
      stopped = () => end(new SourceStopped(this.where));
      gone = reject;
    });
    if (this.stop?.aborted) stopped();
    else this.stop?.addEventListener('abort', stopped, { once: true });
    // A promise settled already still wins the race: it comes first.
    if (this.lost !== undefined) gone(this.lost);
    else this.waiting.add(gone);
    try {
      return await Promise.race([promise, late]);
    } finally {
      clearTimeout(timer);
      this.stop?.removeEventListener('abort', stopped);
      this.waiting.delete(gone);
    }
  }

  /** The connection is gone (`error` says how): every wait ends with it at once, and every later one. */
  lose(error: Error): void {
    this.lost ??= error;
    for (const end of this.waiting) end(this.lost);
    this.waiting.clear();
  }
}
