import { describe, expect, it } from 'vitest';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { FORMATS } from '../../src/formats/registry.js';
import { MAX_URLS_PER_SITEMAP, rangeWidth, renderSitemaps, sitemapFileOf, sitemapFormat, SITEMAP_LIMITS } from '../../src/formats/sitemap.js';
import type { Format, SiteContext } from '../../src/formats/format.js';
import type { SiteIndex } from '../../src/model/views.js';
import { buildSite } from '../../src/pipeline/site-build.js';
import { readTree } from '../helpers/cli.js';
import { createDemoDb, insertUser, testConfig } from '../helpers/site-fixture.js';
import { SCHEMAS, xmllintSchema, xpath } from '../helpers/validators.js';
import Database from 'better-sqlite3';
import { readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/temp-dir.js';

/** sitemaps.org: at most 50,000 URLs and 52,428,800 bytes per file; past that, an index of parts. */

const site = createSiteContext(testConfig(), FORMATS, new Date(Date.UTC(2026, 0, 1)));

function* urls(count: number, shape = (i: number) => `https://videos.example.org/user${i}/rss/`): Generator<string> {
  for (let i = 0; i < count; i++) yield shape(i);
}

function locs(document: string): string[] {
  return [...document.matchAll(/<loc>([^<]*)<\/loc>/g)].map((m) => m[1]!.replaceAll('&amp;', '&'));
}

/** The sitemap files of a tree, by name. */
const sitemaps = (tree: Map<string, Buffer>) => [...tree.keys()].filter((p) => p.startsWith('sitemap')).sort();

describe('sitemap split', () => {
  it('makes an index of numbered sitemaps past 50,000 URLs, all valid against the sitemaps.org schemas', () => {
    const count = 2 * MAX_URLS_PER_SITEMAP + 7;
    const files = [...renderSitemaps(urls(count), site)];
    expect(files.map((f) => f.file)).toEqual(['sitemap-1.xml', 'sitemap-2.xml', 'sitemap-3.xml', 'sitemap.xml']);
    const index = files.at(-1)!.body;
    const parts = Object.fromEntries(files.slice(0, -1).map((f) => [f.file, f.body]));

    expect(xmllintSchema(join(SCHEMAS, 'siteindex.xsd'), { index }).ok).toBe(true);
    const validation = xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), parts);
    expect(validation.ok, validation.output.slice(0, 2000)).toBe(true);
    // An independent reader of the index finds every part at its URL.
    expect(xpath(index, 'count(//*[local-name()="sitemap"])')).toBe('3');
    expect(xpath(index, 'string(//*[local-name()="sitemap"][3]/*[local-name()="loc"])')).toBe('https://videos.example.org/sitemap-3.xml');

    const listed = Object.values(parts).map(locs);
    expect(listed.map((l) => l.length)).toEqual([50_000, 50_000, 7]);
    expect(listed.flat()).toEqual([...urls(count)]);
  });

  it('keeps one sitemap.xml (a urlset, not an index) at exactly 50,000 URLs', () => {
    const files = [...renderSitemaps(urls(MAX_URLS_PER_SITEMAP), site)];
    expect(files.map((f) => f.file)).toEqual(['sitemap.xml']);
    expect(xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), { sitemap: files[0]!.body }).ok).toBe(true);
  });

  it('splits by bytes too: every file within the limit, each part as full as the limit allows', () => {
    const maxBytes = 4000;
    // URLs with ampersands, escaped to &amp; in the file, and multi-byte characters, so that the
    // split must count escaped UTF-8 bytes, not characters.
    const shape = (i: number) => `https://videos.example.org/search?q=${'é'.repeat(i % 13)}&page=${i}&x=${'&'.repeat(i % 3)}`;
    const all = [...urls(300, shape)];
    const files = [...renderSitemaps(all, site, MAX_URLS_PER_SITEMAP, maxBytes)];
    const parts = files.slice(0, -1);
    expect(parts.length).toBeGreaterThan(5);
    expect(files.at(-1)!.file).toBe('sitemap.xml');
    let next = 0;
    for (const part of parts) {
      const size = Buffer.byteLength(part.body);
      expect(size, part.file).toBeLessThanOrEqual(maxBytes);
      next += locs(part.body).length;
      if (next < all.length) {
        // The next URL would not have fitted: its entry, escaped, is what the part lacks.
        const entry = `<url><loc>${all[next]!.replaceAll('&', '&amp;')}</loc></url>`;
        expect(size + Buffer.byteLength(entry), part.file).toBeGreaterThan(maxBytes);
      }
    }
    expect(next).toBe(all.length);
    const validation = xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), Object.fromEntries(parts.map((p) => [p.file, p.body])));
    expect(validation.ok, validation.output.slice(0, 2000)).toBe(true);
    expect(xmllintSchema(join(SCHEMAS, 'siteindex.xsd'), { index: files.at(-1)!.body }).ok).toBe(true);
  });
});

describe('the sitemap layout', () => {
  it('keeps one sitemap.xml while the ids could hold 2,000 URLs, and splits by id past that', () => {
    const perUser = FORMATS.filter((f) => f.scope === 'user' && f.inSitemap).length;
    const perVideo = FORMATS.filter((f) => f.scope === 'video' && f.inSitemap).length + 1;
    const users = 100;
    const room = SITEMAP_LIMITS.oneFileUrls - users * perUser;
    const videos = Math.floor(room / perVideo);
    const at = (videoSpan: number) => sitemapFileOf('videos', 1, { users: { min: 1, max: users }, videos: { min: 1, max: videoSpan } }, FORMATS, SITEMAP_LIMITS);
    expect(at(videos)).toBe('sitemap.xml');
    expect(at(videos + 1)).toMatch(/^sitemap-videos-0-\d+\.xml$/);
  });
});

describe('sitemap range widths', () => {
  it('are partUrls’ worth of owners, doubled while the ids’ span needs more than half the index', () => {
    expect(rangeWidth(10_000, 8, SITEMAP_LIMITS)).toBe(62);
    expect(rangeWidth(1_000_000, 8, SITEMAP_LIMITS)).toBe(62);
    // 2,000,000 ids / 62 = 32,259 parts, over 25,000: twice as wide.
    expect(rangeWidth(2_000_000, 8, SITEMAP_LIMITS)).toBe(124);
    for (const span of [1, 5_000, 3_000_000, 10 ** 8]) {
      const width = rangeWidth(span, 3, SITEMAP_LIMITS);
      expect(Math.ceil(span / width) + 1).toBeLessThanOrEqual(SITEMAP_LIMITS.maxParts / 2);
      // The width holds while the site grows by less than its span again.
      expect(rangeWidth(Math.floor(span * 1.5), 3, SITEMAP_LIMITS) / width).toBeLessThanOrEqual(2);
    }
    // Never wider than one sitemap's URLs: 50,000 / 8 formats.
    expect(rangeWidth(10 ** 12, 8, SITEMAP_LIMITS)).toBe(6_250);
  });
});

describe('sitemap split by row id (a site whose ids could hold more than 50,000 URLs)', () => {
  const limits = { ...SITEMAP_LIMITS, maxUrls: 30, partUrls: 24 };
  const split = sitemapFormat(limits);
  const formats: readonly Format[] = FORMATS.map((f) => (f.name === 'sitemap' ? split : f));
  const listedPerUser = FORMATS.filter((f) => f.scope === 'user' && f.inSitemap).length;
  const listedPerVideo = FORMATS.filter((f) => f.scope === 'video' && f.inSitemap).length;
  const usersPerPart = Math.floor(limits.partUrls / listedPerUser);
  const videosPerPart = Math.floor(limits.partUrls / listedPerVideo);
  /** The part that lists the users of the K-th range. */
  const usersPart = (k: number) => `sitemap-users-${k * usersPerPart}-${(k + 1) * usersPerPart - 1}.xml`;

  /** A demo site built with the split sitemap; `calls` records the id ranges the sitemap asked for. */
  function built() {
    const fixture = createDemoDb({ users: 24, seed: 5 });
    const work = tempDir('vidfeeds-sitemap-');
    const calls: string[] = [];
    const counting: Format[] = formats.map((f) =>
      f.name !== 'sitemap' || f.scope !== 'site'
        ? f
        : {
            ...f,
            render: (index: SiteIndex, s: SiteContext) =>
              f.render(
                {
                  ...index,
                  usersById: (from: number, to: number) => (calls.push(`users ${from}..${to}`), index.usersById!(from, to)),
                  videosById: (from: number, to: number) => (calls.push(`videos ${from}..${to}`), index.videosById!(from, to)),
                },
                s,
              ),
          },
    );
    const config = testConfig();
    const ctx = createSiteContext(config, counting, new Date(Date.UTC(2026, 0, 1)));
    const out = join(work.dir, 'out');
    const buildAs = (site: SiteContext) => buildSite({ db: fixture.file, out, stateFile: join(work.dir, 'state.sqlite'), config, site, formats: counting });
    const build = () => buildAs(ctx);
    /** Another process's context: a build made with it keeps no part this one kept. */
    const otherProcess = () => createSiteContext(config, counting, new Date(Date.UTC(2026, 0, 1)));
    return { fixture, out, calls, build, buildAs, otherProcess, ctx };
  }

  it('lists every published document once, in parts by id that the sitemaps.org schemas accept, under an index of the parts', () => {
    const { fixture, out, build } = built();
    expect(build().failed).toEqual([]);
    const tree = readTree(out);
    const parts = [...tree.keys()].filter((path) => /^sitemap-(users|videos)-\d+-\d+\.xml$/.test(path)).sort();
    expect(parts.length).toBeGreaterThan(4);
    const text = (path: string) => tree.get(path)!.toString('utf8');
    expect(xmllintSchema(join(SCHEMAS, 'siteindex.xsd'), { index: text('sitemap.xml') }).ok).toBe(true);
    const validation = xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), Object.fromEntries(parts.map((p) => [p, text(p)])));
    expect(validation.ok, validation.output.slice(0, 2000)).toBe(true);
    // The index lists exactly the parts on disk, users first, each range in order.
    const order = (p: string) => [p.includes('-users-') ? 0 : 1, Number(/-(\d+)-\d+\.xml$/.exec(p)![1])];
    const byRange = [...parts].sort((a, b) => order(a)[0]! - order(b)[0]! || order(a)[1]! - order(b)[1]!);
    expect(locs(text('sitemap.xml'))).toEqual(byRange.map((p) => `https://videos.example.org/${p}`));
    // Each part holds the owners of its id range, and together they list what one sitemap.xml would.
    const users = fixture.db.prepare(`SELECT id, username FROM users WHERE state = 'active'`).all() as Array<{ id: number; username: string }>;
    for (const user of users.filter((u) => !u.username.includes('/') && tree.has(`${u.username}/rss/index.rss`))) {
      const part = usersPart(Math.floor(user.id / usersPerPart));
      expect(locs(text(part)), `${user.username} in ${part}`).toContain(`https://videos.example.org/${encodeURIComponent(user.username)}/rss/`);
    }
    // sitemapFileOf (the freshness bench polls it) names the part each video is in, and sitemap.xml for a small site.
    const bounds = (table: string) => fixture.db.prepare(`SELECT min(id) AS min, max(id) AS max FROM ${table}`).get() as { min: number; max: number };
    const idBounds = { users: bounds('users'), videos: bounds('videos') };
    const videos = fixture.db.prepare(`SELECT id, public_id FROM videos`).all() as Array<{ id: number; public_id: string }>;
    let found = 0;
    for (const video of videos) {
      const url = `https://videos.example.org/${encodeURIComponent(video.public_id)}/oembed/`;
      const holding = parts.filter((p) => locs(text(p)).includes(url));
      if (holding.length === 0) continue;
      found++;
      expect(holding).toEqual([sitemapFileOf('videos', video.id, idBounds, formats, limits)]);
    }
    expect(found).toBeGreaterThan(20);
    expect(sitemapFileOf('videos', 1, idBounds, formats, SITEMAP_LIMITS)).toBe('sitemap.xml');
    const whole = readTree(join(buildWhole(fixture.file, FORMATS), 'out'));
    const listed = parts.flatMap((p) => locs(text(p)));
    expect(new Set(listed).size).toBe(listed.length);
    expect([...listed].sort()).toEqual(locs(whole.get('sitemap.xml')!.toString('utf8')).sort());
    expect(videosPerPart).toBeGreaterThan(1);
  });

  it('rewrites only the part that holds a renamed user, keeps the others, and drops a part whose owners all went', () => {
    const { fixture, out, calls, build } = built();
    build();
    const before = readTree(out);
    const user = fixture.db.prepare(`SELECT id, username FROM users WHERE state = 'active' AND id >= ? ORDER BY id LIMIT 1`).get(usersPerPart * 2) as { id: number; username: string };
    const k = Math.floor(user.id / usersPerPart);
    calls.length = 0;
    fixture.db.prepare('UPDATE users SET username = ? WHERE id = ?').run('renamed-one', user.id);
    expect(build().mode).toBe('incremental');
    // The ranges read again are those of the renamed user and of the users whose listed documents
    // changed bytes (their lastmod moved: friends whose FOAF names the new name, say); no other.
    const after = readTree(out);
    const ids = new Map((fixture.db.prepare('SELECT id, username FROM users').all() as Array<{ id: number; username: string }>).map((r) => [r.username, r.id]));
    const listedDirs = new Set(formats.filter((f) => f.scope === 'user' && f.inSitemap).map((f) => (f as { dir: string }).dir));
    const movedRanges = new Set([k]);
    for (const [path, body] of after) {
      const [name, dir] = path.split('/');
      if (dir === undefined || !listedDirs.has(dir) || before.get(path)?.equals(body)) continue;
      const id = ids.get(name!);
      if (id !== undefined) movedRanges.add(Math.floor(id / usersPerPart));
    }
    const expectedReads = [...movedRanges].sort((a, b) => a - b).map((r) => `users ${r * usersPerPart}..${(r + 1) * usersPerPart - 1}`);
    expect(calls.filter((c) => c.startsWith('users')).sort()).toEqual(expectedReads.sort());
    expect(movedRanges.size).toBeLessThan(Math.ceil(Math.max(...ids.values()) / usersPerPart));
    const changed = [...after.keys()].filter((p) => p.startsWith('sitemap') && !before.get(p)?.equals(after.get(p)!));
    expect(changed).toContain(usersPart(k));
    // Rewritten: parts of those ranges only (this build's clock is the last one's, so only the renamed user's part differs).
    for (const part of changed.filter((p) => p.startsWith('sitemap-users-'))) expect([...movedRanges].map(usersPart)).toContain(part);
    expect(locs(after.get(usersPart(k))!.toString('utf8'))).toContain('https://videos.example.org/renamed-one/rss/');

    // Every user of that range suspended: the part goes, and the index no longer lists it.
    fixture.db.prepare(`UPDATE users SET state = 'suspended' WHERE id BETWEEN ? AND ?`).run(k * usersPerPart, (k + 1) * usersPerPart - 1);
    expect(build().mode).toBe('incremental');
    const gone = readTree(out);
    expect(gone.has(usersPart(k))).toBe(false);
    expect(gone.get('sitemap.xml')!.toString('utf8')).not.toContain(usersPart(k));
    const whole = readTree(join(buildWhole(fixture.file, formats), 'out'));
    for (const path of [...whole.keys()].filter((p) => p.startsWith('sitemap'))) expect(gone.get(path)?.equals(whole.get(path)!), path).toBe(true);
    expect([...gone.keys()].filter((p) => p.startsWith('sitemap')).sort()).toEqual([...whole.keys()].filter((p) => p.startsWith('sitemap')).sort());
  });

  it('splices a part it rendered in an earlier build, reading only the changed owners, unless another build wrote the part since', () => {
    const { fixture, out, calls, build, buildAs, otherProcess, ctx } = built();
    build();
    const ids = fixture.db.prepare(`SELECT id FROM users WHERE state = 'active' AND id BETWEEN ? AND ? ORDER BY id`).pluck().all(usersPerPart * 2, usersPerPart * 3 - 1) as number[];
    expect(ids.length).toBe(usersPerPart);
    const [a, b, c] = ids as [number, number, number];
    const k = 2;
    const range = `users ${k * usersPerPart}..${(k + 1) * usersPerPart - 1}`;
    const rename = (id: number, name: string) => fixture.db.prepare('UPDATE users SET username = ? WHERE id = ?').run(name, id);
    const sameAsWhole = () => {
      const tree = readTree(out);
      const whole = readTree(join(buildWhole(fixture.file, formats), 'out'));
      expect(sitemaps(tree)).toEqual(sitemaps(whole));
      for (const path of sitemaps(whole)) expect(tree.get(path)?.toString('utf8'), path).toBe(whole.get(path)!.toString('utf8'));
      return tree;
    };

    // The first change to the part renders it whole (the full build kept no part) and keeps it.
    rename(a, 'spliced-a');
    calls.length = 0;
    expect(build().mode).toBe('incremental');
    expect(calls).toContain(range);
    expect(ctx.sitemapParts!.counts).toEqual({ spliced: 0, whole: expect.any(Number) });
    sameAsWhole();

    // The next reads the changed user's row alone, and splices it in.
    rename(b, 'spliced-b');
    calls.length = 0;
    expect(build().mode).toBe('incremental');
    expect(calls).toContain(`users ${b}..${b}`);
    expect(calls).not.toContain(range);
    expect(ctx.sitemapParts!.counts.spliced).toBeGreaterThan(0);
    expect(locs(sameAsWhole().get(usersPart(k))!.toString('utf8'))).toContain('https://videos.example.org/spliced-b/rss/');

    // Another process's build rewrites the part: this one's kept part is no longer what the file
    // holds (it lacks the third rename), so the next change renders the part whole again.
    rename(c, 'elsewhere-c');
    expect(buildAs(otherProcess()).mode).toBe('incremental');
    rename(a, 'spliced-a-again');
    calls.length = 0;
    expect(build().mode).toBe('incremental');
    expect(calls).toContain(range);
    const text = sameAsWhole().get(usersPart(k))!.toString('utf8');
    expect(locs(text)).toEqual(expect.arrayContaining(['https://videos.example.org/elsewhere-c/rss/', 'https://videos.example.org/spliced-a-again/rss/']));
  });

  it('renders a part whole, not spliced, when its file was deleted by hand since it was kept', () => {
    const { fixture, out, build, ctx } = built();
    build();
    const ids = fixture.db.prepare(`SELECT id FROM users WHERE state = 'active' AND id BETWEEN ? AND ? ORDER BY id`).pluck().all(usersPerPart * 2, usersPerPart * 3 - 1) as number[];
    const rename = (id: number, name: string) => fixture.db.prepare('UPDATE users SET username = ? WHERE id = ?').run(name, id);
    // Two changes to the part: the second build keeps its layout, the third could splice it.
    rename(ids[0]!, 'kept-a');
    build();
    rename(ids[1]!, 'kept-b');
    build();
    expect(ctx.sitemapParts!.counts.spliced).toBeGreaterThan(0);

    // The part is deleted by hand, then one of its owners changes: nothing to cut it from.
    const { whole } = ctx.sitemapParts!.counts;
    rmSync(join(out, usersPart(2)));
    rename(ids[2]!, 'after-delete');
    expect(build().mode).toBe('incremental');
    expect(ctx.sitemapParts!.counts.whole).toBeGreaterThan(whole);

    const tree = readTree(out);
    const full = readTree(join(buildWhole(fixture.file, formats), 'out'));
    expect(sitemaps(tree)).toEqual(sitemaps(full));
    for (const path of sitemaps(full)) expect(tree.get(path)?.toString('utf8'), path).toBe(full.get(path)!.toString('utf8'));
    expect(locs(tree.get(usersPart(2))!.toString('utf8'))).toEqual(expect.arrayContaining(['https://videos.example.org/kept-b/rss/', 'https://videos.example.org/after-delete/rss/']));
  });

  it('widens the ranges of ids spread far apart to fit the index, and renders every part again when the width moves', () => {
    // An index of at most 8 parts, 4 a kind: 24 users of ids 1..24 make ranges of 12 ids, not 3.
    const narrow = { ...limits, maxUrls: 300, maxParts: 8 };
    const table: readonly Format[] = FORMATS.map((f) => (f.name === 'sitemap' ? sitemapFormat(narrow) : f));
    const fixture = createDemoDb({ users: 24, seed: 5 });
    const work = tempDir('vidfeeds-sitemap-wide-');
    const config = testConfig();
    const ctx = createSiteContext(config, table, new Date(Date.UTC(2026, 0, 1)));
    const out = join(work.dir, 'out');
    const build = () => buildSite({ db: fixture.file, out, stateFile: join(work.dir, 'state.sqlite'), config, site: ctx, formats: table });
    const userParts = () => [...readTree(out).keys()].filter((p) => p.startsWith('sitemap-users-')).sort();
    expect(build().failed).toEqual([]);
    const width = rangeWidth(24, listedPerUser, narrow);
    expect(width).toBe(usersPerPart * 4);
    expect(userParts()).toEqual(['sitemap-users-0-11.xml', 'sitemap-users-12-23.xml', 'sitemap-users-24-35.xml']);

    // A user of id 40: the span grows past what 4 ranges of 12 hold, the ranges widen to 24 ids,
    // and the incremental build leaves exactly the parts a full build makes, none of the old width.
    insertUser(fixture.db, { id: 40, username: 'far-away' });
    expect(build().mode).toBe('incremental');
    const after = readTree(out);
    expect(userParts()).toEqual(['sitemap-users-0-23.xml', 'sitemap-users-24-47.xml']);
    expect(locs(after.get('sitemap-users-24-47.xml')!.toString('utf8'))).toContain('https://videos.example.org/far-away/rss/');
    const whole = readTree(join(buildWhole(fixture.file, table), 'out'));
    expect(sitemaps(after)).toEqual(sitemaps(whole));
    for (const path of sitemaps(whole)) expect(after.get(path)!.equals(whole.get(path)!), path).toBe(true);
  });

  it('replaces the parts of an earlier version (sitemap-users-K.xml) in the next incremental build', () => {
    const { fixture, out, build } = built();
    build();
    // The tree and state as an earlier version left them: the same parts under single-number names.
    const state = new Database(join(out, '..', 'state.sqlite'));
    for (const file of readdirSync(out).filter((f) => /^sitemap-(users|videos)-\d+-\d+\.xml$/.test(f))) {
      const [, kind, from, to] = /^sitemap-(users|videos)-(\d+)-(\d+)\.xml$/.exec(file)!;
      const old = `sitemap-${kind}-${Number(from) / (Number(to) - Number(from) + 1)}.xml`;
      renameSync(join(out, file), join(out, old));
      expect(state.prepare('UPDATE outputs SET path = ? WHERE path = ?').run(old, file).changes).toBe(1);
    }
    state.close();
    fixture.db.prepare('UPDATE users SET display_name = ? WHERE id = (SELECT min(id) FROM users)').run('Renamed');
    expect(build().mode).toBe('incremental');
    const after = readTree(out);
    const whole = readTree(join(buildWhole(fixture.file, formats), 'out'));
    expect(sitemaps(after)).toEqual(sitemaps(whole));
    expect(sitemaps(after).some((p) => /^sitemap-users-\d+\.xml$/.test(p))).toBe(false);
  });

  /** A full build of the database into a fresh directory; returns the directory. */
  function buildWhole(db: string, table: readonly Format[]): string {
    const work = tempDir('vidfeeds-sitemap-whole-');
    const config = testConfig();
    const ctx = createSiteContext(config, table, new Date(Date.UTC(2026, 0, 1)));
    buildSite({ db, out: join(work.dir, 'out'), stateFile: join(work.dir, 'state.sqlite'), config, site: ctx, formats: table });
    return work.dir;
  }
});
