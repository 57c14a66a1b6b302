import { SourceUnavailableError } from './sync-errors.js';

/**
 * How long a source may stay silent while vidfeeds waits for it: a server frozen (stopped, swapped
 * out, behind a stalled proxy) keeps its TCP connection open, so nothing but a deadline ends the
 * wait. The deadline counts from the moment vidfeeds asks and stops when an answer comes: a long
 * sync of a large table is fine, a source that says nothing for that long is not.
 */

/** The default of `sync.readTimeoutSeconds`. */
export const DEFAULT_READ_TIMEOUT_SECONDS = 60;

export class ReadDeadline {
  constructor(
    private readonly seconds: number,
    private readonly where: string,
    /** Drops the connection: a frozen server would never let it close politely. */
    readonly drop: () => void,
  ) {}

  /** The error a wait past the deadline ends with. */
  error(): SourceUnavailableError {
    return new SourceUnavailableError(
      `the source database (${this.where}) did not answer for ${this.seconds} s (sync.readTimeoutSeconds): the server is frozen, overloaded or cut off`,
    );
  }

  /** `promise`, or the deadline's error (the connection dropped) if it is not settled in time. */
  async within<T>(promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.drop();
        reject(this.error());
      }, this.seconds * 1000);
    });
    try {
      return await Promise.race([promise, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
