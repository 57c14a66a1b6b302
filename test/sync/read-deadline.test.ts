import { describe, expect, it } from 'vitest';
import { ReadDeadline } from '../../src/sync/read-deadline.js';
import { SourceStopped, SourceUnavailableError } from '../../src/sync/sync-errors.js';

/**
 * The waits of a sync on its source end when the source answers, when it stays silent past the
 * read timeout, when a stop is asked for, and at once when the connection is gone: a driver that
 * never settles a request on a closed socket must not make it look like a frozen server.
 */
describe('ReadDeadline', () => {
  const never = () => new Promise<never>(() => {});

  it('ends a wait in progress, and every later one, at once when the connection is lost', async () => {
    let drops = 0;
    const deadline = new ReadDeadline(60, 'the test source', () => drops++);
    const waiting = deadline.within(never());
    const asked = Date.now();
    deadline.lose(new SourceUnavailableError('the test source stopped answering: gone'));
    await expect(waiting).rejects.toThrow('the test source stopped answering: gone');
    await expect(deadline.within(never())).rejects.toThrow('stopped answering: gone');
    expect(Date.now() - asked).toBeLessThan(1000);
    // Lost twice: the first cause is the one told.
    deadline.lose(new Error('later'));
    await expect(deadline.within(never())).rejects.toThrow('stopped answering: gone');
    // An answer that came before still wins.
    await expect(deadline.within(Promise.resolve('answer'))).resolves.toBe('answer');
    // The connection is gone already: nothing to drop.
    expect(drops).toBe(0);
  });

  it('ends a silent wait with the read timeout and drops the connection, and a stopped one at once', async () => {
    let drops = 0;
    const stop = new AbortController();
    const deadline = new ReadDeadline(0.05, 'the test source', () => drops++, stop.signal);
    await expect(deadline.within(never())).rejects.toThrow(/the test source\) did not answer for 0\.05 s \(sync\.readTimeoutSeconds\)/);
    expect(drops).toBe(1);
    await expect(deadline.within(Promise.resolve(1))).resolves.toBe(1);
    const waiting = deadline.within(never());
    stop.abort();
    await expect(waiting).rejects.toBeInstanceOf(SourceStopped);
    expect(drops).toBe(2);
  });
});
