import Database from 'better-sqlite3';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FORMATS } from '../../src/formats/registry.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { buildSite } from '../../src/pipeline/site-build.js';
import { cli } from '../helpers/cli.js';
import { createTestDb, insertRow, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';
import { cleanUpAfterTest, tempDir } from '../helpers/temp-dir.js';
import { readTree, touchedButSame, treeDifferences, type TreeFile } from '../helpers/tree.js';
import { feedparser, jing, SCHEMAS, xmllintWellFormed, xpath } from '../helpers/validators.js';

/**
 * RFC 5005 archives of the RSS and Atom feeds: a reader that starts at the current feed and
 * follows `prev-archive` (as feedparser reads the links) meets every public video, or every
 * group, of the user once, newest to oldest; an incremental build after an edit, an upload and a
 * removal rewrites only the documents whose bytes change, and its tree is a full build's.
 */

const BASE = 'https://videos.example.org';
const FH = "*[local-name()='archive' and namespace-uri()='http://purl.org/syndication/history/1.0']";

/** A site whose user `hist` uploaded 1,000 public videos, with 37 private ones among them, and belongs to 250 groups. */
function historySite() {
  const fixture = createTestDb();
  const { db } = fixture;
  cleanUpAfterTest(fixture.cleanup);
  const u = insertUser(db, { id: 1, username: 'hist', display_name: 'Historian' });
  insertUser(db, { id: 2, username: 'owner' });
  db.transaction(() => {
    let id = 100;
    for (let i = 0; i < 1000; i++) {
      // Some share an upload time: the order falls back to the id.
      insertVideo(db, u.id, { id: id++, public_id: `h${i}`, title: `History ${i}`, created_at: T0 + Math.floor(i / 3) * 60 });
      if (i % 27 === 5) insertVideo(db, u.id, { id: id++, public_id: `p${i}`, title: `Private ${i}`, visibility: 'private', created_at: T0 + i * 20 });
    }
    for (let g = 0; g < 250; g++) {
      insertRow(db, 'groups', { id: 10 + g, slug: `g${g}`, title: `Group ${g}`, owner_id: 2, created_at: T0 + g * 100, updated_at: T0 + g * 100 });
      insertRow(db, 'group_members', { group_id: 10 + g, user_id: u.id, joined_at: T0 });
    }
  })();
  return fixture;
}

/** The file under out/ of a URL of the site. */
function fileOf(url: string, index: string): string {
  expect(url.startsWith(`${BASE}/`), url).toBe(true);
  return `${url.slice(BASE.length + 1)}${index}`;
}

interface Walk {
  ids: string[];
  documents: string[];
}

/** Follows prev-archive from the current feed, as feedparser reads each document; every archive page says it is one. */
function walk(tree: Map<string, TreeFile>, start: string, index: string): Walk {
  const ids: string[] = [];
  const documents: string[] = [];
  let path: string | null = start;
  while (path !== null) {
    documents.push(path);
    expect(documents.length, 'a loop of prev-archive links').toBeLessThan(100);
    const body: string = tree.get(path)!.body.toString('utf8');
    const parsed = feedparser({ doc: body }).doc!;
    expect(parsed.bozo, `${path}: ${parsed.bozo_exception}`).toBe(false);
    ids.push(...parsed.entries.map((e) => e.id as string));
    const links = ((parsed.feed.links ?? []) as Array<{ rel: string; href: string }>);
    const rel = (name: string) => links.filter((l) => l.rel === name).map((l) => l.href);
    const isArchive = path !== start;
    expect(xpath(body, `count(//${FH})`), path).toBe(isArchive ? '1' : '0');
    if (isArchive) expect(rel('current'), path).toEqual([`${BASE}/${start.split('/').slice(0, 2).join('/')}/`]);
    const prev = rel('prev-archive');
    expect(prev.length, path).toBeLessThanOrEqual(1);
    path = prev.length === 0 ? null : fileOf(prev[0]!, index);
  }
  return { ids, documents };
}

function publicVideosNewestFirst(file: string): string[] {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare(`SELECT public_id FROM videos WHERE user_id = 1 AND visibility = 'public' ORDER BY created_at DESC, id DESC`).pluck().all() as string[]).map(
      (id) => `${BASE}/${id}/embed/`,
    );
  } finally {
    db.close();
  }
}

function build(file: string, dir: string, config = testConfig()) {
  const site = createSiteContext(config, FORMATS, new Date(Date.UTC(2026, 0, 1)));
  const out = join(dir, 'out');
  const report = buildSite({ db: file, out, stateFile: join(dir, 'state.sqlite'), config, site, formats: FORMATS });
  expect(report.failed).toEqual([]);
  return readTree(out);
}

describe('RFC 5005 archives', () => {
  it('lead a reader from the RSS feed through every public video once, newest to oldest', () => {
    const { file } = historySite();
    const tree = build(file, tempDir('vidfeeds-archive-').dir);
    const { ids, documents } = walk(tree, 'hist/rss/index.rss', 'page.rss');
    expect(ids).toEqual(publicVideosNewestFirst(file));
    // The 20 newest in the feed, the 980 others in pages of 100 from the oldest: 10 pages, the newest holding 80.
    expect(documents).toEqual(['hist/rss/index.rss', ...Array.from({ length: 10 }, (_, i) => `hist/rss/archive/${9 - i}/page.rss`)]);
    const archives = Object.fromEntries(documents.map((path) => [path, tree.get(path)!.body.toString('utf8')]));
    expect(xmllintWellFormed(archives).output).toBe('');
    const oldest = feedparser({ doc: archives['hist/rss/archive/0/page.rss']! }).doc!;
    expect(oldest.entries).toHaveLength(100);
    expect((oldest.feed.links as Array<{ rel: string; href: string }>).filter((l) => l.rel === 'next-archive').map((l) => l.href)).toEqual([`${BASE}/hist/rss/archive/1/`]);
    expect(archives['hist/rss/archive/0/page.rss']).not.toContain('Private');
  });

  it('lead a reader from the Atom feed through every group once, newest to oldest', () => {
    const { file } = historySite();
    const tree = build(file, tempDir('vidfeeds-archive-').dir);
    const { ids, documents } = walk(tree, 'hist/atom/index.atom', 'page.atom');
    expect(ids).toEqual(Array.from({ length: 250 }, (_, i) => `tag:videos.example.org,2024:/users/hist/groups/g${249 - i}`));
    expect(documents).toEqual(['hist/atom/index.atom', 'hist/atom/archive/2/page.atom', 'hist/atom/archive/1/page.atom', 'hist/atom/archive/0/page.atom']);
    // Every page is Atom as RFC 4287's schema has it (fh:archive is an extension element).
    const pages = Object.fromEntries(documents.map((path) => [path, tree.get(path)!.body.toString('utf8')]));
    expect(jing(join(SCHEMAS, 'atom-rfc4287.rnc'), pages)).toEqual({ ok: true, output: '' });
  });

  it('are left out for a user whose feed holds everything, whose feed keeps its bytes', () => {
    const fixture = createTestDb();
    cleanUpAfterTest(fixture.cleanup);
    const u = insertUser(fixture.db, { username: 'few' });
    for (let i = 0; i < 20; i++) insertVideo(fixture.db, u.id, { created_at: T0 + i });
    const tree = build(fixture.file, tempDir('vidfeeds-archive-').dir);
    expect([...tree.keys()].filter((path) => path.includes('/archive/'))).toEqual([]);
    expect(tree.get('few/rss/index.rss')!.body.toString()).not.toContain('archive');
  });

  it('after an edit, an upload and a removal, an incremental build rewrites only the pages that change and equals a full build', () => {
    const { file } = historySite();
    const work = tempDir('vidfeeds-archive-').dir;
    const before = build(file, join(work, 'incremental'));
    const db = new Database(file);
    cleanUpAfterTest(() => db.close());
    // Position 250 of the archive (page 2): edited. Position 720 (page 7): made private, so the
    // rows after it move one place back. A new upload: the feed's oldest item moves to the archive.
    db.prepare(`UPDATE videos SET title = 'History 250, edited', updated_at = updated_at + 1 WHERE public_id = 'h250'`).run();
    db.prepare(`UPDATE videos SET visibility = 'private' WHERE public_id = 'h720'`).run();
    insertVideo(db, 1, { id: 5000, public_id: 'fresh', title: 'Fresh upload', created_at: T0 + 10_000_000 });
    const after = build(file, join(work, 'incremental'));
    const full = build(file, join(work, 'full'));
    expect(treeDifferences(after, full)).toEqual([]);
    expect(touchedButSame(before, after)).toEqual([]);
    const rewritten = [...after].filter(([path, f]) => !before.get(path)?.body.equals(f.body)).map(([path]) => path);
    const removed = [...before.keys()].filter((path) => !after.has(path));
    // The video made private: its own documents.
    expect(removed).toEqual(['h720/embed/index.html', 'h720/oembed/html', 'h720/oembed/index.json', 'h720/oembed/json', 'h720/oembed/xml']);
    // The feed; page 2 (the edit); pages 7 to 9 (the removal moves every later row back one place,
    // and the upload adds the feed's oldest to page 9); the user's other documents that list their
    // uploads; the private video's own documents and the new one's.
    expect(rewritten.filter((path) => path.startsWith('hist/rss/'))).toEqual([
      'hist/rss/archive/2/page.rss',
      'hist/rss/archive/7/page.rss',
      'hist/rss/archive/8/page.rss',
      'hist/rss/archive/9/page.rss',
      'hist/rss/index.rss',
    ]);
    expect(rewritten.filter((path) => path.startsWith('hist/atom/'))).toEqual([]);
  });

  it('are removed with their user', () => {
    const { file } = historySite();
    const work = tempDir('vidfeeds-archive-').dir;
    const before = build(file, work);
    expect([...before.keys()].filter((path) => path.startsWith('hist/rss/archive/'))).toHaveLength(10);
    const db = new Database(file);
    db.pragma('foreign_keys = ON');
    db.prepare(`DELETE FROM users WHERE id = 1`).run();
    db.close();
    const after = build(file, work);
    expect([...after.keys()].filter((path) => path.startsWith('hist/'))).toEqual([]);
  });

  it('are verified by vidfeeds check, which names a page whose bytes are not the build\'s', () => {
    const { file } = historySite();
    const out = join(tempDir('vidfeeds-archive-').dir, 'out');
    expect(cli(['build', '--db', file, '--out', out, '--base-url', BASE]).code).toBe(0);
    const good = cli(['check', '--out', out, '--db', file]);
    expect(good.code, good.stderr).toBe(0);
    const page = join(out, 'hist', 'atom', 'archive', '1', 'page.atom');
    writeFileSync(page, readFileSync(page, 'utf8').replace('<fh:archive/>', '<fh:archive/><bogus/>'));
    const bad = cli(['check', '--out', out, '--db', file]);
    expect(bad.code).not.toBe(0);
    expect(`${bad.stdout}${bad.stderr}`).toContain('hist/atom/archive/1/page.atom');
  });
});
