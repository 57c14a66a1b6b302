import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrations.js';
import { runSync, type SyncReport } from '../../src/sync/run-sync.js';
import type { SkippedSourceRow } from '../../src/sync/source-row.js';
import { MAX_DIGEST_MOVES } from '../../src/sync/table-strategies.js';
import type { TableMapping } from '../../src/sync/table-plan.js';
import { postgresMissing, startPostgres, type RunningPostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp-dir.js';
import { siteRows } from './sync-scenario.js';

/**
 * PostgreSQL digests rows itself (src/sync/postgres-source.ts): a full sync reads keys and digests,
 * then only the rows whose digest moved. Each sync must end exactly where a sync into an empty
 * database ends, also for changes that a type's own equality does not see (a letter's case in
 * citext and in a case-blind collation, an enum label renamed), and must name each skipped row once.
 */

const T = 1_262_304_000; // 2010-01-01
const missing = postgresMissing();

const SCHEMA = `
  CREATE EXTENSION citext;
  CREATE COLLATION blind (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
  CREATE TYPE shown AS ENUM ('public', 'hidden');
  CREATE TABLE accounts (uid bigint PRIMARY KEY, login citext, joined timestamptz);
  CREATE TABLE media (mid bigint PRIMARY KEY, owner bigint, name text COLLATE blind, notes varchar(200), length numeric(8, 2), state shown);
  CREATE TABLE favs (uid bigint, mid bigint, pos int, PRIMARY KEY (uid, mid));
  INSERT INTO accounts SELECT i, 'user' || i, timestamptz '2010-01-01 00:00:00+00' FROM generate_series(1, 5) AS i;
  INSERT INTO accounts VALUES (6, 'six', now());
  INSERT INTO media SELECT i, 1 + i % 5, 'Video ' || i, CASE WHEN i % 4 = 0 THEN NULL ELSE 'Notes of ' || i END, i + 0.5, CASE WHEN i % 7 = 0 THEN 'hidden' ELSE 'public' END::shown
    FROM generate_series(1, 40) AS i;
  INSERT INTO favs SELECT 1 + i % 5, i, i FROM generate_series(1, 30) AS i;
`;

const MAPPING: Record<string, TableMapping> = {
  // User 6's key is not a number: skipped, and named once a sync.
  users: { query: `SELECT CASE WHEN uid = 6 THEN 'six' ELSE uid::text END AS id, login AS username, joined AS created_at, joined AS updated_at FROM accounts`, decodeEntities: [] },
  videos: {
    query: `SELECT mid AS id, 'v' || mid AS public_id, owner AS user_id, name AS title, notes AS description, length AS duration_seconds,
      'http://x.example/' || mid || '.mp4' AS file_url, 'http://x.example/' || mid || '.jpg' AS thumbnail_url,
      120 AS thumbnail_width, 90 AS thumbnail_height, CASE state WHEN 'public' THEN 'public' ELSE 'private' END AS visibility,
      'video/' || state::text AS file_type, ${T} + mid AS created_at, ${T} + mid AS updated_at FROM media`,
    decodeEntities: [],
  },
  // Two rows of the key (1, 5): the second is named.
  saved_videos: { query: `SELECT uid AS user_id, mid AS video_id, pos AS position, ${T} AS saved_at FROM favs UNION ALL SELECT uid, mid, pos, ${T} FROM favs WHERE uid = 1 AND mid = 5`, decodeEntities: [] },
};

describe.skipIf(missing !== null)('sync by the digests PostgreSQL makes', () => {
  let server: RunningPostgres;
  const temp = tempDir('vidfeeds-server-digests-');

  beforeAll(async () => {
    server = await startPostgres();
    await server.admin.query(SCHEMA);
  });

  afterAll(async () => {
    await server?.stop();
    temp.cleanup();
  });

  function fresh(name: string): string {
    const file = join(temp.dir, name);
    const db = new Database(file);
    migrate(db, file);
    db.pragma('journal_mode = WAL');
    db.close();
    return file;
  }

  /** A sync's report, and the rows it named as skipped. */
  async function sync(db: string, tables: Record<string, TableMapping> = MAPPING): Promise<SyncReport & { skippedRows: SkippedSourceRow[] }> {
    const skippedRows: SkippedSourceRow[] = [];
    const report = await runSync({ db, from: server.url, tables, dryRun: false, waitSeconds: 0 }, { skipped: (row) => skippedRows.push(row) });
    return { ...report, skippedRows };
  }

  /** What a sync into an empty database leaves, and what it names. */
  async function reference(tables: Record<string, TableMapping> = MAPPING): Promise<{ rows: string; skipped: SkippedSourceRow[] }> {
    const file = fresh(`reference-${Math.random().toString(36).slice(2)}.sqlite`);
    const report = await sync(file, tables);
    return { rows: siteRows(file), skipped: report.skippedRows };
  }

  it('carries the changes only a value’s text shows, and names each skipped row once', async () => {
    const target = fresh('vidfeeds.sqlite');
    const first = await sync(target);
    expect(first.skippedRows.map((s) => s.reason)).toEqual([expect.stringMatching(/^key column id: found text "six"/), expect.stringMatching(/same key/)]);
    const idle = await sync(target);
    expect(idle).toMatchObject({ changes: 0, logged: 0 });
    expect(idle.tables.videos).toMatchObject({ unchanged: 40 });
    expect(idle.skippedRows).toEqual(first.skippedRows);

    await server.admin.query(`
      UPDATE accounts SET login = 'USER2' WHERE uid = 2;
      UPDATE media SET name = 'VIDEO 3' WHERE mid = 3;
      ALTER TYPE shown RENAME VALUE 'hidden' TO 'unlisted';
      INSERT INTO media VALUES (41, 2, 'New', NULL, 1, 'public');
      DELETE FROM media WHERE mid = 12;
      UPDATE favs SET pos = 99 WHERE uid = 1 AND mid = 5;
    `);
    const changed = await sync(target);
    const expected = await reference();
    expect(siteRows(target)).toBe(expected.rows);
    expect(changed.skippedRows).toEqual(expected.skipped);
    expect(changed.tables.users).toMatchObject({ updated: 1, skipped: 1 });
    // 3 (case) and the five once 'hidden' (file_type video/hidden) updated; 41 inserted; 12 deleted.
    expect(changed.tables.videos).toMatchObject({ inserted: 1, updated: 6, deleted: 1, unchanged: 33 });
    // The second row of (1, 5), and the save of video 12, now gone.
    expect(changed.tables.saved_videos).toMatchObject({ updated: 1, skipped: 2 });
    expect(changed.skippedRows.filter((s) => /same key/.test(s.reason))).toHaveLength(1);
    expect((await sync(target)).changes).toBe(0);
  });

  it(`merges a table in full when more than ${MAX_DIGEST_MOVES} of its rows moved, and ends as a sync into an empty database`, async () => {
    await server.admin.query(`CREATE TABLE sections AS SELECT s, s AS label FROM generate_series(1, ${MAX_DIGEST_MOVES + 1}) AS s`);
    const tables = { categories: { query: `SELECT s AS id, 'Section ' || label AS name FROM sections`, decodeEntities: [] } };
    const target = fresh('many.sqlite');
    expect((await sync(target, tables)).tables.categories).toMatchObject({ inserted: MAX_DIGEST_MOVES + 1 });
    await server.admin.query(`UPDATE sections SET label = label + 1 WHERE s > 1; DELETE FROM sections WHERE s = 1; INSERT INTO sections VALUES (0, 0)`);
    const moved = await sync(target, tables);
    expect(moved.tables.categories).toMatchObject({ inserted: 1, deleted: 1, updated: MAX_DIGEST_MOVES, unchanged: 0 });
    expect(siteRows(target)).toBe((await reference(tables)).rows);
  }, 120_000);
});
