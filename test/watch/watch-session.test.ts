import Database from 'better-sqlite3';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BuildReport } from '../../src/build/build-report.js';
import { acquireBuildLock } from '../../src/build/lock.js';
import { buildSite } from '../../src/build/site-build.js';
import { loadConfig } from '../../src/config/config.js';
import { WatchSession } from '../../src/watch/watch-session.js';
import { createTestDb, insertUser, insertVideo, tempDir } from '../helpers/site-fixture.js';
import { ManualScheduler } from '../helpers/manual-scheduler.js';
import { readTree, treeDifferences } from '../helpers/tree.js';

/**
 * The watch loop with real builds and a manual clock (no file watcher, no timing luck): after
 * each rebuild the tree is what a full build into a fresh directory gives.
 */

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!();
});

function setup() {
  const fixture = createTestDb();
  cleanups.push(fixture.cleanup);
  const alice = insertUser(fixture.db, { username: 'alice' });
  insertVideo(fixture.db, alice.id, { public_id: 'clip' });
  const work = tempDir('vidfeeds-watch-');
  cleanups.push(work.cleanup);
  const out = join(work.dir, 'out');
  const configFile = join(work.dir, 'vidfeeds.config.json');
  writeFileSync(configFile, JSON.stringify({ baseUrl: 'https://videos.example.org' }));
  const lock = acquireBuildLock(out, { command: 'vidfeeds watch' });
  cleanups.push(() => lock.release());
  const clock = new ManualScheduler();
  const builds: Array<{ report: BuildReport; changes: readonly string[] }> = [];
  const problems: string[] = [];
  const hooks: { afterBuild?: () => void } = {};
  const session = new WatchSession({
    db: fixture.file,
    out,
    stateFile: join(work.dir, 'state.sqlite'),
    loadConfig: () => loadConfig({ configFile }),
    lock,
    debounceMs: 200,
    scheduler: clock,
    onBuild: (report, changes) => {
      builds.push({ report, changes });
      hooks.afterBuild?.();
    },
    onProblem: (message) => problems.push(message),
  });
  // The site's own writes, through another connection.
  const site = new Database(fixture.file);
  cleanups.push(() => site.close());
  /** The tree a full build into a fresh directory gives now, to compare with. */
  const expected = () => {
    const fresh = tempDir('vidfeeds-watch-full-');
    cleanups.push(fresh.cleanup);
    buildSite({ db: fixture.file, out: join(fresh.dir, 'out'), stateFile: join(fresh.dir, 'state'), config: session.currentConfig });
    return readTree(join(fresh.dir, 'out'));
  };
  return { ...fixture, site, session, clock, builds, problems, hooks, out, configFile, expected, lock };
}

describe('watch session', () => {
  it('builds at start, then once for a burst of database changes', async () => {
    const { site, session, clock, builds, out, expected } = setup();
    session.start();
    clock.advance(200);
    await session.idle();
    expect(builds.map((b) => b.report.mode)).toEqual(['full']);

    for (let i = 0; i < 5; i++) {
      site.prepare(`UPDATE videos SET title = ? WHERE public_id = 'clip'`).run(`Title ${i}`);
      session.changed('database', `${i % 2 ? 'site.sqlite-wal' : 'site.sqlite'}`);
      clock.advance(50);
    }
    clock.advance(200);
    await session.idle();
    expect(builds).toHaveLength(2);
    expect(builds[1]!.report).toMatchObject({ mode: 'incremental', changes: 5 });
    expect(treeDifferences(readTree(out), expected())).toEqual([]);
    expect(readTree(out).get('alice/rss/index.rss')!.body.toString()).toContain('Title 4');
  });

  it('runs exactly once more for a change that arrives during a build', async () => {
    const { site, session, clock, builds, hooks, out, expected } = setup();
    session.start();
    clock.advance(200);
    await session.idle();

    let injected = false;
    hooks.afterBuild = () => {
      // Still inside the build, as the queue sees it: a commit lands and the watcher reports it.
      if (injected) return;
      injected = true;
      site.prepare(`INSERT INTO users (username, display_name, created_at, updated_at) VALUES ('bob', 'Bob', 1, 1)`).run();
      session.changed('database', 'site.sqlite-wal');
      clock.advance(200); // its quiet period passes while the build is still running
    };
    site.prepare(`UPDATE users SET display_name = 'Alice L.' WHERE username = 'alice'`).run();
    session.changed('database', 'site.sqlite-wal');
    clock.advance(200);
    await session.idle();
    expect(builds).toHaveLength(3);
    expect(builds.slice(1).map((b) => [b.report.mode, b.report.changes])).toEqual([
      ['incremental', 1],
      ['incremental', 1],
    ]);
    const tree = readTree(out);
    expect(tree.has('bob/rss/index.rss')).toBe(true);
    expect(treeDifferences(tree, expected())).toEqual([]);
  });

  it('does not build when a database file is touched but the change log did not move', async () => {
    const { session, clock, builds } = setup();
    session.start();
    clock.advance(200);
    await session.idle();
    session.changed('database', 'site.sqlite-wal'); // a reader, or a checkpoint
    clock.advance(200);
    await session.idle();
    expect(builds).toHaveLength(1);
  });

  it('reports an invalid configuration and keeps the last good one', async () => {
    const { site, session, clock, builds, problems, configFile, out } = setup();
    session.start();
    clock.advance(200);
    await session.idle();

    writeFileSync(configFile, JSON.stringify({ baseUrl: 'ftp://nope' }));
    session.changed('config', configFile);
    clock.advance(200);
    await session.idle();
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('baseUrl must use http or https');
    expect(problems[0]).toContain('keeping the last good configuration');
    expect(builds).toHaveLength(1);

    // Data changes still build, with the last good configuration.
    site.prepare(`UPDATE users SET display_name = 'Still' WHERE username = 'alice'`).run();
    session.changed('database', 'site.sqlite');
    clock.advance(200);
    await session.idle();
    expect(builds[1]!.report.mode).toBe('incremental');
    expect(readTree(out).get('alice/atom/index.atom')!.body.toString()).toContain('https://videos.example.org/alice/');

    writeFileSync(configFile, JSON.stringify({ baseUrl: 'https://other.example.org' }));
    session.changed('config', configFile);
    clock.advance(200);
    await session.idle();
    expect(builds[2]!.report).toMatchObject({ mode: 'full', reason: 'the configuration changed' });
    expect(readTree(out).get('alice/atom/index.atom')!.body.toString()).toContain('https://other.example.org/alice/');
  });

  it('stops cleanly: the running build finishes, nothing starts after, the lock is the caller’s to release', async () => {
    const { session, clock, builds, lock } = setup();
    session.start();
    clock.advance(200);
    session.changed('database', 'site.sqlite');
    await session.stop();
    clock.advance(1000);
    expect(builds).toHaveLength(1);
    expect(existsSync(lock.file)).toBe(true);
    lock.release();
    expect(existsSync(lock.file)).toBe(false);
  });
});
