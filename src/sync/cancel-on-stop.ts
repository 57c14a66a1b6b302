/**
 * A query the server would go on running once a stop dropped its connection: MariaDB and
 * PostgreSQL notice that a client has gone only when they next send to it, so a sort, an
 * aggregate or a view that sleeps runs to its end on the site's own server after the sync has
 * stopped. On a stop, `cancel` asks the server from a second connection to end it (MariaDB's
 * `KILL QUERY`, PostgreSQL's `pg_cancel_backend`); the sync waits for that at most `seconds`, and
 * a server that does not answer (frozen) costs it no more.
 */
export class CancelOnStop {
  private cancelling: Promise<void> | undefined;
  private readonly onStop = () => {
    this.cancelling ??= this.bounded();
  };

  constructor(
    private readonly stop: AbortSignal | undefined,
    private readonly seconds: number,
    /** Asks the server to end the query under way; gives up (dropping its connection) once `give` is aborted. */
    private readonly cancel: (give: AbortSignal) => Promise<void>,
  ) {
    stop?.addEventListener('abort', this.onStop, { once: true });
  }

  /** Waits for a cancel under way (at most `seconds`), and stops listening for the stop. */
  async settled(): Promise<void> {
    this.stop?.removeEventListener('abort', this.onStop);
    await this.cancelling;
  }

  private async bounded(): Promise<void> {
    const give = new AbortController();
    const timer = setTimeout(() => give.abort(), this.seconds * 1000);
    try {
      await Promise.race([this.cancel(give.signal), new Promise<void>((resolve) => give.signal.addEventListener('abort', () => resolve(), { once: true }))]);
    } catch {
      // Nothing to report: the sync is stopping, and the query ends when the server next writes to the dropped connection.
    } finally {
      clearTimeout(timer);
      give.abort();
    }
  }
}
