import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_MISSING_KEYS } from '../../src/sync/table-strategies.js';
import { cli } from '../helpers/cli.js';
import { mariadbMissing, startMariadb, type RunningMariadb } from '../helpers/mariadb.js';
import { tempDir } from '../helpers/temp-dir.js';
import {
  buildUrls, copyDatabase, docBlock, dumpTables, expectChangedOnlyLikeFull, expectTreeEqualsFullBuild, logAfter, logPosition, syncAndSignal, syncSite, syncWithPasswordFile, type SyncSite,
} from './sync-scenario.js';

/**
 * The MariaDB worked example of docs/adopting.md, against a real MariaDB server: the messy schema
 * and its rows, the mapping, a first sync and build, changes in the source and the sync that
 * carries exactly them, kills during a sync, and the source going away.
 */

const missing = mariadbMissing();

/** The id the mapping gives a tag: the first 13 hex digits of the MD5 of its lower-case name. */
const tagId = (name: string) => parseInt(createHash('md5').update(name).digest('hex').slice(0, 13), 16);

describe.skipIf(missing !== null)('vidfeeds sync from MariaDB (docs/adopting.md, worked example 1)', () => {
  let server: RunningMariadb;
  let site: SyncSite;
  const temp = tempDir('vidfeeds-sync-mariadb-');

  beforeAll(async () => {
    server = await startMariadb();
    await server.admin.query(docBlock('mariadb-schema'));
    await server.admin.query(docBlock('mariadb-data'));
    site = syncSite(temp.dir, docBlock('mariadb-config'), server.url);
  });

  afterAll(async () => {
    await server?.stop();
    temp.cleanup();
  });

  it('checks the mapping before writing: a wrong column or a failing query is exit 2 naming the table and column', () => {
    const before = dumpTables(site.db);
    const bad = join(temp.dir, 'bad.config.json');
    const write = (tables: Record<string, string>) => {
      writeFileSync(bad, JSON.stringify({ sync: { tables } }));
    };
    write({ users: 'SELECT member_id AS id, login AS user_name FROM members' });
    let result = cli(['sync', '--db', site.db, '--config', bad, '--from', server.url]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/sync\.tables\.users: the query returns column user_name, which users does not have/);
    write({ users: 'SELECT member_id AS id, login AS username, last_update AS updated_at FROM members' });
    result = cli(['sync', '--db', site.db, '--config', bad, '--from', server.url]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/sync\.tables\.users: the query does not return column created_at/);
    write({ videos: 'SELECT clip_id AS id FROM no_such_table' });
    result = cli(['sync', '--db', site.db, '--config', bad, '--from', server.url]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/sync\.tables\.videos: the query fails in the source: .*no_such_table/);
    // One run names every problem, with the column the mistyped alias was meant to be.
    write({ users: 'SELECT member_id AS id, login AS usrname, signup_date AS created_at, last_update AS updated_at FROM members', videos: 'SELECT clip_id AS id FROM no_such_table', tags: 'SELECT 1 AS id, login AS nmae FROM members' });
    result = cli(['sync', '--db', site.db, '--config', bad, '--from', server.url]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/the mapping has 5 problems:/);
    expect(result.stderr).toMatch(/sync\.tables\.users: the query returns column usrname, which users does not have \(did you mean AS username\?\)/);
    expect(result.stderr).toMatch(/sync\.tables\.users: the query does not return column username/);
    expect(result.stderr).toMatch(/sync\.tables\.tags: the query returns column nmae, which tags does not have \(did you mean AS name\?\)/);
    expect(result.stderr).toMatch(/sync\.tables\.videos: the query fails in the source: .*no_such_table/);
    // A passwordFile that is not there is named where it was looked for: beside the configuration.
    writeFileSync(bad, JSON.stringify({ sync: { passwordFile: 'missing-password', tables: { users: 'SELECT 1' } } }));
    result = cli(['sync', '--db', site.db, '--config', bad, '--from', server.url.replace(':secret@', '@')], { cwd: tmpdir() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`sync.passwordFile ${join(temp.dir, 'missing-password')} cannot be read: ENOENT`);
    expect(dumpTables(site.db)).toBe(before);
  });

  it('stops with exit 2 on a refused login or an unknown database, 75 on an unreachable server, writing nothing', () => {
    const before = dumpTables(site.db);
    // Trying again later would change nothing: the URL or the account needs fixing.
    const wrong = site.sync(['--from', server.url.replace(':secret@', ':wrong@')]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/Access denied for user 'site'.*; nothing was written; fix the URL, sync\.passwordFile or the account on the server/);
    const unknown = site.sync(['--from', server.url.replace(/\/site$/, '/no_such_database')]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/database no_such_database\) cannot be read: .*no_such_database/);
    const closed = site.sync(['--from', `mysql://site:secret@127.0.0.1:1/site`]);
    expect(closed.code).toBe(75);
    expect(closed.stderr).toMatch(/ECONNREFUSED/);
    expect(dumpTables(site.db)).toBe(before);
    // The server's Unix socket (`?socket=`), in place of the URL's host and port.
    const bySocket = site.sync(['--from', `mysql://site:secret@localhost/site?socket=${encodeURIComponent(server.socket)}`, '--dry-run']);
    expect(bySocket.code, bySocket.stderr).toBe(0);
    expect(bySocket.stderr + bySocket.stdout).toContain(`at ${server.socket}`);
    const noSocket = site.sync(['--from', `mysql://site:secret@localhost/site?socket=${encodeURIComponent(`${server.socket}.missing`)}`]);
    expect(noSocket.code).toBe(75);
    expect(noSocket.stderr).toContain(`${server.socket}.missing`);
  });

  it('syncs the messy rows by the column rules: entities decoded, zero dates and orphans named, BIGINT ids as integers', () => {
    const { result, report } = site.syncJson();
    expect(result.code, result.stderr).toBe(0);
    expect(report.tables.users).toMatchObject({ inserted: 5, skipped: 0 });
    expect(report.tables.videos).toMatchObject({ inserted: 4, skipped: 1 });
    const skipped = report.skipped.map((s) => `${s.table} ${s.row}: ${s.reason}`);
    // In the order tables are synced: each after the tables it refers to.
    expect(skipped).toEqual([
      "friendships user_id=1, friend_id=1: vidfeeds's schema refuses it: CHECK constraint failed: user_id <> friend_id",
      'friendships user_id=2, friend_id=77: friend_id 77: no users row has that id (not in the source, or skipped)',
      'videos id=3: user_id 99: no users row has that id (not in the source, or skipped)',
      `video_tags video_id=3, tag_id=${tagId('cats')}: video_id 3: no videos row has that id (not in the source, or skipped)`,
      'group_members group_id=1, user_id=99: user_id 99: no users row has that id (not in the source, or skipped)',
      'saved_videos user_id=2, video_id=3: video_id 3: no videos row has that id (not in the source, or skipped)',
    ]);
    const issues = report.issues.map((i) => `${i.table} ${i.row} ${i.column}: ${i.found}: ${i.outcome}`);
    expect(issues).toEqual([
      'videos id=4 updated_at: text "0000-00-00 00:00:00": stored as created_at (the field is left out)',
      'videos id=5 category_id: 7: stored as NULL (no such row)',
      'group_members group_id=1, user_id=2 joined_at: text "0000-00-00 00:00:00": stored as 0 (no document shows it)',
    ]);
    expect(result.stderr).toMatch(/sync from MariaDB 10\.\d+\.\d+.*: made \d+ changes \(users \+5, categories \+2, tags \+4/);

    const db = new Database(site.db, { readonly: true });
    try {
      expect(db.prepare('SELECT id, username, display_name, show_email, state, created_at FROM users ORDER BY id').all()).toEqual([
        { id: 1, username: 'alice', display_name: 'Alice & the Cats', show_email: 1, state: 'active', created_at: Date.UTC(2007, 2, 1, 10) / 1000 },
        { id: 2, username: 'bob', display_name: 'Bob', show_email: 0, state: 'active', created_at: Date.UTC(2007, 3, 2, 11, 30) / 1000 },
        { id: 3, username: 'carol', display_name: 'Carol', show_email: 0, state: 'suspended', created_at: Date.UTC(2007, 4, 3, 12) / 1000 },
        { id: 4, username: 'dave', display_name: 'Dave (imported)', show_email: 0, state: 'active', created_at: Date.UTC(2008, 5, 1, 8) / 1000 },
        { id: 5, username: 'erin', display_name: 'Érén Ñandú', show_email: 0, state: 'active', created_at: Date.UTC(2008, 0, 1) / 1000 },
      ]);
      expect(db.prepare('SELECT title, description, updated_at = created_at AS same FROM videos WHERE id IN (1, 4) ORDER BY id').all()).toEqual([
        { title: 'Cats & dogs', description: 'Two <b>friends</b>', same: 0 },
        { title: 'Never edited', description: '', same: 1 },
      ]);
      expect(db.prepare('SELECT id, name FROM tags ORDER BY name').all()).toEqual(['cats', 'dogs', 'funny', 'music'].map((name) => ({ id: tagId(name), name })));
      expect(db.prepare('SELECT user_id, video_id, position FROM saved_videos ORDER BY 1, 2').all()).toEqual([
        { user_id: 1, video_id: 4, position: 30 },
        { user_id: 1, video_id: 5, position: 10 },
        { user_id: 2, video_id: 1, position: 5 },
        { user_id: 5, video_id: 1, position: 1 },
      ]);
    } finally {
      db.close();
    }
  });

  it('builds the synced site, and a second sync finds nothing to change', () => {
    const build = site.build();
    expect(build.code, build.stderr).toBe(0);
    expect(build.stderr).not.toMatch(/0 users published/);
    const position = logPosition(site.db);
    const { result, report } = site.syncJson();
    expect(result.code, result.stderr).toBe(0);
    expect(report.changes).toBe(0);
    expect(report.logged).toBe(0);
    expect(logPosition(site.db)).toBe(position);
    expect(result.stderr).toMatch(/made 0 changes/);
  });

  it('carries exactly the rows changed in the source; the incremental build touches only their documents and equals a full build', async () => {
    await server.admin.query(
      "UPDATE clips SET title = 'Cats &amp; dogs, again' WHERE clip_id = 1; " +
        "INSERT INTO clips VALUES (6, 'pqr678', 5, 'Erin&#39;s first', '', '', 12, 'http://media.example.org/pqr678.flv', 'http://media.example.org/pqr678.jpg', NULL, 'no', '2009-01-01 00:00:00', '2009-01-01 00:00:00'); " +
        'DELETE FROM favourites WHERE member_id = 1 AND clip_id = 4',
    );
    const dry = site.syncJson(['--dry-run']);
    expect(dry.result.code).toBe(0);
    expect(dry.report.changes).toBe(3);
    expect(dry.result.stderr).toMatch(/would make 3 changes \(videos \+1 ~1, saved_videos -1\)/);
    const position = logPosition(site.db);
    const { result, report } = site.syncJson();
    expect(result.code, result.stderr).toBe(0);
    expect(report.changes).toBe(3);
    expect(report.logged).toBe(3);
    expect(logAfter(site.db, position).map((e) => [e.table_name, e.op, JSON.parse(e.new_keys ?? e.old_keys!)])).toEqual([
      ['videos', 'update', expect.objectContaining({ id: 1, public_id: 'abc123' })],
      ['videos', 'insert', expect.objectContaining({ id: 6, public_id: 'pqr678', user_id: 5 })],
      ['saved_videos', 'delete', { user_id: 1, video_id: 4 }],
    ]);
    const build = site.build(['--json']);
    expect(build.code, build.stderr).toBe(0);
    const urls = buildUrls(build);
    expect(urls.mode).toBe('incremental');
    expect(urls.written).toEqual(expect.arrayContaining(['https://videos.example.org/alice/rss/', 'https://videos.example.org/pqr678/oembed/', 'https://videos.example.org/alice/xspf/']));
    // alice uploaded video 1 and lost a favourite; bob and erin saved video 1; erin uploaded video 6.
    for (const url of urls.written) expect(url).toMatch(/^https:\/\/videos\.example\.org\/(alice|bob|erin|abc123|pqr678)\/|sitemap/);
    expectTreeEqualsFullBuild(site);
    const again = site.syncJson();
    expect(again.report.changes).toBe(0);
  });

  it('--changed-only reads the members written since the last syncs (their TIMESTAMP), and ends as a full compare does', async () => {
    await server.admin.query(
      "UPDATE members SET realname = 'Bob B.' WHERE member_id = 2; " +
        "INSERT INTO members (member_id, login, realname, signup_date) VALUES (6, 'frank', 'Frank', '2009-02-01 00:00:00'); " +
        'DELETE FROM members WHERE member_id = 4',
    );
    expectChangedOnlyLikeFull(site, docBlock('mariadb-config'), server.url);
  });

  it('--changed-only compares in full, on the same connection, when too many keys are missing', async () => {
    // Members the last syncs read, keyed after those below: the pass over the keys stops short of
    // the end of its query.
    await server.admin.query("INSERT INTO members (member_id, login, realname, signup_date) SELECT 200000 + seq, CONCAT('new', seq), 'New', '2009-01-01 00:00:00' FROM seq_1_to_5000");
    expect(site.syncJson(['--changed-only']).report.tables.users).toMatchObject({ mode: 'changed', inserted: 5000 });
    // Rows whose watermark is older than the last syncs': only the pass over the keys finds them.
    await server.admin.query(
      "INSERT INTO members (member_id, login, realname, signup_date, last_update) SELECT 100000 + seq, CONCAT('old', seq), 'Old', '2009-01-01 00:00:00', '2009-01-01 00:00:00' " +
        `FROM seq_1_to_${MAX_MISSING_KEYS + 1}`,
    );
    const { result, report } = site.syncJson(['--changed-only']);
    expect(result.code, result.stderr).toBe(0);
    expect(report.tables.users).toMatchObject({ mode: 'full', inserted: MAX_MISSING_KEYS + 1, reason: expect.stringMatching(/^more than 20000 of its source keys/) });
    await server.admin.query('DELETE FROM members WHERE member_id > 100000');
    expect(site.syncJson(['--allow-removals']).report.tables.users).toMatchObject({ deleted: MAX_MISSING_KEYS + 5001 });
  });

  it('leaves the database unchanged or complete when killed (-9) or stopped (SIGTERM) at any point of a sync', async () => {
    await server.admin.query(
      "INSERT INTO members (member_id, login, realname, signup_date) SELECT 1000 + seq, CONCAT('member', seq), 'Member', '2009-01-01 00:00:00' FROM seq_1_to_3000; " +
        "UPDATE clips SET title = 'Renamed' WHERE clip_id = 5",
    );
    const pristine = join(temp.dir, 'pristine.sqlite');
    copyDatabase(site.db, pristine);
    const before = dumpTables(site.db);
    const started = Date.now();
    const whole = site.sync();
    const lasted = Date.now() - started;
    expect(whole.code, whole.stderr).toBe(0);
    const after = dumpTables(site.db);
    expect(after).not.toBe(before);
    const args = ['--db', site.db, '--config', site.config, '--from', server.url];
    const outcomes: string[] = [];
    // Spread over the time a whole sync took (the process's start included), and one at random.
    const points: Array<[NodeJS.Signals, number]> = [0.3, 0.5, 0.7, 0.9, Math.random()].map((f) => ['SIGKILL', f * lasted]);
    points.push(['SIGTERM', 0.7 * lasted]);
    for (const [signal, delay] of points) {
      copyDatabase(pristine, site.db);
      const run = await syncAndSignal(args, delay, signal);
      const now = dumpTables(site.db);
      expect(now === before || now === after, `${signal} after ${delay} ms`).toBe(true);
      if (signal === 'SIGTERM' && run.code === 143) expect(now).toBe(before);
      outcomes.push(`${signal}@${Math.round(delay)}: ${run.code ?? run.signal} ${now === before ? 'unchanged' : 'complete'}`);
    }
    console.log(`kills during a sync: ${outcomes.join('; ')}`);
    // Whatever the kills left, the next sync completes it.
    expect(site.sync().code).toBe(0);
    expect(dumpTables(site.db)).toBe(after);
  });

  it('reads the password from sync.passwordFile when the URL holds none', () => {
    const noPassword = server.url.replace(':secret@', '@');
    const withFile = syncWithPasswordFile(site, noPassword, 'secret');
    expect(withFile.code, withFile.stderr).toBe(0);
    expect(syncWithPasswordFile(site, noPassword, 'wrong').code).toBe(2);
  });

  it('uses the password the URL holds when sync.passwordFile cannot be read, and warns naming the file', () => {
    const config = JSON.parse(readFileSync(site.config, 'utf8')) as { sync: Record<string, unknown> };
    config.sync.passwordFile = 'no-such-password';
    const file = join(site.dir, 'missing-password-file.config.json');
    writeFileSync(file, JSON.stringify(config));
    const result = cli(['sync', '--db', site.db, '--config', file, '--from', server.url, '--dry-run'], { cwd: site.dir });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`sync: sync.passwordFile ${join(site.dir, 'no-such-password')} cannot be read: ENOENT; the URL's password is used`);
  });

  it('exits 75 and writes nothing when the server has stopped', async () => {
    await server.admin.query("UPDATE clips SET title = 'Not synced' WHERE clip_id = 1");
    const before = dumpTables(site.db);
    await server.stop();
    const result = site.sync();
    expect(result.code).toBe(75);
    expect(result.stderr).toMatch(/the source database \(MySQL\/MariaDB at 127\.0\.0\.1:\d+, database site\) cannot be read: .*ECONNREFUSED/);
    expect(dumpTables(site.db)).toBe(before);
  });
});
