import { createRequire, syncBuiltinESMExports } from 'node:module';
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PathGuard, STAGING_DIR, resolveInside } from '../../src/pipeline/write/output-writer.js';
import { cleanUpAfterTest, useTempDir } from '../helpers/temp-dir.js';

const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');

/** The rule resolveInside must agree with, for every path: resolve, then refuse what leaves the root. */
function carefulRule(root: string, path: string): string {
  const full = resolve(root, path);
  const rel = relative(root, full);
  if (rel === '' || rel.startsWith('..') || rel.split(sep).includes('..') || resolve(root, rel) !== full) throw new Error('outside');
  if (rel.split(sep)[0] === STAGING_DIR) throw new Error('staging');
  return full;
}

function outcome(run: () => string): string {
  try {
    return run();
  } catch (error) {
    return /staging/.test((error as Error).message) ? 'refused: staging' : 'refused: outside';
  }
}

/** Counts the guard's lstat and access calls, through node:fs's exports, until the test ends. */
function countCalls(): { lstat: number; access: number } {
  const counts = { lstat: 0, access: 0 };
  const { lstatSync, accessSync } = fs;
  Object.assign(fs, {
    lstatSync: (...args: Parameters<typeof lstatSync>) => (counts.lstat++, lstatSync(...args)),
    accessSync: (...args: Parameters<typeof accessSync>) => (counts.access++, accessSync(...args)),
  });
  syncBuiltinESMExports();
  cleanUpAfterTest(() => {
    Object.assign(fs, { lstatSync, accessSync });
    syncBuiltinESMExports();
  });
  return counts;
}

describe('resolveInside', () => {
  const paths = [
    'robots.txt', 'alice/rss/index.rss', 'a/b/c/d.xml', '.well-known/x', 'a/.hidden', 'a/..b/c', '..a/b', '.../x',
    '..', '../x', 'a/../../x', 'a/../b', './a', 'a/./b', 'a//b', 'a/', '/etc/passwd', '', '.', 'a\\b', 'a/b\\..\\..\\c',
    STAGING_DIR, `${STAGING_DIR}/x`, `a/../${STAGING_DIR}/x`, `${STAGING_DIR}x/y`, 'caf\u00e9/rss/index.rss', 'a/b\u0000c',
  ];
  for (const root of ['/srv/out', '/']) {
    it(`agrees with resolving and checking for every kind of path (root ${root})`, () => {
      for (const path of paths) expect(outcome(() => resolveInside(root, path)), JSON.stringify(path)).toBe(outcome(() => carefulRule(root, path)));
    });
  }
});

describe('PathGuard', () => {
  it('looks at nothing below the root of an empty tree, but for dot-named paths', () => {
    const root = useTempDir();
    symlinkSync('/tmp', join(root, '.hidden'));
    const guard = new PathGuard(root);
    const counts = countCalls();
    for (const path of ['robots.txt', 'alice/rss/index.rss', 'alice/atom/index.atom', 'bob/foaf/index.rdf']) expect(guard.problem(join(root, path), true)).toBeNull();
    expect(counts).toEqual({ lstat: 0, access: 1 });
    expect(guard.problem(join(root, '.hidden/x/y'), true)).toMatch(/^\.hidden\/ is a symbolic link/);
  });

  describe('in a tree that holds files', () => {
    function servedTree(): { root: string; guard: PathGuard } {
      const root = useTempDir();
      writeFileSync(join(root, 'robots.txt'), 'User-agent: *\n');
      return { root, guard: new PathGuard(root) };
    }

    it('refuses a symbolic link where a folder should be, a file as a folder, a link in the file’s place', () => {
      const { root, guard } = servedTree();
      mkdirSync(join(root, 'real'));
      symlinkSync(join(root, 'real'), join(root, 'carol'));
      writeFileSync(join(root, 'dave'), 'x');
      mkdirSync(join(root, 'fay/rss'), { recursive: true });
      symlinkSync('/etc/passwd', join(root, 'fay/rss/index.rss'));
      mkdirSync(join(root, 'gus/rss/index.rss'), { recursive: true });
      expect(guard.problem(join(root, 'carol/rss/index.rss'), true)).toMatch(/^carol\/ is a symbolic link \(to .*real\)/);
      expect(guard.problem(join(root, 'dave/rss/index.rss'), false)).toBe('dave/ is a file where a folder of the path should be');
      expect(guard.problem(join(root, 'fay/rss/index.rss'), true)).toMatch(/^a symbolic link \(to \/etc\/passwd\) stands in the file's place/);
      expect(guard.problem(join(root, 'gus/rss/index.rss'), true)).toBe("a directory stands in the file's place");
    });

    it.skipIf(process.getuid?.() === 0)('refuses a folder that cannot be written, and only for a write', () => {
      const { root, guard } = servedTree();
      mkdirSync(join(root, 'erin/rss'), { recursive: true });
      chmodSync(join(root, 'erin/rss'), 0o555);
      cleanUpAfterTest(() => chmodSync(join(root, 'erin/rss'), 0o755));
      expect(guard.problem(join(root, 'erin/rss/index.rss'), true)).toMatch(/^erin\/rss\/ cannot be written \(EACCES/);
      expect(guard.problem(join(root, 'erin/rss/index.rss'), false)).toBeNull();
    });

    it("asks once per folder: an owner's new folders cost one lstat, a known folder none", () => {
      const { root, guard } = servedTree();
      mkdirSync(join(root, 'ivy/rss'), { recursive: true });
      mkdirSync(join(root, 'ivy/atom'));
      const counts = countCalls();
      for (const path of ['gina/rss/index.rss', 'gina/atom/index.atom', 'gina/foaf/index.rdf', 'gina/hcard/index.html']) expect(guard.problem(join(root, path), true)).toBeNull();
      expect(counts).toEqual({ lstat: 1, access: 1 });
      expect(guard.problem(join(root, 'ivy/rss/index.rss'), true)).toBeNull();
      // ivy/, ivy/rss/ and the file's place; ivy/rss/ must take a new entry.
      expect(counts).toEqual({ lstat: 4, access: 2 });
      expect(guard.problem(join(root, 'ivy/atom/index.atom'), true)).toBeNull();
      expect(counts).toEqual({ lstat: 6, access: 3 });
      expect(guard.problem(join(root, 'ivy/rss/index.rss'), true)).toBeNull();
      expect(counts).toEqual({ lstat: 7, access: 3 });
    });

    it('remembers nothing as made from a question that writes nothing, and forgets on request', () => {
      const { root, guard } = servedTree();
      const counts = countCalls();
      expect(guard.problem(join(root, 'hal/rss/index.rss'), false)).toBeNull();
      expect(guard.problem(join(root, 'hal/rss/index.rss'), false)).toBeNull();
      expect(counts.lstat).toBe(2);
      expect(guard.problem(join(root, 'hal/rss/index.rss'), true)).toBeNull();
      expect(guard.problem(join(root, 'hal/atom/index.atom'), true)).toBeNull();
      expect(counts.lstat).toBe(3);
      // Replaced behind the guard's back, then forgotten: the guard looks again.
      symlinkSync('/tmp', join(root, 'hal'));
      guard.forget();
      expect(guard.problem(join(root, 'hal/rss/index.rss'), true)).toMatch(/^hal\/ is a symbolic link/);
    });
  });
});
