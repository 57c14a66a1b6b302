import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultLockFile } from '../../src/build/lock.js';
import { createTestDb, insertUser, tempDir } from '../helpers/site-fixture.js';

/**
 * The commands as an operator runs them: the built binary (npm test compiles it first), its exit
 * codes and its messages. Waiting for the watcher's lines has a generous deadline; nothing here
 * asserts how long anything took.
 */

const BIN = resolve(import.meta.dirname, '../../bin/vidfeeds.js');
const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!();
});

function site() {
  const fixture = createTestDb();
  cleanups.push(fixture.cleanup);
  insertUser(fixture.db, { username: 'alice' });
  const work = tempDir('vidfeeds-cli-');
  cleanups.push(work.cleanup);
  return { ...fixture, out: join(work.dir, 'out'), cwd: work.dir };
}

function vidfeeds(args: string[], cwd: string) {
  return spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8' });
}

describe('vidfeeds build and watch from the command line', () => {
  it('build says whether it was full or incremental and why', () => {
    const { file, out, cwd, db } = site();
    const first = vidfeeds(['build', '--db', file, '--out', out], cwd);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/vidfeeds: full build \(first build: no saved state\): \d+ documents/);
    db.prepare(`UPDATE users SET display_name = 'A' WHERE username = 'alice'`).run();
    const second = vidfeeds(['build', '--db', file, '--out', out], cwd);
    expect(second.stderr).toMatch(/vidfeeds: incremental build \(1 changes since the last build → 1 users, 0 videos\)/);
    const forced = vidfeeds(['build', '--db', file, '--out', out, '--full'], cwd);
    expect(forced.stderr).toContain('full build (--full)');
  });

  it('refuses a state file inside the served tree, and --full with a partial build (exit 2)', () => {
    const { file, out, cwd } = site();
    const inside = vidfeeds(['build', '--db', file, '--out', out, '--state', join(out, 'state.sqlite')], cwd);
    expect(inside.status).toBe(2);
    expect(inside.stderr).toContain('is inside the output directory');
    expect(existsSync(out)).toBe(false);
    const mixed = vidfeeds(['build', '--db', file, '--out', out, '--full', '--user', 'alice'], cwd);
    expect(mixed.status).toBe(2);
  });

  it('watch rebuilds on a database change, holds the lock meanwhile, and stops cleanly on SIGINT', async () => {
    const { file, out, cwd, db } = site();
    const child = spawn(process.execPath, [BIN, 'watch', '--db', file, '--out', out, '--debounce', '100'], { cwd });
    cleanups.push(() => child.kill('SIGKILL'));
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const waitFor = async (pattern: RegExp) => {
      for (let waited = 0; !pattern.test(stderr); waited += 50) {
        if (waited > 30_000 || child.exitCode !== null) throw new Error(`no ${pattern} in:\n${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };

    await waitFor(/start: full build/);
    const second = vidfeeds(['build', '--db', file, '--out', out], cwd);
    expect(second.status).toBe(75);
    expect(second.stderr).toContain(`is being built by another vidfeeds: "vidfeeds watch", pid ${child.pid} on `);

    db.prepare(`INSERT INTO users (username, display_name, created_at, updated_at) VALUES ('bob', 'Bob', 1, 1)`).run();
    await waitFor(/changed: incremental build \(1 changes since the last build → 1 users, 0 videos, site files\)/);
    expect(existsSync(join(out, 'bob/rss/index.rss'))).toBe(true);

    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(stderr).toContain('vidfeeds: SIGINT: stopping');
    expect(stderr).toContain('vidfeeds: stopped');
    expect(existsSync(defaultLockFile(out))).toBe(false);
    // One line per rebuild: the start and the change.
    expect(stderr.match(/ build \(/g)).toHaveLength(2);
  });
});
