/**
 * The build's progress on a terminal: documents done (of the expected total when the build can
 * estimate it), the rate and the time left. One line, rewritten in place; never in a log or a pipe.
 *
 * The rate is taken over the last RATE_WINDOW_MS, not since the start: a build's first seconds
 * (opening the database, warming the caches, the first directories) run at a fraction of its
 * steady rate, and a rate since the start keeps them in the estimate until the very end.
 */
const RATE_WINDOW_MS = 5_000;

export class ProgressLine {
  private expected: number | undefined;
  /** (time, done) readings of the last RATE_WINDOW_MS, oldest first; the first is the window's start. */
  private readonly samples: Array<{ at: number; done: number }> = [];

  constructor(
    private readonly write: (text: string) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.samples.push({ at: now(), done: 0 });
  }

  /** The build's estimate of its documents (a full build after an earlier one), when there is one. */
  expect(total: number | undefined): void {
    this.expected = total;
  }

  update(done: number): void {
    const rate = this.rate(done);
    const known = this.expected !== undefined && this.expected >= done;
    const parts = [known ? `${done}/${this.expected} documents` : `${done} documents`];
    if (rate > 0) parts.push(`${Math.round(rate)}/s`);
    if (known && rate > 0) parts.push(`${formatDuration((this.expected! - done) / rate)} left`);
    this.write(`\r\x1b[K${parts.join(', ')}`);
  }

  clear(): void {
    this.write('\r\x1b[K');
  }

  /** Documents per second over the recent window (since the start while the build is younger than it). */
  private rate(done: number): number {
    const at = this.now();
    this.samples.push({ at, done });
    while (this.samples.length > 2 && at - this.samples[1]!.at >= RATE_WINDOW_MS) this.samples.shift();
    const first = this.samples[0]!;
    const seconds = (at - first.at) / 1000;
    return seconds > 0 ? (done - first.done) / seconds : 0;
  }
}

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
