import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mariadbMissing, startMariadb, type RunningMariadb } from '../helpers/mariadb.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { syncSite } from './sync-scenario.js';

/**
 * Values of the types a MariaDB site's own schema holds, as the server sends them: the sync reads
 * what the source meant, whatever the type the site chose or the expression the mapping uses.
 */

const missing = mariadbMissing();

/** The mapping of a site's members and clips, with `created` giving both tables' times, and `visibility` the clips'. */
function mapping(created: (column: string) => string, visibility = "'public'"): string {
  return JSON.stringify({
    sync: {
      tables: {
        users: `SELECT id, login AS username, ${created('joined')} AS created_at, ${created('joined')} AS updated_at FROM members`,
        videos: [
          "SELECT id, clip_key AS public_id, member_id AS user_id, clip_key AS title, CONCAT('https://m.example.org/', clip_key, '.mp4') AS file_url,",
          "       CONCAT('https://m.example.org/', clip_key, '.jpg') AS thumbnail_url, 120 AS thumbnail_width, 90 AS thumbnail_height,",
          `       ${visibility} AS visibility, ${created('uploaded')} AS created_at, ${created('uploaded')} AS updated_at FROM clips`,
        ].join('\n'),
      },
    },
  });
}

describe.skipIf(missing !== null)('vidfeeds sync of MariaDB values as the server sends them', () => {
  let server: RunningMariadb;

  beforeAll(async () => {
    server = await startMariadb();
    await server.admin.query(
      'CREATE TABLE members (id INT PRIMARY KEY, login VARCHAR(20) NOT NULL, joined DATETIME(6) NOT NULL); ' +
        'CREATE TABLE clips (id INT PRIMARY KEY, clip_key CHAR(12) NOT NULL, member_id INT NOT NULL, uploaded DATETIME(6) NOT NULL); ' +
        "INSERT INTO members VALUES (1, 'alice', '2015-03-01 10:00:00.999999'), (2, 'bob', '2015-03-02 11:00:00.000000'); " +
        "INSERT INTO clips VALUES (1, 'abc123', 1, '2016-01-01 08:00:00.5'), (2, 'def456', 2, '2016-01-02 08:00:00'); " +
        // A PHP site's flag as text.
        "ALTER TABLE clips ADD COLUMN is_private VARCHAR(5) NOT NULL DEFAULT 'N'; UPDATE clips SET is_private = 'Y' WHERE id = 1; " +
        'CREATE TABLE profiles (id INT PRIMARY KEY, login VARCHAR(20) NOT NULL, realname VARCHAR(50) NOT NULL) CHARACTER SET utf8mb4; ' +
        "INSERT INTO profiles VALUES (1, 'zoe', _utf8mb4 X'5A6FC3AB20F09F9880' COLLATE utf8mb4_general_ci)",
    );
  });

  afterAll(async () => {
    await server?.stop();
  });

  function syncedTimes(config: string): unknown {
    const site = syncSite(useTempDir('vidfeeds-sync-mariadb-values-'), config, server.url);
    const { result, report } = site.syncJson();
    expect(result.code, result.stderr).toBe(0);
    expect(report.skipped).toEqual([]);
    expect(report.issues).toEqual([]);
    return site.read((db) => {
      return [
        db.prepare('SELECT id, created_at, updated_at FROM users ORDER BY id').all(),
        db.prepare('SELECT id, created_at, updated_at FROM videos ORDER BY id').all(),
      ];
    });
  }

  it('a DATETIME(6) as UNIX_TIMESTAMP() (seconds with a fraction) is the second it falls in, as the DATETIME itself is', () => {
    const expected = [
      [
        { id: 1, created_at: Date.UTC(2015, 2, 1, 10) / 1000, updated_at: Date.UTC(2015, 2, 1, 10) / 1000 },
        { id: 2, created_at: Date.UTC(2015, 2, 2, 11) / 1000, updated_at: Date.UTC(2015, 2, 2, 11) / 1000 },
      ],
      [
        { id: 1, created_at: Date.UTC(2016, 0, 1, 8) / 1000, updated_at: Date.UTC(2016, 0, 1, 8) / 1000 },
        { id: 2, created_at: Date.UTC(2016, 0, 2, 8) / 1000, updated_at: Date.UTC(2016, 0, 2, 8) / 1000 },
      ],
    ];
    expect(syncedTimes(mapping((column) => column))).toEqual(expected);
    expect(syncedTimes(mapping((column) => `UNIX_TIMESTAMP(${column})`))).toEqual(expected);
    // A PHP site's microtime(true), kept in a DOUBLE.
    expect(syncedTimes(mapping((column) => `CAST(UNIX_TIMESTAMP(${column}) AS DOUBLE)`))).toEqual(expected);
  });

  it("reads text as UTF-8 when the server's init_connect sets another character set for every client (SET NAMES utf8)", async () => {
    // The my.cnf line old guides gave PHP sites; it runs for every account without SUPER, the sync's included.
    await server.admin.query("SET GLOBAL init_connect = 'SET NAMES utf8mb3'");
    try {
      const tables = { users: 'SELECT id, login AS username, realname AS display_name, 1238587200 AS created_at, 1238587200 AS updated_at FROM profiles' };
      const site = syncSite(useTempDir('vidfeeds-sync-mariadb-values-'), JSON.stringify({ sync: { tables } }), server.url);
      const { result, report } = site.syncJson();
      expect(result.code, result.stderr).toBe(0);
      expect(report.issues).toEqual([]);
      site.read((db) => {
        expect(db.prepare('SELECT display_name FROM users').pluck().get()).toBe('Zo\u00eb \u{1f600}');
      });
    } finally {
      await server.admin.query("SET GLOBAL init_connect = ''");
    }
  });

  it("reads a CHAR column without padding when the server's sql_mode pads it (PAD_CHAR_TO_FULL_LENGTH)", async () => {
    const [[{ mode }]] = (await server.admin.query('SELECT @@GLOBAL.sql_mode AS mode')) as unknown as [[{ mode: string }]];
    // First of the modes: taking it out must leave the others as they were, with no empty entry.
    await server.admin.query(`SET GLOBAL sql_mode = 'PAD_CHAR_TO_FULL_LENGTH,${mode}'`);
    try {
      const site = syncSite(useTempDir('vidfeeds-sync-mariadb-values-'), mapping((column) => column), server.url);
      const { result, report } = site.syncJson();
      expect(result.code, result.stderr).toBe(0);
      expect(report.skipped).toEqual([]);
      site.read((db) => {
        // CHAR(12): the key, and the URLs the mapping makes of it with CONCAT.
        expect(db.prepare('SELECT public_id, file_url FROM videos ORDER BY id').all()).toEqual([
          { public_id: 'abc123', file_url: 'https://m.example.org/abc123.mp4' },
          { public_id: 'def456', file_url: 'https://m.example.org/def456.mp4' },
        ]);
      });
    } finally {
      await server.admin.query(`SET GLOBAL sql_mode = '${mode}'`);
    }
  });

  it("names the warnings the server raised for a table's query, such as text a condition read as a number, and goes on", () => {
    const site = syncSite(useTempDir('vidfeeds-sync-mariadb-values-'), mapping((column) => column, "IF(is_private, 'private', 'public')"), server.url);
    for (const run of [1, 2]) {
      // The second sync changes nothing, and reads the query again: the server warns again.
      const { result, report } = site.syncJson();
      expect(result.code, result.stderr).toBe(0);
      expect(report.changes).toBe(run === 1 ? 4 : 0);
      expect(report.serverWarnings).toEqual([
        {
          table: 'videos',
          count: 2,
          messages: [
            { code: 1292, message: "Truncated incorrect DOUBLE value: 'Y'" },
            { code: 1292, message: "Truncated incorrect DOUBLE value: 'N'" },
          ],
        },
      ]);
      expect(result.stderr).toMatch(/the server sent 2 warnings for the query of videos: Truncated incorrect DOUBLE value: 'Y' \(1292\), Truncated incorrect DOUBLE value: 'N' \(1292\)/);
    }
    // What the warnings are about: the text 'Y' read as 0, so the private clip came out public.
    site.read((db) => {
      expect(db.prepare('SELECT visibility FROM videos ORDER BY id').pluck().all()).toEqual(['public', 'public']);
    });
    expect(site.sync(['--quiet']).stderr).toMatch(/for the query of videos/);
  });

  it('names no warnings for a query the server reads without any', () => {
    const site = syncSite(useTempDir('vidfeeds-sync-mariadb-values-'), mapping((column) => column, "IF(is_private = 'Y', 'private', 'public')"), server.url);
    const { result, report } = site.syncJson();
    expect(result.code, result.stderr).toBe(0);
    expect(report.serverWarnings).toEqual([]);
    expect(result.stderr).not.toMatch(/warnings? for the query/);
    site.read((db) => {
      expect(db.prepare('SELECT visibility FROM videos ORDER BY id').pluck().all()).toEqual(['private', 'public']);
    });
  });
});
