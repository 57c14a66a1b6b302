import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import xxhash from 'xxhash-wasm';
import { migrate } from '../../src/db/migrations.js';
import { BufferDigests, rowDigest } from '../../src/sync/row-digest.js';
import { runSync, type SyncReport } from '../../src/sync/run-sync.js';
import type { TableMapping } from '../../src/sync/table-plan.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { dumpTables, siteRows } from './sync-scenario.js';

/**
 * A full sync reads the digests of the source rows it last wrote in place of vidfeeds's rows
 * (src/sync/digest-table.ts). It must end exactly where a sync into an empty database ends, what
 * ever else wrote vidfeeds's tables in between: a hand edit, a foreign key's cascade, a mapping
 * that changed, a change log pruned.
 */

const T = 1_262_304_000; // 2010-01-01

function makeSource(file: string): Database.Database {
  const db = new Database(file);
  db.exec(`
    CREATE TABLE accounts (uid INTEGER PRIMARY KEY, login TEXT);
    CREATE TABLE sections (sid INTEGER PRIMARY KEY, label TEXT);
    CREATE TABLE media (mid INTEGER PRIMARY KEY, owner INTEGER, section INTEGER, code TEXT, name TEXT, notes TEXT, length REAL);
    CREATE TABLE clubs (cid INTEGER PRIMARY KEY, owner INTEGER, slug TEXT, featured INTEGER);
    CREATE TABLE favs (uid INTEGER, mid INTEGER, pos INTEGER, PRIMARY KEY (uid, mid));
  `);
  for (let i = 1; i <= 6; i++) db.prepare('INSERT INTO accounts VALUES (?, ?)').run(i, `user${i}`);
  for (let i = 1; i <= 3; i++) db.prepare('INSERT INTO sections VALUES (?, ?)').run(i, `Section ${i}`);
  for (let i = 1; i <= 40; i++) db.prepare('INSERT INTO media VALUES (?, ?, ?, ?, ?, ?, ?)').run(i, 1 + (i % 6), 1 + (i % 3), `v${i}`, `Video ${i}`, i % 4 === 0 ? null : `Notes of ${i}`, i + 0.5);
  for (let i = 1; i <= 4; i++) db.prepare('INSERT INTO clubs VALUES (?, ?, ?, ?)').run(i, i, `club-${i}`, i * 3);
  for (let i = 1; i <= 30; i++) db.prepare('INSERT INTO favs VALUES (?, ?, ?)').run(1 + (i % 6), i, i);
  return db;
}

const MAPPING: Record<string, TableMapping> = {
  users: { query: `SELECT uid AS id, login AS username, ${T} AS created_at, ${T} AS updated_at FROM accounts`, decodeEntities: [] },
  categories: { query: 'SELECT sid AS id, label AS name FROM sections', decodeEntities: [] },
  videos: {
    query: `SELECT mid AS id, code AS public_id, owner AS user_id, name AS title, notes AS description, section AS category_id,
      'http://x.example/' || code || '.mp4' AS file_url, 'http://x.example/' || code || '.jpg' AS thumbnail_url,
      120 AS thumbnail_width, 90 AS thumbnail_height, ${T} + mid AS created_at, ${T} + mid AS updated_at FROM media`,
    decodeEntities: [],
  },
  groups: { query: `SELECT cid AS id, owner AS owner_id, slug, slug AS title, featured AS featured_video_id, ${T} AS created_at, ${T} AS updated_at FROM clubs`, decodeEntities: [] },
  saved_videos: { query: `SELECT uid AS user_id, mid AS video_id, pos AS position, ${T} AS saved_at FROM favs`, decodeEntities: [] },
};

function fresh(dir: string, name: string): string {
  const file = join(dir, name);
  const db = new Database(file);
  db.pragma('foreign_keys = ON');
  migrate(db, file);
  db.pragma('journal_mode = WAL');
  db.close();
  return file;
}

function sync(db: string, source: string, tables: Record<string, TableMapping> = MAPPING): Promise<SyncReport> {
  return runSync({ db, from: `sqlite:${source}`, tables, dryRun: false, waitSeconds: 0 });
}

/** What a sync into an empty database leaves, for the source as it is now. */
async function reference(dir: string, source: string, tables: Record<string, TableMapping> = MAPPING): Promise<string> {
  const file = fresh(dir, `reference-${Math.random().toString(36).slice(2)}.sqlite`);
  await sync(file, source, tables);
  return siteRows(file);
}

function digestState(file: string): { plan: string; method?: string; seed: number[]; log: number } {
  const db = new Database(file, { readonly: true });
  try {
    return JSON.parse((db.prepare(`SELECT value FROM site_meta WHERE key = 'sync.digests.videos'`).get() as { value: string }).value) as { plan: string; method?: string; seed: number[]; log: number };
  } finally {
    db.close();
  }
}

function edit(file: string, sql: string): void {
  const db = new Database(file);
  db.pragma('foreign_keys = ON');
  db.exec(sql);
  db.close();
}

describe('sync by digests', () => {
  it('writes nothing when nothing changed, and carries every change a sync into an empty database carries', async () => {
    const dir = useTempDir('vidfeeds-digests-');
    const sourceFile = join(dir, 'source.db');
    const source = makeSource(sourceFile);
    const target = fresh(dir, 'vidfeeds.sqlite');
    expect((await sync(target, sourceFile)).changes).toBe(83);

    const settled = dumpTables(target);
    const idle = await sync(target, sourceFile);
    expect(idle).toMatchObject({ changes: 0, logged: 0 });
    expect(idle.tables.videos).toMatchObject({ unchanged: 40, updated: 0 });
    expect(dumpTables(target)).toBe(settled);

    source.exec(`
      UPDATE media SET name = 'Renamed' WHERE mid = 7;
      UPDATE media SET notes = NULL WHERE mid = 9;
      INSERT INTO media VALUES (41, 2, 1, 'v41', 'New', NULL, 1);
      DELETE FROM media WHERE mid = 12;
      UPDATE favs SET pos = 99 WHERE uid = 2 AND mid = 7;
    `);
    const changed = await sync(target, sourceFile);
    expect(changed.tables.videos).toMatchObject({ inserted: 1, updated: 2, deleted: 1, unchanged: 37 });
    expect(changed.tables.saved_videos).toMatchObject({ updated: 1 });
    expect(siteRows(target)).toBe(await reference(dir, sourceFile));
    expect((await sync(target, sourceFile)).changes).toBe(0);

    // Back as they were: the digests now are those of the changed rows, not of the first ones.
    source.exec(`UPDATE media SET name = 'Video 7' WHERE mid = 7; UPDATE favs SET pos = 7 WHERE uid = 2 AND mid = 7`);
    const reverted = await sync(target, sourceFile);
    expect(reverted.tables.videos).toMatchObject({ updated: 1 });
    expect(reverted.tables.saved_videos).toMatchObject({ updated: 1 });
    expect(siteRows(target)).toBe(await reference(dir, sourceFile));
    source.close();
  });

  it('puts back a row edited, inserted or deleted by hand, and follows the cascades of the rows it deletes', async () => {
    const dir = useTempDir('vidfeeds-digests-');
    const sourceFile = join(dir, 'source.db');
    const source = makeSource(sourceFile);
    const target = fresh(dir, 'vidfeeds.sqlite');
    await sync(target, sourceFile);
    await sync(target, sourceFile);

    edit(target, `
      UPDATE videos SET title = 'edited by hand' WHERE id = 5;
      DELETE FROM videos WHERE id = 6;
      INSERT INTO categories (id, name) VALUES (50, 'by hand');
      UPDATE groups SET featured_video_id = NULL WHERE id = 2;
    `);
    const repaired = await sync(target, sourceFile);
    expect(repaired.tables.videos).toMatchObject({ inserted: 1, updated: 1 });
    expect(repaired.tables.categories).toMatchObject({ deleted: 1 });
    expect(repaired.tables.groups).toMatchObject({ updated: 1 });
    expect(siteRows(target)).toBe(await reference(dir, sourceFile));

    // Video 3 goes: its group keeps pointing at it in the source, and the foreign key clears it
    // in vidfeeds's (as the row's issue says). When the video comes back, so does the reference,
    // though the group's own source row never changed.
    source.exec('DELETE FROM media WHERE mid = 3');
    const gone = await sync(target, sourceFile);
    expect(gone.tables.videos).toMatchObject({ deleted: 1 });
    expect(siteRows(target)).toBe(await reference(dir, sourceFile));
    source.exec(`INSERT INTO media VALUES (3, 4, 1, 'v3', 'Video 3', NULL, 3.5)`);
    const back = await sync(target, sourceFile);
    expect(back.tables.groups).toMatchObject({ updated: 1 });
    expect(siteRows(target)).toContain('[1,"club-1","club-1","",1,3,0,');
    expect(siteRows(target)).toBe(await reference(dir, sourceFile));

    // A user deleted takes their videos and favourites with it by cascade; back, they all return.
    source.exec('DELETE FROM accounts WHERE uid = 5');
    await sync(target, sourceFile);
    expect(siteRows(target)).toBe(await reference(dir, sourceFile));
    source.exec(`INSERT INTO accounts VALUES (5, 'user5')`);
    const returned = await sync(target, sourceFile);
    expect(returned.tables.videos!.inserted).toBeGreaterThan(0);
    expect(siteRows(target)).toBe(await reference(dir, sourceFile));
    source.close();
  });

  it('compares every stored row again when the mapping changed or the change log was pruned', async () => {
    const dir = useTempDir('vidfeeds-digests-');
    const sourceFile = join(dir, 'source.db');
    const source = makeSource(sourceFile);
    const target = fresh(dir, 'vidfeeds.sqlite');
    await sync(target, sourceFile);

    // A mapping that returns the same values another way: the digests made before are not its own.
    const before = digestState(target);
    const renamed = { ...MAPPING, videos: { ...MAPPING.videos!, query: MAPPING.videos!.query.replace('name AS title', "name || '' AS title") } };
    const again = await sync(target, sourceFile, renamed);
    expect(again).toMatchObject({ changes: 0 });
    expect(again.tables.videos).toMatchObject({ unchanged: 40 });
    const after = digestState(target);
    expect(after.plan).not.toBe(before.plan);
    expect(after.seed).not.toEqual(before.seed);
    expect(siteRows(target)).toBe(await reference(dir, sourceFile, renamed));
    expect((await sync(target, sourceFile, renamed)).changes).toBe(0);

    // The same query, its rows now shaped otherwise (entities decoded): the rows they changed are written.
    source.exec(`UPDATE media SET name = 'Tom &amp; Jerry' WHERE mid = 10`);
    await sync(target, sourceFile, renamed);
    const decoding = { ...renamed, videos: { ...renamed.videos!, decodeEntities: ['title'] } };
    expect((await sync(target, sourceFile, decoding)).tables.videos).toMatchObject({ updated: 1, unchanged: 39 });
    expect(siteRows(target)).toContain('"Tom & Jerry"');

    // The change log pruned past the last sync: a hand edit it no longer shows is still found.
    edit(target, `UPDATE videos SET title = 'edited by hand' WHERE id = 9; DELETE FROM change_log`);
    const pruned = await sync(target, sourceFile, decoding);
    expect(pruned.tables.videos).toMatchObject({ updated: 1 });
    expect(siteRows(target)).toBe(await reference(dir, sourceFile, decoding));
    source.close();
  });
});

describe('row digests of an earlier vidfeeds', () => {
  it('are made again once, with a note, and the sync still carries every change', async () => {
    const dir = useTempDir('vidfeeds-digests-');
    const sourceFile = join(dir, 'source.db');
    const source = makeSource(sourceFile);
    const target = fresh(dir, 'vidfeeds.sqlite');
    await sync(target, sourceFile);
    const made = digestState(target);
    expect(made.method).toBe('xxh64');

    // The state as vidfeeds kept it before XXH64: no method, and digests of its own 53-bit hash,
    // which here are each video's id (any digest the new hash could meet by chance would do).
    const db = new Database(target);
    const old = { plan: made.plan, seed: made.seed, log: made.log };
    db.prepare(`UPDATE site_meta SET value = ? WHERE key = 'sync.digests.videos'`).run(JSON.stringify(old));
    const chunks = db.prepare('SELECT chunk, entries FROM sync_digest_videos').all() as Array<{ chunk: number; entries: Buffer }>;
    for (const { chunk, entries } of chunks) {
      for (let at = 0; at < entries.length; at += 16) entries.writeDoubleLE(entries.readDoubleLE(at), at + 8);
      db.prepare('UPDATE sync_digest_videos SET entries = ? WHERE chunk = ?').run(entries, chunk);
    }
    db.close();
    source.exec(`UPDATE media SET name = 'Renamed' WHERE mid = 7`);

    const upgraded = await sync(target, sourceFile);
    expect(upgraded.notes).toEqual([
      "sync.tables.videos: the row digests kept from the last sync were made with vidfeeds's earlier 53-bit row hash; this sync compares every stored row once and makes them again (xxh64)",
    ]);
    expect(upgraded.tables.videos).toMatchObject({ updated: 1, unchanged: 39 });
    expect(siteRows(target)).toBe(await reference(dir, sourceFile));
    const remade = digestState(target);
    expect(remade.method).toBe('xxh64');
    expect(remade.seed).not.toEqual(made.seed);

    // Once made again, they are trusted: nothing is written, nothing said.
    const settled = dumpTables(target);
    const next = await sync(target, sourceFile);
    expect(next).toMatchObject({ changes: 0, notes: [] });
    expect(dumpTables(target)).toBe(settled);
    expect(digestState(target)).toEqual(remade);
    source.close();
  });
});

describe('rowDigest', () => {
  const seed = [12345, 67890] as const;

  it('tells values of different types and places apart', () => {
    const rows: unknown[][] = [
      [1, 'a'],
      ['1', 'a'],
      [1.5, 'a'],
      [null, 'a'],
      ['', 'a'],
      [1, 'a', null],
      ['a', 1],
      ['ab', ''],
      ['a', 'b'],
      [-0, 'a'],
      [0, 'a'],
      [2 ** 40, 'a'],
      [BigInt(2 ** 40), 'a'],
      [true, 'a'],
      [new Date(1000), 'a'],
      [1000, 'a'],
      [Buffer.from('a'), 'a'],
      ['\u{1F600}', 'a'],
      ['\uD83D', '\uDE00a'],
      ['\uD83D', 'a'],
      ['\uFFFD', 'a'],
      [Buffer.from('ab'), ''],
      [Buffer.from('a'), 'b'],
      [false, 'a'],
      [undefined, 'b'],
      ['x'.repeat(100_000), 'a'],
      ['x'.repeat(100_001), 'a'],
    ];
    const digests = rows.map((row) => rowDigest(row, seed));
    expect(new Set(digests).size).toBe(rows.length);
    for (const digest of digests) expect(Number.isSafeInteger(digest)).toBe(true);
  });

  it('is the same for the same values and seed, and differs with the seed; null for a value it does not read', () => {
    expect(rowDigest([1, 'title', null], seed)).toBe(rowDigest([1, 'title', null], [12345, 67890]));
    expect(rowDigest([1, 'title', null], seed)).not.toBe(rowDigest([1, 'title', null], [12345, 67891]));
    expect(rowDigest([1, { json: true }], seed)).toBeNull();
  });

  it('is XXH64 with the seed over the UTF-8 of each value tagged and sized, cut to 53 bits', async () => {
    const { h64, h64Raw } = await xxhash();
    const seedBits = (67890n << 32n) | 12345n;
    expect(rowDigest([7, 'hé', null], seed)).toBe(Number(h64('\u0002\u00017\u0001\u0002hé\u0000', seedBits) & ((1n << 53n) - 1n)));
    // A lone surrogate has no UTF-8: such a row is hashed as UTF-16, under another seed.
    const utf16 = Buffer.from('\u0001\u0001\uD83D', 'utf16le');
    expect(rowDigest(['\uD83D'], seed)).toBe(Number(h64Raw(utf16, seedBits ^ 0x9e3779b97f4a7c15n) & ((1n << 53n) - 1n)));
  });
});

describe('BufferDigests', () => {
  it("is xxhash-wasm's XXH64 of each range, cut to 53 bits, whichever buffer was copied last and however long", async () => {
    const { h64Raw } = await xxhash();
    const low53 = (bytes: Uint8Array, seed: bigint) => Number(h64Raw(bytes, seed) & ((1n << 53n) - 1n));
    const seed = 0xfedc_ba98_7654_3210n;
    const small = Buffer.from('\u0003abc\u00012\u0000\u0005hello');
    // Past the module's first page of memory, which it grows to hold the buffer.
    const large = Buffer.alloc(200_000);
    for (let i = 0; i < large.length; i++) large[i] = (i * 7919) % 251;
    const digests = new BufferDigests();
    const ranges: Array<[Buffer, number, number]> = [
      [small, 0, small.length],
      [small, 4, 7],
      [small, 3, 3],
      [large, 150_000, 199_999],
      [small, 1, 9],
      [large, 0, 70_000],
      [large.subarray(100), 0, 64],
    ];
    for (const [buffer, from, end] of ranges) expect(digests.digest(buffer, from, end, seed)).toBe(low53(buffer.subarray(from, end), seed));
    expect(digests.digest(small, 0, 4, seed)).not.toBe(digests.digest(small, 0, 4, seed + 1n));
  });
});
