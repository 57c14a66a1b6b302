import Database from 'better-sqlite3';
import { mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, cliAsync } from '../helpers/cli.js';
import { until } from '../helpers/until.js';
import { tempDir } from '../helpers/temp-dir.js';
import { MAX_ROWS_OF_ONE_KEY } from '../../src/sync/key-groups.js';
import { dumpTables, sqliteSyncSite } from './sync-scenario.js';

/**
 * The traps of pointing vidfeeds at another application's database, each closed with a message
 * that says what is wrong and points to `vidfeeds sync`; and the sync itself from an SQLite file.
 */

function accountsAndMedia(file: string): void {
  const db = new Database(file);
  db.exec(`
    CREATE TABLE accounts (uid INTEGER PRIMARY KEY, login TEXT, full_name TEXT, joined TEXT, status TEXT);
    CREATE TABLE media (mid INTEGER PRIMARY KEY, owner INTEGER, code TEXT, name TEXT, src TEXT, thumb TEXT, added TEXT);
    INSERT INTO accounts VALUES (1, 'alice', 'Alice', '2009-04-01 12:00:00', 'ok'), (2, 'bob', 'Bob', '2009-04-02 12:00:00', 'ok');
    INSERT INTO media VALUES (10, 1, 'abc', 'A video', 'http://x.example/a.flv', 'http://x.example/a.jpg', '2009-05-01 00:00:00');
  `);
  db.close();
}

const MAPPING = {
  users: "SELECT uid AS id, login AS username, full_name AS display_name, CASE status WHEN 'ok' THEN 'active' ELSE 'suspended' END AS state, joined AS created_at, joined AS updated_at FROM accounts",
  videos: 'SELECT mid AS id, code AS public_id, owner AS user_id, name AS title, src AS file_url, thumb AS thumbnail_url, added AS created_at, added AS updated_at FROM media',
};

describe('another application\'s database', () => {
  it('build on it says that it is another application\'s database and points to sync', () => {
    const { dir } = tempDir('vidfeeds-foreign-');
    const site = join(dir, 'site.db');
    accountsAndMedia(site);
    const result = cli(['build', '--db', site, '--out', join(dir, 'out')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/is another application's database \(it has tables accounts, media and no vidfeeds schema\)/);
    expect(result.stderr).toMatch(/vidfeeds sync --db vidfeeds\.sqlite --from sqlite:/);
    expect(result.stderr).not.toMatch(/upgrade it with/);
  });

  it('a build that publishes nobody says so, on stderr and in --json', () => {
    const { dir } = tempDir('vidfeeds-foreign-');
    const site = join(dir, 'site.db');
    accountsAndMedia(site);
    expect(cli(['init', '--db', site, '--force']).code).toBe(0);
    const result = cli(['build', '--db', site, '--out', join(dir, 'out'), '--json']);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/0 users published: .* holds no users\. .*`vidfeeds sync`/);
    expect(JSON.parse(result.stdout)).toMatchObject({ command: 'build', ok: true, usersPublished: 0 });
  });

  it('views in place of vidfeeds\'s tables make every build full, saying why', () => {
    const { dir } = tempDir('vidfeeds-foreign-');
    const site = join(dir, 'site.db');
    accountsAndMedia(site);
    expect(cli(['init', '--db', site, '--force']).code).toBe(0);
    const db = new Database(site);
    db.exec(`
      DROP TABLE videos;
      CREATE VIEW videos AS SELECT mid AS id, code AS public_id, owner AS user_id, name AS title, '' AS description, NULL AS duration_seconds,
        src AS file_url, NULL AS file_size, 'video/x-flv' AS file_type, NULL AS width, NULL AS height, thumb AS thumbnail_url, 120 AS thumbnail_width,
        90 AS thumbnail_height, NULL AS captions_url, NULL AS category_id, 'public' AS visibility, unixepoch(added) AS created_at, unixepoch(added) AS updated_at FROM media;
      INSERT INTO users (id, username, created_at, updated_at) VALUES (1, 'alice', 1238587200, 1238587200);
    `);
    db.close();
    const out = join(dir, 'out');
    for (let i = 0; i < 2; i++) {
      const result = cli(['build', '--db', site, '--out', out]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toMatch(/full build \(videos is a view in place of vidfeeds's tables: changes to their rows reach no change log, so every build renders everything/);
    }
  });
});

describe('vidfeeds sync from an SQLite file', () => {
  function site() {
    const { dir } = tempDir('vidfeeds-sync-sqlite-');
    const source = join(dir, 'site.db');
    accountsAndMedia(source);
    const db = join(dir, 'vidfeeds.sqlite');
    expect(cli(['init', '--db', db]).code).toBe(0);
    const config = join(dir, 'vidfeeds.config.json');
    const writeConfig = (tables: Record<string, string | { query: string; watermark: string }>) => writeFileSync(config, JSON.stringify({ sync: { from: `sqlite:${source}`, tables } }));
    writeConfig(MAPPING);
    const sync = (...extra: string[]) => cli(['sync', '--db', db, '--config', config, ...extra]);
    const change = (sql: string) => {
      const s = new Database(source);
      s.exec(sql);
      s.close();
    };
    return { dir, source, db, config, writeConfig, sync, change };
  }

  it('syncs, then a dry run reports without writing, and a second sync changes nothing', () => {
    const s = site();
    const first = s.sync('--json');
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ command: 'sync', ok: true, changes: 3, logged: 3, tables: { users: { inserted: 2 }, videos: { inserted: 1 } } });
    s.change("UPDATE accounts SET full_name = 'Alice L.' WHERE uid = 1; DELETE FROM accounts WHERE uid = 2");
    const before = dumpTables(s.db);
    const dry = s.sync('--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.stderr).toMatch(/\(dry run, nothing written\): would make 2 changes \(users ~1 -1\)/);
    expect(dumpTables(s.db)).toBe(before);
    expect(s.sync().stderr).toMatch(/made 2 changes \(users ~1 -1\)/);
    const again = s.sync('--json');
    expect(JSON.parse(again.stdout)).toMatchObject({ changes: 0, logged: 0 });
  });

  it('swaps two usernames, keeps the same one of two rows with one key whatever their order, and refuses keys out of numeric order', () => {
    const s = site();
    expect(s.sync().code).toBe(0);
    s.change("UPDATE accounts SET login = 'tmp' WHERE uid = 1; UPDATE accounts SET login = 'alice' WHERE uid = 2; UPDATE accounts SET login = 'bob' WHERE uid = 1");
    const swapped = s.sync('--json');
    expect(swapped.code, swapped.stderr).toBe(0);
    expect(JSON.parse(swapped.stdout)).toMatchObject({ changes: 2 });
    const db = new Database(s.db, { readonly: true });
    expect(db.prepare('SELECT id, username FROM users ORDER BY id').all()).toEqual([
      { id: 1, username: 'bob' },
      { id: 2, username: 'alice' },
    ]);
    db.close();

    // Whichever order the source returns two rows of one key in, the same one is kept: 'alice'
    // comes before 'bobby', so the sync changes nothing.
    const bobby = "SELECT 2 AS id, 'bobby' AS username, 'B' AS display_name, 'active' AS state, '2009-01-01' AS created_at, '2009-01-01' AS updated_at";
    for (const users of [`${MAPPING.users} UNION ALL ${bobby}`, `${bobby} UNION ALL ${MAPPING.users}`]) {
      s.writeConfig({ ...MAPPING, users });
      const duplicate = s.sync('--json');
      expect(duplicate.code).toBe(0);
      expect(JSON.parse(duplicate.stdout)).toMatchObject({
        changes: 0,
        skipped: [{ table: 'users', row: 'id=2', reason: 'another row of the query has the same key (id); the one kept comes first by its values' }],
      });
      expect(s.sync('--json').stdout).toMatch(/"changes": ?0/);
    }

    // A key that is not the table's (one value for every row) stops the sync before it holds them all.
    s.writeConfig({
      ...MAPPING,
      users: `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i <= ${MAX_ROWS_OF_ONE_KEY}) SELECT 3 AS id, 'u' || i AS username, 'U' AS display_name, 'active' AS state, '2009-01-01' AS created_at, '2009-01-01' AS updated_at FROM n UNION ALL ${MAPPING.users}`,
    });
    const unchanged = dumpTables(s.db);
    const oneKey = s.sync();
    expect(oneKey.code).toBe(2);
    expect(oneKey.stderr).toContain(`sync.tables.users: the source returns more than ${MAX_ROWS_OF_ONE_KEY} rows with the key (id) 3: the key must name one row`);
    expect(dumpTables(s.db)).toBe(unchanged);

    s.writeConfig({ ...MAPPING, users: MAPPING.users.replace('uid AS id', "CASE uid WHEN 1 THEN '9' ELSE '10' END AS id") });
    const before = dumpTables(s.db);
    const unordered = s.sync();
    expect(unordered.code).toBe(2);
    expect(unordered.stderr).toMatch(/sync\.tables\.users: the source returns the key \(id\) out of numeric order \(id=9 after 10\): return it as an integer/);
    expect(dumpTables(s.db)).toBe(before);
  });

  it('reads changed and missing rows back by the key as the source holds it (zero-padded text)', () => {
    const s = site();
    const users = {
      query: "SELECT printf('%03d', uid) AS id, login AS username, full_name AS display_name, 'active' AS state, joined AS created_at, joined AS updated_at, joined AS modified FROM accounts",
      watermark: 'modified',
    };
    s.writeConfig({ users });
    expect(s.sync().code).toBe(0);
    const names = () => {
      const db = new Database(s.db, { readonly: true });
      const rows = db.prepare('SELECT id, display_name FROM users ORDER BY id').all();
      db.close();
      return rows;
    };
    // A full sync (the whole query merged with the stored rows) finds the changed row.
    s.change("UPDATE accounts SET full_name = 'Alice L.' WHERE uid = 1");
    const full = s.sync('--json');
    expect(full.code, full.stderr).toBe(0);
    expect(JSON.parse(full.stdout)).toMatchObject({ changes: 1, tables: { users: { updated: 1 } } });
    expect(names()).toEqual([{ id: 1, display_name: 'Alice L.' }, { id: 2, display_name: 'Bob' }]);
    // --changed-only reads a key vidfeeds lacks by key, though its watermark is behind the last sync's.
    s.change("INSERT INTO accounts VALUES (3, 'carol', 'Carol', '2001-01-01 00:00:00', 'ok')");
    const changed = s.sync('--changed-only', '--json');
    expect(changed.code, changed.stderr).toBe(0);
    expect(JSON.parse(changed.stdout)).toMatchObject({ changes: 1, tables: { users: { inserted: 1 } } });
    expect(names()).toEqual([{ id: 1, display_name: 'Alice L.' }, { id: 2, display_name: 'Bob' }, { id: 3, display_name: 'Carol' }]);
  });

  it('stops with exit 2, naming the query, when a query SQLite accepted fails on a row it reads, and writes nothing', () => {
    const { db, sync } = sqliteSyncSite(
      'vidfeeds-foreign-',
      `CREATE TABLE accounts (uid INTEGER PRIMARY KEY, profile TEXT); INSERT INTO accounts VALUES (1, '{"login":"alice"}'), (2, 'not JSON');`,
      { users: "SELECT uid AS id, json_extract(profile, '$.login') AS username, 0 AS created_at, 0 AS updated_at FROM accounts" },
    );
    const before = dumpTables(db);
    const result = sync(['--json']);
    expect(result.code, result.stderr).toBe(2);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: false, exitCode: 2, error: expect.stringMatching(/^malformed JSON; the query: SELECT uid AS id, json_extract/) });
    expect(dumpTables(db)).toBe(before);
  });

  it('refuses a table vidfeeds does not have, a missing source and another sync holding the database, whose --wait hears Ctrl-C', async () => {
    const s = site();
    writeFileSync(s.config, JSON.stringify({ sync: { from: `sqlite:${s.source}`, tables: { members: 'SELECT 1' } } }));
    const unknown = s.sync();
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/sync\.tables.*members/);
    s.writeConfig(MAPPING);
    const missing = s.sync('--from', `sqlite:${join(s.dir, 'nothing.db')}`);
    expect(missing.code).toBe(75);
    expect(missing.stderr).toMatch(/the source database .*nothing\.db does not exist/);
    const none = cli(['sync', '--db', s.db, '--config', join(s.dir, 'absent.json')]);
    expect(none.code).toBe(2);
    writeFileSync(join(s.dir, 'empty.json'), '{}');
    const noSource = cli(['sync', '--db', s.db, '--config', join(s.dir, 'empty.json')]);
    expect(noSource.code).toBe(2);
    expect(noSource.stderr).toMatch(/no source to sync from: give --from URL/);

    // This test's own process stands for a sync that holds the database.
    mkdirSync(join(s.dir, '.vidfeeds'), { recursive: true });
    const holder = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), command: 'vidfeeds sync', token: 'held' };
    writeFileSync(join(s.dir, '.vidfeeds', 'vidfeeds.sqlite.sync.lock'), JSON.stringify(holder));
    const locked = s.sync('--json');
    expect(locked.code).toBe(75);
    expect(JSON.parse(locked.stdout)).toMatchObject({ command: 'sync', ok: false, exitCode: 75 });
    expect(locked.stderr).toMatch(new RegExp(`is being synced by another vidfeeds: "vidfeeds sync", pid ${process.pid} .*--wait SECONDS`));

    // With --wait it waits, and hears Ctrl-C at once while it does: exit 130, nothing written.
    const waiter = cliAsync(['sync', '--db', s.db, '--config', s.config, '--wait', '60']);
    let stderr = '';
    waiter.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((done) => waiter.on('close', (code) => done(code)));
    expect(await until(() => stderr.includes('waiting up to 60 s for the lock: database'), 30_000), stderr).toBe(true);
    waiter.kill('SIGINT');
    // Bounded only so that a wait deaf to the signal fails here, not at the suite's timeout.
    const code = await Promise.race([exited, new Promise<'still waiting'>((done) => setTimeout(() => done('still waiting'), 30_000))]);
    if (code === 'still waiting') waiter.kill('SIGKILL');
    expect(code, stderr).toBe(130);
    expect(stderr).toContain("stopped by SIGINT: nothing was written, vidfeeds's database is as it was");
  });
});
