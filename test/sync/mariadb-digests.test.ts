import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrations.js';
import { decodeEntries } from '../../src/sync/digest-chunks.js';
import { MYSQL_ROW_DIGEST_METHOD } from '../../src/sync/mysql-row-digest.js';
import { openSource } from '../../src/sync/open-source.js';
import type { DigestSeed } from '../../src/sync/row-digest.js';
import { runSync } from '../../src/sync/run-sync.js';
import { isDeferred, type DeferredRow, type RowFilter } from '../../src/sync/sync-source.js';
import type { TableMapping } from '../../src/sync/table-plan.js';
import { mariadbMissing, startMariadb, type RunningMariadb } from '../helpers/mariadb.js';
import { tempDir } from '../helpers/temp-dir.js';
import { dumpTables } from './sync-scenario.js';

/**
 * MariaDB rows are digested from the bytes the server sent for them and made into values only when
 * asked (src/sync/mysql-row-digest.ts): every digest is made (no row comes as the driver made it),
 * every change a stored row could show moves it, and the values made later are the driver's.
 */

const missing = mariadbMissing();
const SEED: DigestSeed = [0x1234_5678, 0x0abc_def0];
const QUERY = 'SELECT id, title, notes, length, code, added FROM clips';

describe.skipIf(missing !== null)('row digests from MariaDB', () => {
  let server: RunningMariadb;
  const temp = tempDir('vidfeeds-mariadb-digests-');

  beforeAll(async () => {
    server = await startMariadb();
    await server.admin.query(`
      CREATE TABLE clips (id INT PRIMARY KEY, title VARCHAR(100) NULL, notes TEXT NULL, length DOUBLE NULL, code VARBINARY(16) NULL, added DATETIME NULL) CHARACTER SET utf8mb4;
      INSERT INTO clips VALUES
        (1, 'First', 'notes', 1.5, X'00ff', '2024-01-02 03:04:05'),
        (2, 'ab', '', 2, NULL, NULL),
        (3, NULL, 'Zoë 🎬', 0, X'', '2024-01-02 03:04:05'),
        (4, 'same', 'same', NULL, NULL, NULL);
      CREATE TABLE accounts (uid INT PRIMARY KEY, login VARCHAR(50));
      INSERT INTO accounts VALUES (1, 'ann'), (2, 'ben'), (3, 'cy');
    `);
  });

  afterAll(async () => {
    await server?.stop();
    temp.cleanup();
  });

  /** The rows a full sync reads (or those `filter` picks), in order. */
  async function deferredRows(query = QUERY, seed = SEED, filter?: RowFilter, keys = ['id']): Promise<DeferredRow[]> {
    const source = await openSource(server.url);
    try {
      const rows: DeferredRow[] = [];
      for await (const batch of source.digests!.rows(query, keys, seed, filter)) {
        for (const row of batch) {
          if (!isDeferred(row)) throw new Error(`a row came as the driver made it: ${JSON.stringify(row)}`);
          rows.push(row);
        }
      }
      return rows;
    } finally {
      await source.close();
    }
  }

  /** Each row's digest by id, as a full sync reads them (or those `filter` picks). */
  async function digests(query = QUERY, seed = SEED, filter?: RowFilter): Promise<Map<number, unknown>> {
    return new Map((await deferredRows(query, seed, filter)).map((row) => [row.key[0] as number, row.digest]));
  }

  /** The rows of `query` as the driver makes them, ordered by `keys`. */
  async function driverRows(query: string, keys: string[]): Promise<Array<Record<string, unknown>>> {
    const source = await openSource(server.url);
    try {
      const rows: Array<Record<string, unknown>> = [];
      for await (const batch of source.rows(query, keys)) rows.push(...batch);
      return rows;
    } finally {
      await source.close();
    }
  }

  it("makes a row's values, when asked, as the driver makes them, and its key as the driver reads it", async () => {
    await server.admin.query(`
      CREATE TABLE keyed (a BIGINT NULL, b INT ZEROFILL, c VARCHAR(20), word VARCHAR(20), n DECIMAL(6,2));
      INSERT INTO keyed VALUES (1, 7, '10', 'one', 1.50), (-5, 12, '2', 'two', NULL), (123456789012345, 0, 'x', NULL, 0),
        (1234567890123456, 3, 'y', 'long', 2), (NULL, 4, 'z', 'null key', 3), (0, 5, '0', 'zero', 4);
    `);
    for (const [query, keys] of [
      ['SELECT a, word, n FROM keyed', ['a']],
      ['SELECT word, b, a FROM keyed WHERE a IS NOT NULL', ['b']],
      ['SELECT c, word FROM keyed', ['c']],
      ['SELECT a, b, word FROM keyed WHERE a IS NOT NULL', ['b', 'a']],
      // Keys after values whose lengths take two and three bytes.
      ["SELECT REPEAT('x', 300 + b) AS pad, b, REPEAT(c, 70000) AS more, a FROM keyed WHERE a IS NOT NULL", ['a']],
      ['SELECT id, title, notes, length, code, added FROM clips', ['id']],
    ] as const) {
      const deferred = await deferredRows(query, SEED, undefined, [...keys]);
      const driver = await driverRows(query, [...keys]);
      expect(deferred.map((row) => row.values()), query).toEqual(driver);
      expect(
        deferred.map((row) => row.key),
        query,
      ).toEqual(driver.map((row) => keys.map((k) => row[k])));
    }
  });

  it('gives every row a 53-bit digest, the same whichever query reads it, another under another seed', async () => {
    const first = await digests();
    expect(first.size).toBe(4);
    for (const digest of first.values()) expect(Number.isSafeInteger(digest)).toBe(true);
    expect(new Set(first.values()).size).toBe(4);
    expect(await digests()).toEqual(first);
    const byKey = await digests(QUERY, SEED, { keys: [[3], [1]] });
    expect(byKey).toEqual(new Map([[1, first.get(1)], [3, first.get(3)]]));
    const reseeded = await digests(QUERY, [SEED[0], SEED[1] + 1]);
    for (const id of first.keys()) expect(reseeded.get(id)).not.toBe(first.get(id));
  });

  it('digests the rows read while the connection was paused between batches as those read at once', async () => {
    // Rows of several batches: mysql2 queues the packets that come while paused and parses them later.
    const count = 2_500;
    await server.admin.query(`CREATE TABLE many (id INT PRIMARY KEY, word VARCHAR(20)); INSERT INTO many SELECT seq, CONCAT('word', seq) FROM seq_1_to_${count}`);
    const all = await digests('SELECT id, word FROM many');
    expect(all.size).toBe(count);
    for (const digest of all.values()) expect(Number.isSafeInteger(digest)).toBe(true);
    expect(new Set(all.values()).size).toBe(count);
    // Each row's values made after the rows of later batches came: the bytes they are made from stay as they were.
    const rows = await deferredRows('SELECT id, word FROM many');
    expect(rows.map((row) => row.values())).toEqual(Array.from({ length: count }, (_, i) => ({ id: i + 1, word: `word${i + 1}` })));
    const picked = [[1], [256], [257], [2_000], [count]];
    const byKey = await digests('SELECT id, word FROM many', SEED, { keys: picked });
    expect(byKey).toEqual(new Map(picked.map(([id]) => [id!, all.get(id!)])));
  });

  it('moves with a value, NULL for the empty text, text moved across columns, bytes, a type, and the order of columns', async () => {
    const moved = async (sql: string, id: number) => {
      const was = (await digests()).get(id);
      await server.admin.query(sql);
      const now = (await digests()).get(id);
      expect(now, sql).not.toBe(was);
      return now;
    };
    await moved(`UPDATE clips SET title = 'First!' WHERE id = 1`, 1);
    await moved(`UPDATE clips SET title = '' WHERE id = 3`, 3);
    await moved(`UPDATE clips SET title = NULL WHERE id = 3`, 3);
    // 'ab' + '' becomes 'a' + 'b': the same bytes of text, split otherwise.
    await moved(`UPDATE clips SET title = 'a', notes = 'b' WHERE id = 2`, 2);
    await moved(`UPDATE clips SET code = X'00fe' WHERE id = 1`, 1);
    await moved(`UPDATE clips SET length = 1.25 WHERE id = 1`, 1);
    // A column of another type with the same text: the driver reads it as a string, not a number.
    await server.admin.query(`UPDATE clips SET length = 2 WHERE id = 1`);
    const asDouble = (await digests()).get(1);
    await server.admin.query(`ALTER TABLE clips MODIFY length VARCHAR(20) NULL`);
    expect((await digests()).get(1)).not.toBe(asDouble);
    // Two columns of the same text swapped: the same bytes, another order.
    const swapped = await digests('SELECT id, notes, title, length, code, added FROM clips');
    expect(swapped.get(4)).not.toBe((await digests()).get(4));
  });

  it('are what a sync keeps, trusted from one sync to the next; those of the value digest are made again once', async () => {
    const db = join(temp.dir, 'vidfeeds.sqlite');
    const target = new Database(db);
    migrate(target, db);
    target.close();
    const tables: Record<string, TableMapping> = { users: { query: 'SELECT uid AS id, login AS username, 1262304000 AS created_at, 1262304000 AS updated_at FROM accounts', decodeEntities: [] } };
    const sync = () => runSync({ db, from: server.url, tables, dryRun: false, waitSeconds: 0 });
    expect((await sync()).tables.users).toMatchObject({ inserted: 3 });
    expect(state(db).method).toBe(MYSQL_ROW_DIGEST_METHOD);
    expect(storedDigests(db)).toHaveLength(3);
    for (const digest of storedDigests(db)) expect(Number.isSafeInteger(digest)).toBe(true);
    const settled = dumpTables(db);
    expect(await sync()).toMatchObject({ changes: 0, notes: [] });
    expect(dumpTables(db)).toBe(settled);

    // The state as vidfeeds kept it when it digested the driver's values ('xxh64'): made again, once.
    const old = new Database(db);
    old.prepare(`UPDATE site_meta SET value = ? WHERE key = 'sync.digests.users'`).run(JSON.stringify({ ...state(db), method: 'xxh64' }));
    old.close();
    await server.admin.query(`UPDATE accounts SET login = 'bea' WHERE uid = 2`);
    const upgraded = await sync();
    expect(upgraded.notes).toEqual([
      `sync.tables.users: the row digests kept from the last sync were made by xxh64; this sync compares every stored row once and makes them again (${MYSQL_ROW_DIGEST_METHOD})`,
    ]);
    expect(upgraded.tables.users).toMatchObject({ updated: 1, unchanged: 2 });
    expect(state(db).method).toBe(MYSQL_ROW_DIGEST_METHOD);
    expect(await sync()).toMatchObject({ changes: 0, notes: [] });
  });

  it('keep, of a key the query returns several rows of, the first by its values, sync after sync, and name the others', async () => {
    const db = join(temp.dir, 'several.sqlite');
    const target = new Database(db);
    migrate(target, db);
    target.close();
    const query = `SELECT uid AS id, login AS username, 1262304000 AS created_at, 1262304000 AS updated_at FROM accounts
      UNION ALL SELECT 2, 'zed', 1262304000, 1262304000 UNION ALL SELECT 2, 'al', 1262304000, 1262304000`;
    const tables: Record<string, TableMapping> = { users: { query, decodeEntities: [] } };
    const skipped: string[] = [];
    const sync = () => runSync({ db, from: server.url, tables, dryRun: false, waitSeconds: 0 }, { skipped: (row) => skipped.push(`${row.row}: ${row.reason}`) });
    expect((await sync()).tables.users).toMatchObject({ inserted: 3, skipped: 2 });
    const kept = () => {
      const read = new Database(db, { readonly: true });
      try {
        return (read.prepare('SELECT id, username FROM users ORDER BY id').all() as Array<{ id: number; username: string }>).map((u) => `${u.id} ${u.username}`);
      } finally {
        read.close();
      }
    };
    expect(kept()).toEqual(['1 ann', '2 al', '3 cy']);
    const reason = 'another row of the query has the same key (id); the one kept comes first by its values';
    expect(skipped).toEqual([`id=2: ${reason}`, `id=2: ${reason}`]);
    expect(await sync()).toMatchObject({ changes: 0, skipped: 2 });
    expect(kept()).toEqual(['1 ann', '2 al', '3 cy']);
  });
});

function state(file: string): Record<string, unknown> {
  const db = new Database(file, { readonly: true });
  try {
    return JSON.parse((db.prepare(`SELECT value FROM site_meta WHERE key = 'sync.digests.users'`).get() as { value: string }).value) as Record<string, unknown>;
  } finally {
    db.close();
  }
}

function storedDigests(file: string): Array<number | null> {
  const db = new Database(file, { readonly: true });
  try {
    const chunks = db.prepare('SELECT entries FROM sync_digest_users ORDER BY chunk').all() as Array<{ entries: Buffer }>;
    return chunks.flatMap(({ entries }) => decodeEntries(entries, 2).map((entry) => entry[1]!));
  } finally {
    db.close();
  }
}
