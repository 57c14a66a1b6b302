import type { Source } from './write-plan.js';

/**
 * Runs `work` on the items with at most `concurrency` at once, in order; resolves with the items
 * it never started. No item starts once `halted()` says so (a failed step, a stop), nor after an
 * item threw: the items under way finish, and the first error is thrown once they have.
 */
export async function runPool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>, halted: () => boolean = () => false): Promise<T[]> {
  let next = 0;
  await runPoolFrom(() => (next < items.length ? items[next++] : undefined), Math.min(concurrency, items.length), work, halted);
  return items.slice(next);
}

/** `runPool` over items pulled one at a time as workers free up; what it never started stays in the source. */
export async function runPoolFrom<T>(source: Source<T>, concurrency: number, work: (item: T) => Promise<void>, halted: () => boolean = () => false): Promise<void> {
  let firstError: unknown = null;
  let exhausted = false;
  const worker = async () => {
    while (!exhausted && firstError === null && !halted()) {
      const item = source();
      if (item === undefined) {
        exhausted = true;
        break;
      }
      try {
        await work(item);
      } catch (error) {
        firstError ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
  if (firstError !== null) throw firstError;
}
