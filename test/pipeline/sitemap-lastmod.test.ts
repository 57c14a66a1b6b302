import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BuildState } from '../../src/pipeline/build-state.js';
import { runBuild } from '../../src/pipeline/run-build.js';
import { MemoryWriter } from '../../src/pipeline/write/output-writer.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import type { UserFormat, VideoFormat } from '../../src/formats/format.js';
import { FORMATS } from '../../src/formats/registry.js';
import { sitemapFormat, SITEMAP_LIMITS } from '../../src/formats/sitemap.js';
import { buildSite } from '../../src/pipeline/site-build.js';
import { readTree } from '../helpers/cli.js';
import { createDemoDb, createTestDb, insertUser, insertVideo, testConfig } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';
import { SCHEMAS, xmllintSchema } from '../helpers/validators.js';

/**
 * The sitemap's `<lastmod>` is the time a document's bytes last changed, kept in the build state:
 * a rebuild that changes nothing moves none, and a change to one video moves exactly the lastmod
 * of the URLs whose documents changed. Read with Python's xml.etree, not our code.
 */

/** loc → lastmod of a sitemap, as Python's ElementTree reads it. */
function lastmods(sitemap: string): Map<string, string> {
  const script = `
import sys, json, xml.etree.ElementTree as ET
ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
root = ET.fromstring(sys.stdin.read())
print(json.dumps([[u.findtext("s:loc", None, ns), u.findtext("s:lastmod", None, ns)] for u in root.findall("s:url", ns)]))
`;
  const result = spawnSync('/usr/bin/python3', ['-c', script], { input: sitemap, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(result.stderr);
  return new Map(JSON.parse(result.stdout) as Array<[string, string]>);
}

describe('the sitemap lastmod', () => {
  it('moves for exactly the documents whose bytes changed, and not at all in a build that changes nothing', () => {
    const fixture = createDemoDb({ users: 14, seed: 3 });
    const config = testConfig();
    const state = new BuildState(':memory:');
    const writer = new MemoryWriter();
    const build = (at: string) => {
      const db = new Database(fixture.file, { readonly: true });
      try {
        const site = createSiteContext(config, FORMATS, new Date(at));
        const report = runBuild({ reader: new SiteReader(db, readLimits(config.recommendationsCount)), writer, state, site, formats: FORMATS });
        expect(report.failed).toEqual([]);
        return site;
      } finally {
        db.close();
      }
    };
    const site = build('2026-01-01T00:00:00Z');
    const first = writer.text('sitemap.xml');
    expect(xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), { sitemap: first }).ok).toBe(true);
    const dates = lastmods(first);
    expect(dates.size).toBeGreaterThan(50);
    expect(new Set(dates.values())).toEqual(new Set(['2026-01-01T00:00:00Z']));

    // Nothing changed: the same sitemap, byte for byte.
    build('2026-01-02T00:00:00Z');
    expect(writer.text('sitemap.xml')).toBe(first);

    // One video's title changes: its oEmbed, its uploader's feed and every list showing it change.
    const video = fixture.db
      .prepare<[], { public_id: string; username: string }>(
        `SELECT v.public_id, u.username FROM videos v JOIN users u ON u.id = v.user_id
         WHERE v.visibility = 'public' AND u.state = 'active' ORDER BY v.created_at DESC, v.id LIMIT 1`,
      )
      .get()!;
    const before = new Map([...writer.files].map(([path, body]) => [path, Buffer.from(body)]));
    fixture.db.prepare('UPDATE videos SET title = ? WHERE public_id = ?').run('A new title', video.public_id);
    build('2026-01-03T00:00:00Z');
    const after = lastmods(writer.text('sitemap.xml'));
    expect([...after.keys()]).toEqual([...dates.keys()]);

    // What changed on disk, among the documents the sitemap lists, by URL.
    const listed = FORMATS.filter((f): f is UserFormat | VideoFormat => f.scope !== 'site' && f.inSitemap);
    const changedUrls = new Set<string>();
    for (const url of after.keys()) {
      const [key, dir] = decodeURIComponent(new URL(url).pathname).split('/').slice(1);
      // A video's page is by default its embed page, which the sitemap lists as the video's page.
      const format = listed.find((f) => f.dir === dir) ?? FORMATS.find((f): f is VideoFormat => f.scope === 'video' && f.dir === dir && f.urlName === '')!;
      const file = site.paths.file(format, key!);
      if (!before.get(file)!.equals(writer.files.get(file)!)) changedUrls.add(url);
    }
    const moved = new Set([...after].filter(([, lastmod]) => lastmod === '2026-01-03T00:00:00Z').map(([url]) => url));
    expect(moved).toEqual(changedUrls);
    expect(moved).toContain(site.paths.url(listed.find((f) => f.name === 'oembed')!, video.public_id));
    expect(moved).toContain(site.paths.url(listed.find((f) => f.name === 'rss')!, video.username));
    expect(moved.size).toBeLessThan(after.size / 4);
    for (const [url, lastmod] of after) if (!moved.has(url)) expect(lastmod, url).toBe('2026-01-01T00:00:00Z');
    state.close();
  });
});

describe("a video's own entry in the sitemap", () => {
  // Split by id, so that "its part and nothing else" can be told from the rest; and in one file.
  it.each([
    ['split by id', { ...SITEMAP_LIMITS, maxUrls: 30, partUrls: 24 }],
    ['in one file', SITEMAP_LIMITS],
  ])('moves its lastmod when only its description, then only its duration, changes: its part is rewritten, nothing else, and a full build agrees (%s)', (_, limits) => {
    const fixture = createDemoDb({ users: 24, seed: 5 });
    const work = tempDir('vidfeeds-entry-lastmod-');
    const formats = FORMATS.map((f) => (f.name === 'sitemap' ? sitemapFormat(limits) : f));
    const config = testConfig();
    const out = join(work.dir, 'out');
    const build = (at: string, full = false) => {
      const written: string[] = [];
      const site = createSiteContext(config, formats, new Date(at));
      const report = buildSite({ db: fixture.file, out, stateFile: join(work.dir, 'state.sqlite'), config, site, formats, full, reporter: { wrote: (path) => written.push(path) } });
      expect(report.failed).toEqual([]);
      return { report, written: written.sort(), site };
    };
    const { site } = build('2026-01-01T00:00:00Z');
    // The files that list URLs: the parts, or sitemap.xml itself on a site in one file.
    const listing = (path: string) => (limits === SITEMAP_LIMITS ? path === 'sitemap.xml' : /^sitemap-(users|videos)-/.test(path));
    const parts = () => new Map([...readTree(out)].filter(([path]) => listing(path)).map(([path, body]) => [path, lastmods(body.toString('utf8'))]));
    const first = parts();
    // A published video whose page is listed with a duration Google takes.
    const candidates = fixture.db
      .prepare<[], { id: number; public_id: string }>(`SELECT id, public_id FROM videos WHERE visibility = 'public' AND duration_seconds BETWEEN 1 AND 28000 ORDER BY id`)
      .all();
    const video = candidates.find((v) => [...first.values()].some((dates) => dates.has(site.paths.videoPage(v.public_id))))!;
    const page = site.paths.videoPage(video.public_id);
    const part = [...first].find(([, dates]) => dates.has(page))![0];

    const edits: Array<[string, string, string]> = [
      ['2026-01-02T00:00:00Z', 'description', `UPDATE videos SET description = 'Only the description changed' WHERE id = ${video.id}`],
      ['2026-01-03T00:00:00Z', 'duration', `UPDATE videos SET duration_seconds = duration_seconds + 1 WHERE id = ${video.id}`],
    ];
    let before = first;
    for (const [at, what, sql] of edits) {
      const tree = readTree(out);
      fixture.db.exec(sql);
      const { report, written } = build(at);
      expect(report.mode, what).toBe('incremental');
      const after = parts();
      // The entry of the video's page moved; no other URL of its part did.
      expect(after.get(part)!.get(page), what).toBe(at);
      for (const [loc, lastmod] of after.get(part)!) if (loc !== page) expect(lastmod, `${what}: ${loc}`).toBe(before.get(part)!.get(loc));
      // None of the video's documents shows the field: none was written. Its part was, and of
      // the other parts only those listing a document that was (an uploader's feed shows both fields).
      const ownDocuments = written.filter((path) => path.startsWith(`${video.public_id}/`));
      expect(ownDocuments, what).toEqual([]);
      expect(written, what).toContain(part);
      // The index lists the same parts.
      if (part !== 'sitemap.xml') expect(written, what).not.toContain('sitemap.xml');
      const documents = written.filter((path) => !path.startsWith('sitemap'));
      for (const other of written.filter((path) => listing(path) && path !== part)) {
        const moved = [...after.get(other)!].filter(([loc, lastmod]) => before.get(other)?.get(loc) !== lastmod);
        expect(moved.length, `${what}: ${other} rewritten for nothing`).toBeGreaterThan(0);
        for (const [loc] of moved) expect(documents.some((path) => loc.endsWith(`/${path.split('/').slice(0, 2).join('/')}/`)), `${what}: ${loc}`).toBe(true);
      }
      for (const [path, body] of readTree(out)) if (!written.includes(path)) expect(tree.get(path)?.equals(body), `${what}: ${path} changed unwritten`).toBe(true);
      // A full build of the same database dates every entry as the incremental one did: it writes nothing.
      const again = build(at.replace('T00', 'T12'), true);
      expect(again.report.mode, what).toBe('full');
      expect(again.written, what).toEqual([]);
      before = after;
    }
  });

  it("keeps its lastmod when its row takes the id of a video deleted before: the deleted video's entry is not taken for its own", () => {
    const fixture = createTestDb();
    const work = tempDir('vidfeeds-entry-reused-id-');
    const config = testConfig();
    const out = join(work.dir, 'out');
    const build = (at: string) => {
      const site = createSiteContext(config, FORMATS, new Date(at));
      const report = buildSite({ db: fixture.file, out, stateFile: join(work.dir, 'state.sqlite'), config, site, formats: FORMATS });
      expect(report.failed).toEqual([]);
      return { report, site };
    };
    const { id: uploader } = insertUser(fixture.db, { username: 'uploader' });
    const gone = insertVideo(fixture.db, uploader, { id: 10, public_id: 'gone', title: 'Deleted later' });
    const kept = insertVideo(fixture.db, uploader, { id: 20, public_id: 'kept', title: 'Renumbered later' });
    const { site } = build('2026-01-01T00:00:00Z');
    const page = site.paths.videoPage(kept.publicId);
    expect(lastmods(readTree(out).get('sitemap.xml')!.toString('utf8')).get(page)).toBe('2026-01-01T00:00:00Z');

    fixture.db.prepare('DELETE FROM videos WHERE id = ?').run(gone.id);
    expect(build('2026-01-02T00:00:00Z').report.mode).toBe('incremental');
    // The site renumbers a row (a merge, a restore): nothing the video's documents or its entry show changes.
    const before = readTree(out);
    fixture.db.prepare('UPDATE videos SET id = ? WHERE id = ?').run(gone.id, kept.id);
    expect(build('2026-01-03T00:00:00Z').report.mode).toBe('incremental');
    const after = readTree(out);
    for (const [path, body] of after) if (path.startsWith('kept/')) expect(body.equals(before.get(path)!), path).toBe(true);
    expect(lastmods(after.get('sitemap.xml')!.toString('utf8')).get(page)).toBe('2026-01-01T00:00:00Z');
    fixture.cleanup();
  });

  it('dates what a partial build changed by that build, once the next build renders the sitemap, as a full build does', () => {
    const fixture = createTestDb();
    const work = tempDir('vidfeeds-partial-lastmod-');
    const config = testConfig();
    const out = join(work.dir, 'out');
    const build = (at: string, options: { user?: string; full?: boolean } = {}) => {
      const site = createSiteContext(config, FORMATS, new Date(at));
      const written: string[] = [];
      const report = buildSite({ db: fixture.file, out, stateFile: join(work.dir, 'state.sqlite'), config, site, formats: FORMATS, reporter: { wrote: (path) => written.push(path) }, ...options });
      expect(report.failed).toEqual([]);
      return { report, site, written };
    };
    const { id: uploader, username } = insertUser(fixture.db, { username: 'uploader' });
    insertUser(fixture.db, { username: 'bystander' });
    const video = insertVideo(fixture.db, uploader, { public_id: 'shown' });
    const { site } = build('2026-01-01T00:00:00Z');
    const foafFormat = FORMATS.find((f): f is UserFormat => f.name === 'foaf')!;
    const foaf = site.paths.url(foafFormat, username);
    const page = site.paths.videoPage(video.publicId);

    // What the user's profiles show changes (nothing of their videos); an operator rebuilds the user at once.
    fixture.db.prepare('UPDATE users SET given_name = ? WHERE id = ?').run('Given', uploader);
    const partial = build('2026-01-02T00:00:00Z', { user: username });
    expect(partial.report.mode).toBe('partial');
    expect(partial.written).toContain(`${username}/foaf/index.rdf`);
    // The next build finds those documents as they should be, and the sitemap dates them by the partial build.
    expect(build('2026-01-03T00:00:00Z').report.mode).toBe('incremental');
    const dates = lastmods(readTree(out).get('sitemap.xml')!.toString('utf8'));
    expect(dates.get(foaf)).toBe('2026-01-02T00:00:00Z');
    expect(dates.get(page)).toBe('2026-01-01T00:00:00Z');
    expect(dates.get(site.paths.url(foafFormat, 'bystander'))).toBe('2026-01-01T00:00:00Z');
    // A full build of the same database agrees: it writes nothing.
    expect(build('2026-01-04T00:00:00Z', { full: true }).written).toEqual([]);
    fixture.cleanup();
  });
});
