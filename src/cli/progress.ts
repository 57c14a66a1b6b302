/**
 * The build's progress on a terminal: documents done (of the expected total when the build can
 * estimate it), the rate and the time left. One line, rewritten in place; never in a log or a pipe.
 */
export class ProgressLine {
  private readonly started = Date.now();
  private expected: number | undefined;

  constructor(private readonly write: (text: string) => void) {}

  /** The build's estimate of its documents (a full build after an earlier one), when there is one. */
  expect(total: number | undefined): void {
    this.expected = total;
  }

  update(done: number): void {
    const seconds = (Date.now() - this.started) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    const parts = [this.expected !== undefined && this.expected >= done ? `${done}/${this.expected} documents` : `${done} documents`];
    if (rate > 0) parts.push(`${Math.round(rate)}/s`);
    if (this.expected !== undefined && this.expected >= done && rate > 0) parts.push(`${formatDuration((this.expected - done) / rate)} left`);
    this.write(`\r\x1b[K${parts.join(', ')}`);
  }

  clear(): void {
    this.write('\r\x1b[K');
  }
}

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
