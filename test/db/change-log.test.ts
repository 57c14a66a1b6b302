import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { affectedOwners } from '../../src/pipeline/plan/changes.js';
import { ChangeLog } from '../../src/db/change-log.js';
import { MIGRATIONS, migrate } from '../../src/db/migrations.js';
import { createTestDb, insertRow, insertUser, insertVideo, T0 } from '../helpers/site-fixture.js';
import { cleanUpAfterTest, useTempDir } from '../helpers/temp-dir.js';

function fixture() {
  const f = createTestDb();
  return f;
}

/** The tables of the schema that hold site data (the change log's own tables left out). */
function dataTables(db: Database.Database): string[] {
  return db
    .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('change_log', 'site_meta') AND name NOT LIKE 'sqlite_%' ORDER BY name`)
    .pluck()
    .all() as string[];
}

describe('change log (migration 2)', () => {
  it('every data table logs its inserts, updates and deletes, so a later table without triggers fails here', () => {
    const { db } = fixture();
    const triggers = db.prepare(`SELECT tbl_name, sql FROM sqlite_master WHERE type = 'trigger'`).all() as Array<{ tbl_name: string; sql: string }>;
    const tables = dataTables(db);
    expect(tables.length).toBeGreaterThanOrEqual(16);
    for (const table of tables) {
      for (const event of ['INSERT', 'UPDATE', 'DELETE']) {
        const found = triggers.filter((t) => t.tbl_name === table && t.sql.includes(`AFTER ${event} ON ${table}`) && t.sql.includes('INSERT INTO change_log'));
        expect(found, `${table} has no AFTER ${event} trigger writing change_log`).toHaveLength(1);
      }
    }
  });

  it('records a change made by another SQL client, with the keys before and after', () => {
    const { db, file } = fixture();
    const alice = insertUser(db, { username: 'alice' });
    const bob = insertUser(db, { username: 'bob' });
    const video = insertVideo(db, alice.id, { public_id: 'clip' });
    const site = new Database(file);
    cleanUpAfterTest(() => site.close());
    site.pragma('foreign_keys = ON');
    site.prepare(`UPDATE videos SET user_id = ?, visibility = 'private' WHERE id = ?`).run(bob.id, video.id);
    site.prepare(`UPDATE users SET display_name = 'Alice L.' WHERE id = ?`).run(alice.id);

    const log = new ChangeLog(db);
    const { position } = log.current();
    const changes = [...log.since(position - 2, position)];
    expect(changes.map((c) => [c.table, c.op])).toEqual([
      ['videos', 'update'],
      ['users', 'update'],
    ]);
    expect(changes[0]!.old).toMatchObject({ id: video.id, user_id: alice.id, visibility: 'public', public_id: 'clip' });
    expect(changes[0]!.new).toMatchObject({ id: video.id, user_id: bob.id, visibility: 'private' });
    expect(changes[1]!.new).toMatchObject({ username: 'alice', person_changed: 1 });
  });

  it('records the rows a delete cascades to, so their owners are found after the rows are gone', () => {
    const { db } = fixture();
    const alice = insertUser(db, { username: 'alice' });
    const bob = insertUser(db, { username: 'bob' });
    const video = insertVideo(db, alice.id);
    insertRow(db, 'saved_videos', { user_id: bob.id, video_id: video.id, position: 0, saved_at: T0 });
    insertRow(db, 'friendships', { user_id: bob.id, friend_id: alice.id, created_at: T0 });
    const log = new ChangeLog(db);
    const before = log.current().position;
    db.prepare('DELETE FROM users WHERE id = ?').run(alice.id);
    const changes = [...log.since(before, log.current().position)];
    expect(changes.map((c) => `${c.table} ${c.op}`).sort()).toEqual(['friendships delete', 'saved_videos delete', 'users delete', 'videos delete']);
    const affected = affectedOwners(changes, log.lookups);
    expect(affected.users).toEqual(new Set([alice.id, bob.id]));
    expect(affected.videos).toEqual(new Set([video.id]));
  });

  it('answers the owner look-ups in SQL', () => {
    const { db } = fixture();
    const [a, b, c] = ['a', 'b', 'c'].map((username) => insertUser(db, { username }));
    const video = insertVideo(db, a!.id);
    insertRow(db, 'friendships', { user_id: b!.id, friend_id: a!.id, created_at: T0 });
    insertRow(db, 'viewing_history', { user_id: c!.id, video_id: video.id, viewed_at: T0 });
    insertRow(db, 'groups', { id: 1, slug: 'g', title: 'G', owner_id: a!.id, featured_video_id: video.id, created_at: T0, updated_at: T0 });
    insertRow(db, 'group_members', { group_id: 1, user_id: c!.id, joined_at: T0 });
    const { lookups } = new ChangeLog(db);
    expect(lookups.usersBefriending([a!.id])).toEqual([b!.id]);
    expect(lookups.usersReferencingVideos([video.id])).toEqual([c!.id]);
    expect(lookups.groupsOwnedBy([a!.id])).toEqual([1]);
    expect(lookups.groupsFeaturing([video.id])).toEqual([1]);
    expect(lookups.membersOfGroups([1])).toEqual([c!.id]);
    expect(lookups.videosUploadedBy([a!.id, b!.id])).toEqual([video.id]);
    expect(lookups.uploadersOf([])).toEqual([]);
  });

  it('keeps its position when entries are pruned, and names the database', () => {
    const { db } = fixture();
    insertUser(db, { username: 'a' });
    insertUser(db, { username: 'b' });
    const log = new ChangeLog(db);
    const { position, databaseId, oldest } = log.current();
    expect(position).toBeGreaterThanOrEqual(2);
    expect(oldest).toBe(1);
    expect(databaseId).toMatch(/^[0-9a-f]{32}$/);
    db.exec('DELETE FROM change_log');
    // Pruned past the position: no entry names it any more.
    expect(log.current()).toEqual({ databaseId, position, oldest: null, identity: null, views: [] });
    insertUser(db, { username: 'c' });
    expect(log.current().position).toBe(position + 1);
  });

  it('is added to a database made before it', () => {
    const dir = useTempDir();
    const file = join(dir, 'old.sqlite');
    const db = new Database(file);
    cleanUpAfterTest(() => db.close());
    db.exec(MIGRATIONS[0]!);
    db.pragma('user_version = 1');
    insertUser(db, { username: 'before' });
    migrate(db, file);
    expect(db.prepare('SELECT count(*) FROM change_log').pluck().get()).toBe(0);
    insertUser(db, { username: 'after' });
    expect(db.prepare('SELECT table_name FROM change_log').pluck().all()).toEqual(['users']);
  });
});
