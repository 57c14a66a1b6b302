import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * `vidfeeds watch --sync-every SECONDS` as an operator runs it: a sync at start and on the
 * interval, a build after each sync that changed something and none after one that did not.
 * Deadlines are generous; nothing asserts how long anything took.
 */

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!();
});

/** A site database of one account, a vidfeeds database, and watch syncing from one to the other every second. */
function watchSyncing(users: string | { query: string; watermark: string }, flags: string[] = []) {
  const { dir, cleanup } = tempDir('vidfeeds-watch-sync-');
  cleanups.push(cleanup);
  const source = join(dir, 'site.db');
  const site = new Database(source);
  site.exec(`CREATE TABLE accounts (uid INTEGER PRIMARY KEY, login TEXT, full_name TEXT, joined INTEGER, modified INTEGER);
    INSERT INTO accounts VALUES (1, 'alice', 'Alice', 1238587200, 1);`);
  const db = join(dir, 'vidfeeds.sqlite');
  expect(cli(['init', '--db', db]).code).toBe(0);
  const config = join(dir, 'vidfeeds.config.json');
  writeFileSync(config, JSON.stringify({ baseUrl: 'https://videos.example.org', sync: { from: `sqlite:${source}`, tables: { users } } }));
  const out = join(dir, 'out');
  const child = spawn(process.execPath, [BIN, 'watch', '--db', db, '--out', out, '--config', config, '--sync-every', '1', ...flags], { cwd: dir });
  cleanups.push(() => child.kill('SIGKILL'));
  const watch = { site, out, stderr: '', exited: new Promise<number | null>((r) => child.on('exit', (code) => r(code))), stop: () => child.kill('SIGINT') };
  child.stderr.on('data', (chunk: Buffer) => (watch.stderr += chunk.toString()));
  const waitFor = async (what: RegExp, from = 0) => {
    for (let waited = 0; !what.test(watch.stderr.slice(from)); waited += 50) {
      if (waited > 60_000 || child.exitCode !== null) throw new Error(`no ${what} in:\n${watch.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const untilFile = async (file: string, text: string) => {
    for (let waited = 0; !(existsSync(file) && readFileSync(file, 'utf8').includes(text)); waited += 50) {
      if (waited > 60_000) throw new Error(`no build with ${text} in:\n${watch.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return Object.assign(watch, { waitFor, untilFile });
}

const USERS = 'SELECT uid AS id, login AS username, full_name AS display_name, joined AS created_at, joined AS updated_at FROM accounts';

describe('vidfeeds watch --sync-every', () => {
  it('syncs at start and on the interval, and builds after the syncs that changed something', async () => {
    const watch = watchSyncing(USERS);
    await watch.waitFor(/sync from SQLite .*: made 1 change \(users \+1\)/);
    const foaf = join(watch.out, 'alice', 'foaf', 'index.rdf');
    // The build at start may have run before the first sync: wait for the one after it.
    await watch.untilFile(foaf, 'Alice');
    await watch.waitFor(/made 0 changes/, watch.stderr.length);
    const builds = (watch.stderr.match(/ build \(/g) ?? []).length;

    watch.site.exec(`UPDATE accounts SET full_name = 'Alice Liddell' WHERE uid = 1`);
    watch.site.close();
    const mark = watch.stderr.length;
    await watch.waitFor(/made 1 change \(users ~1\)/, mark);
    await watch.waitFor(/incremental build \(1 changes since the last build/, mark);
    expect(readFileSync(foaf, 'utf8')).toContain('Alice Liddell');
    // The syncs after it change nothing, and nothing is built for them.
    const quiet = watch.stderr.length;
    await watch.waitFor(/made 0 changes[\s\S]*made 0 changes/, quiet);
    expect((watch.stderr.match(/ build \(/g) ?? []).length).toBe(builds + 1);
    watch.stop();
    expect(await watch.exited).toBe(0);
  });

  it('with --sync-changed-only, reads only the changed rows of a table with a watermark', async () => {
    const watch = watchSyncing({ query: USERS.replace(' FROM', ', modified FROM'), watermark: 'modified' }, ['--sync-changed-only']);
    await watch.waitFor(/made 1 change \(users \+1\).*changed rows only in 0 of 1 tables/);
    await watch.waitFor(/made 0 changes, changed rows only in 1 of 1 tables/);
    watch.site.exec(`UPDATE accounts SET full_name = 'Alice Liddell', modified = 2 WHERE uid = 1`);
    watch.site.close();
    await watch.waitFor(/made 1 change \(users ~1\), changed rows only in 1 of 1 tables/);
    await watch.untilFile(join(watch.out, 'alice', 'foaf', 'index.rdf'), 'Alice Liddell');
    watch.stop();
    expect(await watch.exited).toBe(0);
  });

  it('summarises the rows each sync skips, one line per kind, not one per row', async () => {
    const slashed = [100, 200, 300].map((n) => `SELECT uid + ${n}, login || '/${n}', full_name, joined, joined FROM accounts`).join(' UNION ALL ');
    const watch = watchSyncing(`${USERS} UNION ALL ${slashed}`);
    await watch.waitFor(/made 1 change \(users \+1\), 3 rows skipped/);
    await watch.waitFor(/made 0 changes, 3 rows skipped/);
    expect(watch.stderr).toMatch(/sync: skipped 3 times, e\.g\. users id=101: username "alice\/100" cannot be a path/);
    expect(watch.stderr).not.toMatch(/sync: skipped users id=/);
    watch.stop();
    expect(await watch.exited).toBe(0);
  });

  it('warns of text that looks like mojibake when the column is new or its count moved, not on every sync', async () => {
    const watch = watchSyncing(USERS);
    await watch.waitFor(/made 1 change \(users \+1\)/);
    watch.site.exec(`UPDATE accounts SET full_name = 'Jo\u00c3\u00a3o' WHERE uid = 1`);
    await watch.waitFor(/made 1 change \(users ~1\)/);
    await watch.waitFor(/made 0 changes[\s\S]*made 0 changes[\s\S]*made 0 changes/, watch.stderr.lastIndexOf('made 1 change (users ~1)'));
    expect(watch.stderr.match(/users\.display_name holds text that looks like UTF-8 read as latin1 in 1 row /g)).toHaveLength(1);
    watch.site.exec(`INSERT INTO accounts VALUES (2, 'zoe', 'Zo\u00c3\u00ab', 1238587200, 1)`);
    watch.site.close();
    await watch.waitFor(/users\.display_name holds text that looks like UTF-8 read as latin1 in 2 rows /);
    watch.stop();
    expect(await watch.exited).toBe(0);
  });

  it('refuses --sync-changed-only without --sync-every, before anything runs', () => {
    const { dir, cleanup } = tempDir('vidfeeds-watch-sync-');
    cleanups.push(cleanup);
    const result = cli(['watch', '--db', join(dir, 'none.sqlite'), '--out', join(dir, 'out'), '--sync-changed-only']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--sync-changed-only goes with --sync-every/);
    expect(existsSync(join(dir, 'out'))).toBe(false);
  });
});
