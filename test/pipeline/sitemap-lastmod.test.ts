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
import { createDemoDb, testConfig } from '../helpers/site-fixture.js';
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
