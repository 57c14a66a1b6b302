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

describe('vidfeeds watch --sync-every', () => {
  it('syncs at start and on the interval, and builds after the syncs that changed something', async () => {
    const { dir, cleanup } = tempDir('vidfeeds-watch-sync-');
    cleanups.push(cleanup);
    const source = join(dir, 'site.db');
    const site = new Database(source);
    site.exec(`CREATE TABLE accounts (uid INTEGER PRIMARY KEY, login TEXT, full_name TEXT, joined INTEGER);
      INSERT INTO accounts VALUES (1, 'alice', 'Alice', 1238587200);`);
    const db = join(dir, 'vidfeeds.sqlite');
    expect(cli(['init', '--db', db]).code).toBe(0);
    const config = join(dir, 'vidfeeds.config.json');
    writeFileSync(
      config,
      JSON.stringify({ baseUrl: 'https://videos.example.org', sync: { from: `sqlite:${source}`, tables: { users: 'SELECT uid AS id, login AS username, full_name AS display_name, joined AS created_at, joined AS updated_at FROM accounts' } } }),
    );
    const out = join(dir, 'out');
    const child = spawn(process.execPath, [BIN, 'watch', '--db', db, '--out', out, '--config', config, '--sync-every', '1'], { cwd: dir });
    cleanups.push(() => child.kill('SIGKILL'));
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const waitFor = async (what: RegExp, from = 0) => {
      for (let waited = 0; !what.test(stderr.slice(from)); waited += 50) {
        if (waited > 60_000 || child.exitCode !== null) throw new Error(`no ${what} in:\n${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await waitFor(/sync from SQLite .*: made 1 change \(users \+1\)/);
    const foaf = join(out, 'alice', 'foaf', 'index.rdf');
    // The build at start may have run before the first sync: wait for the one after it.
    for (let waited = 0; !(existsSync(foaf) && readFileSync(foaf, 'utf8').includes('Alice')); waited += 50) {
      if (waited > 60_000) throw new Error(`no build of the synced user in:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await waitFor(/made 0 changes/, stderr.length);
    const builds = (stderr.match(/ build \(/g) ?? []).length;

    site.exec(`UPDATE accounts SET full_name = 'Alice Liddell' WHERE uid = 1`);
    site.close();
    const mark = stderr.length;
    await waitFor(/made 1 change \(users ~1\)/, mark);
    await waitFor(/incremental build \(1 changes since the last build/, mark);
    expect(readFileSync(foaf, 'utf8')).toContain('Alice Liddell');
    // The syncs after it change nothing, and nothing is built for them.
    const quiet = stderr.length;
    await waitFor(/made 0 changes[\s\S]*made 0 changes/, quiet);
    expect((stderr.match(/ build \(/g) ?? []).length).toBe(builds + 1);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  });
});
