import { describe, expect, it } from 'vitest';
import { sqliteSyncSite, type SyncJson } from './sync-scenario.js';
import { validateReport } from '../helpers/report-schema.js';

/**
 * A site's known bad rows come back on every sync: they are summarised, a line per kind with the
 * first few named, unless `--log-level debug` asks for each; `--json` still lists each one.
 */

describe('vidfeeds sync: skipped rows', () => {
  it('are summarised per kind, the first few named; --log-level debug names each; --json lists each', () => {
    // 40 friendships with accounts that are gone, and 2 of an account with itself (named first: key order).
    const pals = Array.from({ length: 40 }, (_, i) => `(1, ${101 + i})`).join(', ');
    const site = sqliteSyncSite('vidfeeds-sync-skips-', `CREATE TABLE accounts (uid INTEGER PRIMARY KEY, login TEXT, joined INTEGER);
      CREATE TABLE pals (a INTEGER, b INTEGER);
      INSERT INTO accounts VALUES (1, 'alice', 1238587200), (2, 'bob', 1238587200);
      INSERT INTO pals VALUES ${pals}, (1, 1), (2, 2), (1, 2);`, {
      users: 'SELECT uid AS id, login AS username, joined AS created_at, joined AS updated_at FROM accounts',
      friendships: 'SELECT a AS user_id, b AS friend_id, 1238587200 AS created_at FROM pals',
    });
    const sync = (extra: string[]) => site.sync(['--dry-run', ...extra]);
    const summary = sync([]);
    expect(summary.code, summary.stderr).toBe(0);
    const lines = summary.stderr.trim().split('\n');
    expect(lines.filter((line) => line.includes('skipped'))).toEqual([
      expect.stringMatching(/^vidfeeds: sync: skipped 2 times, e\.g\. friendships user_id=1, friend_id=1: .*CHECK constraint failed.*; friendships user_id=2, friend_id=2: .*$/),
      expect.stringMatching(/^vidfeeds: sync: skipped 40 times, e\.g\. friendships user_id=1, friend_id=101: friend_id 101: no users row .*; friendships user_id=1, friend_id=102: .*; friendships user_id=1, friend_id=103: .*; and 37 more like them \(--log-level debug names each\)$/),
      expect.stringMatching(/would make 3 changes \(users \+2, friendships \+1\), 42 rows skipped/),
    ]);
    const each = sync(['--log-level', 'debug']);
    expect(each.stderr.match(/sync: skipped friendships/g)).toHaveLength(42);
    const json = JSON.parse(sync(['--json']).stdout) as SyncJson;
    expect(validateReport(json)).toEqual([]);
    expect(json.skipped).toHaveLength(42);
  });
});
