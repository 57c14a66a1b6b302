import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { sqliteSyncSite, type SyncJson } from './sync-scenario.js';

/**
 * One rule for a user whose name cannot be a path: sync does not store them, so that their videos
 * and their friends' links to them are not published either, each named as skipped.
 */

describe('vidfeeds sync: a user whose name cannot be a path', () => {
  it('is skipped with the reason, and their videos and the links to them follow', () => {
    const site = sqliteSyncSite('vidfeeds-sync-unpublishable-', `CREATE TABLE accounts (uid INTEGER PRIMARY KEY, login TEXT, joined INTEGER);
      CREATE TABLE media (mid INTEGER PRIMARY KEY, owner INTEGER, code TEXT, added INTEGER);
      CREATE TABLE pals (a INTEGER, b INTEGER);
      INSERT INTO accounts VALUES (1, 'alice', 1238587200), (2, 'bob ', 1238587200), (3, 'c/d', 1238587200);
      INSERT INTO media VALUES (10, 1, 'v10', 1238587200), (20, 2, 'v20', 1238587200);
      INSERT INTO pals VALUES (1, 2), (2, 1);`, {
      users: 'SELECT uid AS id, login AS username, joined AS created_at, joined AS updated_at FROM accounts',
      friendships: 'SELECT a AS user_id, b AS friend_id, 1238587200 AS created_at FROM pals',
      videos: "SELECT mid AS id, code AS public_id, owner AS user_id, code AS title, 'http://x.example/' || code AS file_url, 'http://x.example/t.jpg' AS thumbnail_url, added AS created_at, added AS updated_at FROM media",
    });
    const result = site.sync(['--json']);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as SyncJson;
    expect(report.skipped.map((s) => `${s.table} ${s.row}: ${s.reason}`)).toEqual([
      'users id=2: username "bob " cannot be a path (it starts or ends with white space): the user is not published, nor their videos or links to them',
      'users id=3: username "c/d" cannot be a path (it contains "/"): the user is not published, nor their videos or links to them',
      'friendships user_id=1, friend_id=2: friend_id 2: no users row has that id (not in the source, or skipped)',
      'friendships user_id=2, friend_id=1: user_id 2: no users row has that id (not in the source, or skipped)',
      'videos id=20: user_id 2: no users row has that id (not in the source, or skipped)',
    ]);
    const build = cli(['build', '--db', site.db, '--config', site.config, '--out', join(site.dir, 'out')]);
    expect(build.code, build.stderr).toBe(0);
    expect(readFileSync(join(site.dir, 'out', 'alice', 'foaf', 'index.rdf'), 'utf8')).not.toMatch(/bob/);
  });
});
