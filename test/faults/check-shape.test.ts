import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { copyFileSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exitCodeOf } from '../../src/cli/errors.js';
import { DatabaseError } from '../../src/db/open-database.js';
import { buildSite } from '../../src/pipeline/site-build.js';
import { BIN, cli } from '../helpers/cli.js';
import { testConfig } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * `vidfeeds check` on a tree whose shape is wrong, piped into `head`, and a database truncated
 * under a build: docs/report.md, "vidfeeds check".
 */

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!();
});

function built(users: number) {
  const t = tempDir('vidfeeds-check-shape-');
  cleanups.push(t.cleanup);
  const db = join(t.dir, 'site.sqlite');
  const out = join(t.dir, 'out');
  expect(cli(['demo', '--db', db, '--users', String(users)]).code).toBe(0);
  expect(cli(['build', '--db', db, '--out', out]).code).toBe(0);
  return { dir: t.dir, db, out };
}

describe('vidfeeds check on a tree of the wrong shape', () => {
  it('reports every problem when a format folder is a file, and the others beside it, with no stack trace', () => {
    const site = built(6);
    // Alice's older uploads are in an archive page under the same folder (numbered by its newest row).
    const [page, ...others] = readdirSync(join(site.out, 'alice', 'rss', 'archive'));
    expect(others).toEqual([]);
    rmSync(join(site.out, 'alice', 'rss'), { recursive: true });
    writeFileSync(join(site.out, 'alice', 'rss'), 'a file in the folder\'s place\n');
    writeFileSync(join(site.out, 'bob', 'foaf', 'index.rdf'), 'changed by hand');
    const run = cli(['check', '--out', site.out]);
    expect(run.code).toBe(1);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toContain('alice/rss/index.rss: missing: alice/rss/ is a file where the last build wrote a folder');
    // Alice's archive page, under the same folder: missing too.
    expect(lines).toContain(`alice/rss/archive/${page!}/page.rss: missing: alice/rss/ is a file where the last build wrote a folder`);
    expect(lines).toContain('alice/rss: a file where vidfeeds writes a folder');
    expect(lines).toContainEqual(expect.stringMatching(/^bob\/foaf\/index\.rdf: \d+ bytes, the last build wrote \d+/));
    expect(run.stderr).toMatch(/^vidfeeds: 4 problems: /m);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('stops quietly when its reader goes away (piped into head): no stack trace, its own exit code', () => {
    const site = built(40);
    // Every document gone: one line each, far more than a pipe holds.
    for (const entry of readdirSync(site.out)) if (!entry.startsWith('.')) rmSync(join(site.out, entry), { recursive: true });
    const run = spawnSync('/bin/sh', ['-c', `"${process.execPath}" "${BIN}" check --out "${site.out}" | head -n 1`], { encoding: 'utf8' });
    expect(run.stdout.split('\n')[0]).toMatch(/: missing: the last build wrote it$/);
    expect(run.stderr).not.toContain('EPIPE');
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.stderr).toMatch(/^vidfeeds: \d+ problems: /m);
  });
});

describe('a database truncated under a build', () => {
  it('is named as such (exit 2), not "This database connection is busy executing a query"', () => {
    const site = built(120);
    const db = join(site.dir, 'rollback.sqlite');
    copyFileSync(site.db, db);
    const conn = new Database(db);
    conn.pragma('journal_mode = DELETE');
    conn.close();
    let truncated = false;
    let error: unknown;
    try {
      buildSite({
        db,
        out: join(site.dir, 'out2'),
        config: testConfig(),
        reporter: {
          // After the first document is written, the file is cut to a twentieth.
          wrote: () => {
            if (truncated) return;
            truncated = true;
            truncateSync(db, 65536);
          },
        },
      });
    } catch (e) {
      error = e;
    }
    expect(truncated).toBe(true);
    expect(error).toBeInstanceOf(DatabaseError);
    expect((error as Error).message).toMatch(new RegExp(`^database ${db} was truncated while it was being read: \\d+ bytes when the build began, 65536 now`));
    expect(exitCodeOf(error)).toBe(2);
  });
});
