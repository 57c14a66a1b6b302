import Database from 'better-sqlite3';
import { copyFileSync, existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BuildReport } from '../../src/pipeline/build-report.js';
import { acquireBuildLock, defaultLockFile } from '../../src/lock/lock.js';
import { buildSite } from '../../src/pipeline/site-build.js';
import { loadConfig } from '../../src/config/load-config.js';
import { FORMATS } from '../../src/formats/registry.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { WatchSession, type WatchSessionOptions } from '../../src/watch/watch-session.js';
import { createTestDb, insertUser, insertVideo } from '../helpers/site-fixture.js';
import { ManualScheduler } from '../helpers/manual-scheduler.js';
import { readTree, treeDifferences, undated } from '../helpers/tree.js';
import { cleanUpAfterTest, tempDir } from '../helpers/temp-dir.js';

/**
 * The watch loop with real builds and a manual clock (no file watcher, no timing luck): after
 * each rebuild the tree is what a full build into a fresh directory gives.
 */

function setup(extra: Partial<WatchSessionOptions> = {}) {
  const fixture = createTestDb();
  const alice = insertUser(fixture.db, { username: 'alice' });
  insertVideo(fixture.db, alice.id, { public_id: 'clip' });
  const work = tempDir('vidfeeds-watch-');
  const out = join(work.dir, 'out');
  const configFile = join(work.dir, 'vidfeeds.config.json');
  mkdirSync(join(work.dir, 'templates/embed'), { recursive: true });
  const template = join(work.dir, 'templates/embed/mine.hbs');
  writeFileSync(template, '<iframe src="{{fileUrl}}" title="{{title}}"></iframe>\n');
  writeFileSync(configFile, JSON.stringify({ baseUrl: 'https://videos.example.org', player: { template: 'mine', templatesDir: 'templates' } }));
  const clock = new ManualScheduler();
  const builds: Array<{ report: BuildReport; changes: readonly string[] }> = [];
  const problems: string[] = [];
  const hooks: { afterBuild?: () => void } = {};
  const lockFile = defaultLockFile(out);
  const stateFile = join(work.dir, 'state.sqlite');
  /** Whether the lock file was there when each build was reported, and while each file was written. */
  const lockHeld: boolean[] = [];
  const lockWhileWriting: boolean[] = [];
  const session = new WatchSession({
    db: fixture.file,
    out,
    stateFile,
    loadConfig: () => loadConfig({ configFile }),
    delayMs: 0,
    pollMs: 2000,
    retryMs: 1000,
    maxRetryMs: 8000,
    scheduler: clock,
    onBuild: (report, changes) => {
      builds.push({ report, changes });
      lockHeld.push(existsSync(lockFile));
      hooks.afterBuild?.();
    },
    onProblem: (message) => problems.push(message),
    onWrote: () => lockWhileWriting.push(existsSync(lockFile)),
    ...extra,
  });
  cleanUpAfterTest(() => void session.stop());
  // The site's own writes, through another connection.
  const site = new Database(fixture.file);
  cleanUpAfterTest(() => site.close());
  /** The tree a full build into a fresh directory gives now, to compare with. */
  const expected = () => {
    const fresh = tempDir('vidfeeds-watch-full-');
    buildSite({ db: fixture.file, out: join(fresh.dir, 'out'), stateFile: join(fresh.dir, 'state'), config: session.currentConfig });
    return readTree(join(fresh.dir, 'out'));
  };
  /** Lets the manual clock run `ms` and every build it starts finish. */
  const run = async (ms = 0) => {
    clock.advance(ms);
    await session.idle();
  };
  return { ...fixture, site, session, clock, run, builds, stateFile, problems, hooks, out, configFile, template, expected, lockFile, lockHeld, lockWhileWriting };
}

/** A watch that built at 10:00, then wrote a title edited at 10:01 and left its sitemap dates owed. */
async function editedWithDatesOwed() {
  let now = new Date('2026-03-01T10:00:00Z');
  const fixture = setup({ now: () => now });
  const { site, session, run, builds } = fixture;
  session.start();
  await run();
  now = new Date('2026-03-01T10:01:00Z');
  site.prepare(`UPDATE videos SET title = 'Edited' WHERE public_id = 'clip'`).run();
  session.changed('database', 'site.sqlite-wal');
  await run();
  expect(builds[1]!.report.owners).toMatchObject({ lastmodsDeferred: true });
  return fixture;
}

/** Another vidfeeds takes the lock, the site edits a user, and the watch tries to build through three back-offs (1, 2, 4 s). */
async function editWhileLocked(
  { site, session, run, out }: Pick<ReturnType<typeof setup>, 'site' | 'session' | 'run' | 'out'>,
  command: string,
  displayName: string,
) {
  const lock = acquireBuildLock(out, { command });
  site.prepare(`UPDATE users SET display_name = ? WHERE username = 'alice'`).run(displayName);
  session.changed('database', 'site.sqlite');
  await run();
  await run(1000);
  await run(2000);
  await run(4000);
  return lock;
}

describe('watch session', () => {
  it('builds at start, and at once for a change that arrives while idle', async () => {
    const { site, session, run, builds, out, expected } = setup();
    session.start();
    await run();
    expect(builds.map((b) => b.report.mode)).toEqual(['full']);

    site.prepare(`UPDATE videos SET title = 'Fresh title' WHERE public_id = 'clip'`).run();
    session.changed('database', 'site.sqlite-wal');
    await run(); // no time passes
    expect(builds).toHaveLength(2);
    expect(builds[1]!.report).toMatchObject({ mode: 'incremental', changes: 1 });
    expect(readTree(out).get('alice/rss/index.rss')!.body.toString()).toContain('Fresh title');
    // The sitemap's description of the video follows within the second.
    await run(1000);
    expect(builds).toHaveLength(3);
    expect(treeDifferences(readTree(out), expected())).toEqual([]);
  });

  it('gathers a bulk import that arrives during a build into exactly one more build', async () => {
    const { site, session, run, builds, hooks, out, expected } = setup();
    session.start();
    await run();

    let injected = false;
    hooks.afterBuild = () => {
      // Still inside the build, as the queue sees it: 100 commits land and the watcher reports each.
      if (injected) return;
      injected = true;
      site.pragma('synchronous = OFF'); // 100 commits without 100 waits on the disk
      const insert = site.prepare(`INSERT INTO users (username, display_name, created_at, updated_at) VALUES (?, ?, 1, 1)`);
      for (let i = 0; i < 100; i++) {
        insert.run(`user${i}`, `User ${i}`);
        session.changed('database', i % 2 ? 'site.sqlite-wal' : 'site.sqlite');
      }
    };
    site.prepare(`UPDATE users SET display_name = 'Alice L.' WHERE username = 'alice'`).run();
    session.changed('database', 'site.sqlite-wal');
    await run();
    expect(builds.slice(1).map((b) => [b.report.mode, b.report.changes])).toEqual([
      ['incremental', 1],
      ['incremental', 100],
    ]);
    const tree = readTree(out);
    expect(tree.has('user99/rss/index.rss')).toBe(true);
    // The builds ran at other moments than the reference: the sitemap's lastmod dates are left out.
    const undatedTree = (t: ReturnType<typeof readTree>) => new Map([...t].map(([path, file]) => [path, { ...file, body: undated(path, file.body) }]));
    expect(treeDifferences(undatedTree(tree), undatedTree(expected()))).toEqual([]);
  });

  it('does not build when a database file is touched without new data', async () => {
    const { session, run, builds } = setup();
    session.start();
    await run();
    session.changed('database', 'site.sqlite-wal'); // a reader, or a checkpoint
    await run(10_000);
    expect(builds).toHaveLength(1);
  });

  it('notices a commit without a file event on its slow poll', async () => {
    const { site, session, run, builds } = setup();
    session.start();
    await run();
    site.prepare(`UPDATE users SET display_name = 'Unseen' WHERE username = 'alice'`).run();
    await run(1999);
    expect(builds).toHaveLength(1);
    await run(1);
    expect(builds).toHaveLength(2);
    expect(builds[1]!.report).toMatchObject({ mode: 'incremental', changes: 1 });
  });

  it('holds the lock only while it builds, and waits (reported once) while another build holds it', async () => {
    const { site, session, run, builds, problems, lockFile, lockHeld, lockWhileWriting, out } = setup();
    session.start();
    await run();
    // Held while the build writes; released before the build is reported, so that whoever reads
    // the report (an operator's script watching the log) can start a build of its own at once.
    expect(lockWhileWriting.length).toBeGreaterThan(0);
    expect(lockWhileWriting.every(Boolean)).toBe(true);
    expect(lockHeld).toEqual([false]);
    expect(existsSync(lockFile)).toBe(false);

    const other = await editWhileLocked({ site, session, run, out }, 'vidfeeds build', 'Waited');
    expect(builds).toHaveLength(1);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^waiting: output directory .* is being built by another vidfeeds: "vidfeeds build", pid \d+/);
    other.release();
    await run(8000);
    expect(builds).toHaveLength(2);
    expect(builds[1]!.changes).toEqual(['retry']);
    expect(builds[1]!.report).toMatchObject({ mode: 'incremental', changes: 1 });
    expect(existsSync(lockFile)).toBe(false);
  });

  it('builds at once when the lock it waits for is released by the watch’s own deploy, not when its back-off ends', async () => {
    const { site, session, run, builds, problems, out } = setup({ maxRetryMs: 60_000 });
    session.start();
    await run();
    // The back-off has grown to 8 s while the deploy held the lock.
    const deploy = await editWhileLocked({ site, session, run, out }, 'vidfeeds deploy', 'After the deploy');
    expect(builds).toHaveLength(1);
    expect(problems[0]).toMatch(/^waiting: .*"vidfeeds deploy"/);
    deploy.release();
    session.lockReleased();
    await run(); // no time passes
    expect(builds).toHaveLength(2);
    expect(builds[1]!.changes).toEqual(['retry']);
    expect(builds[1]!.report).toMatchObject({ mode: 'incremental', changes: 1 });
    // Nothing waits: a release with no build waiting starts none.
    session.lockReleased();
    await run();
    expect(builds).toHaveLength(2);
  });

  it('reports a database that breaks once, retries with back-off, and builds again when it is back', async () => {
    const { file, site, session, run, builds, problems, out, expected } = setup();
    session.start();
    await run();
    const good = `${file}.good`;
    copyFileSync(file, good);
    // An upgrade by a newer site: the file is replaced by one of a later schema.
    const newer = `${file}.newer`;
    copyFileSync(file, newer);
    const upgraded = new Database(newer);
    upgraded.pragma('user_version = 99');
    upgraded.close();
    renameSync(newer, file);
    session.changed('database', file);
    await run();
    for (const wait of [1000, 2000, 4000, 8000, 8000]) {
      session.changed('database', file);
      await run(wait);
    }
    expect(builds).toHaveLength(1);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^build failed: .*schema version 99.*\(retrying, less often while it lasts\)$/);

    renameSync(good, file);
    await run(8000);
    expect(builds).toHaveLength(2);
    expect(problems).toHaveLength(1);
    expect(treeDifferences(readTree(out), expected())).toEqual([]);
    site.close();
  });

  it('keeps the last good templates while one is broken, and builds incrementally once it is restored', async () => {
    const { site, session, run, builds, problems, template, out } = setup();
    session.start();
    await run();
    const good = '<iframe src="{{fileUrl}}" title="{{title}}"></iframe>\n';

    writeFileSync(template, '<object>{{#each}}</object>');
    session.changed('template', template);
    await run();
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('keeping the last good configuration and templates');
    expect(builds).toHaveLength(1);

    // Data changes still build, with the last good template.
    site.prepare(`UPDATE videos SET title = 'During' WHERE public_id = 'clip'`).run();
    session.changed('database', 'site.sqlite');
    await run();
    expect(builds[1]!.report.mode).toBe('incremental');
    expect(readTree(out).get('clip/oembed/html')!.body.toString()).toContain('title="During"');

    writeFileSync(template, good);
    session.changed('template', template);
    await run();
    expect(builds).toHaveLength(2); // the templates in use are the restored ones: nothing to rebuild
    site.prepare(`UPDATE videos SET title = 'After' WHERE public_id = 'clip'`).run();
    session.changed('database', 'site.sqlite');
    await run();
    expect(builds.map((b) => b.report.mode)).toEqual(['full', 'incremental', 'incremental']);

    // A real edit of a template is a full build.
    writeFileSync(template, `<iframe src="{{fileUrl}}" title="{{title}}" allowfullscreen></iframe>\n`);
    session.changed('template', template);
    await run();
    expect(builds[3]!.report).toMatchObject({ mode: 'full', reason: 'a template changed' });
  });

  it('reports an invalid configuration and keeps the last good one', async () => {
    const { site, session, run, builds, problems, configFile, out } = setup();
    session.start();
    await run();

    writeFileSync(configFile, JSON.stringify({ baseUrl: 'ftp://nope' }));
    session.changed('config', configFile);
    await run();
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('baseUrl must use http or https');
    expect(problems[0]).toContain('keeping the last good configuration');
    expect(builds).toHaveLength(1);

    site.prepare(`UPDATE users SET display_name = 'Still' WHERE username = 'alice'`).run();
    session.changed('database', 'site.sqlite');
    await run();
    expect(builds[1]!.report.mode).toBe('incremental');
    expect(readTree(out).get('alice/atom/index.atom')!.body.toString()).toContain('https://videos.example.org/alice/');

    writeFileSync(configFile, JSON.stringify({ baseUrl: 'https://other.example.org', player: { template: 'mine', templatesDir: 'templates' } }));
    session.changed('config', configFile);
    await run();
    expect(builds[2]!.report).toMatchObject({ mode: 'full', reason: 'the configuration changed' });
    expect(readTree(out).get('alice/atom/index.atom')!.body.toString()).toContain('https://other.example.org/alice/');
  });

  it('stops cleanly: nothing starts after, no lock is left', async () => {
    const { session, run, clock, builds, lockFile } = setup();
    session.start();
    await run();
    session.changed('database', 'site.sqlite');
    await session.stop();
    clock.advance(10_000);
    expect(builds).toHaveLength(1);
    expect(clock.pending).toBe(0);
    expect(existsSync(lockFile)).toBe(false);
  });

  it('dates each change by the build that published it, and moves sitemap dates at most once a second', async () => {
    let now = new Date('2026-03-01T10:00:00Z');
    const { site, session, run, builds, out } = setup({ now: () => now });
    const lastmod = (url: string) => {
      const sitemap = readTree(out).get('sitemap.xml')!.body.toString();
      return new RegExp(`<loc>${url}</loc><lastmod>([^<]*)</lastmod>`).exec(sitemap)?.[1];
    };
    const oembed = 'https://videos.example.org/clip/oembed/';
    session.start();
    await run();
    expect(lastmod(oembed)).toBe('2026-03-01T10:00:00Z');

    // A minute later, within a second of the last site-file pass on the manual clock: the
    // documents are written at once and the sitemap's dates are owed.
    now = new Date('2026-03-01T10:01:00Z');
    site.prepare(`UPDATE videos SET title = 'Edited once' WHERE public_id = 'clip'`).run();
    session.changed('database', 'site.sqlite-wal');
    await run();
    expect(builds[1]!.report.owners).toMatchObject({ siteFiles: false, lastmodsDeferred: true });
    expect(readTree(out).get('clip/oembed/index.json')!.body.toString()).toContain('Edited once');
    expect(lastmod(oembed)).toBe('2026-03-01T10:00:00Z');

    // The pass at the end of the second dates the document by the build that changed it.
    now = new Date('2026-03-01T10:02:00Z');
    await run(1000);
    expect(builds.map((b) => b.changes)).toEqual([['start'], ['database:site.sqlite-wal'], ['lastmods']]);
    expect(builds[2]!.report.owners).toMatchObject({ siteFiles: true });
    expect(lastmod(oembed)).toBe('2026-03-01T10:01:00Z');

    // Past the interval, a change renders its sitemap dates in its own build.
    await run(5000);
    now = new Date('2026-03-01T10:03:00Z');
    site.prepare(`UPDATE videos SET title = 'Edited twice' WHERE public_id = 'clip'`).run();
    session.changed('database', 'site.sqlite-wal');
    await run();
    expect(builds[3]!.report.owners).toMatchObject({ siteFiles: true });
    expect(builds[3]!.report.owners!.lastmodsDeferred).toBeUndefined();
    expect(lastmod(oembed)).toBe('2026-03-01T10:03:00Z');
    expect(builds).toHaveLength(4);
  });

  it('runs the owed sitemap dates when it stops', async () => {
    const { session, builds, out } = await editedWithDatesOwed();
    await session.stop();

    expect(builds.map((b) => b.changes)).toEqual([['start'], ['database:site.sqlite-wal'], ['lastmods']]);
    const sitemap = readTree(out).get('sitemap.xml')!.body.toString();
    expect(sitemap).toContain('<loc>https://videos.example.org/clip/oembed/</loc><lastmod>2026-03-01T10:01:00Z</lastmod>');
    expect(sitemap).toContain('<loc>https://videos.example.org/alice/rss/</loc><lastmod>2026-03-01T10:01:00Z</lastmod>');
  });

  it('leaves owed sitemap dates in the state when it is killed before the pass, for the next build', async () => {
    const { session, out, file, stateFile } = await editedWithDatesOwed();

    // The watch is gone before its pass (killed): a cron build with nothing new to read still
    // renders what it owed.
    const report = buildSite({ db: file, out, stateFile, config: session.currentConfig, site: { ...createSiteContext(session.currentConfig, FORMATS), now: new Date('2026-03-01T11:00:00Z') } });
    expect(report).toMatchObject({ mode: 'incremental', changes: 0, owners: { siteFiles: true } });
    const sitemap = readTree(out).get('sitemap.xml')!.body.toString();
    expect(sitemap).toContain('<loc>https://videos.example.org/clip/oembed/</loc><lastmod>2026-03-01T10:01:00Z</lastmod>');
    // The alice documents the edit changed (her feed lists the clip) are dated likewise.
    expect(sitemap).toContain('<loc>https://videos.example.org/alice/rss/</loc><lastmod>2026-03-01T10:01:00Z</lastmod>');
    await session.stop();
  });
});
