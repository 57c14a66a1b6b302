import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BuildState } from '../../src/pipeline/build-state.js';
import { runBuild } from '../../src/pipeline/run-build.js';
import { DirectoryWriter } from '../../src/pipeline/write/output-writer.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { FORMATS } from '../../src/formats/registry.js';
import { routesOf } from '../../src/hosting/routes.js';
import { listen } from '../../src/serve/http-server.js';
import { SiteServer } from '../../src/serve/site-server.js';
import { http } from '../helpers/http.js';
import { createTestDb, insertRow, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';
import { cleanUpAfterTest, tempDir } from '../helpers/temp-dir.js';

/**
 * `vidfeeds serve` refuses every key the build refuses, by the same rule (src/paths/names.ts):
 * reserved names (site-wide files, in any letter case, numbered sitemaps) and names that are not
 * safe as paths, as a video id and as a username, from files and from the database alike.
 */

const REFUSED = [
  'robots.txt', 'ROBOTS.TXT', 'sitemap.xml', 'Sitemap.xml', 'sitemap-1.xml', 'sitemap-77.xml', 'sitemap-videos-12.xml', 'sitemap-users-0-70.xml', 'opensearch.xml', 'crossdomain.xml',
  '.hidden', 'gnp\u202e.exe', 'zero\u200bwidth', 'non\ufdd0char', 'bad\ufffdbytes',
];

describe('serve and the build agree on names', () => {
  it('answers 404 (with nosniff) for every reserved or unsafe name as a video id and a username, on every route', async () => {
    const fixture = createTestDb();
    const work = tempDir('vidfeeds-serve-names-');
    cleanUpAfterTest(fixture.cleanup, work.cleanup);
    const owner = insertUser(fixture.db, { username: 'owner' });
    insertVideo(fixture.db, owner.id, { public_id: 'fine' });
    for (const name of REFUSED) {
      insertVideo(fixture.db, owner.id, { public_id: name });
      const u = insertUser(fixture.db, { username: name });
      insertRow(fixture.db, 'recommendations', { user_id: u.id, title: 'R', link: 'https://r.example/', image: 'https://r.example/i.jpg', created_at: T0 });
    }
    const config = testConfig();
    const site = createSiteContext(config, FORMATS, new Date(Date.UTC(2026, 0, 1)));
    const root = join(work.dir, 'out');
    const readDb = new Database(fixture.file, { readonly: true });
    const writer = new DirectoryWriter(root);
    const state = new BuildState(':memory:');
    const report = runBuild({ reader: new SiteReader(readDb, readLimits(8)), writer, state, site, formats: FORMATS });
    writer.close();
    state.close();
    // The build refused every one of them, as a user and as a video.
    expect(report.skipped.map((s) => `${s.kind}:${s.key}`).sort()).toEqual(REFUSED.flatMap((n) => [`user:${n}`, `video:${n}`]).sort());
    expect(existsSync(join(root, 'fine', 'oembed', 'index.json'))).toBe(true);

    const server = new SiteServer({ root, site, routes: routesOf(FORMATS), db: readDb, openForWriting: () => new Database(fixture.file) });
    const running = await listen(server, { host: '127.0.0.1', port: 0 });
    cleanUpAfterTest(() => {
      void running.close();
      server.close();
      readDb.close();
    });

    const videoTargets = (key: string) => [
      `/${key}/oembed/`, `/${key}/oembed/json`, `/${key}/oembed/xml`, `/${key}/oembed/html`,
      `/${key}/oembed/?format=xml`, `/${key}/oembed/?maxwidth=100`, `/${key}/oembed/?callback=cb`,
      `/${key}/oembed/?url=${encodeURIComponent(`https://videos.example.org/${encodeURIComponent(key)}/`)}`,
    ];
    const userTargets = (key: string) => [
      ...FORMATS.filter((f) => f.scope === 'user').map((f) => `/${key}/${f.dir}/${f.scope === 'user' ? f.urlName : ''}`),
      `/${key}/openrecommender/?recommendations=3`,
    ];
    for (const name of REFUSED) {
      const key = encodeURIComponent(name);
      for (const target of [...videoTargets(key), ...userTargets(key)]) {
        const r = await http(running.port, target);
        expect(r.status, target).toBe(404);
        expect(r.headers['x-content-type-options'], target).toBe('nosniff');
      }
      const post = await http(running.port, `/${key}/openrecommender/`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: 'title=T&link=https%3A%2F%2Fe.example%2F&image=https%3A%2F%2Fe.example%2Fi.jpg',
      });
      expect(post.status, `POST as ${name}`).toBe(404);
    }
    // The published ones still answer, from the files and from the database.
    expect((await http(running.port, '/fine/oembed/?maxwidth=100')).status).toBe(200);
    expect((await http(running.port, '/owner/rss/')).status).toBe(200);
    // Errors the HTTP layer answers itself carry nosniff too.
    const tooLarge = await http(running.port, '/owner/openrecommender/', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'x'.repeat(20_000),
    });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers['x-content-type-options']).toBe('nosniff');
  });
});
