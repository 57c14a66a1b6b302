import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, onTestFinished } from 'vitest';

/**
 * Temporary folders and other things a test must undo, undone by vitest itself: a test (or its
 * beforeEach) registers each step, and the steps run when the test ends, passed or failed, the
 * last registered first (vitest's onTestFinished). No test file keeps a list of clean-ups of its own.
 */

/** Runs each step when the current test ends, the last registered first. Only inside a test or a beforeEach. */
export function cleanUpAfterTest(...steps: Array<() => unknown>): void {
  for (const step of steps) onTestFinished(() => void step());
}

/** A new temporary folder, removed with everything in it when the current test ends. */
export function useTempDir(prefix = 'vidfeeds-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanUpAfterTest(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Folders made outside a test (in a beforeAll or a describe, for the file's tests to share),
 * removed once every test of the file has run. This module is imported while vitest collects a
 * test file, so the hook below belongs to that file; vitest runs after-all hooks last registered
 * first, so the file's own (which close the servers and browsers using these folders) run before.
 */
const sharedDirs: string[] = [];
afterAll(() => {
  for (const dir of sharedDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A new temporary folder and the step that removes it sooner. Inside a test it is removed when the
 * test ends; outside one (a beforeAll, for a folder the file's tests share), once the file's tests
 * have all run.
 */
export function tempDir(prefix = 'vidfeeds-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    onTestFinished(cleanup);
  } catch {
    // Not inside a test: removed after the file's tests.
    sharedDirs.push(dir);
  }
  return { dir, cleanup };
}
