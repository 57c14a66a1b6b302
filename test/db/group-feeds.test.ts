import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import type { UserPart } from '../../src/model/views.js';
import { createTestDb, insertRow, insertUser, insertVideo, T0 } from '../helpers/site-fixture.js';
import { cleanUpAfterTest } from '../helpers/temp-dir.js';

/**
 * A user's groups as the Atom feed and its archives read them: the newest 20 rows SQL lets through
 * (visible groups of listed owners), those whose row cannot be published left out of the feed,
 * the rest archived; each group's featured video read once a snapshot and kept while it is open.
 * Checked against one statement that says which groups in SQL.
 */

const PARTS: ReadonlySet<UserPart> = new Set<UserPart>(['groups', 'archivedGroups']);

/** Two members of 30 groups, newest g29: g29 hidden, g28's owner suspended, g27 with a slug that is a BLOB. */
function groupsSite() {
  const fixture = createTestDb();
  cleanUpAfterTest(fixture.cleanup);
  const { db } = fixture;
  const member = insertUser(db, { username: 'member' });
  const other = insertUser(db, { username: 'other' });
  const owner = insertUser(db, { username: 'owner', display_name: 'The Owner' });
  const suspended = insertUser(db, { username: 'gone', state: 'suspended' });
  const shown = insertVideo(db, owner.id, { public_id: 'shown', title: 'Shown' });
  // A row stored before the type checks (src/db/type-checks.ts), which refuse it now.
  for (const name of db.prepare(`SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'groups'`).pluck().all()) db.exec(`DROP TRIGGER "${String(name)}"`);
  const hidden = insertVideo(db, owner.id, { public_id: 'kept-private', visibility: 'private' });
  for (let g = 0; g < 30; g++) {
    insertRow(db, 'groups', {
      id: 100 + g,
      slug: g === 27 ? Buffer.from('blob-slug') : `g${g}`,
      title: `Group ${g}`,
      owner_id: g === 28 ? suspended.id : owner.id,
      hidden: g === 29 ? 1 : 0,
      featured_video_id: g === 26 ? shown.id : g === 25 ? hidden.id : null,
      // Two groups share a time: the order falls back to the id.
      created_at: T0 + (g === 10 ? 9 : g) * 60,
      updated_at: T0 + g * 60,
    });
    for (const user of [member, other]) insertRow(db, 'group_members', { group_id: 100 + g, user_id: user.id, joined_at: T0 });
  }
  return { ...fixture, member, other };
}

/** The visible groups of listed owners, newest first, as one statement with its owner's rule reads them. */
function visibleInSql(db: Database.Database, userId: number): number[] {
  return db
    .prepare(
      `SELECT g.id FROM group_members m JOIN groups g ON g.id = m.group_id JOIN users o ON o.id = g.owner_id
       WHERE m.user_id = ? AND g.hidden = 0 AND o.state = 'active' ORDER BY g.created_at DESC, g.id DESC`,
    )
    .pluck()
    .all(userId) as number[];
}

describe("a user's groups and their featured videos", () => {
  it('holds the newest 20 rows SQL lets through, leaves out the one that cannot be published, and archives the rest', () => {
    const { db, file, member, other } = groupsSite();
    const reader = new SiteReader(new Database(file, { readonly: true }), readLimits(8));
    const visible = visibleInSql(db, member.id);
    expect(visible.slice(0, 2)).toEqual([127, 126]);
    const bundles = reader.snapshot(() => [reader.userBundle(member.id, PARTS), reader.userBundle(other.id, PARTS)]);
    for (const bundle of bundles) {
      // g27 is among the feed's 20 rows but cannot be published (its slug): 19 entries.
      expect(bundle.groups.map((g) => g.id)).toEqual(visible.slice(1, 20));
      expect(bundle.archived.groups).toEqual(visible.slice(20).reverse());
      const [newest] = bundle.groups;
      expect(newest).toMatchObject({ slug: 'g26', owner: { username: 'owner', displayName: 'The Owner' }, featuredVideo: { publicId: 'shown', title: 'Shown' } });
      expect(bundle.groups.find((g) => g.slug === 'g25')!.featuredVideo).toBeNull();
    }
    // The tie at g9/g10 keeps the id order, newest first.
    expect(visible.indexOf(110)).toBeLessThan(visible.indexOf(109));
  });

  it('sees every change in the next snapshot: no featured video or owner is kept from one to the next', () => {
    const { db, file, member } = groupsSite();
    const reader = new SiteReader(new Database(file, { readonly: true }), readLimits(8));
    const before = reader.snapshot(() => reader.userBundle(member.id, PARTS));
    const bySlug = (bundle: typeof before, slug: string) => bundle.groups.find((g) => g.slug === slug);
    expect(bySlug(before, 'g26')!.featuredVideo).toMatchObject({ title: 'Shown' });
    expect(bySlug(before, 'g25')!.featuredVideo).toBeNull();
    db.prepare(`UPDATE videos SET title = 'Retitled' WHERE public_id = 'shown'`).run();
    db.prepare(`UPDATE videos SET visibility = 'public' WHERE public_id = 'kept-private'`).run();
    db.prepare(`UPDATE groups SET hidden = 0 WHERE id = 129`).run();
    expect(before.groups.map((g) => g.id)).not.toContain(128);
    // g28's owner comes back and the other owner is renamed: the owners read before are not kept.
    db.prepare(`UPDATE users SET state = 'active' WHERE username = 'gone'`).run();
    db.prepare(`UPDATE users SET display_name = 'Renamed' WHERE username = 'owner'`).run();
    const after = reader.snapshot(() => reader.userBundle(member.id, PARTS));
    expect(after.groups[0]!.id).toBe(129);
    expect(after.groups[1]).toMatchObject({ id: 128, owner: { username: 'gone' } });
    expect(after.groups[2]!.owner).toEqual({ username: 'owner', displayName: 'Renamed' });
    expect(bySlug(after, 'g26')!.featuredVideo).toMatchObject({ publicId: 'shown', title: 'Retitled' });
    expect(bySlug(after, 'g25')!.featuredVideo).toMatchObject({ publicId: 'kept-private' });
    expect(after.groups.map((g) => g.id)).toEqual(visibleInSql(db, member.id).filter((id) => id !== 127).slice(0, 19));
    expect(after.archived.groups).toEqual(visibleInSql(db, member.id).slice(20).reverse());
  });
});
