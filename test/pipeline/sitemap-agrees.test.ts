import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { BuildState } from '../../src/pipeline/build-state.js';
import { runBuild } from '../../src/pipeline/run-build.js';
import { MemoryWriter } from '../../src/pipeline/write/output-writer.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import type { Format, UserFormat, VideoFormat } from '../../src/formats/format.js';
import { FORMATS } from '../../src/formats/registry.js';
import { MIGRATIONS } from '../../src/db/migrations.js';
import { T0, testConfig } from '../helpers/site-fixture.js';
import { xpath } from '../helpers/validators.js';

/** The tree agrees with itself: the sitemap lists no document that failed and no row that was skipped. */

/** Formats that fail for one key, listed in the sitemap like the real ones. */
const failingUser: UserFormat = {
  name: 'fails-for-bob', scope: 'user', dir: 'probe', file: 'index.txt', urlName: '', mediaType: 'text/plain',
  inSitemap: true, summary: 'test probe', cacheClass: 'feeds', needs: [],
  render: ({ user }) => {
    if (user.username === 'bob') throw new Error('cannot render bob');
    return user.username;
  },
};
const failingVideo: VideoFormat = {
  name: 'fails-for-v2', scope: 'video', dir: 'vprobe', file: 'index.txt', urlName: '', mediaType: 'text/plain',
  inSitemap: true, summary: 'test probe', cacheClass: 'profiles',
  render: ({ video }) => {
    if (video.publicId === 'v2') throw new Error('cannot render v2');
    return video.publicId;
  },
};
const PROBED: readonly Format[] = [...FORMATS, failingUser, failingVideo];

describe('the sitemap', () => {
  it('lists no document that failed and no row that was skipped, and every other', () => {
    // Schema version 1: a database from before the type checks, holding a bad time.
    const db = new Database(':memory:');
    db.exec(MIGRATIONS[0]!);
    // The columns of migration 3 (moderation) that the reader reads, without the later type checks.
    db.exec(`
      ALTER TABLE recommendations ADD COLUMN status TEXT NOT NULL DEFAULT 'approved';
      ALTER TABLE recommendations ADD COLUMN submitter_address TEXT;
      ALTER TABLE recommendations ADD COLUMN reviewed_at INTEGER;
    `);
    db.exec(`
      INSERT INTO users (id, username, created_at, updated_at) VALUES (1, 'alice', ${T0}, ${T0}), (2, 'bob', ${T0}, ${T0}),
        (3, 'carol', 'yesterday', ${T0});
      INSERT INTO videos (id, public_id, user_id, title, file_url, thumbnail_url, created_at, updated_at) VALUES
        (1, 'v1', 1, 'One', 'https://c.example/1.mp4', 'https://c.example/1.jpg', ${T0}, ${T0}),
        (2, 'v2', 1, 'Two', 'https://c.example/2.mp4', 'https://c.example/2.jpg', ${T0}, ${T0}),
        (3, 'v3', 1, 'Three', 'https://c.example/3.mp4', 'https://c.example/3.jpg', 'soon', ${T0});
    `);
    const site = createSiteContext(testConfig(), PROBED, new Date(Date.UTC(2026, 0, 1)));
    const writer = new MemoryWriter();
    const state = new BuildState(':memory:');
    const warnings: string[] = [];
    const report = runBuild({ reader: new SiteReader(db, readLimits(8)), writer, state, site, formats: PROBED, reporter: { warn: (m) => warnings.push(m) } });
    state.close();

    expect(report.failed.map((f) => `${f.format}:${f.key}`).sort()).toEqual(['fails-for-bob:bob', 'fails-for-v2:v2']);
    expect(warnings.some((w) => w.includes('users id=3, column created_at: found text "yesterday"'))).toBe(true);
    expect(warnings.some((w) => w.startsWith('skipped video "v3"'))).toBe(true);

    const sitemap = writer.files.get('sitemap.xml')!.toString('utf8');
    const listed = xpath(sitemap, "//*[local-name()='loc']/text()").split('\n').map((l) => l.trim()).filter(Boolean);
    const base = 'https://videos.example.org';
    // The failed documents are not listed; the same owners' other documents are.
    expect(listed).not.toContain(`${base}/bob/probe/`);
    expect(listed).not.toContain(`${base}/v2/vprobe/`);
    expect(listed).toContain(`${base}/bob/rss/`);
    expect(listed).toContain(`${base}/v2/oembed/`);
    expect(listed).toContain(`${base}/alice/probe/`);
    expect(listed).toContain(`${base}/v1/vprobe/`);
    // Skipped rows are not listed at all.
    expect(listed.some((url) => url.startsWith(`${base}/carol/`))).toBe(false);
    expect(listed.some((url) => url.startsWith(`${base}/v3/`))).toBe(false);
    // The videos' own pages are listed for the published videos, v2 among them (its failed
    // document is not the page); every other URL listed is a file of the tree.
    const pages = new Set(['v1', 'v2', 'v3'].map((id) => site.paths.videoPage(id)));
    expect(listed.filter((url) => pages.has(url))).toEqual([site.paths.videoPage('v1'), site.paths.videoPage('v2')]);
    for (const url of listed.filter((u) => !pages.has(u))) {
      const path = url.slice(base.length + 1);
      const format = PROBED.find((f) => f.scope !== 'site' && path.endsWith(`/${f.dir}/${f.urlName}`) && f.inSitemap)!;
      expect(format, url).toBeDefined();
      const key = decodeURIComponent(path.split('/')[0]!);
      expect(writer.files.has(`${key}/${(format as UserFormat).dir}/${(format as UserFormat).file}`), url).toBe(true);
    }
    db.close();
  });
});
