import Database from 'better-sqlite3';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SYNC_ORDER } from '../../src/sync/table-plan.js';
import { BIN } from '../helpers/cli.js';
import { createDemoDb } from '../helpers/site-fixture.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { spawnSync } from 'node:child_process';

/**
 * `init --write-config --sync-example`: the example mapping is commented, valid, and runs as
 * written against a source whose tables carry its placeholder names (site_<table>, vidfeeds's
 * column names), so an operator only has to rename.
 */

function run(args: string[], cwd: string, env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', env: { ...process.env, FORCE_COLOR: '0', ...env } });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A source holding the demo's rows under the example's placeholder names. */
function placeholderSource(file: string): Record<string, number> {
  const demo = createDemoDb({ users: 12, seed: 3 });
  const source = new Database(file);
  source.exec(`ATTACH '${demo.file.replaceAll("'", "''")}' AS demo`);
  const counts: Record<string, number> = {};
  for (const table of SYNC_ORDER) {
    source.exec(`CREATE TABLE site_${table} AS SELECT * FROM demo."${table}"`);
    counts[table] = (source.prepare(`SELECT count(*) AS n FROM site_${table}`).get() as { n: number }).n;
  }
  source.exec('DETACH demo');
  source.close();
  demo.cleanup();
  return counts;
}

describe('init --write-config --sync-example', () => {
  it('writes a commented mapping of every table that syncs as written from tables of its placeholder names', () => {
    const dir = useTempDir('vidfeeds-sync-example-');
    const made = run(['init', '--db', 'site.sqlite', '--write-config', '--sync-example', '--base-url', 'https://videos.example.org'], dir);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stderr).toMatch(/edit sync\.tables in .*vidfeeds\.config\.json/);
    const configFile = join(dir, 'vidfeeds.config.json');
    const config = JSON.parse(readFileSync(configFile, 'utf8')) as { sync: { fromEnv: string; tables: Record<string, string[]> } };
    expect(config.sync.fromEnv).toBe('VIDFEEDS_SYNC_FROM');
    expect(Object.keys(config.sync.tables)).toEqual([...SYNC_ORDER]);
    for (const lines of Object.values(config.sync.tables)) {
      expect(lines[0]).toMatch(/^-- /);
      expect(lines.filter((line) => !line.startsWith('-- ')).join('\n')).toMatch(/^SELECT [\w, ]+\nFROM site_\w+$/);
    }
    expect(config.sync.tables.users).toContain('SELECT id, username, created_at, updated_at');

    const counts = placeholderSource(join(dir, 'source.sqlite'));
    // A comment on a query's last line ends there: the sync's own wrapping of the query still closes.
    config.sync.tables.users!.push('-- the last line, a comment');
    writeFileSync(configFile, JSON.stringify(config));

    const unset = run(['sync', '--dry-run'], dir);
    expect(unset.code).toBe(2);
    expect(unset.stderr).toMatch(/VIDFEEDS_SYNC_FROM \(sync\.fromEnv\) is not set/);

    const synced = run(['sync', '--json'], dir, { VIDFEEDS_SYNC_FROM: 'sqlite:source.sqlite' });
    expect(synced.code, synced.stderr).toBe(0);
    const report = JSON.parse(synced.stdout) as { tables: Record<string, { inserted: number; skipped: number }> };
    for (const table of SYNC_ORDER) expect({ table, ...report.tables[table] }).toMatchObject({ table, inserted: counts[table], skipped: 0 });
    expect(counts.users).toBeGreaterThan(0);
    expect(counts.videos).toBeGreaterThan(0);

    const built = run(['build', '--out', 'out', '--json'], dir);
    expect(built.code, built.stderr).toBe(0);
    expect(JSON.parse(built.stdout)).toMatchObject({ ok: true, usersPublished: expect.any(Number) });
    expect((JSON.parse(built.stdout) as { usersPublished: number }).usersPublished).toBeGreaterThan(0);
  });

  it('is refused without --write-config, before anything is written', () => {
    const dir = useTempDir('vidfeeds-sync-example-');
    const result = run(['init', '--db', 'site.sqlite', '--sync-example'], dir);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--sync-example fill the starter configuration: add --write-config/);
    expect(run(['build', '--db', 'site.sqlite', '--out', 'out'], dir).stderr).toMatch(/does not exist/);
  });
});
