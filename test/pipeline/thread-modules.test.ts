import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

/**
 * What the build's thread (src/cli/build-worker.ts) and render threads load, checked in a test
 * file of its own (each runs in a process of its own) that imports nothing else: neither ajv (the
 * configuration arrives validated) nor xmlbuilder2 (src/render/xml.ts loads it when a document
 * needs it). Each was 7 to 14 MB of memory in every thread that loaded it (docs/performance.md).
 */
const require = createRequire(import.meta.url);
const loaded = (name: string) => require.resolve(name) in require.cache;

describe('the modules of a build\'s threads', () => {
  it('leave ajv and xmlbuilder2 unloaded', async () => {
    await import('../../src/pipeline/site-build.js');
    await import('../../src/pipeline/threads/render-pool.js');
    await import('../../src/cli/errors.js');
    // Loaded: the module cache sees the build's dependencies.
    expect(loaded('better-sqlite3')).toBe(true);
    expect(loaded('ajv')).toBe(false);
    expect(loaded('xmlbuilder2')).toBe(false);
  });
});
