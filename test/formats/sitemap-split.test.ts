import { describe, expect, it } from 'vitest';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { FORMATS } from '../../src/formats/registry.js';
import { MAX_URLS_PER_SITEMAP, renderSitemaps, sitemapFileOf, sitemapFormat, SITEMAP_LIMITS } from '../../src/formats/sitemap.js';
import type { Format, SiteContext } from '../../src/formats/format.js';
import type { SiteIndex } from '../../src/model/views.js';
import { buildSite } from '../../src/pipeline/site-build.js';
import { readTree } from '../helpers/cli.js';
import { createDemoDb, tempDir, testConfig } from '../helpers/site-fixture.js';
import { SCHEMAS, xmllintSchema, xpath } from '../helpers/validators.js';
import { join } from 'node:path';

/** sitemaps.org: at most 50,000 URLs and 52,428,800 bytes per file; past that, an index of parts. */

const site = createSiteContext(testConfig(), FORMATS, new Date(Date.UTC(2026, 0, 1)));

function* urls(count: number, shape = (i: number) => `https://videos.example.org/user${i}/rss/`): Generator<string> {
  for (let i = 0; i < count; i++) yield shape(i);
}

function locs(document: string): string[] {
  return [...document.matchAll(/<loc>([^<]*)<\/loc>/g)].map((m) => m[1]!.replaceAll('&amp;', '&'));
}

describe('sitemap split', () => {
  it('makes an index of numbered sitemaps past 50,000 URLs, all valid against the sitemaps.org schemas', () => {
    const count = 2 * MAX_URLS_PER_SITEMAP + 7;
    const files = [...renderSitemaps(urls(count), site)];
    expect(files.map((f) => f.file)).toEqual(['sitemap-1.xml', 'sitemap-2.xml', 'sitemap-3.xml', 'sitemap.xml']);
    const index = files.at(-1)!.body;
    const parts = Object.fromEntries(files.slice(0, -1).map((f) => [f.file, f.body]));

    expect(xmllintSchema(join(SCHEMAS, 'siteindex.xsd'), { index }).ok).toBe(true);
    const validation = xmllintSchema(join(SCHEMAS, 'sitemap.xsd'), parts);
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
    expect(xmllintSchema(join(SCHEMAS, 'sitemap.xsd'), { sitemap: files[0]!.body }).ok).toBe(true);
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
    const validation = xmllintSchema(join(SCHEMAS, 'sitemap.xsd'), Object.fromEntries(parts.map((p) => [p.file, p.body])));
    expect(validation.ok, validation.output.slice(0, 2000)).toBe(true);
    expect(xmllintSchema(join(SCHEMAS, 'siteindex.xsd'), { index: files.at(-1)!.body }).ok).toBe(true);
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
    const build = () => buildSite({ db: fixture.file, out, stateFile: join(work.dir, 'state.sqlite'), config, site: ctx, formats: counting });
    return { fixture, out, calls, build, ctx };
  }

  it('lists every published document once, in parts by id that the sitemaps.org schemas accept, under an index of the parts', () => {
    const { fixture, out, build } = built();
    expect(build().failed).toEqual([]);
    const tree = readTree(out);
    const parts = [...tree.keys()].filter((path) => /^sitemap-(users|videos)-\d+\.xml$/.test(path)).sort();
    expect(parts.length).toBeGreaterThan(4);
    const text = (path: string) => tree.get(path)!.toString('utf8');
    expect(xmllintSchema(join(SCHEMAS, 'siteindex.xsd'), { index: text('sitemap.xml') }).ok).toBe(true);
    const validation = xmllintSchema(join(SCHEMAS, 'sitemap.xsd'), Object.fromEntries(parts.map((p) => [p, text(p)])));
    expect(validation.ok, validation.output.slice(0, 2000)).toBe(true);
    // The index lists exactly the parts on disk, users first, each range in order.
    const order = (p: string) => [p.includes('-users-') ? 0 : 1, Number(/-(\d+)\.xml$/.exec(p)![1])];
    const byRange = [...parts].sort((a, b) => order(a)[0]! - order(b)[0]! || order(a)[1]! - order(b)[1]!);
    expect(locs(text('sitemap.xml'))).toEqual(byRange.map((p) => `https://videos.example.org/${p}`));
    // Each part holds the owners of its id range, and together they list what one sitemap.xml would.
    const users = fixture.db.prepare(`SELECT id, username FROM users WHERE state = 'active'`).all() as Array<{ id: number; username: string }>;
    for (const user of users.filter((u) => !u.username.includes('/') && tree.has(`${u.username}/rss/index.rss`))) {
      const part = `sitemap-users-${Math.floor(user.id / usersPerPart)}.xml`;
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
    // The renamed user's range alone is read again (videos: the ranges of their uploads).
    expect(calls.filter((c) => c.startsWith('users'))).toEqual([`users ${k * usersPerPart}..${(k + 1) * usersPerPart - 1}`]);
    const after = readTree(out);
    const changed = [...after.keys()].filter((p) => p.startsWith('sitemap') && !before.get(p)?.equals(after.get(p)!));
    expect(changed).toContain(`sitemap-users-${k}.xml`);
    expect(changed.filter((p) => p.startsWith('sitemap-users-'))).toEqual([`sitemap-users-${k}.xml`]);
    expect(locs(after.get(`sitemap-users-${k}.xml`)!.toString('utf8'))).toContain('https://videos.example.org/renamed-one/rss/');

    // Every user of that range suspended: the part goes, and the index no longer lists it.
    fixture.db.prepare(`UPDATE users SET state = 'suspended' WHERE id BETWEEN ? AND ?`).run(k * usersPerPart, (k + 1) * usersPerPart - 1);
    expect(build().mode).toBe('incremental');
    const gone = readTree(out);
    expect(gone.has(`sitemap-users-${k}.xml`)).toBe(false);
    expect(gone.get('sitemap.xml')!.toString('utf8')).not.toContain(`sitemap-users-${k}.xml`);
    const whole = readTree(join(buildWhole(fixture.file, formats), 'out'));
    for (const path of [...whole.keys()].filter((p) => p.startsWith('sitemap'))) expect(gone.get(path)?.equals(whole.get(path)!), path).toBe(true);
    expect([...gone.keys()].filter((p) => p.startsWith('sitemap')).sort()).toEqual([...whole.keys()].filter((p) => p.startsWith('sitemap')).sort());
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
