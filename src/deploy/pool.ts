/**
 * Runs `work` on the items with at most `concurrency` at once, in order; resolves with the items
 * it never started. No item starts once `halted()` says so (a failed step, a stop), nor after an
 * item threw: the items under way finish, and the first error is thrown once they have.
 */
export async function runPool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>, halted: () => boolean = () => false): Promise<T[]> {
  let next = 0;
  let firstError: unknown = null;
  const worker = async () => {
    while (next < items.length && firstError === null && !halted()) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (error) {
        firstError ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
  if (firstError !== null) throw firstError;
  return items.slice(next);
}
