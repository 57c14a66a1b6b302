import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { planArchivePages } from '../../src/formats/archive-places.js';
import { FORMATS } from '../../src/formats/registry.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { buildSite } from '../../src/pipeline/site-build.js';
import { createTestDb, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';
import { cleanUpAfterTest, tempDir } from '../helpers/temp-dir.js';
import { readTree, type TreeFile } from '../helpers/tree.js';
import { feedparser } from '../helpers/validators.js';

/**
 * A subscriber that follows RFC 5005 section 4.2 to the letter: at each reading it takes the
 * current feed, walks `prev-archive` and stops at the first archive page whose URL it has read
 * before (the RFC lets it: an archive document's entries do not change). Across builds with
 * uploads that cross page boundaries, feed items deleted and one made private, it must end up
 * with every public video.
 */

const BASE = 'https://videos.example.org';

/** A user `hist` with 1,000 public videos, ids 100 to 1099, one a minute. */
function historySite() {
  const fixture = createTestDb();
  cleanUpAfterTest(fixture.cleanup);
  insertUser(fixture.db, { id: 1, username: 'hist' });
  fixture.db.transaction(() => {
    for (let i = 0; i < 1000; i++) insertVideo(fixture.db, 1, { id: 100 + i, public_id: `h${i}`, created_at: T0 + i * 60 });
  })();
  return fixture;
}

function build(file: string, dir: string): Map<string, TreeFile> {
  const config = testConfig();
  const site = createSiteContext(config, FORMATS, new Date(Date.UTC(2026, 0, 1)));
  const out = join(dir, 'out');
  const report = buildSite({ db: file, out, stateFile: join(dir, 'state.sqlite'), config, site, formats: FORMATS });
  expect(report.failed).toEqual([]);
  return readTree(out);
}

/** What the subscriber keeps: the archive pages it has read, by URL, and every entry it has met. */
interface Subscriber {
  readonly read: Set<string>;
  readonly entries: Set<string>;
}

/** One reading: the feed, then prev-archive until a page read before (or the oldest). */
function readFeed(tree: Map<string, TreeFile>, subscriber: Subscriber): void {
  let file = 'hist/rss/index.rss';
  for (;;) {
    const parsed = feedparser({ doc: tree.get(file)!.body.toString('utf8') }).doc!;
    expect(parsed.bozo, file).toBe(false);
    for (const entry of parsed.entries) subscriber.entries.add(entry.id as string);
    const prev = ((parsed.feed.links ?? []) as Array<{ rel: string; href: string }>).find((l) => l.rel === 'prev-archive')?.href;
    if (prev === undefined || subscriber.read.has(prev)) return;
    subscriber.read.add(prev);
    expect(prev.startsWith(`${BASE}/`), prev).toBe(true);
    file = `${prev.slice(BASE.length + 1)}page.rss`;
  }
}

function publicVideos(db: Database.Database): string[] {
  return (db.prepare(`SELECT public_id FROM videos WHERE user_id = 1 AND visibility = 'public'`).pluck().all() as string[]).map((id) => `${BASE}/${id}/embed/`);
}

/** Whether a row with this id, appended to an archive, starts a page of its own. */
const startsPage = (id: number) => planArchivePages([1, id]).length === 2;

/** A site with a long history, a subscriber that has read its feed once, and uploads from id 5000. */
function subscription() {
  const { file } = historySite();
  const work = tempDir('vidfeeds-archive-consumer-').dir;
  const db = new Database(file);
  cleanUpAfterTest(() => db.close());
  const subscriber: Subscriber = { read: new Set(), entries: new Set() };
  readFeed(build(file, work), subscriber);
  const next = { id: 5000 };
  const upload = () => insertVideo(db, 1, { id: next.id, public_id: `u${next.id}`, created_at: T0 + next.id * 60 }) && next.id++;
  return { file, work, db, subscriber, next, upload };
}

describe('an RFC 5005 subscriber that stops at a page it has read', () => {
  it('ends with every public video across uploads, deletions from the feed and a video made private', () => {
    const { file, work, db, subscriber, next, upload } = subscription();
    const feedItems = () => db.prepare(`SELECT id FROM videos WHERE user_id = 1 AND visibility = 'public' ORDER BY created_at DESC, id DESC LIMIT 20`).pluck().all() as number[];
    let crossed = 0;
    for (let round = 0; round < 12; round++) {
      // 25 uploads between readings: more than the feed holds, so some reach the archive unread.
      for (let n = 0; n < 25; n++) {
        if (startsPage(next.id)) crossed++;
        upload();
      }
      if (round === 4) for (const gone of feedItems().slice(0, 3)) db.prepare(`DELETE FROM videos WHERE id = ?`).run(gone);
      if (round === 7) db.prepare(`UPDATE videos SET visibility = 'private' WHERE id = ?`).run(feedItems()[5]);
      readFeed(build(file, work), subscriber);
    }
    expect(crossed, 'uploads that start a page').toBeGreaterThan(1);
    const missed = publicVideos(db).filter((entry) => !subscriber.entries.has(entry));
    expect(missed).toEqual([]);
  });

  it('ends with every public video when it reads just after an upload that starts a page', () => {
    const { file, work, db, subscriber, next, upload } = subscription();
    // Upload until a row that starts a page has left the feed for the archive: it is the newest
    // page's only row, and the subscriber reads the page then. The page fills up unread, and is
    // complete once the next page starts: it must not be under a URL the subscriber has read.
    let starter = 0;
    while (starter === 0) {
      if (startsPage(next.id)) starter = next.id;
      upload();
    }
    for (let n = 0; n < 20; n++) upload();
    readFeed(build(file, work), subscriber);
    // Then enough uploads for the next page to start, read once at the end.
    while (!startsPage(next.id)) upload();
    for (let n = 0; n < 21; n++) upload();
    readFeed(build(file, work), subscriber);
    const missed = publicVideos(db).filter((entry) => !subscriber.entries.has(entry));
    expect(missed).toEqual([]);
  });
});
