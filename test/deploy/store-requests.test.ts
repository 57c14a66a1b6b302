import { describe, expect, it } from 'vitest';
import { StopRequested, StoreUnresponsive, withTries } from '../../src/deploy/store-requests.js';

/**
 * Each try's signal (src/deploy/store-requests.ts): the stop aborts every try under way through
 * one listener, however many there are, and a try past its deadline ends as the store's silence.
 */

/** A request that answers only by failing when its signal is aborted. */
const silent = (signal: AbortSignal) => new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));

describe('withTries', () => {
  it('aborts every try under way when the stop comes, with no warning for the many of them', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const stop = new AbortController();
      const policy = { tries: 3, timeoutMs: 60_000, stop: stop.signal };
      const tries = Array.from({ length: 40 }, (_, i) => withTries(`object ${i}`, policy, silent));
      stop.abort();
      const ended = await Promise.allSettled(tries);
      expect(ended.every((e) => e.status === 'rejected' && e.reason instanceof StopRequested)).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('lets many requests back off at once with no warning, and ends their waits when the stop comes', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const stop = new AbortController();
      const policy = { tries: 5, timeoutMs: 60_000, stop: stop.signal, backoffMs: 60_000, maxBackoffMs: 60_000 };
      // Throttled at once: each waits out its back-off, 40 at the same time.
      const throttled = Object.assign(new Error('Please reduce your request rate.'), { name: 'SlowDown', $metadata: { httpStatusCode: 503 } });
      const tries = Array.from({ length: 40 }, (_, i) => withTries(`object ${i}`, policy, () => Promise.reject(throttled)));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const started = performance.now();
      stop.abort();
      const ended = await Promise.allSettled(tries);
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(ended.every((e) => e.status === 'rejected' && e.reason instanceof StopRequested)).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('ends a try the store does not answer within the deadline as unresponsive, without trying again', async () => {
    let calls = 0;
    const policy = { tries: 5, timeoutMs: 20, stop: new AbortController().signal };
    const ended = withTries('the listing', policy, (signal) => {
      calls++;
      return silent(signal);
    });
    await expect(ended).rejects.toBeInstanceOf(StoreUnresponsive);
    expect(calls).toBe(1);
  });

  it('answers what the try answers, before its deadline', async () => {
    const policy = { tries: 2, timeoutMs: 60_000, stop: new AbortController().signal };
    expect(await withTries('a head', policy, async () => 'answered')).toBe('answered');
  });
});
