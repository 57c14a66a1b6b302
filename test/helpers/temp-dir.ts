import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

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
 * A new temporary folder and the step that removes it. Inside a test the step also runs when the
 * test ends; outside one (a beforeAll, for a folder the file's tests share) it is the caller's
 * to run, in an afterAll.
 */
export function tempDir(prefix = 'vidfeeds-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    onTestFinished(cleanup);
  } catch {
    // Not inside a test: the caller owns the cleanup.
  }
  return { dir, cleanup };
}
