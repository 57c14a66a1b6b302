import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { dumpTables, sqliteSyncSite, type SyncJson } from './sync-scenario.js';
import { databaseBytes } from './fault-scenario.js';
import { validateReport } from '../helpers/report-schema.js';

/**
 * What a sync removes: every row that leaves a table is counted in that table, the rows a foreign
 * key removed with their parent too (dry run and real, text and --json); and a sync that would
 * delete more of a table than maxRemovalShare allows stops, exit 1, writing nothing.
 */

const MAPPING = {
  users: "SELECT uid AS id, login AS username, joined AS created_at, joined AS updated_at FROM accounts",
  videos: "SELECT mid AS id, code AS public_id, owner AS user_id, code AS title, 'http://x.example/' || code AS file_url, 'http://x.example/t.jpg' AS thumbnail_url, added AS created_at, added AS updated_at FROM media",
};

/** A site of 20 accounts, the first with 5 videos, the others with one each; and vidfeeds synced to it. */
function syncedSite(config: Record<string, unknown> = {}) {
  const media = Array.from({ length: 24 }, (_, i) => `(${i + 1}, ${i < 5 ? 1 : i - 3}, 'v${i + 1}', 1238587200)`).join(', ');
  const accounts = Array.from({ length: 20 }, (_, i) => `(${i + 1}, 'user${i + 1}', 1238587200)`).join(', ');
  const { site, db, sync } = sqliteSyncSite('vidfeeds-sync-removals-', `CREATE TABLE accounts (uid INTEGER PRIMARY KEY, login TEXT, joined INTEGER);
    CREATE TABLE media (mid INTEGER PRIMARY KEY, owner INTEGER, code TEXT, added INTEGER);
    INSERT INTO accounts VALUES ${accounts}; INSERT INTO media VALUES ${media};`, MAPPING, config);
  const first = sync();
  expect(first.code, first.stderr).toBe(0);
  const json = (extra: string[] = []) => {
    const report = JSON.parse(sync(['--json', ...extra]).stdout) as SyncJson & { tables: Record<string, { cascaded?: number }> };
    expect(validateReport(report)).toEqual([]);
    return report;
  };
  return { site, db, sync, json };
}

describe('vidfeeds sync: removals', () => {
  it('counts the videos that went with their user, in the dry run and the real sync', () => {
    const { site, db, sync, json } = syncedSite();
    // The user goes; the mapping no longer selects the videos either, and the rows in vidfeeds go by the cascade.
    site.exec('DELETE FROM accounts WHERE uid = 1; DELETE FROM media WHERE owner = 1');
    const dry = sync(['--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stderr).toMatch(/would make 6 changes \(users -1, videos -5 \(5 with their parent\)\)/);
    const real = json();
    expect(real).toMatchObject({ ok: true, changes: 6, logged: 6, tables: { users: { deleted: 1 }, videos: { deleted: 5, cascaded: 5 } } });
    const vidfeeds = new Database(db, { readonly: true });
    expect(vidfeeds.prepare('SELECT count(*) FROM videos').pluck().get()).toBe(19);
    vidfeeds.close();
  });

  it('counts the videos of a user whose id changed as updated, not as deleted and inserted: the guard lets it through', () => {
    const { site, sync, json } = syncedSite({ maxRemovalShare: 0.2, removalGuardMinimum: 3 });
    // The site renumbers the owner of 5 of the 24 videos. In vidfeeds the old user's videos go with
    // them by the cascade, and come back under the new user: the same 5 rows, changed, none gone.
    site.exec('UPDATE accounts SET uid = 99 WHERE uid = 1; UPDATE media SET owner = 99 WHERE owner = 1');
    const dry = sync(['--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stderr).toMatch(/would make 7 changes \(users \+1 -1, videos ~5\) in/);
    const real = json();
    expect(real).toMatchObject({ ok: true, changes: 7, logged: 12, tables: { users: { inserted: 1, deleted: 1 }, videos: { inserted: 0, updated: 5, deleted: 0, unchanged: 19 } } });
    expect(real.tables.videos!.cascaded).toBeUndefined();
  });

  it('counts the rows a foreign key cleared: the videos of a category that went are updated', () => {
    const { site, sync } = sqliteSyncSite(
      'vidfeeds-sync-removals-',
      `CREATE TABLE accounts (uid INTEGER PRIMARY KEY, login TEXT, joined INTEGER); CREATE TABLE topics (tid INTEGER PRIMARY KEY, label TEXT);
       CREATE TABLE media (mid INTEGER PRIMARY KEY, owner INTEGER, code TEXT, topic INTEGER, added INTEGER);
       INSERT INTO accounts VALUES (1, 'user1', 1238587200); INSERT INTO topics VALUES (1, 'Travel'), (2, 'Music');
       INSERT INTO media VALUES (1, 1, 'v1', 1, 1238587200), (2, 1, 'v2', 1, 1238587200), (3, 1, 'v3', 2, 1238587200);`,
      { ...MAPPING, categories: 'SELECT tid AS id, label AS name FROM topics', videos: MAPPING.videos.replace(' FROM media', ', topic AS category_id FROM media') },
    );
    expect(sync().code).toBe(0);
    // The source keeps the videos' topic 1 (no foreign keys): they are stored without a category, which the cascade already did.
    site.exec('DELETE FROM topics WHERE tid = 1');
    const dry = sync(['--dry-run']);
    expect(dry.stderr).toMatch(/would make 3 changes \(categories -1, videos ~2\), 2 bad values replaced/);
    const real = JSON.parse(sync(['--json']).stdout) as SyncJson;
    expect(real).toMatchObject({ ok: true, changes: 3, logged: 3, tables: { categories: { deleted: 1 }, videos: { inserted: 0, updated: 2, deleted: 0, unchanged: 1 } } });
    expect(sync(['--json']).stdout).toMatch(/"changes":0,/);
  });

  it('stops a sync that would delete more of a table than maxRemovalShare allows: exit 1, nothing written; --allow-removals lets it through', () => {
    const { site, db, sync, json } = syncedSite({ maxRemovalShare: 0.2, removalGuardMinimum: 3 });
    // A mapping edit that loses a join looks like this: most videos gone from the query.
    site.exec('DELETE FROM media WHERE mid > 10');
    const before = databaseBytes(db);
    const rows = dumpTables(db);
    const stopped = sync();
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toMatch(/the sync would delete videos 14 of 24 rows \(58\.3%\): more than maxRemovalShare allows \(20% of a table, and at least 3 rows\); nothing was written; .*--allow-removals/);
    expect(databaseBytes(db)).toBe(before);
    const report = json();
    expect(report).toMatchObject({ ok: false, exitCode: 1 });
    const dry = sync(['--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stderr).toMatch(/would make 14 changes \(videos -14\).*; a real sync would stop: the sync would delete videos 14 of 24 rows/);
    expect(json(['--dry-run'])).toMatchObject({ ok: true, dryRun: true, removalGuard: expect.stringMatching(/videos 14 of 24 rows/) });
    expect(dumpTables(db)).toBe(rows);
    const allowed = sync(['--allow-removals']);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stderr).toMatch(/made 14 changes \(videos -14\)/);
    const vidfeeds = new Database(db, { readonly: true });
    expect(vidfeeds.prepare('SELECT count(*) FROM videos').pluck().get()).toBe(10);
    vidfeeds.close();
  });
});
