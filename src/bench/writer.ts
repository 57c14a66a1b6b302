import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../config/load-config.js';
import type { Format, UserFormat, VideoFormat } from '../formats/format.js';
import { formatByName, FORMATS } from '../formats/registry.js';
import { SitePaths } from '../paths/site-paths.js';
import { sitemapFileOf } from '../formats/sitemap.js';
import { SiteReader } from '../db/site-reader.js';
import { readLimits } from '../formats/read-limits.js';

/**
 * The freshness run's writer (src/bench/freshness.ts): plays a live site's code, committing a mix
 * of changes at a steady rate, each to an owner no other change of the run touches. For every
 * change it prints one JSON line on stdout, right after its commit returns: when it committed, and
 * what every file the change should alter must then hold, found from the format table: a unique
 * token in the documents that show the changed field, or no file where the change withdrew one.
 * Usage: node dist/bench/writer.js <db> <config file> <changes per second> <seconds> <seed> [mixed|titles]
 */

export type Expectation = { path: string; contains: string } | { path: string; lacks: string } | { path: string; absent: true };

export interface ChangeLine {
  id: number;
  kind: ChangeKind;
  /** Epoch milliseconds (fractional) just after the commit returned. */
  committedAt: number;
  expect: Expectation[];
  /** The sitemap URLs whose `<lastmod>` must end no earlier than the commit's second. */
  listed: string[];
}

type ChangeKind = 'upload' | 'title' | 'profile' | 'privacy' | 'delete' | 'recommendation';

/** The mixes, in changes out of 20. */
export type WriterMix = 'mixed' | 'titles';

/** What a video site's day looks like, roughly; `titles` is the commonest change alone. */
const MIXES: Record<WriterMix, Array<[ChangeKind, number]>> = {
  titles: [['title', 20]],
  mixed: [
  ['upload', 4],
  ['title', 5],
  ['profile', 3],
  ['privacy', 2],
  ['delete', 2],
  ['recommendation', 4],
  ],
};

const now = () => performance.timeOrigin + performance.now();

function main(): void {
  const [dbFile, configFile, rateText, secondsText, seedText, mixText = 'mixed'] = process.argv.slice(2) as [string, string, string, string, string, string?];
  if (!Object.hasOwn(MIXES, mixText)) throw new Error(`the mix is one of ${Object.keys(MIXES).join(', ')}, not ${mixText}`);
  const rate = Number(rateText);
  const total = Math.round(rate * Number(secondsText));
  const config = loadConfig({ configFile });
  const paths = new SitePaths(config.baseUrl, config.pages, FORMATS);
  const format = <F extends Format>(name: string) => formatByName(name) as F;
  // The video's documents this configuration writes (the head snippet only when it asks for it).
  const videoFiles = (publicId: string) =>
    FORMATS.filter((f): f is VideoFormat => f.scope === 'video' && (f.enabled?.(config) ?? true)).map((f) => paths.file(f, publicId));
  const userFile = (name: string, username: string) => paths.file(format<UserFormat>(name), username);
  /** The user formats that show a user's display name. */
  const NAME_FORMATS = ['rss', 'atom', 'opml', 'foaf', 'hcard'];

  const db = new Database(dbFile);
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');

  /** The sitemap file that lists a video, and the URL it lists it by (its first format in the sitemap). */
  const listedVideo = FORMATS.find((f): f is VideoFormat => f.scope === 'video' && f.inSitemap)!;
  // The build's own reading of the id bounds (one end of each rowid tree), after each commit.
  const reader = new SiteReader(db, readLimits(config.recommendationsCount));
  const sitemapOf = (videoId: number) => sitemapFileOf('videos', videoId, reader.idBounds(), FORMATS);

  // Active users with a publishable name and a public video, in a seeded order: one per change.
  const candidates = db
    .prepare<[], { id: number; username: string; video_id: number; public_id: string }>(
      `SELECT u.id, u.username, v.id AS video_id, v.public_id FROM users u
       JOIN videos v ON v.id = (SELECT id FROM videos WHERE user_id = u.id AND visibility = 'public' ORDER BY created_at DESC, id DESC LIMIT 1)
       WHERE u.state = 'active'`,
    )
    .all()
    .filter((row) => paths.problem(row.username) === null && paths.problem(row.public_id) === null);
  if (candidates.length < total) throw new Error(`the database has ${candidates.length} users to change, the run needs ${total}`);
  shuffle(candidates, Number(seedText));

  const stmt = {
    upload: db.prepare(
      `INSERT INTO videos (public_id, user_id, title, description, duration_seconds, file_url, thumbnail_url, created_at, updated_at)
       VALUES (?, ?, ?, 'Uploaded during the freshness run', 61, ?, ?, ?, ?)`,
    ),
    title: db.prepare(`UPDATE videos SET title = ?, updated_at = ? WHERE id = ?`),
    profile: db.prepare(`UPDATE users SET display_name = ?, updated_at = ? WHERE id = ?`),
    privacy: db.prepare(`UPDATE videos SET visibility = 'private', updated_at = ? WHERE id = ?`),
    delete: db.prepare(`DELETE FROM videos WHERE id = ?`),
    recommendation: db.prepare(`INSERT INTO recommendations (user_id, title, link, image, created_at) VALUES (?, ?, ?, ?, ?)`),
  };
  const kinds = MIXES[mixText as WriterMix].flatMap(([kind, count]) => Array<ChangeKind>(count).fill(kind));

  const apply = (id: number): ChangeLine => {
    const user = candidates[id]!;
    const kind = kinds[id % kinds.length]!;
    const token = `fresh${id}x${randomBytes(4).toString('hex')}`;
    const time = Math.floor(Date.now() / 1000) + 1;
    let expect: Expectation[];
    let listed: string[] = [];
    switch (kind) {
      case 'upload':
      {
        const videoId = Number(stmt.upload.run(token, user.id, token, `https://cdn.example.org/v/${token}.flv`, `https://cdn.example.org/t/${token}.jpg`, time, time).lastInsertRowid);
        expect = [...videoFiles(token), userFile('rss', user.username)].map((path) => ({ path, contains: token }));
        expect.push({ path: sitemapOf(videoId), contains: paths.url(listedVideo, token) });
        break;
      }
      case 'title':
        stmt.title.run(token, time, user.video_id);
        expect = [...videoFiles(user.public_id), userFile('rss', user.username)].map((path) => ({ path, contains: token }));
        listed = [paths.url(listedVideo, user.public_id), paths.url(format<UserFormat>('rss'), user.username)];
        break;
      case 'profile':
        stmt.profile.run(token, time, user.id);
        expect = NAME_FORMATS.map((name) => ({ path: userFile(name, user.username), contains: token }));
        listed = NAME_FORMATS.map((name) => paths.url(format<UserFormat>(name), user.username));
        break;
      case 'privacy':
        stmt.privacy.run(time, user.video_id);
        expect = videoFiles(user.public_id).map((path): Expectation => ({ path, absent: true }));
        expect.push({ path: sitemapOf(user.video_id), lacks: paths.url(listedVideo, user.public_id) });
        break;
      case 'delete':
        stmt.delete.run(user.video_id);
        expect = videoFiles(user.public_id).map((path): Expectation => ({ path, absent: true }));
        expect.push({ path: sitemapOf(user.video_id), lacks: paths.url(listedVideo, user.public_id) });
        break;
      case 'recommendation':
        stmt.recommendation.run(user.id, token, `https://videos.example.org/watch?v=${token}`, `https://cdn.example.org/t/${token}.jpg`, time);
        expect = [{ path: userFile('recommendations', user.username), contains: token }];
        break;
    }
    return { id, kind, committedAt: now(), expect, listed };
  };

  // A steady rate: change i is due at start + i / rate, whatever the ones before cost.
  const started = now();
  let next = 0;
  const tick = () => {
    while (next < total && now() >= started + (next * 1000) / rate) {
      process.stdout.write(`${JSON.stringify(apply(next))}\n`);
      next++;
    }
    if (next < total) {
      setTimeout(tick, Math.max(0, started + (next * 1000) / rate - now()));
    } else {
      db.close();
      process.stdout.write(`${JSON.stringify({ done: total, seconds: (now() - started) / 1000 })}\n`);
    }
  };
  tick();
}

/** Fisher-Yates with a small seeded generator (mulberry32), so runs pick the same owners. */
function shuffle<T>(items: T[], seed: number): void {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}

main();
