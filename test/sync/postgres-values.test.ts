import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresMissing, startPostgres, type RunningPostgres } from '../helpers/postgres.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { syncSite } from './sync-scenario.js';

/**
 * Values of the types a PostgreSQL site's own schema holds, as its server's settings spell them:
 * the sync reads what the source meant whatever the database or the sync's role was set to.
 */

const missing = postgresMissing();

const TABLES = {
  users: 'SELECT id, handle AS username, joined AS created_at, edited AS updated_at FROM accounts',
  videos: [
    "SELECT id, slug AS public_id, account_id AS user_id, slug AS title, 'https://m.example.org/' || slug || '.mp4' AS file_url,",
    "       'https://m.example.org/' || slug || '.jpg' AS thumbnail_url, 120 AS thumbnail_width, 90 AS thumbnail_height,",
    "       'public' AS visibility, uploaded AS created_at, published AS updated_at FROM clips",
  ].join('\n'),
};

describe.skipIf(missing !== null)('vidfeeds sync of PostgreSQL values as the server spells them', () => {
  let server: RunningPostgres;

  beforeAll(async () => {
    server = await startPostgres();
    await server.admin.query(
      'CREATE TABLE accounts (id int8 PRIMARY KEY, handle text NOT NULL, joined timestamptz NOT NULL, edited date NOT NULL); ' +
        'CREATE TABLE clips (id int8 PRIMARY KEY, slug text NOT NULL, account_id int8 NOT NULL, uploaded timestamp NOT NULL, published timestamptz NOT NULL); ' +
        "INSERT INTO accounts VALUES (1, 'ana', '2015-03-01 10:00:00+02', '2016-01-02'); " +
        "INSERT INTO clips VALUES (1, 'trams', 1, '2016-01-01 08:00:00.75', '2016-01-01 09:30:00.25-05:30')",
    );
  });

  afterAll(async () => {
    await server?.stop();
  });

  /** Syncs by `tables` and finds the fixture's times as the server holds them (to the second), with no row skipped. */
  function expectFixtureTimes(tables: Record<string, string>): void {
    const site = syncSite(useTempDir('vidfeeds-sync-pg-values-'), JSON.stringify({ sync: { tables } }), server.url);
    const { result, report } = site.syncJson();
    expect(result.code, result.stderr).toBe(0);
    expect(report.skipped).toEqual([]);
    expect(report.issues).toEqual([]);
    site.read((db) => {
      expect(db.prepare('SELECT created_at, updated_at FROM users').get()).toEqual({ created_at: Date.UTC(2015, 2, 1, 8) / 1000, updated_at: Date.UTC(2016, 0, 2) / 1000 });
      expect(db.prepare('SELECT created_at, updated_at FROM videos').get()).toEqual({ created_at: Date.UTC(2016, 0, 1, 8) / 1000, updated_at: Date.UTC(2016, 0, 1, 15) / 1000 });
    });
  }

  it('extract(epoch FROM ...) of a time with microseconds (numeric seconds with a fraction) is the second it falls in', () => {
    const epoch = (column: string) => `extract(epoch FROM ${column})`;
    const tables = {
      users: `SELECT id, handle AS username, ${epoch('joined')} AS created_at, ${epoch('edited')} AS updated_at FROM accounts`,
      videos: TABLES.videos.replace('uploaded AS created_at, published AS updated_at', `${epoch('uploaded')} AS created_at, ${epoch('published')}::float8 AS updated_at`),
    };
    expectFixtureTimes(tables);
  });

  it.each([
    ['Africa/Monrovia', '1971-06-01 12:00:00+00'],
    ['Pacific/Chatham', '9999-12-31 20:00:00+00'],
  ])('reads a timestamptz as the session time zone %s spells it (%s)', async (zone, time) => {
    await server.admin.query(`ALTER ROLE site SET TimeZone = '${zone}'`);
    try {
      const tables = { users: `SELECT id, handle AS username, '${time}'::timestamptz AS created_at, '${time}'::timestamptz AS updated_at FROM accounts` };
      const site = syncSite(useTempDir('vidfeeds-sync-pg-values-'), JSON.stringify({ sync: { tables } }), server.url);
      const { result, report } = site.syncJson();
      expect(result.code, result.stderr).toBe(0);
      expect(report.skipped).toEqual([]);
      site.read((db) => {
        expect(db.prepare('SELECT created_at FROM users').pluck().get()).toBe(Date.parse(time.replace(' ', 'T').replace('+00', 'Z')) / 1000);
      });
    } finally {
      await server.admin.query('ALTER ROLE site RESET TimeZone');
    }
  });

  it('reads a character(n) value without the padding PostgreSQL disregards', async () => {
    await server.admin.query(
      'CREATE TABLE members (id int PRIMARY KEY, login character(12) NOT NULL, status character(8) NOT NULL); ' +
        "INSERT INTO members VALUES (1, 'ana', 'active'), (2, 'ben', 'deleted'); GRANT SELECT ON members TO site",
    );
    const tables = { users: 'SELECT id, login AS username, status AS state, joined AS created_at, joined AS updated_at FROM members JOIN (SELECT joined FROM accounts) a ON true' };
    const site = syncSite(useTempDir('vidfeeds-sync-pg-values-'), JSON.stringify({ sync: { tables } }), server.url);
    const { result, report } = site.syncJson();
    expect(result.code, result.stderr).toBe(0);
    expect(report.skipped).toEqual([]);
    site.read((db) => {
      expect(db.prepare('SELECT username, state FROM users ORDER BY id').all()).toEqual([
        { username: 'ana', state: 'active' },
        { username: 'ben', state: 'deleted' },
      ]);
    });
  });

  it('a date of the year 99 is no time, not 1999', () => {
    const tables = { users: "SELECT id, handle AS username, joined AS created_at, '0099-06-01'::date AS updated_at FROM accounts" };
    const site = syncSite(useTempDir('vidfeeds-sync-pg-values-'), JSON.stringify({ sync: { tables } }), server.url);
    const { result, report } = site.syncJson();
    expect(result.code, result.stderr).toBe(0);
    expect(report.issues).toEqual([expect.objectContaining({ table: 'users', row: 'id=1', column: 'updated_at', found: 'text "0099-06-01"', outcome: 'stored as created_at (the field is left out)' })]);
  });

  it('reads floating-point values exactly whatever extra_float_digits the site set', async () => {
    // Negative, the server rounds what it sends: 1425196800 as 1e+09, in 2001.
    await server.admin.query('ALTER ROLE site SET extra_float_digits = -15');
    try {
      const tables = {
        users: 'SELECT id, handle AS username, extract(epoch FROM joined)::float8 AS created_at, edited AS updated_at FROM accounts',
        categories: "SELECT 1 AS id, 'Travel' AS name",
        attention_concepts: 'SELECT id AS user_id, 1 AS category_id, 0.123456789::float8 AS value FROM accounts',
      };
      const site = syncSite(useTempDir('vidfeeds-sync-pg-values-'), JSON.stringify({ sync: { tables } }), server.url);
      const { result, report } = site.syncJson();
      expect(result.code, result.stderr).toBe(0);
      expect(report.issues).toEqual([]);
      site.read((db) => {
        expect(db.prepare('SELECT created_at FROM users').pluck().get()).toBe(Date.UTC(2015, 2, 1, 8) / 1000);
        expect(db.prepare('SELECT value FROM attention_concepts').pluck().get()).toBe(0.123456789);
      });
    } finally {
      await server.admin.query('ALTER ROLE site RESET extra_float_digits');
    }
  });

  it.each(['SQL, DMY', 'German', 'Postgres, MDY'])('reads dates and times whatever DateStyle the site set (%s)', async (style) => {
    // As a site's DBA sets it for its own code: on the role the sync logs in as (or the database).
    await server.admin.query(`ALTER ROLE site SET DateStyle = '${style}'`);
    try {
      expectFixtureTimes(TABLES);
    } finally {
      await server.admin.query('ALTER ROLE site RESET DateStyle');
    }
  });
});
