import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { BuildState } from '../../src/pipeline/build-state.js';
import { runBuild } from '../../src/pipeline/run-build.js';
import { MemoryWriter } from '../../src/pipeline/write/output-writer.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { SITE_TABLES } from '../../src/db/columns.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { FORMATS } from '../../src/formats/registry.js';
import { createTestDb, insertRow, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';

/**
 * Time is linear in the size of every field (docs/database.md, "Time is linear"): a build with a
 * 1 MB value in every text field of a user's rows takes no more than a small constant factor
 * longer, per byte, than the same build with 10 kB values. Each shape is one that made some check
 * backtrack (its time grew with the square of the length), or that escaping works hardest on.
 * Only a ratio of two builds measured back to back is asserted, never a time.
 */

/**
 * The value of each field, by column: the shapes that made a check backtrack (its time grew with
 * the square of the length) where those checks read, and text with markup, entity-shaped
 * ampersands, a CDATA end, line ends and right-to-left and astral characters everywhere else.
 */
function valueFor(table: string, column: string, bytes: number): string {
  // The old phone pattern: a long run of digits that ends in another character.
  if (column === 'phone') return `${'1'.repeat(bytes - 1)}x`;
  // The old OPML address pattern: a domain of dots, then a space.
  if (column === 'email' || column === 'msn_chat_id') return `a@${'.'.repeat(bytes - 3)} `;
  // The APML address pattern: dot-separated parts, then a second @.
  if (column === 'jabber_chat_id') return `a@${'.a'.repeat((bytes - 3) / 2)}@`;
  return 'Lorem ipsum dolor sit amet, <b>&amp; ]]> "q" \u202e🎬\r\n'.repeat(Math.ceil(bytes / 40)).slice(0, bytes);
}

const TEXT_KINDS = new Set(['text', 'url']);

/** A published user with a row in every table, every text column of them holding a value of `bytes` (URLs start as URLs). */
function site(bytes: number): Database.Database {
  const { db } = createTestDb();
  const user = insertUser(db, { username: 'alice', show_email: 1, show_phone: 1, show_chat_ids: 1, show_address: 1, history_public: 1 });
  const friend = insertUser(db, { username: 'bob' });
  insertRow(db, 'categories', { id: 1, name: 'Music' });
  insertRow(db, 'tags', { id: 1, name: 'guitar' });
  const video = insertVideo(db, user.id, { public_id: 'v1', category_id: 1 });
  insertRow(db, 'video_tags', { video_id: video.id, tag_id: 1 });
  insertRow(db, 'interests', { user_id: user.id, tag_id: 1 });
  insertRow(db, 'friendships', { user_id: user.id, friend_id: friend.id, created_at: T0 });
  insertRow(db, 'online_accounts', { user_id: user.id, service_homepage_url: 'https://s.example/', account_name: 'a', profile_url: 'https://s.example/a' });
  insertRow(db, 'groups', { id: 1, slug: 'band', title: 'Band', owner_id: friend.id, featured_video_id: video.id, created_at: T0, updated_at: T0 });
  insertRow(db, 'group_members', { group_id: 1, user_id: user.id, joined_at: T0 });
  insertRow(db, 'saved_videos', { user_id: user.id, video_id: video.id, position: 0, saved_at: T0 });
  insertRow(db, 'recommendations', { user_id: user.id, title: 'R', link: 'https://r.example/', image: 'https://r.example/i.jpg', created_at: T0 });
  insertRow(db, 'attention_concepts', { user_id: user.id, category_id: 1, value: 0.5, updated_at: T0 });
  insertRow(db, 'attention_sources', { user_id: user.id, video_id: video.id, supplier_id: friend.id, value: 0.5, updated_at: T0 });
  insertRow(db, 'reading_list', { user_id: user.id, title: 'Blog', html_url: 'https://b.example/', xml_url: 'https://b.example/feed', created_at: T0, updated_at: T0 });
  for (const [table, spec] of Object.entries(SITE_TABLES)) {
    for (const [column, c] of Object.entries(spec.columns)) {
      // Names stay path segments (at most 255 bytes); tags and categories are names too.
      if (!TEXT_KINDS.has(c.kind) || table === 'tags' || table === 'categories') continue;
      const value = valueFor(table, column, bytes);
      db.prepare(`UPDATE ${table} SET ${column} = ?`).run(c.kind === 'url' ? `https://e.example/${encodeURIComponent(value)}` : value);
    }
  }
  return db;
}

/** Seconds one full build of `db` takes. */
function buildSeconds(db: Database.Database): number {
  const config = testConfig();
  const state = new BuildState(':memory:');
  const started = process.hrtime.bigint();
  const report = runBuild({ reader: new SiteReader(db, readLimits(8)), writer: new MemoryWriter(), state, site: createSiteContext(config, FORMATS, new Date(Date.UTC(2026, 0, 1))), formats: FORMATS });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  state.close();
  expect(report.failed).toEqual([]);
  expect(report.documents).toBeGreaterThan(10);
  return seconds;
}

describe('time in the size of a field', () => {
  it('grows linearly: a 1 MB value in every text field against a 10 kB one', () => {
    const small = site(10_000);
    const large = site(1_000_000);
    buildSeconds(small); // warm up the code paths
    const smallSeconds = Math.min(buildSeconds(small), buildSeconds(small));
    const largeSeconds = buildSeconds(large);
    small.close();
    large.close();
    // 100 times the bytes: linear time costs about 100 to 400 times as long (less, as a build has
    // fixed costs; more where a megabyte leaves the CPU's caches, on a slow machine); a check whose
    // time grows with the square costs 10,000 times as long.
    const perByte = largeSeconds / smallSeconds / 100;
    expect(perByte, `${largeSeconds.toFixed(3)} s against ${smallSeconds.toFixed(3)} s`).toBeLessThan(10);
  }, 60_000);
});
