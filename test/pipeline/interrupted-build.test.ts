import Database from 'better-sqlite3';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildRecordName } from '../../src/pipeline/record/build-record.js';
import { STAGING_DIR } from '../../src/pipeline/write/output-writer.js';
import { cli, cliAsync, readTree } from '../helpers/cli.js';
import { oldOrNew, undated } from '../helpers/tree.js';
import { until } from '../helpers/until.js';
import { tempDir } from '../helpers/temp-dir.js';


const RECORD = buildRecordName(undefined);

describe('a build killed midway', () => {
  it('leaves every served file either the old or the new whole file, and the next build finishes the job', async () => {
    const { dir } = tempDir();
    const db = join(dir, 'site.sqlite');
    const out = join(dir, 'out');
    expect(cli(['demo', '--db', db, '--users', '600']).code).toBe(0);
    expect(cli(['build', '--db', db, '--out', out]).code).toBe(0);
    expect(existsSync(join(out, RECORD))).toBe(true);
    const before = readTree(out);

    // Change every document: every user's display name and every video's title.
    const conn = new Database(db);
    conn.exec(`UPDATE users SET display_name = display_name || ' (v2)'; UPDATE videos SET title = title || ' (v2)'; UPDATE groups SET title = title || ' (v2)';`);
    conn.close();
    const reference = join(dir, 'reference');
    expect(cli(['build', '--db', db, '--out', reference]).code).toBe(0);
    const after = readTree(reference);

    const child = cliAsync(['build', '--db', db, '--out', out]);
    const exited = new Promise((resolve) => child.on('exit', resolve));
    // Kill it as soon as the first user's feed is new: users are built in name order, so most of
    // the tree is still old then.
    const first = [...before.keys()].filter((p) => p.endsWith('/rss/index.rss')).sort()[0]!;
    const sawNew = await until(() => {
      try {
        return !readFileSync(join(out, first)).equals(before.get(first)!);
      } catch {
        return false;
      }
    }, 30_000);
    child.kill('SIGKILL');
    await exited;
    expect(sawNew).toBe(true);

    // The killed build removed the first build's record before touching a file: the tree is no
    // longer what it says (src/pipeline/build-record.ts).
    expect(existsSync(join(out, RECORD))).toBe(false);
    const { old, fresh } = oldOrNew(readTree(out), before, after);
    // It really was midway: some files already new, some still old.
    expect(fresh).toBeGreaterThan(0);
    expect(old).toBeGreaterThan(0);

    // The next build completes the tree and leaves no staging folder behind.
    const rerun = cli(['build', '--db', db, '--out', out]);
    expect(rerun.code).toBe(0);
    expect(existsSync(join(out, STAGING_DIR))).toBe(false);
    const final = readTree(out);
    expect([...final.keys()].sort()).toEqual([...after.keys()].sort());
    for (const [path, body] of final) expect(undated(path, body).equals(undated(path, after.get(path)!)), path).toBe(true);
    expect(readdirSync(out).filter((n) => n.startsWith('.'))).toEqual([RECORD]);
  });
});
