import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildSite } from '../../src/pipeline/site-build.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import type { Format } from '../../src/formats/format.js';
import { sitemapFormat, SITEMAP_LIMITS } from '../../src/formats/sitemap.js';
import { prng } from '../../src/db/demo-data.js';
import { MIGRATIONS, migrate } from '../../src/db/migrations.js';
import { createDemoDb, T0, testConfig } from '../helpers/site-fixture.js';
import { PROBED } from '../helpers/probe-formats.js';
import { readTree, touchedButSame, treeDifferences } from '../helpers/tree.js';
import { cleanUpAfterTest, tempDir } from '../helpers/temp-dir.js';

/**
 * The property of docs/incremental.md: after any sequence of changes made through plain SQL (as
 * the site's own code makes them), an incremental build leaves exactly the bytes a full rebuild
 * into a fresh directory makes, and every file whose bytes did not change keeps its inode and
 * modification time. Seeded: a failure names its seed, and SEED=<n> replays it.
 */

/**
 * The probe formats (PROBED, test/helpers/probe-formats.ts), with a sitemap split by id into parts of a few owners, as a large site's is: an
 * incremental build renders only the parts holding the owners it rendered and keeps the others.
 */
const SPLIT_SITEMAP = sitemapFormat({ ...SITEMAP_LIMITS, maxUrls: 30, partUrls: 24 });
const PROBED_SPLIT: readonly Format[] = PROBED.map((format) => (format.name === 'sitemap' ? SPLIT_SITEMAP : format));


const PODCAST = {
  category: 'Society & Culture > Documentary', explicit: false, owner: { name: 'Example Videos', email: 'podcasts@example.org' },
  language: null, locked: false, image: 'https://videos.example.org/static/podcast.jpg',
};

type Mutation = (db: Database.Database, r: Random) => string;

class Random {
  constructor(private readonly next: () => number) {}
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.next() * list.length)]!;
  }
  /** The id of a random row of `table` (any row, published or not), or null when it is empty. */
  row(db: Database.Database, table: string, column = 'id'): number | null {
    const ids = db.prepare(`SELECT ${column} FROM ${table} ORDER BY ${column}`).pluck().all() as number[];
    return ids.length === 0 ? null : this.pick(ids);
  }
}

let serial = 0;
/** The user given enough uploads and groups for archive pages of both feeds (archivedFixture). */
const ARCHIVED_USER = 1;

/**
 * 32 more uploads and 24 more groups for user 1, so that both feeds have archive pages (the rows
 * beyond their 20 newest) from the first build on.
 */
function archivedFixture(db: Database.Database, r: Random): void {
  const upload = db.prepare(
    `INSERT INTO videos (public_id, user_id, title, file_url, thumbnail_url, visibility, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const group = db.prepare('INSERT INTO groups (slug, title, owner_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)');
  const member = db.prepare('INSERT INTO group_members (group_id, user_id, joined_at) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < 32; i++) {
      const at = T0 + r.int(0, 4e7);
      upload.run(`arch${i}`, ARCHIVED_USER, `Archived ${i}`, `https://cdn.example.org/a${i}.mp4`, `https://cdn.example.org/a${i}.jpg`, 'public', at, at);
    }
    for (let i = 0; i < 24; i++) member.run(group.run(`archg${i}`, `Group ${i}`, ARCHIVED_USER, T0 + r.int(0, 4e7), T0).lastInsertRowid, ARCHIVED_USER, T0);
  })();
}
const NAMES = ['zed', 'yan', 'xu', 'robots.txt', '.hidden', 'a b', 'élan', '🎬new'];

/** Changes a site makes, each through plain SQL. Each returns what it did, for the failure message. */
const MUTATIONS: Record<string, Mutation> = {
  insertUser(db, r) {
    const name = `${r.pick(NAMES)}${++serial}`;
    db.prepare(`INSERT INTO users (username, display_name, email, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`).run(
      name, `New ${name}`, `${serial}@example.net`, T0 + serial, T0 + serial,
    );
    return `insert user ${name}`;
  },
  renameUser(db, r) {
    const id = r.row(db, 'users');
    const name = r.chance(0.2) ? r.pick(NAMES) : `renamed${++serial}`;
    db.prepare('UPDATE users SET username = ? WHERE id = ?').run(name, id);
    return `rename user ${id} to ${name}`;
  },
  updateUserShown(db, r) {
    const id = r.row(db, 'users');
    const column = r.pick(['display_name', 'avatar_url', 'homepage_url', 'email']);
    db.prepare(`UPDATE users SET ${column} = ? WHERE id = ?`).run(column === 'display_name' ? `Name ${++serial}` : `https://x.example.org/${++serial}`, id);
    return `user ${id} ${column}`;
  },
  updateUserOwn(db, r) {
    const id = r.row(db, 'users');
    const column = r.pick(['given_name', 'title', 'phone', 'show_phone', 'show_email', 'history_public', 'updated_at', 'locality', 'show_address']);
    const value = column.startsWith('show_') || column === 'history_public' ? r.int(0, 1) : column === 'updated_at' ? T0 + r.int(0, 1e6) : `v${++serial}`;
    db.prepare(`UPDATE users SET ${column} = ? WHERE id = ?`).run(value, id);
    return `user ${id} ${column}=${value}`;
  },
  suspendOrActivate(db, r) {
    const id = r.row(db, 'users');
    const state = r.pick(['active', 'active', 'suspended', 'deleted']);
    db.prepare('UPDATE users SET state = ? WHERE id = ?').run(state, id);
    return `user ${id} state ${state}`;
  },
  deleteUser(db, r) {
    const id = r.row(db, 'users');
    db.prepare('DELETE FROM users WHERE id = ?').run(id);
    return `delete user ${id}`;
  },
  insertVideo(db, r) {
    const user = r.row(db, 'users');
    const publicId = r.chance(0.1) ? r.pick(NAMES) : `nv${++serial}`;
    db.prepare(
      `INSERT INTO videos (public_id, user_id, title, file_url, thumbnail_url, category_id, visibility, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(publicId, user, `New video ${serial}`, `https://cdn.example.org/${serial}.flv`, `https://cdn.example.org/${serial}.jpg`,
      r.row(db, 'categories'), r.chance(0.8) ? 'public' : 'private', T0 + 5e7 + serial, T0 + 5e7 + serial);
    return `insert video ${publicId} of user ${user}`;
  },
  updateVideo(db, r) {
    const id = r.row(db, 'videos');
    const column = r.pick(['title', 'description', 'duration_seconds', 'file_size', 'created_at', 'thumbnail_url', 'file_url']);
    const value =
      column === 'duration_seconds' || column === 'file_size' ? r.int(1, 9999)
      : column === 'created_at' ? T0 + r.int(0, 1e8)
      : column.endsWith('_url') ? (r.chance(0.3) ? 'javascript:alert(1)' : `https://cdn.example.org/u${++serial}`)
      : `Changed <b>${++serial}</b> ]]>`;
    db.prepare(`UPDATE videos SET ${column} = ? WHERE id = ?`).run(value, id);
    return `video ${id} ${column}`;
  },
  flipVideoPrivacy(db, r) {
    const id = r.row(db, 'videos');
    db.prepare(`UPDATE videos SET visibility = CASE visibility WHEN 'public' THEN 'private' ELSE 'public' END WHERE id = ?`).run(id);
    return `video ${id} privacy flipped`;
  },
  breakOrFixVideoUrl(db, r) {
    // A video whose file URL is not http(s) is not published (nor listed in the sitemap).
    const id = r.row(db, 'videos');
    const url = r.chance(0.5) ? 'javascript:alert(1)' : `https://cdn.example.org/fixed${++serial}.flv`;
    db.prepare('UPDATE videos SET file_url = ? WHERE id = ?').run(url, id);
    return `video ${id} file_url ${url}`;
  },
  moveVideo(db, r) {
    const id = r.row(db, 'videos');
    const user = r.row(db, 'users');
    db.prepare('UPDATE videos SET user_id = ? WHERE id = ?').run(user, id);
    return `video ${id} moved to user ${user}`;
  },
  renameVideo(db, r) {
    const id = r.row(db, 'videos');
    db.prepare('UPDATE videos SET public_id = ? WHERE id = ?').run(`rv${++serial}`, id);
    return `video ${id} public id changed`;
  },
  recategoriseVideo(db, r) {
    const id = r.row(db, 'videos');
    const category = r.chance(0.2) ? null : r.row(db, 'categories');
    db.prepare('UPDATE videos SET category_id = ? WHERE id = ?').run(category, id);
    return `video ${id} category ${category}`;
  },
  deleteVideo(db, r) {
    const id = r.row(db, 'videos');
    db.prepare('DELETE FROM videos WHERE id = ?').run(id);
    return `delete video ${id}`;
  },
  toggleFriendship(db, r) {
    const a = r.row(db, 'users');
    const b = r.row(db, 'users');
    if (a === b) return 'no friendship change';
    const removed = db.prepare('DELETE FROM friendships WHERE user_id = ? AND friend_id = ?').run(a, b).changes;
    if (removed === 0) db.prepare('INSERT INTO friendships (user_id, friend_id, created_at) VALUES (?, ?, ?)').run(a, b, T0);
    return `friendship ${a}→${b} ${removed ? 'removed' : 'added'}`;
  },
  toggleMembership(db, r) {
    const group = r.row(db, 'groups');
    const user = r.row(db, 'users');
    const removed = db.prepare('DELETE FROM group_members WHERE group_id = ? AND user_id = ?').run(group, user).changes;
    if (removed === 0) db.prepare('INSERT INTO group_members (group_id, user_id, joined_at) VALUES (?, ?, ?)').run(group, user, T0);
    return `membership ${user} in ${group} ${removed ? 'removed' : 'added'}`;
  },
  changeGroup(db, r) {
    const group = r.row(db, 'groups');
    const what = r.pick(['featured', 'featured', 'hidden', 'owner', 'title', 'delete']);
    if (what === 'featured') db.prepare('UPDATE groups SET featured_video_id = ? WHERE id = ?').run(r.chance(0.2) ? null : r.row(db, 'videos'), group);
    if (what === 'hidden') db.prepare('UPDATE groups SET hidden = 1 - hidden WHERE id = ?').run(group);
    if (what === 'owner') db.prepare('UPDATE groups SET owner_id = ? WHERE id = ?').run(r.row(db, 'users'), group);
    if (what === 'title') db.prepare('UPDATE groups SET title = ?, updated_at = ? WHERE id = ?').run(`Group ${++serial}`, T0 + serial, group);
    if (what === 'delete') db.prepare('DELETE FROM groups WHERE id = ?').run(group);
    return `group ${group} ${what}`;
  },
  changeCategory(db, r) {
    const what = r.pick(['rename', 'rename', 'insert', 'delete']);
    const id = r.row(db, 'categories');
    if (what === 'rename') db.prepare('UPDATE categories SET name = ? WHERE id = ?').run(`Category ${++serial}`, id);
    if (what === 'insert') db.prepare('INSERT INTO categories (name) VALUES (?)').run(`Fresh ${++serial}`);
    if (what === 'delete') db.prepare('DELETE FROM categories WHERE id = ?').run(id);
    return `category ${id} ${what}`;
  },
  changeTags(db, r) {
    const what = r.pick(['rename', 'tagVideo', 'untagVideo', 'interest']);
    const tag = r.row(db, 'tags');
    if (what === 'rename') db.prepare('UPDATE tags SET name = ? WHERE id = ?').run(`tag${++serial}`, tag);
    if (what === 'tagVideo') db.prepare('INSERT OR IGNORE INTO video_tags (video_id, tag_id) VALUES (?, ?)').run(r.row(db, 'videos'), tag);
    if (what === 'untagVideo') db.prepare('DELETE FROM video_tags WHERE tag_id = @tag AND video_id = (SELECT min(video_id) FROM video_tags WHERE tag_id = @tag)').run({ tag });
    if (what === 'interest') {
      const user = r.row(db, 'users');
      if (db.prepare('DELETE FROM interests WHERE user_id = ? AND tag_id = ?').run(user, tag).changes === 0) {
        db.prepare('INSERT INTO interests (user_id, tag_id) VALUES (?, ?)').run(user, tag);
      }
    }
    return `tag ${tag} ${what}`;
  },
  changePlaylist(db, r) {
    const user = r.row(db, 'users');
    const video = r.row(db, 'videos');
    const what = r.pick(['save', 'unsave', 'view']);
    if (what === 'save') db.prepare('INSERT OR REPLACE INTO saved_videos (user_id, video_id, position, saved_at) VALUES (?, ?, ?, ?)').run(user, video, r.int(0, 20), T0);
    if (what === 'unsave') db.prepare('DELETE FROM saved_videos WHERE user_id = ?').run(user);
    if (what === 'view') db.prepare('INSERT INTO viewing_history (user_id, video_id, viewed_at) VALUES (?, ?, ?)').run(user, video, T0 + ++serial);
    return `playlist of ${user}: ${what} ${video}`;
  },
  changeOwnRows(db, r) {
    const user = r.row(db, 'users');
    const what = r.pick(['recommend', 'hideRecommendation', 'receivePending', 'moderate', 'moderate', 'dropRecommendation', 'concept', 'source', 'reading', 'account']);
    if (what === 'recommend') {
      db.prepare('INSERT INTO recommendations (user_id, title, link, image, created_at) VALUES (?, ?, ?, ?, ?)').run(
        user, `Rec ${++serial}`, 'https://e.example.com/w', 'https://e.example.com/t.jpg', T0 + serial);
    }
    if (what === 'hideRecommendation') db.prepare('UPDATE recommendations SET is_public = 1 - is_public WHERE id = ?').run(r.row(db, 'recommendations'));
    // Moderation (migration 3): a pending row received, then approved, rejected or deleted.
    if (what === 'receivePending') {
      db.prepare(`INSERT INTO recommendations (user_id, title, link, image, status, created_at) VALUES (?, ?, ?, ?, 'pending', ?)`).run(
        user, `Pending ${++serial}`, `https://e.example.com/p${serial}`, 'https://e.example.com/t.jpg', T0 + serial);
    }
    if (what === 'moderate') {
      db.prepare('UPDATE recommendations SET status = ? WHERE id = ?').run(r.pick(['approved', 'rejected', 'pending']), r.row(db, 'recommendations'));
    }
    if (what === 'dropRecommendation') db.prepare('DELETE FROM recommendations WHERE id = ?').run(r.row(db, 'recommendations'));
    if (what === 'concept') {
      db.prepare('INSERT OR REPLACE INTO attention_concepts (user_id, category_id, value, updated_at) VALUES (?, ?, ?, ?)').run(user, r.row(db, 'categories'), r.int(0, 100) / 100, T0);
    }
    if (what === 'source') {
      db.prepare('INSERT INTO attention_sources (user_id, video_id, supplier_id, value, updated_at) VALUES (?, ?, ?, ?, ?)').run(user, r.row(db, 'videos'), r.row(db, 'users'), 0.5, T0);
    }
    if (what === 'reading') db.prepare('UPDATE reading_list SET category_id = ?, title = ? WHERE id = ?').run(r.row(db, 'categories'), `Blog ${++serial}`, r.row(db, 'reading_list'));
    if (what === 'account') db.prepare('DELETE FROM online_accounts WHERE id = ?').run(r.row(db, 'online_accounts'));
    return `user ${user} ${what}`;
  },
  // Writes that replace a row (SQLite deletes the old one without firing its delete triggers).
  replaceUserUnderNewId(db, r) {
    const name = db.prepare('SELECT username FROM users WHERE id = ?').pluck().get(r.row(db, 'users')) as string;
    db.prepare(`INSERT OR REPLACE INTO users (username, display_name, show_email, email, created_at, updated_at) VALUES (?, ?, 1, ?, ?, ?)`).run(
      name, `Replaced ${++serial}`, `r${serial}@example.net`, T0 + serial, T0 + serial,
    );
    return `replace user ${name} under a new id`;
  },
  replaceVideo(db, r) {
    const id = r.row(db, 'videos');
    const old = db.prepare('SELECT public_id FROM videos WHERE id = ?').pluck().get(id) as string;
    const sameId = r.chance(0.5);
    db.prepare(
      `REPLACE INTO videos (id, public_id, user_id, title, file_url, thumbnail_url, visibility, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 'public', ?, ?)`,
    ).run(sameId ? id : null, sameId ? `re${++serial}` : old, r.row(db, 'users'), `Replacement ${++serial}`,
      `https://cdn.example.org/r${serial}.flv`, `https://cdn.example.org/r${serial}.jpg`, T0 + 6e7 + serial, T0 + 6e7 + serial);
    return `replace video ${old} ${sameId ? 'under the same id with a new public id' : 'under a new id'}, another uploader`;
  },
  upsertUser(db, r) {
    const name = db.prepare('SELECT username FROM users WHERE id = ?').pluck().get(r.row(db, 'users')) as string;
    db.prepare(
      `INSERT INTO users (username, display_name, created_at, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (username) DO UPDATE SET display_name = excluded.display_name, state = 'active'`,
    ).run(name, `Upserted ${++serial}`, T0, T0);
    return `upsert user ${name}`;
  },
  updateOrReplaceKey(db, r) {
    const what = r.pick(['video', 'user', 'group']);
    const [table, column] = what === 'video' ? ['videos', 'public_id'] : what === 'user' ? ['users', 'username'] : ['groups', 'slug'];
    const a = r.row(db, table);
    const b = r.row(db, table);
    db.prepare(`UPDATE OR REPLACE ${table} SET ${column} = (SELECT ${column} FROM ${table} WHERE id = ?) WHERE id = ?`).run(b, a);
    return `${table} ${a} takes the ${column} of ${b}, replacing it`;
  },
  replaceNamedRow(db, r) {
    const table = r.pick(['categories', 'tags', 'groups']);
    const id = r.row(db, table);
    if (table === 'groups') {
      const slug = db.prepare('SELECT slug FROM groups WHERE id = ?').pluck().get(id);
      db.prepare('INSERT OR REPLACE INTO groups (slug, title, owner_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(slug, `Regrouped ${++serial}`, r.row(db, 'users'), T0 + serial, T0 + serial);
    } else {
      db.prepare(`INSERT OR REPLACE INTO ${table} (name) SELECT name FROM ${table} WHERE id = ?`).run(id);
    }
    return `replace ${table} ${id} under a new id`;
  },
  replaceOwnedRow(db, r) {
    const table = r.pick(['recommendations', 'reading_list', 'online_accounts', 'attention_sources', 'viewing_history']);
    const id = r.row(db, table);
    const user = r.row(db, 'users');
    // The same id, another user: the old owner's document must lose the row.
    if (table === 'recommendations') {
      db.prepare('REPLACE INTO recommendations (id, user_id, title, link, image, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(id, user, `Moved ${++serial}`, 'https://e.example.com/m', 'https://e.example.com/m.jpg', T0 + serial);
    } else if (table === 'reading_list') {
      db.prepare('REPLACE INTO reading_list (id, user_id, title, html_url, xml_url, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)').run(id, user, `Feed ${++serial}`, 'https://b.example/', 'https://b.example/feed', T0, T0 + serial);
    } else if (table === 'online_accounts') {
      db.prepare('REPLACE INTO online_accounts (id, user_id, service_homepage_url, account_name, profile_url) VALUES (?, ?, ?, ?, ?)').run(id, user, 'https://s.example/', `acct${++serial}`, 'https://s.example/p');
    } else if (table === 'attention_sources') {
      db.prepare('REPLACE INTO attention_sources (id, user_id, video_id, supplier_id, value, updated_at) VALUES (?, ?, ?, ?, ?, ?)').run(id, user, r.row(db, 'videos'), r.row(db, 'users'), 0.25, T0 + ++serial);
    } else {
      db.prepare('REPLACE INTO viewing_history (id, user_id, video_id, viewed_at) VALUES (?, ?, ?, ?)').run(id, user, r.row(db, 'videos'), T0 + ++serial);
    }
    return `replace ${table} ${id} as a row of user ${user}`;
  },
  // Archive pages (RFC 5005): uploads that push rows past the feed and start, grow or renumber pages.
  bulkUploads(db, r) {
    const user = r.chance(0.5) ? ARCHIVED_USER : r.row(db, 'users');
    const count = r.int(1, 12);
    const insert = db.prepare(
      `INSERT INTO videos (public_id, user_id, title, description, duration_seconds, file_url, thumbnail_url, visibility, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'public', ?, ?)`,
    );
    // Some dated into the archived range (a backdated upload), some after everything.
    const backdated = r.chance(0.3);
    for (let i = 0; i < count; i++) {
      const at = backdated ? T0 + r.int(0, 4e7) : T0 + 7e7 + ++serial;
      insert.run(`bu${++serial}`, user, `Bulk ${serial}`, `About ${serial}`, r.int(0, 40000), `https://cdn.example.org/b${serial}.mp4`, `https://cdn.example.org/b${serial}.jpg`, at, at);
    }
    return `${count} uploads by user ${user}${backdated ? ', backdated' : ''}`;
  },
  bulkPrivacyOrDelete(db, r) {
    const user = r.chance(0.6) ? ARCHIVED_USER : r.row(db, 'users');
    const what = r.pick(['private', 'public', 'delete']);
    const some = `SELECT id FROM videos WHERE user_id = ? ORDER BY random() LIMIT ${r.int(1, 12)}`;
    if (what === 'delete') db.prepare(`DELETE FROM videos WHERE id IN (${some})`).run(user);
    else db.prepare(`UPDATE videos SET visibility = ? WHERE id IN (${some})`).run(what, user);
    return `some videos of user ${user}: ${what}`;
  },
  renumberVideo(db, r) {
    // A row given another id (a merge, a restore): it moves between sitemap parts, and may name, or stop naming, an archive page.
    const id = r.row(db, 'videos');
    const to = r.pick([r.int(1, 400), r.int(1, 400), 5000 + r.int(0, 5000), 0, -r.int(1, 9)]);
    db.prepare('UPDATE videos SET id = ? WHERE id = ?').run(to, id);
    return `video ${id} renumbered ${to}`;
  },
  groupDates(db, r) {
    // The Atom feed's archive: a group created, or its creation time moved, for a user in many groups.
    if (r.chance(0.5)) {
      const group = db.prepare('INSERT INTO groups (slug, title, owner_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(`ag${++serial}`, `Archived ${serial}`, r.row(db, 'users'), T0 + r.int(0, 6e7), T0).lastInsertRowid;
      db.prepare('INSERT INTO group_members (group_id, user_id, joined_at) VALUES (?, ?, ?)').run(group, ARCHIVED_USER, T0);
      return `group ${group} with user ${ARCHIVED_USER}`;
    }
    const group = r.row(db, 'groups');
    db.prepare('UPDATE groups SET created_at = ? WHERE id = ?').run(T0 + r.int(0, 6e7), group);
    return `group ${group} created_at moved`;
  },
  blankShownText(db, r) {
    // A name or title blank once the characters XML cannot carry are gone: documents fall back to another field.
    const blank = r.pick(['', ' ', '\u0001\u0002', '\uFFFE']);
    if (r.chance(0.5)) {
      const id = r.row(db, 'users');
      db.prepare('UPDATE users SET display_name = ? WHERE id = ?').run(blank, id);
      return `user ${id} display name blanked`;
    }
    const id = r.row(db, 'videos');
    db.prepare(`UPDATE videos SET ${r.pick(['title', 'description'])} = ? WHERE id = ?`).run(blank, id);
    return `video ${id} text blanked`;
  },
  toggleUserFlag(db, r) {
    const id = r.row(db, 'users');
    const column = r.pick(['show_email', 'show_phone', 'show_chat_ids', 'show_address', 'history_public']);
    db.prepare(`UPDATE users SET ${column} = 1 - ${column} WHERE id = ?`).run(id);
    return `user ${id} ${column} toggled`;
  },
};

/** Applies one random change; a change the schema refuses (a duplicate name, a check) is skipped. */
function mutate(db: Database.Database, r: Random): string {
  const name = r.pick(Object.keys(MUTATIONS));
  try {
    return MUTATIONS[name]!(db, r);
  } catch (error) {
    if ((error as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) return `${name}: refused by the schema`;
    throw error;
  }
}

describe('incremental builds', () => {
  // SEED=<n> replays one seed; SEEDS=<n> tries n seeds (a longer hunt than the suite's two).
  const seeds = process.env.SEED ? [Number(process.env.SEED)] : Array.from({ length: Number(process.env.SEEDS ?? 2) }, (_, i) => 11 * (i + 1));
  const rounds = Number(process.env.ROUNDS ?? 5);

  for (const [seed, formats] of seeds.flatMap((seed) => [[seed, PROBED], [seed, PROBED_SPLIT]] as const)) {
    const split = formats === PROBED_SPLIT ? ', the sitemap split by id' : '';
    it(`give the bytes of a full rebuild after random changes, and leave unchanged files untouched (seed ${seed}${split})`, () => {
      const fixture = createDemoDb({ users: 16, seed });
      const work = tempDir('vidfeeds-incr-');
      // The head snippet file and the podcast tags: documents and tags a default configuration leaves out.
      const config = testConfig({ videoHead: { file: true }, feeds: { podcast: PODCAST } });
      const site = createSiteContext(config, formats, new Date(Date.UTC(2026, 0, 1)));
      const out = join(work.dir, 'incremental', 'out');
      const stateFile = join(work.dir, 'incremental', 'state.sqlite');
      const build = (options: { user?: string } = {}) => buildSite({ db: fixture.file, out, stateFile, config, site, formats, ...options });

      // The site writes through its own connection, with foreign keys on, as a site would.
      const site_db = new Database(fixture.file);
      site_db.pragma('foreign_keys = ON');
      cleanUpAfterTest(() => site_db.close());
      const r = new Random(prng(seed));
      archivedFixture(site_db, r);

      expect(build().mode).toBe('full');
      const archived = (tree: ReturnType<typeof readTree>, feed: string) => [...tree.keys()].filter((path) => path.includes(`/${feed}/archive/`)).length;
      expect(archived(readTree(out), 'rss')).toBeGreaterThan(0);
      expect(archived(readTree(out), 'atom')).toBeGreaterThan(0);
      const history: string[] = [];
      for (let round = 0; round < rounds; round++) {
        const steps = r.int(1, 6);
        for (let step = 0; step < steps; step++) history.push(mutate(site_db, r));
        // Now and then an operator rebuilds one user: the next incremental build must still be exact.
        if (r.chance(0.2)) {
          const name = site_db.prepare(`SELECT username FROM users WHERE state = 'active' ORDER BY random() LIMIT 1`).pluck().get() as string;
          history.push(`partial build --user ${name}`);
          expect(build({ user: name }).mode).toBe('partial');
        }

        const before = readTree(out);
        const report = build();
        const after = readTree(out);
        const context = `seed ${seed}, round ${round}; changes:\n  ${history.join('\n  ')}`;
        expect(report.mode, context).toBe('incremental');
        expect(report.failed, context).toEqual([]);

        const fresh = join(work.dir, `full-${round}`);
        const full = buildSite({ db: fixture.file, out: join(fresh, 'out'), stateFile: join(fresh, 'state.sqlite'), config, site, formats });
        expect(full.mode).toBe('full');
        expect(treeDifferences(after, readTree(join(fresh, 'out'))), context).toEqual([]);
        expect(touchedButSame(before, after), context).toEqual([]);
        if (split) expect([...after.keys()].filter((path) => /^sitemap-(users|videos)-\d+-\d+\.xml$/.test(path)).length, context).toBeGreaterThan(2);
      }
      // The builds share their context, as watch's do: parts rendered by one were spliced by the next.
      if (split) expect(site.sitemapParts!.counts.spliced).toBeGreaterThan(0);
    });
  }

  it('publish a user whose creation time, stored as text before the type checks, is corrected: friends list it as a full build does', () => {
    const work = tempDir('vidfeeds-incr-fix-');
    const file = join(work.dir, 'site.sqlite');
    // Written at schema version 1, before the type checks, then upgraded as `vidfeeds init` does.
    const old = new Database(file);
    old.exec(MIGRATIONS[0]!);
    old.pragma('user_version = 1');
    old.exec(`
      INSERT INTO users (id, username, display_name, created_at, updated_at) VALUES (1, 'alice', 'Alice', ${T0}, ${T0}), (2, 'carol', 'Carol', 'yesterday', ${T0});
      INSERT INTO friendships (user_id, friend_id, created_at) VALUES (1, 2, ${T0});
      INSERT INTO videos (id, public_id, user_id, title, file_url, thumbnail_url, created_at, updated_at)
      VALUES (1, 'cv', 2, 'Carol''s', 'https://c.example/1.mp4', 'https://c.example/1.jpg', ${T0}, ${T0});
    `);
    expect(migrate(old, file).wrongTypes.map((i) => `${i.table} ${i.row} ${i.column}`)).toEqual(['users id=2 created_at']);
    const config = testConfig();
    const site = createSiteContext(config, PROBED, new Date(Date.UTC(2026, 0, 1)));
    const out = join(work.dir, 'incremental', 'out');
    const build = (dir: string) => buildSite({ db: file, out: join(dir, 'out'), stateFile: join(dir, 'state.sqlite'), config, site, formats: PROBED });
    expect(build(join(work.dir, 'incremental')).mode).toBe('full');
    expect(readTree(out).has('carol/probe/user.json')).toBe(false);

    old.prepare('UPDATE users SET created_at = ? WHERE id = 2').run(T0 + 1);
    old.close();
    expect(build(join(work.dir, 'incremental')).mode).toBe('incremental');
    const fresh = join(work.dir, 'full');
    expect(build(fresh).mode).toBe('full');
    const after = readTree(out);
    expect(after.get('alice/probe/user.json')?.body.toString()).toContain('"carol"');
    expect(after.has('cv/oembed/index.json')).toBe(true);
    expect(treeDifferences(after, readTree(join(fresh, 'out')))).toEqual([]);
  });
});
