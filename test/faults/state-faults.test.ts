import { existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cli, readTree } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';
import { undated } from '../helpers/tree.js';

/**
 * The build state as an operator meets it after a year of nightly runs: truncated or overwritten
 * (a full disk, a restore of the wrong file). README, "Incremental builds": the build falls back to
 * a full one and says why; the tree equals a full build of the database.
 */

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!();
});

function site(users = 12) {
  const t = tempDir('vidfeeds-state-faults-');
  cleanups.push(t.cleanup);
  const db = join(t.dir, 'site.sqlite');
  expect(cli(['demo', '--db', db, '--users', String(users)]).code).toBe(0);
  return { dir: t.dir, db, out: join(t.dir, 'out'), state: join(t.dir, '.vidfeeds', 'out.state.sqlite') };
}

/** The tree a full build of the database makes in a fresh directory. */
function reference(dir: string, db: string): Map<string, Buffer> {
  const out = join(dir, `reference-${Math.random().toString(36).slice(2)}`);
  expect(cli(['build', '--db', db, '--out', out]).code).toBe(0);
  return readTree(out);
}

describe('a build state that cannot be read (docs/incremental.md, "The saved state")', () => {
  for (const [what, damage] of [
    ['truncated halfway', (file: string) => truncateSync(file, Math.floor(statSync(file).size / 2))],
    ['overwritten', (file: string) => writeFileSync(file, 'not a state: a config file copied over it\n'.repeat(200))],
  ] as const) {
    it(`${what}: is named with its cause, set aside for inspection, and a full build proceeds (exit 0)`, () => {
      const s = site();
      expect(cli(['build', '--db', s.db, '--out', s.out]).code).toBe(0);
      // The WAL is checkpointed into the file when the build closes it: the file is the state.
      damage(s.state);
      const damaged = readFileSync(s.state);
      const run = cli(['build', '--db', s.db, '--out', s.out]);
      expect(run.code).toBe(0);
      const summary = /full build \(the saved state (.+?) could not be read \((.+)\): it was set aside as (.+?)\):/.exec(run.stderr);
      expect(summary, run.stderr).not.toBeNull();
      expect(summary![1]).toBe(s.state);
      expect(summary![2]).toMatch(/malformed|not a database|corrupt/);
      // Kept, byte for byte, beside the new state.
      expect(readFileSync(summary![3]!).equals(damaged)).toBe(true);
      expect(readdirSync(join(s.dir, '.vidfeeds')).filter((n) => n.includes('.unreadable-'))).toHaveLength(1);
      // The reference was built at another moment: the sitemap's lastmod dates are left out.
      const undatedTree = (tree: Map<string, Buffer>) => new Map([...tree].map(([path, body]) => [path, undated(path, body)]));
      expect(undatedTree(readTree(s.out))).toEqual(undatedTree(reference(s.dir, s.db)));
      // And the next build follows from the new state.
      expect(cli(['build', '--db', s.db, '--out', s.out]).stderr).toContain('incremental build (no changes since the last build)');
      expect(existsSync(s.state)).toBe(true);
    });
  }
});
