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
    // waits (docs/testing.md says how long the suite takes).
    maxWorkers: availableParallelism() + 1,
  },
});
