import Database from 'better-sqlite3';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BuildState } from '../../src/pipeline/build-state.js';
import { StrictModeError } from '../../src/pipeline/build-report.js';
import { runBuild } from '../../src/pipeline/run-build.js';
import { DirectoryWriter } from '../../src/pipeline/write/output-writer.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { FORMATS } from '../../src/formats/registry.js';
import { buildInMemory, createTestDb, insertUser, insertVideo, testConfig } from '../helpers/site-fixture.js';
import { feedparser, jing, SCHEMAS } from '../helpers/validators.js';
import { tempDir } from '../helpers/temp-dir.js';

/** Every file under `dir`, relative, with `/` separators. */
function walk(dir: string, root = dir): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? walk(full, root) : [relative(root, full).split('\\').join('/')];
  });
}

const UNPUBLISHABLE = ['..', '.', '', 'a/b', '../escape', 'back\\slash', 'robots.txt', 'SITEMAP.XML', 'sitemap-3.xml', 'nul\u0000byte', 'tab\tname', '.hidden', ' padded ', 'é'.repeat(150),
  '\u202eevil', 'gnp\u202e.exe', 'zero\u200bwidth', 'soft\u00adhyphen', 'bom\ufeff', 'non\ufdd0char', 'end\u{10ffff}', 'bad\ufffdbytes'];
const PUBLISHABLE = ['<b>bold<b>', ']]>', `q"uo'te&amp;`, 'עברית', 'e\u0301', '🎬', 'a'.repeat(255)];

/** The text an HTML fragment without elements shows: its character references read. */
function shownText(fragment: string): string {
  expect(fragment).not.toMatch(/</);
  return fragment.replace(/&(lt|gt|quot|amp|#x27|#39|#x3D|#x60);/g, (_, name: string) => ({ lt: '<', gt: '>', quot: '"', amp: '&', '#x27': "'", '#39': "'", '#x3D': '=', '#x60': '`' })[name]!);
}

describe('hostile usernames and video ids', () => {
  it('never writes outside out/, reports every unpublishable row, and keeps every document valid', () => {
    const { db, file } = createTestDb();
    const { dir } = tempDir('vidfeeds-out-');
    const out = join(dir, 'out');
    const owner = insertUser(db, { username: 'owner' });
    for (const name of UNPUBLISHABLE) insertVideo(db, owner.id, { public_id: name });
    for (const name of [...UNPUBLISHABLE, ...PUBLISHABLE]) {
      const u = insertUser(db, { username: name, display_name: `<script>alert(1)</script>]]>${name}` });
      insertVideo(db, u.id, { title: `<i>${name}</i> ]]> &copy;` });
    }
    db.close();

    const state = new BuildState(join(dir, 'state.sqlite'));
    const writer = new DirectoryWriter(out);
    const reader = new SiteReader(new Database(file, { readonly: true }), readLimits(8));
    const warnings: string[] = [];
    const site = createSiteContext(testConfig({ siteName: 'Q&A <Videos>' }), FORMATS);
    const report = runBuild({ reader, writer, state, site, formats: FORMATS, reporter: { warn: (m) => warnings.push(m) } });
    writer.close();
    state.close();

    // Every unpublishable user and video id is reported once, by name, and nothing else is.
    expect(report.skipped.map((s) => `${s.kind}:${s.key}`).sort()).toEqual(
      [...UNPUBLISHABLE.map((n) => `user:${n}`), ...UNPUBLISHABLE.map((n) => `video:${n}`)].sort(),
    );
    expect(warnings).toHaveLength(UNPUBLISHABLE.length * 2);
    expect(warnings.find((w) => w.includes('video "../escape"'))).toMatch(/skipped video "\.\.\/escape": its name starts with a dot/);
    expect(warnings.find((w) => w.includes('"a/b"'))).toMatch(/skipped user "a\/b": its name contains "\/"/);
    expect(warnings.find((w) => w.includes('robots.txt'))).toMatch(/name of a site-wide file/);
    expect(warnings.find((w) => w.includes('éé'))).toMatch(/300 bytes long \(at most 255\)/);
    // A name that would reorder or hide part of the line is shown by its escapes.
    expect(warnings.find((w) => w.includes('gnp'))).toMatch(/skipped (user|video) "gnp\\u202e\.exe"/);
    expect(warnings.find((w) => w.includes('"zero'))).toContain('"zero\\u200bwidth"');
    for (const w of warnings) expect(w).not.toMatch(/[\u202e\u200b\u00ad\ufeff]/);

    // Nothing outside out/: the parent holds only out/ and the state files.
    expect(readdirSync(dir).sort()).toEqual(['out', 'state.sqlite', 'state.sqlite-shm', 'state.sqlite-wal'].filter((n) => readdirSync(dir).includes(n)));
    const files = walk(out);
    for (const f of files) expect(resolve(out, f).startsWith(resolve(out) + '/')).toBe(true);
    expect(files.some((f) => f.startsWith('.'))).toBe(false);

    // Every publishable hostile name got its documents, and they parse.
    const feeds: Record<string, string> = {};
    const atoms: Record<string, string> = {};
    for (const name of PUBLISHABLE) {
      feeds[name] = readFileSync(join(out, name, 'rss', 'index.rss'), 'utf8');
      atoms[name] = readFileSync(join(out, name, 'atom', 'index.atom'), 'utf8');
    }
    for (const [name, feed] of Object.entries(feedparser(feeds))) {
      expect(feed.bozo, `${name}: ${feed.bozo_exception}`).toBe(false);
      expect(feed.entries[0]!.title).toBe(`<i>${name}</i> ]]> &copy;`);
      // The channel's description is HTML to feedparser, as to most readers: the name is text in it.
      expect(feed.feed.subtitle_detail).toMatchObject({ type: 'text/html' });
      expect(shownText(feed.feed.subtitle as string)).toBe(`The latest videos ${name} uploaded to ${site.config.siteName}.`);
    }
    expect(jing(join(SCHEMAS, 'atom-rfc4287.rnc'), atoms)).toEqual({ ok: true, output: '' });
    for (const [name, feed] of Object.entries(feedparser(atoms))) {
      expect(feed.feed.subtitle_detail).toMatchObject({ type: 'text/html' });
      expect(shownText(feed.feed.subtitle as string)).toBe(`The groups ${name} belongs to on ${site.config.siteName}.`);
    }
  });

  it('reports names that one case-insensitive or normalising file system would merge, naming both rows, and writes both', () => {
    const { db, file } = createTestDb();
    const upper = insertUser(db, { username: 'Alice' });
    const lower = insertUser(db, { username: 'alice' });
    const video = insertVideo(db, lower.id, { public_id: 'ALICE' });
    const composed = insertUser(db, { username: 'caf\u00e9' });
    const decomposed = insertVideo(db, lower.id, { public_id: 'cafe\u0301' });
    insertUser(db, { username: 'bob' });
    insertVideo(db, lower.id, { public_id: 'bob' }); // a user and a video of one name share a directory by design
    db.close();
    const { report, writer, warnings } = buildInMemory(file);
    const collisions = warnings.filter((w) => w.startsWith('name collision:'));
    expect(report.nameCollisions).toBe(2);
    expect(collisions).toHaveLength(2);
    const alice = collisions.find((w) => w.includes('"Alice"'))!;
    for (const part of [`user "Alice" (users id=${upper.id})`, `user "alice" (users id=${lower.id})`, `video "ALICE" (videos id=${video.id})`]) {
      expect(alice).toContain(part);
    }
    const cafe = collisions.find((w) => w.includes('caf'))!;
    expect(cafe).toContain(`users id=${composed.id}`);
    expect(cafe).toContain(`videos id=${decomposed.id}`);
    expect(collisions.some((w) => w.includes('"bob"'))).toBe(false);
    for (const path of ['Alice/rss/index.rss', 'alice/rss/index.rss', 'ALICE/oembed/index.json', 'caf\u00e9/rss/index.rss', 'cafe\u0301/oembed/index.json']) {
      expect(writer.files.has(path), path).toBe(true);
    }
  });

  it('stops on the first unpublishable row with --strict', () => {
    const { db } = createTestDb();
    insertUser(db, { username: 'a/b' });
    expect(() => {
      const config = testConfig({ strict: true });
      const site = createSiteContext(config, FORMATS);
      const state = new BuildState(':memory:');
      runBuild({ reader: new SiteReader(db, readLimits(8)), writer: { write() {}, size: () => null, remove: () => false }, state, site, formats: FORMATS }, { strict: true });
    }).toThrow(StrictModeError);
  });
});
