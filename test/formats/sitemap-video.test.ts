import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sitemapFormat, SITEMAP_LIMITS } from '../../src/formats/sitemap.js';
import { embedPageFormat } from '../../src/formats/embed-page.js';
import type { Format } from '../../src/formats/format.js';
import { FORMATS } from '../../src/formats/registry.js';
import { buildSite } from '../../src/pipeline/site-build.js';
import { readTree } from '../helpers/cli.js';
import { buildInMemory, createDemoDb, createTestDb, insertUser, insertVideo, testConfig } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';
import { SCHEMAS, xmllintSchema, xpath } from '../helpers/validators.js';

/**
 * The sitemap's video entries (Google's video extension): every published video's own page, once,
 * described by values equal to the database's, checked by xmllint against the extension's schema
 * and read back with XPath; nothing private; a long description cut on a character boundary.
 */

/** The text of `name` in the video entry whose page is `loc`, read by xmllint's XPath. */
function field(sitemap: string, loc: string, name: string): string {
  const el = (n: string) => `*[local-name()='${n}']`;
  return xpath(sitemap, `string(//${el('url')}[${el('loc')}='${loc}']/${el('video')}/${el(name)})`);
}

describe('the video sitemap', () => {
  it('describes every published video once, by its page, valid against the extension schema', () => {
    const f = createDemoDb();
    const sitemap = buildInMemory(f.file, { only: new Set(['sitemap']) }).writer.text('sitemap.xml');
    expect(xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), { sitemap })).toMatchObject({ ok: true });
    const db = new Database(f.file, { readonly: true });
    const published = db
      .prepare<[], { public_id: string }>(`SELECT v.public_id FROM videos v JOIN users u ON u.id = v.user_id WHERE v.visibility = 'public' AND u.state = 'active'`)
      .all()
      .map((r) => r.public_id);
    const described = [...sitemap.matchAll(/<url><loc>([^<]*)<\/loc>(?:<lastmod>[^<]*<\/lastmod>)?<video:video>/g)].map((m) => m[1]!);
    const page = (id: string) => `https://videos.example.org/${encodeURIComponent(id)}/embed/`;
    // Hostile ids the build skips are skipped here too: every described page is a published video's, once.
    expect(new Set(described).size).toBe(described.length);
    expect(described.length).toBeGreaterThan(published.length * 0.8);
    for (const loc of described) expect(published.map(page)).toContain(loc.replace(/&amp;/g, '&'));
    const privateOnes = db.prepare<[], { public_id: string }>(`SELECT public_id FROM videos WHERE visibility <> 'public'`).all();
    for (const { public_id } of privateOnes) expect(described).not.toContain(page(public_id));
    db.close();
  });

  it('carries the database values: title, description, file, duration, date and uploader', () => {
    const { db, file } = createTestDb();
    const ann = insertUser(db, { username: 'ann', display_name: 'Ann "the" <Uploader>' });
    const title = 'A </script> "quoted" & \u202Eright-to-left\u202C title';
    const description = `${'ö'.repeat(2046)}😀😀 and more`;
    insertVideo(db, ann.id, { public_id: 'clip', title, description, duration_seconds: 600, created_at: 1_700_000_000 });
    insertVideo(db, ann.id, { public_id: 'long', duration_seconds: 28_801 });
    insertVideo(db, ann.id, { public_id: 'hidden', visibility: 'private' });
    const sitemap = buildInMemory(file, { only: new Set(['sitemap']) }).writer.text('sitemap.xml');
    expect(xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), { sitemap })).toMatchObject({ ok: true });
    const loc = 'https://videos.example.org/clip/embed/';
    expect(field(sitemap, loc, 'title')).toBe(title);
    // 2,048 characters, the second emoji cut whole rather than split into half a surrogate pair.
    expect(field(sitemap, loc, 'description')).toBe(`${'ö'.repeat(2046)}😀😀`);
    expect(field(sitemap, loc, 'content_loc')).toMatch(/^https:\/\/cdn\.example\.org\/v\/\d+\.flv$/);
    expect(field(sitemap, loc, 'duration')).toBe('600');
    expect(field(sitemap, loc, 'publication_date')).toBe('2023-11-14T22:13:20Z');
    expect(field(sitemap, loc, 'uploader')).toBe('Ann "the" <Uploader>');
    expect(xpath(sitemap, `string(//*[local-name()='uploader']/@info)`)).toBe('https://videos.example.org/ann/');
    // A duration Google does not take is left out; a private video is not there at all.
    expect(sitemap).toContain('<loc>https://videos.example.org/long/embed/</loc>');
    expect(field(sitemap, 'https://videos.example.org/long/embed/', 'duration')).toBe('');
    expect(sitemap).not.toContain('hidden');
  });

  it('names as the player the video format marked `player`, whatever its name, and none when the table has none', () => {
    const { db, file } = createTestDb();
    const ann = insertUser(db, { username: 'ann' });
    insertVideo(db, ann.id, { public_id: 'clip' });
    // The site's own video pages, so that the embed page is not the listed page itself.
    const config = testConfig({ pages: { ...testConfig().pages, video: '{base}/watch/{video}' } });
    const work = tempDir('vidfeeds-video-player-');
    const sitemapOf = (name: string, formats: readonly Format[]) => {
      const out = join(work.dir, name);
      buildSite({ db: file, out, stateFile: join(work.dir, `${name}.state`), config, formats, writeThread: false });
      return readFileSync(join(out, 'sitemap.xml'), 'utf8');
    };
    const loc = 'https://videos.example.org/watch/clip';
    const shipped = sitemapOf('shipped', FORMATS);
    expect(xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), { sitemap: shipped })).toMatchObject({ ok: true });
    expect(field(shipped, loc, 'player_loc')).toBe('https://videos.example.org/clip/embed/');
    const renamed = { ...embedPageFormat, name: 'player-page', dir: 'play' };
    expect(field(sitemapOf('renamed', FORMATS.map((f) => (f === embedPageFormat ? renamed : f))), loc, 'player_loc')).toBe('https://videos.example.org/clip/play/');
    const none = sitemapOf('none', FORMATS.filter((f) => f !== embedPageFormat));
    expect(field(none, loc, 'player_loc')).toBe('');
    expect(field(none, loc, 'content_loc')).toMatch(/^https:\/\/cdn\.example\.org\//);
  });

  it('on a site split by id, an edited title rewrites only the part that lists the video', () => {
    const { db, file } = createTestDb();
    const ann = insertUser(db, { username: 'ann' });
    for (let i = 0; i < 40; i++) insertVideo(db, ann.id, { id: 5000 + i, public_id: `v${i}` });
    const split = sitemapFormat({ ...SITEMAP_LIMITS, maxUrls: 50, partUrls: 10 });
    const formats = FORMATS.map((f) => (f.name === 'sitemap' ? split : f));
    const work = tempDir('vidfeeds-video-sitemap-');
    const out = join(work.dir, 'out');
    const build = () => buildSite({ db: file, out, stateFile: join(work.dir, 'state'), config: testConfig(), formats, writeThread: false });
    build();
    const before = readTree(out);
    const parts = [...before.keys()].filter((p) => p.startsWith('sitemap-videos-'));
    expect(parts.length).toBeGreaterThan(3);
    const validation = xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), Object.fromEntries(parts.map((p) => [p, before.get(p)!.toString('utf8')])));
    expect(validation.ok, validation.output.slice(0, 2000)).toBe(true);

    db.prepare(`UPDATE videos SET title = 'Retitled' WHERE public_id = 'v17'`).run();
    expect(build().mode).toBe('incremental');
    const after = readTree(out);
    const changed = [...after.keys()].filter((p) => p.startsWith('sitemap') && !before.get(p)?.equals(after.get(p)!));
    expect(changed).toHaveLength(1);
    expect(after.get(changed[0]!)!.toString('utf8')).toContain('<video:title>Retitled</video:title>');

    // A description shows in no document of the video (its uploader's feed aside), yet in its entry.
    db.prepare(`UPDATE videos SET description = 'Described anew' WHERE public_id = 'v17'`).run();
    expect(build().mode).toBe('incremental');
    expect(readTree(out).get(changed[0]!)!.toString('utf8')).toContain('<video:description>Described anew</video:description>');
  });
  it('describes no video whose title is blank once cleaned, and gives a blank description the title', () => {
    const { db, file } = createTestDb();
    const ann = insertUser(db, { username: 'ann' });
    insertVideo(db, ann.id, { public_id: 'bell', title: '\u0007' });
    insertVideo(db, ann.id, { public_id: 'mute', title: 'Mute', description: '\u0003\u0004 ' });
    // A flag is two code points: one across the 2,048th character goes whole.
    insertVideo(db, ann.id, { public_id: 'flag', title: 'Flag', description: `${'a'.repeat(2047)}\u{1F1EF}\u{1F1F5}` });
    const sitemap = buildInMemory(file, { only: new Set(['sitemap']) }).writer.text('sitemap.xml');
    expect(xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), { sitemap })).toMatchObject({ ok: true });
    expect(sitemap).toContain('<loc>https://videos.example.org/bell/embed/</loc>');
    expect(field(sitemap, 'https://videos.example.org/bell/embed/', 'title')).toBe('');
    expect(field(sitemap, 'https://videos.example.org/mute/embed/', 'description')).toBe('Mute');
    expect(field(sitemap, 'https://videos.example.org/flag/embed/', 'description')).toBe('a'.repeat(2047));
  });

  it('carries no URL longer than 2,048 characters: the entry goes without it, and without video:video for a thumbnail', () => {
    const { db, file } = createTestDb();
    const ann = insertUser(db, { username: 'ann' });
    const long = (what: string) => `https://cdn.example.org/${what}/${'x'.repeat(2100)}`;
    insertVideo(db, ann.id, { public_id: 'thumb', thumbnail_url: long('t') });
    insertVideo(db, ann.id, { public_id: 'file', title: 'Long file', file_url: long('v') });
    // Pages of the site's own, so that the embed page is the player a video:video can name.
    const config = testConfig({ pages: { ...testConfig().pages, video: '{base}/watch/{video}' } });
    const sitemap = buildInMemory(file, { only: new Set(['sitemap']), config }).writer.text('sitemap.xml');
    expect(xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), { sitemap })).toMatchObject({ ok: true });
    expect(sitemap).toContain('<url><loc>https://videos.example.org/watch/thumb</loc>');
    expect(field(sitemap, 'https://videos.example.org/watch/thumb', 'title')).toBe('');
    const loc = 'https://videos.example.org/watch/file';
    expect(field(sitemap, loc, 'title')).toBe('Long file');
    expect(field(sitemap, loc, 'player_loc')).toBe('https://videos.example.org/file/embed/');
    expect(field(sitemap, loc, 'content_loc')).toBe('');
    expect(sitemap).not.toContain('x'.repeat(2100));
  });

  it('counts the text it writes, not the text it cuts: a title far over 100 characters keeps the sitemap one file', () => {
    const { db, file } = createTestDb();
    const ann = insertUser(db, { username: 'ann', display_name: 'D'.repeat(10_000) });
    insertVideo(db, ann.id, { public_id: 'huge', title: 'T'.repeat(40_000) });
    // Counted uncut (6 bytes a character at most), the title alone would pass the byte limit.
    const formats = FORMATS.map((f) => (f.name === 'sitemap' ? sitemapFormat({ ...SITEMAP_LIMITS, maxBytes: 200_000 }) : f));
    const work = tempDir('vidfeeds-video-sitemap-');
    const out = join(work.dir, 'out');
    buildSite({ db: file, out, stateFile: join(work.dir, 'state'), config: testConfig(), formats, writeThread: false, only: new Set(['sitemap']) });
    const sitemap = readFileSync(join(out, 'sitemap.xml'), 'utf8');
    expect(sitemap).toContain('<urlset');
    expect(field(sitemap, 'https://videos.example.org/huge/embed/', 'title')).toBe('T'.repeat(100));
    expect(field(sitemap, 'https://videos.example.org/huge/embed/', 'uploader')).toBe('D'.repeat(255));
  });

  it('keeps every part the index lists when a part fails: a build that stops part-way prunes none of them', () => {
    const { db, file } = createTestDb();
    const ann = insertUser(db, { username: 'ann' });
    for (let i = 0; i < 40; i++) insertVideo(db, ann.id, { id: 5000 + i, public_id: `v${i}`, description: 'short' });
    // Small parts, and a byte limit a part of a few short entries keeps and one 2,048-character description breaks.
    const split = sitemapFormat({ ...SITEMAP_LIMITS, maxUrls: 50, partUrls: 10, maxBytes: 15_000 });
    const formats = FORMATS.map((f) => (f.name === 'sitemap' ? split : f));
    const work = tempDir('vidfeeds-video-sitemap-');
    const out = join(work.dir, 'out');
    const build = (full = false) => buildSite({ db: file, out, stateFile: join(work.dir, 'state'), config: testConfig(), formats, writeThread: false, full });
    expect(build().failedCount).toBe(0);
    const before = readTree(out);
    const parts = [...before.keys()].filter((p) => p.startsWith('sitemap-videos-')).sort();
    expect(parts.length).toBeGreaterThan(3);

    db.prepare(`UPDATE videos SET description = ? WHERE public_id = 'v3'`).run('d'.repeat(2048));
    for (const full of [false, true]) {
      const report = build(full);
      expect(report.failed.map((f) => f.path)).toEqual(['sitemap.xml']);
      const after = readTree(out);
      // The index keeps its bytes, and every part it lists is still there.
      expect(after.get('sitemap.xml')!.equals(before.get('sitemap.xml')!)).toBe(true);
      const listed = [...after.get('sitemap.xml')!.toString('utf8').matchAll(/<loc>https:\/\/videos\.example\.org\/([^<]+)<\/loc>/g)].map((m) => m[1]!);
      expect(listed.length).toBeGreaterThan(parts.length);
      for (const part of listed) expect(after.has(part), part).toBe(true);
    }
    // The value fixed, the next build writes the sitemap and its parts whole again.
    db.prepare(`UPDATE videos SET description = 'short again' WHERE public_id = 'v3'`).run();
    expect(build().failedCount).toBe(0);
    expect(readTree(out).get('sitemap.xml')!.equals(before.get('sitemap.xml')!)).toBe(true);
  });
});
