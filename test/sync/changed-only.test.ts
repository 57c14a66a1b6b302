import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrations.js';
import { runSync, type SyncReport } from '../../src/sync/run-sync.js';
import type { TableMapping } from '../../src/sync/table-plan.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { logAfter, logPosition, siteRows } from './sync-scenario.js';

/**
 * `sync --changed-only` against an SQLite source whose rows carry a `modified` counter: it reads
 * the rows past the last syncs' watermark and the keys, and ends with exactly the rows a full
 * compare gives; it compares in full, saying why, whenever it cannot trust the watermark.
 */

const T = 1_262_304_000; // 2010-01-01

function makeSource(file: string): Database.Database {
  const db = new Database(file);
  db.exec(`
    CREATE TABLE accounts (uid INTEGER PRIMARY KEY, login TEXT, joined INTEGER, modified INTEGER);
    CREATE TABLE media (mid INTEGER PRIMARY KEY, owner INTEGER, code TEXT, name TEXT, added INTEGER, modified INTEGER);
    CREATE TABLE favs (uid INTEGER, mid INTEGER, pos INTEGER, PRIMARY KEY (uid, mid));
  `);
  const account = db.prepare('INSERT INTO accounts VALUES (?, ?, ?, ?)');
  for (let i = 1; i <= 5; i++) account.run(i, `user${i}`, T + i, 100 + i);
  const media = db.prepare('INSERT INTO media VALUES (?, ?, ?, ?, ?, ?)');
  for (let i = 1; i <= 20; i++) media.run(i, 1 + (i % 5), `v${i}`, `Video ${i}`, T + 1000 + i, 200 + i);
  const fav = db.prepare('INSERT INTO favs VALUES (?, ?, ?)');
  for (let i = 1; i <= 10; i++) fav.run(1 + (i % 5), i, i);
  return db;
}

const MAPPING: Record<string, TableMapping> = {
  users: { query: 'SELECT uid AS id, login AS username, joined AS created_at, joined AS updated_at, modified FROM accounts', decodeEntities: [], watermark: 'modified' },
  videos: {
    query: `SELECT mid AS id, code AS public_id, owner AS user_id, name AS title, 'http://x.example/' || code || '.mp4' AS file_url,
      'http://x.example/' || code || '.jpg' AS thumbnail_url, added AS created_at, added AS updated_at, modified FROM media`,
    decodeEntities: [],
    watermark: 'modified',
  },
  // No watermark: always compared in full.
  saved_videos: { query: `SELECT uid AS user_id, mid AS video_id, pos AS position, ${T} AS saved_at FROM favs`, decodeEntities: [] },
};

function makeTarget(file: string): void {
  const db = new Database(file);
  db.pragma('foreign_keys = ON');
  migrate(db, file);
  db.pragma('journal_mode = WAL');
  db.close();
}

function sync(db: string, source: string, options: { changedOnly?: boolean; tables?: Record<string, TableMapping> } = {}): Promise<SyncReport> {
  return runSync({ db, from: `sqlite:${source}`, tables: options.tables ?? MAPPING, dryRun: false, changedOnly: options.changedOnly ?? true, waitSeconds: 0 });
}

/** The marks a sync keeps for the videos table. */
function marksOf(file: string): string | undefined {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare(`SELECT value FROM site_meta WHERE key = 'sync.watermark.videos'`).get() as { value: string } | undefined)?.value;
  } finally {
    db.close();
  }
}

function fresh(dir: string, name: string): string {
  const file = join(dir, name);
  makeTarget(file);
  return file;
}

describe('sync --changed-only', () => {
  it('reads only the changed rows and the keys, and leaves exactly the rows a full compare leaves', async () => {
    const dir = useTempDir('vidfeeds-changed-');
    const sourceFile = join(dir, 'source.db');
    const source = makeSource(sourceFile);
    const target = fresh(dir, 'vidfeeds.sqlite');

    const first = await sync(target, sourceFile);
    expect(first.tables.videos).toMatchObject({ inserted: 20, mode: 'full', reason: expect.stringMatching(/no earlier sync of this mapping/) });

    // Nothing changed: only the rows at or past the first sync's greatest watermark are read again.
    const idle = await sync(target, sourceFile);
    expect(idle.changes).toBe(0);
    expect(idle.tables.videos).toMatchObject({ mode: 'changed', unchanged: 1 }); // video 20, at the watermark
    expect(idle.tables.saved_videos).toMatchObject({ mode: 'full', reason: expect.stringMatching(/no watermark column/), unchanged: 10 });

    const before = logPosition(target);
    source.exec(`
      UPDATE media SET name = 'Renamed', modified = 900 WHERE mid = 2;
      UPDATE media SET modified = 901 WHERE mid = 3;                              -- touched, not changed
      INSERT INTO media VALUES (21, 1, 'v21', 'Backdated', ${T + 5000}, 50);      -- new, its watermark old
      UPDATE media SET code = NULL, modified = 903 WHERE mid = 6;                -- can no longer be stored: goes
      DELETE FROM media WHERE mid = 4;
      DELETE FROM favs WHERE mid = 4;
      INSERT INTO accounts VALUES (6, 'user6', ${T + 6}, 902);
    `);
    const changed = await sync(target, sourceFile);
    // Read again and unchanged: video 3 (touched) and video 20, user 5 (at the watermark).
    expect(changed.tables.videos).toMatchObject({ mode: 'changed', inserted: 1, updated: 1, deleted: 2, skipped: 1, unchanged: 2 });
    expect(changed.tables.users).toMatchObject({ mode: 'changed', inserted: 1, updated: 0, deleted: 0, unchanged: 1 });
    // The favourites of videos 4 and 6 went with them (the foreign key cascades); the source still
    // holds the one of video 6, which now refers to a missing video: skipped, as a full compare does.
    // Both count as deleted, with their parent.
    expect(changed.tables.saved_videos).toMatchObject({ mode: 'full', inserted: 0, updated: 0, deleted: 2, cascaded: 2, skipped: 1 });
    const log = logAfter(target, before).map((e) => `${e.table_name} ${e.op} ${e.new_keys ?? e.old_keys}`);
    expect(log.filter((e) => e.startsWith('videos '))).toEqual([
      expect.stringMatching(/^videos delete \{"id":4,/),
      expect.stringMatching(/^videos update \{"id":2,/),
      expect.stringMatching(/^videos delete \{"id":6,/),
      expect.stringMatching(/^videos insert \{"id":21,/),
    ]);
    expect(log.filter((e) => e.startsWith('users '))).toEqual([expect.stringMatching(/^users insert \{"id":6,/)]);

    const reference = fresh(dir, 'reference.sqlite');
    await sync(reference, sourceFile, { changedOnly: false });
    expect(siteRows(target)).toBe(siteRows(reference));

    // A sync that finds nothing commits nothing, not even its marks.
    const marks = marksOf(target);
    const settled = logPosition(target);
    const quiet = await sync(target, sourceFile);
    expect(quiet).toMatchObject({ changes: 0, logged: 0 });
    expect(logPosition(target)).toBe(settled);
    expect(marksOf(target)).toBe(marks);
    source.close();
  });

  it('keeps the row a full compare keeps of two rows with one key, when only the other changed', async () => {
    const dir = useTempDir('vidfeeds-changed-');
    const sourceFile = join(dir, 'source.db');
    const source = makeSource(sourceFile);
    // A second row for user 2, from a table of its own: 'user2' comes before 'zed' and is kept.
    source.exec(`CREATE TABLE aliases (uid INTEGER, login TEXT, joined INTEGER, modified INTEGER); INSERT INTO aliases VALUES (2, 'zed', ${T}, 150)`);
    const tables = { ...MAPPING, users: { ...MAPPING.users, query: `${MAPPING.users.query} UNION ALL SELECT uid, login, joined, joined, modified FROM aliases` } };
    const target = fresh(dir, 'vidfeeds.sqlite');
    const username = () => {
      const db = new Database(target, { readonly: true });
      try {
        return (db.prepare('SELECT username FROM users WHERE id = 2').get() as { username: string }).username;
      } finally {
        db.close();
      }
    };
    for (const mode of ['full', 'changed']) {
      const report = await sync(target, sourceFile, { tables });
      expect(report.tables.users).toMatchObject({ mode, skipped: 1 });
      expect(username()).toBe('user2');
    }
    // Only the row not kept moved past the watermark: the changed rows alone would hold it only.
    source.exec('UPDATE aliases SET modified = 950');
    const touched = await sync(target, sourceFile, { tables });
    expect(touched.tables.users).toMatchObject({ mode: 'changed', updated: 0, skipped: 1 });
    expect(username()).toBe('user2');
    source.close();
  });

  it('refuses keys out of numeric order as a full compare does, writing nothing', async () => {
    const dir = useTempDir('vidfeeds-changed-');
    const sourceFile = join(dir, 'source.db');
    const source = makeSource(sourceFile);
    const target = fresh(dir, 'vidfeeds.sqlite');
    // Keys as text sort as text: '10' comes between '1' and '2'.
    const tables = { ...MAPPING, users: { ...MAPPING.users!, query: MAPPING.users!.query.replace('uid AS id', 'CAST(uid AS TEXT) AS id') } };
    expect((await sync(target, sourceFile, { tables })).tables.users).toMatchObject({ mode: 'full' });
    expect((await sync(target, sourceFile, { tables })).tables.users).toMatchObject({ mode: 'changed' });
    const dump = () => {
      const db = new Database(target, { readonly: true });
      try {
        return JSON.stringify(['users', 'videos', 'saved_videos', 'site_meta'].map((table) => db.prepare(`SELECT * FROM ${table} ORDER BY 1, 2`).all()));
      } finally {
        db.close();
      }
    };
    const before = dump();
    source.exec(`INSERT INTO accounts VALUES (10, 'user10', ${T + 10}, 900)`);
    await expect(sync(target, sourceFile, { tables })).rejects.toThrow(
      /^sync\.tables\.users: the source returns the key \(id\) out of numeric order \(id=2 after 10\): return it as an integer/,
    );
    expect(dump()).toBe(before);
    source.close();
  });

  it('syncs a row skipped for a missing reference once that row appears, though its own watermark did not move', async () => {
    const dir = useTempDir('vidfeeds-changed-');
    const sourceFile = join(dir, 'source.db');
    const source = makeSource(sourceFile);
    source.exec(`INSERT INTO media VALUES (30, 99, 'orphan', 'Orphan', ${T}, 210)`);
    const target = fresh(dir, 'vidfeeds.sqlite');
    for (const mode of ['full', 'changed', 'changed']) {
      const report = await sync(target, sourceFile);
      expect(report.tables.videos).toMatchObject({ mode, skipped: 1 });
    }
    source.exec(`INSERT INTO accounts VALUES (99, 'late', ${T}, 1000)`);
    const report = await sync(target, sourceFile);
    expect(report.tables.users).toMatchObject({ mode: 'changed', inserted: 1 });
    expect(report.tables.videos).toMatchObject({ mode: 'changed', inserted: 1, skipped: 0 });
    source.close();
  });

  it('compares in full, saying why, when rows were written outside sync, the source went back, or the mapping changed', async () => {
    const dir = useTempDir('vidfeeds-changed-');
    const sourceFile = join(dir, 'source.db');
    const source = makeSource(sourceFile);
    const target = fresh(dir, 'vidfeeds.sqlite');
    for (let i = 0; i < 3; i++) await sync(target, sourceFile);

    const db = new Database(target);
    db.pragma('foreign_keys = ON');
    db.exec(`UPDATE videos SET title = 'edited by hand' WHERE id = 5`);
    db.close();
    const outside = await sync(target, sourceFile);
    expect(outside.tables.videos).toMatchObject({ mode: 'full', updated: 1, reason: expect.stringMatching(/written by something other than a sync/) });
    expect(outside.tables.users).toMatchObject({ mode: 'changed' });
    expect(siteRows(target)).toContain('"Video 5"');
    expect((await sync(target, sourceFile)).tables.videos).toMatchObject({ mode: 'changed', updated: 0 });

    source.exec('UPDATE media SET modified = modified - 150');
    const restored = await sync(target, sourceFile);
    expect(restored.tables.videos).toMatchObject({ mode: 'full', reason: expect.stringMatching(/greatest modified went back \(70, was 220\)/) });

    const edited = { ...MAPPING, videos: { ...MAPPING.videos!, query: `${MAPPING.videos!.query} WHERE mid > 0` } };
    expect((await sync(target, sourceFile, { tables: edited })).tables.videos).toMatchObject({ mode: 'full', reason: expect.stringMatching(/no earlier sync of this mapping/) });
    source.close();
  });

  it('refuses a watermark the query does not return, or one that is a column of the table', async () => {
    const dir = useTempDir('vidfeeds-changed-');
    const sourceFile = join(dir, 'source.db');
    makeSource(sourceFile).close();
    const target = fresh(dir, 'vidfeeds.sqlite');
    const missing = { users: { ...MAPPING.users!, watermark: 'changed_at' } };
    await expect(sync(target, sourceFile, { tables: missing })).rejects.toThrow(/sync\.tables\.users\.watermark: the query does not return column changed_at/);
    const stored = { users: { ...MAPPING.users!, watermark: 'updated_at' } };
    await expect(sync(target, sourceFile, { tables: stored })).rejects.toThrow(/sync\.tables\.users\.watermark: updated_at is a column of users/);
    // A mistyped watermark is one problem, with the column meant, not also a column users does not have.
    const mistyped = { users: { ...MAPPING.users!, watermark: 'modifed' } };
    await expect(sync(target, sourceFile, { tables: mistyped })).rejects.toThrow(
      /^sync\.tables\.users\.watermark: the query does not return column modifed \(did you mean modified\?\); it returns id, username, created_at, updated_at, modified$/,
    );
  });
});
