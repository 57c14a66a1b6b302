import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { BuildState, type OwnerKind, type PruneScope } from '../../src/pipeline/build-state.js';
import { runBuild } from '../../src/pipeline/run-build.js';
import { buildFingerprint } from '../../src/pipeline/plan/incremental.js';
import { MemoryWriter } from '../../src/pipeline/write/output-writer.js';
import { VIDFEEDS_VERSION } from '../../src/config/version.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { ChangeLog } from '../../src/db/change-log.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { FORMATS } from '../../src/formats/registry.js';
import { createTestDb, insertRow, insertUser, testConfig } from '../helpers/site-fixture.js';
import { cleanUpAfterTest } from '../helpers/temp-dir.js';

/**
 * A build after the site shrank prunes what earlier builds wrote as the state reads it, a page at
 * a time, and holds no list of stale paths: a full build of a site that lost most of its millions
 * of documents must not hold millions of paths (docs/scale.md). The state's generators are
 * watched: between reading a stale path and removing it the build may read no other.
 */

/** More than two of the state's pages of 1,000 stale paths, so paging is exercised. */
const DROPPED = 2_300;
const FORMATS_USED = FORMATS.filter((f) => f.name === 'rss' || f.name === 'sitemap');

/** Counts the stale paths it yields, for the writer to compare with what it removed. */
class WatchedState extends BuildState {
  yielded = 0;

  override *stale(scope: PruneScope): Generator<string> {
    for (const path of super.stale(scope)) {
      this.yielded++;
      yield path;
    }
  }

  override *staleOwned(kind: OwnerKind, id?: number): Generator<string> {
    for (const path of super.staleOwned(kind, id)) {
      this.yielded++;
      yield path;
    }
  }
}

/** Notes, at each removal, how many stale paths the build had read and not yet removed. */
class WatchedWriter extends MemoryWriter {
  removed = 0;
  readAhead = 0;

  constructor(private readonly state: WatchedState) {
    super();
  }

  override remove(path: string): boolean {
    this.readAhead = Math.max(this.readAhead, this.state.yielded - this.removed);
    this.removed++;
    return super.remove(path);
  }
}

function shrinkingSite() {
  const fixture = createTestDb();
  insertUser(fixture.db, { username: 'keeper' });
  fixture.db.transaction(() => {
    for (let i = 0; i < DROPPED; i++) insertUser(fixture.db, { username: `gone${i}` });
  })();
  const config = testConfig();
  const site = createSiteContext(config, FORMATS_USED, new Date(Date.UTC(2026, 0, 1)));
  const state = new WatchedState(':memory:');
  cleanUpAfterTest(() => state.close());
  const writer = new WatchedWriter(state);
  const build = (full = false) => {
    const db = new Database(fixture.file, { readonly: true });
    try {
      const deps = {
        reader: new SiteReader(db, readLimits(config.recommendationsCount)),
        writer,
        state,
        site,
        formats: FORMATS_USED,
        incremental: { changeLog: new ChangeLog(db), fingerprint: buildFingerprint(config, FORMATS_USED, VIDFEEDS_VERSION) },
      };
      return runBuild(deps, { full });
    } finally {
      db.close();
    }
  };
  const dropAll = () => fixture.db.prepare(`UPDATE users SET state = 'suspended' WHERE username LIKE 'gone%'`).run();
  const userFiles = () => [...writer.files.keys()].filter((path) => path.endsWith('/index.rss'));
  // The sitemap is split by id at this size: the parts that list only dropped users go too.
  const sitemapParts = () => [...writer.files.keys()].filter((path) => path.startsWith('sitemap-')).length;
  return { ...fixture, writer, build, dropAll, userFiles, sitemapParts };
}

describe('pruning after the site shrank', () => {
  it('a full build removes every stale file as it reads them, holding no list', () => {
    const site = shrinkingSite();
    expect(site.build()).toMatchObject({ mode: 'full' });
    expect(site.userFiles()).toHaveLength(DROPPED + 1);
    site.dropAll();
    const parts = site.sitemapParts();
    const report = site.build(true);
    expect(parts - site.sitemapParts()).toBeGreaterThan(0);
    expect(report).toMatchObject({ mode: 'full', removed: DROPPED + parts - site.sitemapParts() });
    expect(site.userFiles()).toEqual(['keeper/rss/index.rss']);
    expect(site.writer.readAhead).toBe(1);
    // The state forgot them: a further build has nothing to remove.
    expect(site.build(true)).toMatchObject({ removed: 0 });
  });

  it('an incremental build that renders every user removes them the same way', () => {
    const site = shrinkingSite();
    site.build();
    site.dropAll();
    // A new category makes every user's documents stale (APML lists every category).
    insertRow(site.db, 'categories', { id: 1, name: 'Music' });
    const parts = site.sitemapParts();
    const report = site.build();
    expect(report).toMatchObject({ mode: 'incremental', removed: DROPPED + parts - site.sitemapParts(), owners: { users: 'all' } });
    expect(site.userFiles()).toEqual(['keeper/rss/index.rss']);
    expect(site.writer.readAhead).toBe(1);
    expect(site.build(true)).toMatchObject({ removed: 0 });
  });
});

describe('BuildState.staleOwned', () => {
  it('yields every stale output of a kind exactly once while the caller forgets them', () => {
    const state = new BuildState(':memory:');
    cleanUpAfterTest(() => state.close());
    const hash = Buffer.alloc(20);
    state.begin();
    for (let i = 0; i < 2_500; i++) state.record(`u${String(i).padStart(4, '0')}/rss/index.rss`, 'rss', { kind: 'user', id: i }, `u${i}`, hash, 1);
    for (let i = 0; i < 10; i++) state.record(`v${i}/oembed.json`, 'oembed', { kind: 'video', id: i }, 'u0', hash, 1);
    state.record('sitemap.xml', 'sitemap', { kind: 'site' }, null, hash, 1);
    state.commit();
    state.begin();
    // Every third user is produced again; the rest are stale.
    for (let i = 0; i < 2_500; i += 3) state.record(`u${String(i).padStart(4, '0')}/rss/index.rss`, 'rss', { kind: 'user', id: i }, `u${i}`, hash, 1);
    const seen: string[] = [];
    for (const path of state.staleOwned('user')) {
      seen.push(path);
      state.forget(path);
    }
    const expected = [...Array(2_500).keys()].filter((i) => i % 3 !== 0).map((i) => `u${String(i).padStart(4, '0')}/rss/index.rss`);
    expect(seen.sort()).toEqual(expected);
    expect([...state.staleOwned('user')]).toEqual([]);
    expect([...state.staleOwned('video')]).toHaveLength(10);
    expect([...state.staleOwned('user', 1)]).toEqual([]);
    expect([...state.staleOwned('video', 3)]).toEqual(['v3/oembed.json']);
    expect([...state.staleOwned('site')]).toEqual(['sitemap.xml']);
    expect(state.count()).toBe(2_500 - expected.length + 10 + 1);
  });
});
