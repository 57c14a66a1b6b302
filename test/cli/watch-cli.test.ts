import { spawn, spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { copyFileSync, existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultLockFile } from '../../src/lock/lock.js';
import { createTestDb, insertUser } from '../helpers/site-fixture.js';
import { cleanUpAfterTest, tempDir } from '../helpers/temp-dir.js';

/**
 * The commands as an operator runs them: the built binary (npm test compiles it first), its exit
 * codes and its messages. Waiting for the watcher's lines has a generous deadline; nothing here
 * asserts how long anything took.
 */

const BIN = resolve(import.meta.dirname, '../../bin/vidfeeds.js');

function site() {
  const fixture = createTestDb();
  insertUser(fixture.db, { username: 'alice' });
  const work = tempDir('vidfeeds-cli-');
  return { ...fixture, out: join(work.dir, 'out'), cwd: work.dir };
}

function vidfeeds(args: string[], cwd: string) {
  return spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8' });
}

/** `vidfeeds watch` running for the test: its stderr so far, a wait for a line, its exit code. */
function startWatch(args: string[], cwd: string) {
  const child = spawn(process.execPath, [BIN, 'watch', ...args], { cwd });
  cleanUpAfterTest(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  /** Waits until stderr matches `pattern` `count` times. */
  const waitFor = async (pattern: RegExp, count = 1) => {
    for (let waited = 0; (stderr.match(new RegExp(pattern, 'g')) ?? []).length < count; waited += 50) {
      if (waited > 30_000 || child.exitCode !== null) throw new Error(`no ${pattern} in:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return { child, exited, waitFor, stderr: () => stderr };
}

describe('vidfeeds build and watch from the command line', () => {
  it('watch names every skipped row of its builds on stderr, as build does', async () => {
    const { file, out, cwd, db } = site();
    insertUser(db, { username: 'robots.txt' });
    const { child, exited, waitFor, stderr } = startWatch(['--db', file, '--out', out], cwd);
    await waitFor(/full build/);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    // watch's lines start with their ISO 8601 time.
    expect(stderr()).toMatch(/^\S+Z vidfeeds: skipped user "?robots\.txt"?: .*site-wide file/m);
    expect(stderr()).toMatch(/1 skipped/);
  });

  it('build says whether it was full or incremental and why', () => {
    const { file, out, cwd, db } = site();
    const first = vidfeeds(['build', '--db', file, '--out', out], cwd);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/vidfeeds: full build \(first build: no saved state\): \d+ documents/);
    db.prepare(`UPDATE users SET display_name = 'A' WHERE username = 'alice'`).run();
    const second = vidfeeds(['build', '--db', file, '--out', out], cwd);
    // The user's feeds changed, so the sitemap's lastmod moved: the site files are rendered too.
    expect(second.stderr).toMatch(/vidfeeds: incremental build \(1 changes since the last build → 1 users, 0 videos, site files\)/);
    const forced = vidfeeds(['build', '--db', file, '--out', out, '--full'], cwd);
    expect(forced.stderr).toContain('full build (--full: every file is compared with its bytes on disk)');
  });

  it('refuses a state file inside the served tree, and --full with a partial build (exit 2)', () => {
    const { file, out, cwd } = site();
    const inside = vidfeeds(['build', '--db', file, '--out', out, '--state', join(out, 'state.sqlite')], cwd);
    expect(inside.status).toBe(2);
    expect(inside.stderr).toContain('is inside the output directory');
    expect(existsSync(out)).toBe(false);
    const mixed = vidfeeds(['build', '--db', file, '--out', out, '--full', '--user', 'alice'], cwd);
    expect(mixed.status).toBe(2);
  });

  it('watch rebuilds on a database change, holds the lock only while it builds, and stops cleanly on SIGINT', async () => {
    const { file, out, cwd, db } = site();
    const { child, exited, waitFor, stderr } = startWatch(['--db', file, '--out', out], cwd);

    await waitFor(/start: full build/);
    expect(existsSync(defaultLockFile(out))).toBe(false);
    // Between its builds, an operator's build runs.
    const between = vidfeeds(['build', '--db', file, '--out', out], cwd);
    expect(between.status, between.stderr).toBe(0);

    db.prepare(`INSERT INTO users (username, display_name, created_at, updated_at) VALUES ('bob', 'Bob', 1, 1)`).run();
    await waitFor(/changed: incremental build \(1 changes since the last build → 1 users, 0 videos, site files\)/);
    expect(existsSync(join(out, 'bob/rss/index.rss'))).toBe(true);

    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(stderr()).toContain('vidfeeds: SIGINT: stopping');
    expect(stderr()).toContain('vidfeeds: stopped');
    expect(existsSync(defaultLockFile(out))).toBe(false);
    // One line per rebuild: the start and the change.
    expect(stderr().match(/ build \(/g)).toHaveLength(2);
  });

  it('watch on a database it cannot open exits 2 with one line, as build does, before touching a file', () => {
    const { file, out, cwd } = site();
    const newer = new Database(file);
    newer.pragma('user_version = 99');
    newer.close();
    const watched = vidfeeds(['watch', '--db', file, '--out', out], cwd);
    expect(watched.status).toBe(2);
    expect(watched.stderr.trim().split('\n')).toHaveLength(1);
    expect(watched.stderr).toMatch(/^\S+Z vidfeeds: .*schema version 99/);

    const notDb = join(cwd, 'notes.sqlite');
    writeFileSync(notDb, 'these are my notes, not a database\n'.repeat(100));
    const junk = vidfeeds(['watch', '--db', notDb, '--out', out], cwd);
    expect(junk.status).toBe(2);
    expect(junk.stderr.trim().split('\n')).toHaveLength(1);
    expect(junk.stderr).toContain('is not a SQLite database');

    const missing = vidfeeds(['watch', '--db', join(cwd, 'nope.sqlite'), '--out', out], cwd);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('does not exist');
    expect(existsSync(out)).toBe(false);
    expect(existsSync(join(cwd, '.vidfeeds'))).toBe(false);

    const built = vidfeeds(['build', '--db', file, '--out', out], cwd);
    expect(built.status).toBe(2);
    // The same line, watch's with its time in front.
    expect(watched.stderr.replace(/^\S+Z /, '')).toBe(built.stderr);
  });

  it('watch reports a database that breaks while watching once, and builds again when it is back', async () => {
    const { file, out, cwd } = site();
    const { child, exited, waitFor, stderr } = startWatch(['--db', file, '--out', out, '--poll', '200'], cwd);
    await waitFor(/start: full build/);

    // The site replaces its database by one of a newer schema, then keeps writing to it.
    copyFileSync(file, `${file}.good`);
    const next = `${file}.next`;
    copyFileSync(file, next);
    const upgraded = new Database(next);
    upgraded.pragma('user_version = 99');
    upgraded.close();
    renameSync(next, file);
    await waitFor(/build failed: .*schema version 99/);
    const writer = new Database(file);
    for (let i = 0; i < 20; i++) {
      writer.prepare(`INSERT INTO users (username, display_name, created_at, updated_at) VALUES (?, 'X', 1, 1)`).run(`later${i}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    writer.close();
    expect(stderr().match(/build failed/g)).toHaveLength(1);

    renameSync(`${file}.good`, file);
    await waitFor(/build failed[^]*: incremental build/);
    expect(stderr().match(/build failed/g)).toHaveLength(1);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('watch keeps the last good template while one is broken, and builds incrementally after it is restored', async () => {
    const { out, cwd, db, file } = site();
    mkdirSync(join(cwd, 'templates/embed'), { recursive: true });
    const template = join(cwd, 'templates/embed/mine.hbs');
    const good = '<iframe src="{{fileUrl}}" title="{{title}}"></iframe>\n';
    writeFileSync(template, good);
    writeFileSync(join(cwd, 'vidfeeds.config.json'), JSON.stringify({ baseUrl: 'https://videos.example.org', player: { template: 'mine', templatesDir: 'templates' } }));
    const { child, exited, waitFor, stderr } = startWatch(['--db', file, '--out', out], cwd);
    await waitFor(/start: full build/);

    // Saved whole (a write beside it, then a rename): a save in place may be read empty for a
    // moment, which builds once more (test/watch/file-watcher.test.ts) and is not what this is about.
    const save = (text: string) => {
      writeFileSync(`${template}.tmp`, text);
      renameSync(`${template}.tmp`, template);
    };
    save('<object>{{#each}}</object>');
    await waitFor(/keeping the last good configuration and templates/);
    db.prepare(`UPDATE users SET display_name = 'During' WHERE username = 'alice'`).run();
    await waitFor(/changed: incremental build/);
    save(good);
    await new Promise((r) => setTimeout(r, 500)); // the watcher sees the restored template
    db.prepare(`UPDATE users SET display_name = 'After' WHERE username = 'alice'`).run();
    await waitFor(/changed: incremental build/, 2);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr().match(/full build/g), stderr()).toHaveLength(1); // the start only
    expect(stderr().match(/keeping the last good/g), stderr()).toHaveLength(1);
  });
});
