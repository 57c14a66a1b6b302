/**
 * Runs `work` on every item with at most `concurrency` at once; resolves when all have finished.
 * `work` reports its own failures: one that throws stops no other, and the first such error is
 * thrown once all have finished.
 */
export async function runPool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let firstError: unknown = null;
  const worker = async () => {
    while (next < items.length) {
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
}
