import Database from 'better-sqlite3';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { planArchivePages } from '../../src/formats/archive-places.js';
import { FORMATS } from '../../src/formats/registry.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { buildSite } from '../../src/pipeline/site-build.js';
import { cli } from '../helpers/cli.js';
import { createTestDb, insertRow, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';
import { cleanUpAfterTest, tempDir } from '../helpers/temp-dir.js';
import { readTree, touchedButSame, treeDifferences, type TreeFile } from '../helpers/tree.js';
import { feedparser, jing, SCHEMAS, xmllintWellFormed, xpath, type ParsedFeed } from '../helpers/validators.js';

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

/** Each tree's RSS and Atom documents as feedparser reads them: one run of feedparser a tree, not one a page. */
const parsedTrees = new WeakMap<Map<string, TreeFile>, Record<string, ParsedFeed>>();

/** The document at `path` of a tree as feedparser reads it. */
function parsedFeed(tree: Map<string, TreeFile>, path: string): ParsedFeed {
  let parsed = parsedTrees.get(tree);
  if (parsed === undefined) {
    const feeds = [...tree].filter(([file]) => /\.(rss|atom)$/.test(file)).map(([file, { body }]) => [file, body.toString('utf8')]);
    parsed = feedparser(Object.fromEntries(feeds));
    parsedTrees.set(tree, parsed);
  }
  const feed = parsed[path];
  if (feed === undefined) throw new Error(`${path} is not a feed of the tree`);
  return feed;
}

/** The links of a feed document with relation `rel`, as feedparser reads them. */
function linksOf(feed: ParsedFeed, rel: string): string[] {
  const links = (feed.feed.links ?? []) as Array<{ rel: string; href: string }>;
  return links.filter((l) => l.rel === rel).map((l) => l.href);
}

/** The URL of an archive page's file (`hist/rss/archive/N/page.rss` → `…/hist/rss/archive/N/`). */
function urlOf(file: string): string {
  return `${BASE}/${file.slice(0, file.lastIndexOf('/') + 1)}`;
}

/**
 * What a walk must show of any paging: each page's `next-archive` names the document the reader
 * came from (none on the newest page), no page is empty or holds more than 400 items, and the
 * pages are numbered apart.
 */
function expectLinkedPages(tree: Map<string, TreeFile>, documents: string[]): void {
  const pages = documents.slice(1);
  expect(new Set(pages).size).toBe(pages.length);
  for (const [i, page] of pages.entries()) {
    const feed = parsedFeed(tree, page);
    expect(linksOf(feed, 'next-archive'), page).toEqual(i === 0 ? [] : [urlOf(pages[i - 1]!)]);
    const entries = feed.entries.length;
    expect(entries, page).toBeGreaterThan(0);
    expect(entries, page).toBeLessThanOrEqual(400);
  }
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
    const parsed = parsedFeed(tree, path);
    expect(parsed.bozo, `${path}: ${parsed.bozo_exception}`).toBe(false);
    ids.push(...parsed.entries.map((e) => e.id as string));
    const isArchive = path !== start;
    expect(xpath(body, `count(//${FH})`), path).toBe(isArchive ? '1' : '0');
    if (isArchive) expect(linksOf(parsed, 'current'), path).toEqual([`${BASE}/${start.split('/').slice(0, 2).join('/')}/`]);
    const prev = linksOf(parsed, 'prev-archive');
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
    // The 20 newest in the feed, the 980 others in pages of about 100: every archive page of the tree is on the walk.
    expect(documents.length).toBeGreaterThan(5);
    expect(documents.slice(1).sort()).toEqual([...tree.keys()].filter((path) => path.startsWith('hist/rss/archive/')).sort());
    expectLinkedPages(tree, documents);
    const archives = Object.fromEntries(documents.map((path) => [path, tree.get(path)!.body.toString('utf8')]));
    expect(xmllintWellFormed(archives).output).toBe('');
    for (const body of Object.values(archives)) expect(body).not.toContain('Private');
  });

  it('lead a reader from the Atom feed through every group once, newest to oldest', () => {
    const { file } = historySite();
    const tree = build(file, tempDir('vidfeeds-archive-').dir);
    const { ids, documents } = walk(tree, 'hist/atom/index.atom', 'page.atom');
    expect(ids).toEqual(Array.from({ length: 250 }, (_, i) => `tag:videos.example.org,2024:/users/hist/groups/g${249 - i}`));
    expect(documents.length).toBeGreaterThan(1);
    expect(documents.slice(1).sort()).toEqual([...tree.keys()].filter((path) => path.startsWith('hist/atom/archive/')).sort());
    expectLinkedPages(tree, documents);
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

  it('are left out when no row beyond the feed can be published: no empty page, no prev-archive', () => {
    // 21 uploads and 21 groups, the oldest of each one the reader skips (docs/database.md, "Values").
    const fixture = createTestDb();
    cleanUpAfterTest(fixture.cleanup);
    const u = insertUser(fixture.db, { id: 1, username: 'few' });
    insertUser(fixture.db, { id: 2, username: 'owner' });
    // A title that is no text, which the database's type checks would refuse (as a site's may not).
    fixture.db.exec('DROP TRIGGER groups_types_insert');
    for (let i = 0; i < 21; i++) {
      insertVideo(fixture.db, u.id, { public_id: `v${i}`, created_at: T0 + i, ...(i === 0 ? { file_url: 'javascript:alert(1)' } : {}) });
      insertRow(fixture.db, 'groups', { id: 10 + i, slug: `g${i}`, title: i === 0 ? Buffer.from('not text') : `Group ${i}`, owner_id: 2, created_at: T0 + i, updated_at: T0 + i });
      insertRow(fixture.db, 'group_members', { group_id: 10 + i, user_id: u.id, joined_at: T0 });
    }
    const tree = build(fixture.file, tempDir('vidfeeds-archive-').dir);
    expect([...tree.keys()].filter((path) => path.includes('/archive/'))).toEqual([]);
    for (const feed of ['few/rss/index.rss', 'few/atom/index.atom']) {
      const body = tree.get(feed)!.body.toString('utf8');
      expect(feedparser({ doc: body }).doc!.entries.length, feed).toBe(20);
      expect(body, feed).not.toContain('prev-archive');
    }
  });

  it('page only the rows that can be published, as if the others were private, and an incremental build equals a full one', () => {
    const { file } = historySite();
    const work = tempDir('vidfeeds-archive-').dir;
    const before = build(file, join(work, 'incremental'));
    const pages = walk(before, 'hist/rss/index.rss', 'page.rss').documents.slice(1).reverse();
    expect(pages.length, 'enough pages for the changes below').toBeGreaterThanOrEqual(6);
    const items = (page: string) =>
      (parsedFeed(before, page).entries as Array<{ id: string }>).map((e) => e.id.slice(BASE.length + 1, -'/embed/'.length)).reverse();
    // Every item of one page, and the item that starts another, become rows the reader skips.
    const bad = [...items(pages[2]!), items(pages[4]!)[0]!];
    const db = new Database(file);
    cleanUpAfterTest(() => db.close());
    const spoil = db.prepare(`UPDATE videos SET file_url = 'javascript:alert(1)', updated_at = updated_at + 1 WHERE public_id = ?`);
    for (const id of bad) spoil.run(id);
    const after = build(file, join(work, 'incremental'));
    expect(treeDifferences(after, build(file, join(work, 'full')))).toEqual([]);
    const { ids, documents } = walk(after, 'hist/rss/index.rss', 'page.rss');
    const skipped = new Set(bad.map((id) => `${BASE}/${id}/embed/`));
    expect(ids).toEqual(publicVideosNewestFirst(file).filter((id) => !skipped.has(id)));
    // No page is empty (expectLinkedPages), and every page of the tree is on the walk.
    expectLinkedPages(after, documents);
    expect(documents.slice(1).sort()).toEqual([...after.keys()].filter((path) => path.startsWith('hist/rss/archive/')).sort());
    expect(after.has(pages[2]!)).toBe(false);
  });

  it('after an edit, a video made private, a removal and an upload, an incremental build rewrites only the pages they change and equals a full build', () => {
    const { file } = historySite();
    const work = tempDir('vidfeeds-archive-').dir;
    const before = build(file, join(work, 'incremental'));
    // The archive pages oldest first, and the public id of each page's items, oldest first.
    const pages = walk(before, 'hist/rss/index.rss', 'page.rss').documents.slice(1).reverse();
    expect(pages.length, 'enough pages for the changes below').toBeGreaterThanOrEqual(8);
    const entries = (path: string) =>
      (parsedFeed(before, path).entries as Array<{ id: string }>).map((e) => e.id.slice(BASE.length + 1, -'/embed/'.length)).reverse();
    const [edited, hidden, starter] = [1, 3, 6].map((i) => pages[i]!);
    const db = new Database(file);
    cleanUpAfterTest(() => db.close());
    // An item in the middle of page 1 is edited; one in the middle of page 3 made private; the
    // oldest item of page 6, which starts it, deleted; a new upload moves the feed's oldest item
    // onto the newest page (or, if that item starts a page, onto a new one after it).
    const middle = (page: string) => entries(page)[Math.floor(entries(page).length / 2)]!;
    expect(entries(hidden).length, hidden).toBeGreaterThan(2);
    expect(entries(starter).length, starter).toBeGreaterThan(1);
    db.prepare(`UPDATE videos SET title = 'Edited', updated_at = updated_at + 1 WHERE public_id = ?`).run(middle(edited));
    db.prepare(`UPDATE videos SET visibility = 'private' WHERE public_id = ?`).run(middle(hidden));
    db.prepare(`DELETE FROM videos WHERE public_id = ?`).run(entries(starter)[0]!);
    const leaving = db.prepare(`SELECT id FROM videos WHERE public_id = ?`).pluck().get(entries('hist/rss/index.rss')[0]!) as number;
    const startsPage = planArchivePages([1, leaving]).length === 2;
    insertVideo(db, 1, { id: 5000, public_id: 'fresh', title: 'Fresh upload', created_at: T0 + 10_000_000 });
    const after = build(file, join(work, 'incremental'));
    const full = build(file, join(work, 'full'));
    expect(treeDifferences(after, full)).toEqual([]);
    expect(touchedButSame(before, after)).toEqual([]);
    const rss = (paths: Iterable<string>) => [...paths].filter((path) => path.startsWith('hist/rss/')).sort();
    const rewritten = rss([...before.keys()].filter((path) => after.has(path) && !before.get(path)!.body.equals(after.get(path)!.body)));
    const removed = rss([...before.keys()].filter((path) => !after.has(path)));
    const added = rss([...after.keys()].filter((path) => !before.has(path)));
    // A page is numbered by its newest item: the edited and the hidden item's pages keep their
    // URLs; page 6, whose first item went, takes page 5's items under its own URL (page 5 goes,
    // page 4 links past it, page 7's link is unchanged); the upload gives the newest page a new
    // URL (the page before it links there) or adds a page after it (which it links to).
    const newest = pages.at(-1)!;
    const newNewest = walk(after, 'hist/rss/index.rss', 'page.rss').documents[1]!;
    const upload = startsPage ? { rewritten: [newest], removed: [] } : { rewritten: [pages.at(-2)!], removed: [newest] };
    expect(rewritten).toEqual(rss(new Set([edited, hidden, pages[4]!, starter, ...upload.rewritten, 'hist/rss/index.rss'])));
    expect(removed).toEqual(rss([pages[5]!, ...upload.removed]));
    expect(added).toEqual([newNewest]);
    expect([...before.keys()].filter((path) => path.startsWith('hist/atom/') && !before.get(path)!.body.equals(after.get(path)?.body ?? Buffer.alloc(0)))).toEqual([]);
    // The pages that kept their URL kept their entries, but the edited, the hidden and the merged one.
    for (const page of pages.filter((path) => after.has(path) && ![edited, hidden, starter].includes(path))) {
      expect(parsedFeed(after, page).entries.length, page).toBe(entries(page).length);
    }
  });

  it('built alone (--only rss-archive, --only atom-archive) are the pages of a whole build', () => {
    const { file } = historySite();
    const whole = build(file, tempDir('vidfeeds-archive-').dir);
    for (const name of ['rss-archive', 'atom-archive']) {
      const work = tempDir('vidfeeds-archive-').dir;
      const report = buildSite({ db: file, out: join(work, 'out'), stateFile: join(work, 'state.sqlite'), config: testConfig(), site: createSiteContext(testConfig(), FORMATS, new Date(Date.UTC(2026, 0, 1))), formats: FORMATS, only: new Set([name]) });
      expect(report.failed).toEqual([]);
      const alone = readTree(join(work, 'out'));
      const folder = name === 'rss-archive' ? 'hist/rss/archive/' : 'hist/atom/archive/';
      const pages = [...whole.keys()].filter((path) => path.startsWith(folder));
      expect(pages.length, name).toBeGreaterThan(1);
      expect([...alone.keys()].filter((path) => path.startsWith('hist/')).sort(), name).toEqual(pages.sort());
      for (const path of pages) expect(alone.get(path)!.body.equals(whole.get(path)!.body), path).toBe(true);
    }
  });

  it('are removed with their user', () => {
    const { file } = historySite();
    const work = tempDir('vidfeeds-archive-').dir;
    const before = build(file, work);
    expect([...before.keys()].filter((path) => path.startsWith('hist/rss/archive/')).length).toBeGreaterThan(5);
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
    const [first] = readdirSync(join(out, 'hist', 'atom', 'archive'));
    const page = join(out, 'hist', 'atom', 'archive', first!, 'page.atom');
    writeFileSync(page, readFileSync(page, 'utf8').replace('<fh:archive/>', '<fh:archive/><bogus/>'));
    const bad = cli(['check', '--out', out, '--db', file]);
    expect(bad.code).not.toBe(0);
    expect(`${bad.stdout}${bad.stderr}`).toContain(`hist/atom/archive/${first}/page.atom`);
  });
});
