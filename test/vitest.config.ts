import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // One worker more than the cores (vitest's default is one fewer: a single worker on CI's two):
    // most files wait on child processes, servers and the disk, and the extra worker fills those
    // waits. On 2 cores the suite takes about 9.5 minutes so, 13.5 with the default.
    maxWorkers: availableParallelism() + 1,
  },
});
