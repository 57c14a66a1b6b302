import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { postgresMissing, startPostgres, type RunningPostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp-dir.js';
import { buildUrls, docBlock, dumpTables, expectChangedOnlyLikeFull, expectTreeEqualsFullBuild, logAfter, logPosition, syncSite, syncWithPasswordFile, type SyncSite } from './sync-scenario.js';

/**
 * The PostgreSQL worked example of docs/adopting.md, against a real PostgreSQL server: the URL from
 * the environment variable the mapping names, timestamps with and without zone, booleans, text[]
 * tags, intervals, positions from row_number(); changes carried exactly; the server stopped.
 */

const missing = postgresMissing();

describe.skipIf(missing !== null)('vidfeeds sync from PostgreSQL (docs/adopting.md, worked example 2)', () => {
  let server: RunningPostgres;
  let site: SyncSite;
  const temp = tempDir('vidfeeds-sync-postgres-');

  beforeAll(async () => {
    server = await startPostgres();
    await server.admin.query(docBlock('postgres-schema'));
    await server.admin.query(docBlock('postgres-data'));
    // The mapping reads the URL from SITE_DATABASE_URL (sync.fromEnv); the CLI runs with this environment.
    process.env.SITE_DATABASE_URL = server.url;
    site = syncSite(temp.dir, docBlock('postgres-config'), null);
  });

  afterAll(async () => {
    delete process.env.SITE_DATABASE_URL;
    await server?.stop();
    temp.cleanup();
  });

  it("checks the whole mapping in one run: a failing query does not hide the next tables' problems", () => {
    const before = dumpTables(site.db);
    const bad = `${site.config}.bad.json`;
    writeFileSync(bad, JSON.stringify({ sync: { fromEnv: 'SITE_DATABASE_URL', tables: { users: 'SELECT id FROM no_such_table', categories: 'SELECT id, label AS nam FROM topics' } } }));
    const result = cli(['sync', '--db', site.db, '--config', bad]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/the mapping has 3 problems:/);
    expect(result.stderr).toMatch(/sync\.tables\.users: the query fails in the source: relation "no_such_table" does not exist/);
    expect(result.stderr).toMatch(/sync\.tables\.categories: the query returns column nam, which categories does not have \(did you mean AS name\?\)/);
    expect(dumpTables(site.db)).toBe(before);
  });

  it('syncs every mapped table, times in UTC, and builds', () => {
    const { result, report } = site.syncJson();
    expect(result.code, result.stderr).toBe(0);
    expect(report.skipped).toEqual([]);
    expect(report.issues).toEqual([]);
    expect(result.stderr).toMatch(/sync from PostgreSQL 1\d\.\d+/);
    const db = new Database(site.db, { readonly: true });
    try {
      expect(db.prepare('SELECT id, username, show_email, state, created_at FROM users ORDER BY id').all()).toEqual([
        { id: 1, username: 'ana', show_email: 1, state: 'active', created_at: Date.UTC(2015, 2, 1, 10) / 1000 },
        { id: 2, username: 'ben', show_email: 0, state: 'active', created_at: Date.UTC(2015, 3, 1, 10) / 1000 },
        { id: 3, username: 'cleo', show_email: 0, state: 'suspended', created_at: Date.UTC(2015, 4, 1) / 1000 },
        { id: 4, username: 'dan', show_email: 0, state: 'deleted', created_at: Date.UTC(2015, 5, 1) / 1000 },
      ]);
      expect(db.prepare('SELECT id, duration_seconds, file_size, file_type, visibility, created_at, updated_at FROM videos ORDER BY id').all()).toEqual([
        { id: 1, duration_seconds: 195, file_size: 9007199254, file_type: 'video/mp4', visibility: 'public', created_at: Date.UTC(2016, 0, 1, 8) / 1000, updated_at: Date.UTC(2016, 0, 1, 8) / 1000 },
        { id: 2, duration_seconds: 600, file_size: null, file_type: 'video/mp4', visibility: 'public', created_at: Date.UTC(2016, 0, 5, 8) / 1000, updated_at: Date.UTC(2016, 0, 6, 9, 30) / 1000 },
        { id: 3, duration_seconds: null, file_size: null, file_type: 'video/mp4', visibility: 'private', created_at: Date.UTC(2016, 0, 7, 8) / 1000, updated_at: Date.UTC(2016, 0, 7, 8) / 1000 },
        { id: 4, duration_seconds: 3600, file_size: 1234567, file_type: 'video/webm', visibility: 'public', created_at: Date.UTC(2016, 0, 8, 8) / 1000, updated_at: Date.UTC(2016, 0, 8, 8) / 1000 },
      ]);
      expect(db.prepare('SELECT name FROM tags ORDER BY name').pluck().all()).toEqual(['cooking', 'portugal', 'travel']);
      expect(db.prepare('SELECT user_id, video_id, position FROM saved_videos ORDER BY 1, 3').all()).toEqual([
        { user_id: 1, video_id: 4, position: 1 },
        { user_id: 2, video_id: 2, position: 1 },
        { user_id: 2, video_id: 1, position: 2 },
      ]);
      expect(db.prepare('SELECT user_id, title, xml_url FROM reading_list ORDER BY id').all()).toEqual([
        { user_id: 1, title: 'Travel notes', xml_url: 'https://travel.example.net/feed.xml' },
        { user_id: 2, title: 'Bakers', xml_url: 'https://bakers.example.net/rss' },
      ]);
    } finally {
      db.close();
    }
    const build = site.build();
    expect(build.code, build.stderr).toBe(0);
    const again = site.syncJson();
    expect(again.report.changes).toBe(0);
    expect(again.report.logged).toBe(0);
  });

  it('carries exactly the rows changed in the source, and the incremental build equals a full one', async () => {
    await server.admin.query(
      "UPDATE videos SET title = 'Lisbon trams at dawn' WHERE id = 1; " +
        "INSERT INTO videos (id, slug, account_id, title, media_url, poster_url, created_at) VALUES (5, 'ben-rolls', 2, 'Rolls', 'https://media.example.org/rolls.mp4', 'https://media.example.org/rolls.jpg', '2016-02-01 10:00:00'); " +
        'DELETE FROM follows WHERE follower_id = 2 AND followee_id = 4',
    );
    const position = logPosition(site.db);
    const { result, report } = site.syncJson();
    expect(result.code, result.stderr).toBe(0);
    expect(report.changes).toBe(3);
    expect(logAfter(site.db, position).map((e) => [e.table_name, e.op, JSON.parse(e.new_keys ?? e.old_keys!)])).toEqual([
      ['friendships', 'delete', { user_id: 2, friend_id: 4 }],
      ['videos', 'update', expect.objectContaining({ id: 1, public_id: 'lisbon-trams' })],
      ['videos', 'insert', expect.objectContaining({ id: 5, public_id: 'ben-rolls', user_id: 2 })],
    ]);
    const build = site.build(['--json']);
    expect(build.code, build.stderr).toBe(0);
    const urls = buildUrls(build);
    expect(urls.mode).toBe('incremental');
    expect(urls.written).toEqual(expect.arrayContaining(['https://videos.example.org/ana/rss/', 'https://videos.example.org/ben-rolls/oembed/']));
    for (const url of urls.written) expect(url).toMatch(/^https:\/\/videos\.example\.org\/(ana|ben|lisbon-trams|ben-rolls)\/|sitemap/);
    expectTreeEqualsFullBuild(site);
  });

  it('--changed-only reads the accounts written since the last syncs (updated_at, set by a trigger), and ends as a full compare does', async () => {
    await server.admin.query(
      "UPDATE accounts SET name = 'Ben B.' WHERE id = 2; " +
        "INSERT INTO accounts (id, handle, name, created_at) VALUES (5, 'eva', 'Eva', '2015-07-01 00:00:00+00'); " +
        'DELETE FROM accounts WHERE id = 3',
    );
    expectChangedOnlyLikeFull(site, docBlock('postgres-config'), null);
  });

  it('reads the password from sync.passwordFile, PGPASSWORD or the password file, and says so when none was given', () => {
    const noPassword = server.url.replace(':secret@', '@');
    const saved = { PGPASSWORD: process.env.PGPASSWORD, PGPASSFILE: process.env.PGPASSFILE };
    delete process.env.PGPASSWORD;
    // Not the ~/.pgpass of whoever runs the tests.
    process.env.PGPASSFILE = `${site.dir}/no-such-pgpass`;
    try {
      const withFile = syncWithPasswordFile(site, noPassword, 'secret');
      expect(withFile.code, withFile.stderr).toBe(0);
      const none = syncWithPasswordFile(site, noPassword, null);
      expect(none.code).toBe(2);
      expect(none.stderr).toMatch(/the server asks for a password and none was given \(in the URL, sync\.passwordFile, PGPASSWORD/);
      // libpq's ways: PGPASSWORD, then the password file, without pg's warning that it stops reading that file.
      process.env.PGPASSWORD = 'secret';
      expect(syncWithPasswordFile(site, noPassword, null).code).toBe(0);
      delete process.env.PGPASSWORD;
      writeFileSync(process.env.PGPASSFILE, `127.0.0.1:${server.port}:site:site:secret\n`, { mode: 0o600 });
      const fromPgpass = syncWithPasswordFile(site, noPassword, null);
      expect(fromPgpass.code, fromPgpass.stderr).toBe(0);
      expect(fromPgpass.stderr).not.toMatch(/Warning/);
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('reads a row whose digest moved back by its key as the server holds it (zero-padded text)', async () => {
    await server.admin.query(`CREATE TABLE padded_topics (code text PRIMARY KEY, label text NOT NULL);
      INSERT INTO padded_topics VALUES ('001', 'Cooking'), ('002', 'Travel'), ('010', 'Music')`);
    const { dir } = temp;
    const db = `${dir}/padded.sqlite`;
    const config = `${dir}/padded.config.json`;
    expect(cli(['init', '--db', db]).code).toBe(0);
    writeFileSync(config, JSON.stringify({ sync: { from: server.url, tables: { categories: 'SELECT code AS id, label AS name FROM padded_topics' } } }));
    const sync = () => cli(['sync', '--db', db, '--config', config, '--json']);
    const names = () => {
      const d = new Database(db, { readonly: true });
      const rows = d.prepare('SELECT id, name FROM categories ORDER BY id').all();
      d.close();
      return rows;
    };
    expect(sync().code).toBe(0);
    // The second sync reads keys and the server's digests, then the one row that changed by key: '002', not 2.
    await server.admin.query("UPDATE padded_topics SET label = 'Travelling' WHERE code = '002'");
    const changed = sync();
    expect(changed.code, changed.stderr).toBe(0);
    expect(JSON.parse(changed.stdout)).toMatchObject({ changes: 1, tables: { categories: { updated: 1 } } });
    expect(names()).toEqual([{ id: 1, name: 'Cooking' }, { id: 2, name: 'Travelling' }, { id: 10, name: 'Music' }]);
  });

  it('exits 2 on a refused password or an unknown database, 75 when the server has stopped, and writes nothing', async () => {
    const before = dumpTables(site.db);
    // Trying again later would change nothing: the URL or the account needs fixing.
    const refused = site.sync(['--from', server.url.replace(':secret@', ':wrong@')]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/password authentication failed for user "site".*; nothing was written; fix the URL, sync\.passwordFile or the account on the server/);
    const unknown = site.sync(['--from', server.url.replace(/\/site$/, '/no_such_database')]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/database "no_such_database" does not exist/);
    await server.admin.query("UPDATE videos SET title = 'Not synced' WHERE id = 2");
    await server.stop();
    const stopped = site.sync();
    expect(stopped.code).toBe(75);
    expect(stopped.stderr).toMatch(/the source database \(PostgreSQL at postgres:\/\/site:\*\*\*@127\.0\.0\.1:\d+\/site\) cannot be read: .*ECONNREFUSED/);
    expect(dumpTables(site.db)).toBe(before);
  });
});
