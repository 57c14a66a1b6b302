import Database from 'better-sqlite3';
import { renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { http, type HttpResult } from '../helpers/http.js';
import { startServe } from '../helpers/serve-process.js';
import { createTestDb, insertUser, insertVideo } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * `vidfeeds serve` and the database under it, as an operator meets them: the file replaced by a
 * restore or a deploy, and a build reading a rollback-journal database while the site posts.
 * docs/database.md, "A live site's database must be in WAL mode"; docs/serve.md, `vidfeeds serve`.
 */

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!();
});

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const item = (n: number) => new URLSearchParams({ title: `Item ${n}`, image: `https://img.example.org/${n}.jpg`, link: `https://video.example.org/watch?v=${n}` }).toString();

/** A site of one uploader with a public video, built, and `vidfeeds serve` on it. */
async function served() {
  const fixture = createTestDb();
  cleanups.push(fixture.cleanup);
  const u = insertUser(fixture.db, { username: 'uploader' });
  insertVideo(fixture.db, u.id, { public_id: 'pub', title: 'Public clip' });
  fixture.db.close();
  const work = tempDir('vidfeeds-serve-db-');
  cleanups.push(work.cleanup);
  const out = join(work.dir, 'out');
  expect(cli(['build', '--db', fixture.file, '--out', out]).code).toBe(0);
  const { port, child } = await startServe(['--db', fixture.file, '--out', out, '--no-access-log']);
  cleanups.push(() => child.kill());
  return { port, file: fixture.file, dir: work.dir };
}

function count(file: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM recommendations').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('vidfeeds serve with its database replaced', () => {
  it('answers from the file that is there now: a video made private in the restored copy is 401 at once', async () => {
    const site = await served();
    const target = '/pub/oembed/?maxwidth=200';
    expect((await http(site.port, target)).status).toBe(200);
    // A restore: another file renamed over the database's path.
    const copy = join(site.dir, 'restored.sqlite');
    const source = new Database(site.file);
    source.prepare('VACUUM INTO ?').run(copy);
    source.close();
    const restored = new Database(copy);
    restored.exec(`UPDATE videos SET visibility = 'private' WHERE public_id = 'pub'`);
    restored.close();
    renameSync(copy, site.file);
    const after = await http(site.port, target);
    expect(after.status).toBe(401);
    expect(after.text).toContain('is not public');
  });
});

describe('vidfeeds serve while a build reads a rollback-journal database', () => {
  it('answers other requests while a POST waits, then 503 with Retry-After and nothing stored; stores it once the build is done', async () => {
    const site = await served();
    const db = new Database(site.file);
    expect(db.pragma('journal_mode', { simple: true })).toBe('delete');
    // What a build holds for its whole length: one read transaction (a SHARED lock).
    db.exec('BEGIN');
    db.prepare('SELECT count(*) FROM videos').get();
    const before = count(site.file);

    const order: string[] = [];
    const tagged = (name: string, p: Promise<HttpResult>) => p.then((r) => (order.push(name), r));
    const posting = tagged('post', http(site.port, '/uploader/openrecommender/', { method: 'POST', headers: FORM, body: item(1) }));
    const file = await tagged('file', http(site.port, '/uploader/rss/'));
    const oembed = await tagged('oembed', http(site.port, '/pub/oembed/?maxwidth=100'));
    const post = await posting;
    expect(file.status).toBe(200);
    expect(oembed.status).toBe(200);
    // The POST did not hold the others up: they were answered while it waited.
    expect(order).toEqual(['file', 'oembed', 'post']);
    expect(post.status).toBe(503);
    expect(post.headers['retry-after']).toBe('30');
    expect(post.text).toContain('nothing was stored');
    db.exec('COMMIT');
    db.close();
    expect(count(site.file)).toBe(before);

    const again = await http(site.port, '/uploader/openrecommender/', { method: 'POST', headers: FORM, body: item(1) });
    expect(again.status).toBe(202);
    expect(count(site.file)).toBe(before + 1);
  });
});

describe('WAL mode for a live site', () => {
  it('vidfeeds demo creates a WAL database', () => {
    const { dir } = tempDir('vidfeeds-wal-');
    const file = join(dir, 'demo.sqlite');
    expect(cli(['demo', '--db', file, '--users', '3']).code).toBe(0);
    const db = new Database(file, { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });

  it('vidfeeds build warns, naming the database, when a writer of the site waits on a rollback-journal database; not on a WAL one', () => {
    const fixture = createTestDb();
    cleanups.push(fixture.cleanup);
    insertUser(fixture.db, { username: 'alice' });
    const { dir } = tempDir('vidfeeds-wal-');
    // A writer of the site with a transaction open: its journal is there, and it waits for the build.
    fixture.db.exec('BEGIN IMMEDIATE');
    insertUser(fixture.db, { username: 'bob' });
    const waited = cli(['build', '--db', fixture.file, '--out', join(dir, 'out')]);
    fixture.db.exec('COMMIT');
    expect(waited.code).toBe(0);
    expect(waited.stderr).toContain(`vidfeeds: database ${fixture.file} is in delete journal mode, not WAL, and the site is writing to it`);
    expect(waited.stderr).toContain(`sqlite3 ${fixture.file} 'PRAGMA journal_mode=WAL'`);

    fixture.db.pragma('journal_mode = WAL');
    fixture.db.exec('BEGIN IMMEDIATE');
    insertUser(fixture.db, { username: 'carol' });
    const wal = cli(['build', '--db', fixture.file, '--out', join(dir, 'out')]);
    fixture.db.exec('COMMIT');
    expect(wal.code).toBe(0);
    expect(wal.stderr).not.toContain('journal mode');
  });
});
