import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mariadbMissing, startMariadb, type RunningMariadb } from '../helpers/mariadb.js';
import { tempDir } from '../helpers/temp-dir.js';
import { syncSite, type SyncJson, type SyncSite } from './sync-scenario.js';

/**
 * docs/adopting.md "Character sets" against a real MariaDB: a latin1 table holding the bytes of
 * UTF-8 text (and a few bytes that are not UTF-8). The naive mapping gets the mojibake warning
 * naming the column; the documented one, CAST(… AS BINARY), stores the right text and names the
 * rows whose bytes are not UTF-8.
 */

const missing = mariadbMissing();

const mapping = (name: string) =>
  JSON.stringify({ sync: { tables: { users: `SELECT id, login AS username, ${name} AS display_name, 1238587200 AS created_at, 1238587200 AS updated_at FROM latin_members` } } });

describe.skipIf(missing !== null)('vidfeeds sync of a latin1 table holding UTF-8 (MariaDB)', () => {
  let server: RunningMariadb;
  let site: SyncSite;
  const temp = tempDir('vidfeeds-sync-charsets-');

  beforeAll(async () => {
    server = await startMariadb();
    // The bytes of UTF-8 text in latin1 columns, as a PHP site connected as latin1 wrote them.
    await server.admin.query(
      'CREATE TABLE latin_members (id INT PRIMARY KEY, login VARCHAR(20), name VARCHAR(50)) CHARACTER SET latin1; ' +
        "INSERT INTO latin_members VALUES (1, 'joao', X'4A6FC3A36F'), (2, 'zoe', X'5A6FC3AB'), (3, 'bad', X'426164FF'), (4, 'cut', X'4361C3'), (5, 'plain', 'Plain')",
    );
    site = syncSite(temp.dir, mapping('name'), server.url);
  });

  afterAll(async () => {
    await server?.stop();
    temp.cleanup();
  });

  it('the naive mapping is warned about, naming the table, the column and a row', () => {
    const { result, report } = site.syncJson(['--dry-run']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/sync: users\.display_name holds text that looks like UTF-8 read as latin1 in 2 rows \(users id=1: "JoÃ£o"\): .*CAST\(column AS BINARY\)/);
    expect((report as SyncJson & { mojibake: unknown[] }).mojibake).toEqual([{ table: 'users', column: 'display_name', rows: 2, row: 'id=1', found: 'JoÃ£o' }]);
  });

  it('warns again on the syncs after, which read none of those rows again, until the column is clean', () => {
    const warning = /sync: users\.display_name holds text that looks like UTF-8 read as latin1 in 2 rows \(users id=1: "JoÃ£o"\)/;
    const first = site.syncJson();
    expect(first.result.code, first.result.stderr).toBe(0);
    expect(first.result.stderr).toMatch(warning);
    // Unchanged, the rows are skipped by their digests: the warning comes from what the first sync found.
    const again = site.syncJson();
    expect(again.result.code, again.result.stderr).toBe(0);
    expect(again.report.changes).toBe(0);
    expect(again.result.stderr).toMatch(warning);
    expect((again.report as SyncJson & { mojibake: unknown[] }).mojibake).toEqual([{ table: 'users', column: 'display_name', rows: 2, row: 'id=1', found: 'JoÃ£o' }]);
  });

  it('CAST(… AS BINARY) stores the UTF-8 text and names the rows whose bytes are not UTF-8', () => {
    writeFileSync(site.config, JSON.stringify({ baseUrl: 'https://videos.example.org', ...JSON.parse(mapping('CAST(name AS BINARY)')) }));
    const { result, report } = site.syncJson();
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toMatch(/looks like UTF-8 read as latin1/);
    expect(report.issues.map((i) => `${i.row} ${i.column}: ${i.found}`)).toEqual([
      'id=3 display_name: 4 bytes (not UTF-8 at offset 3: 42 61 64 [FF])',
      'id=4 display_name: 3 bytes (not UTF-8 at offset 2: 43 61 [C3])',
    ]);
    // The summary line shows them too, so that the operator can find them in the source.
    expect(result.stderr).toMatch(/users id=3, column display_name: found 4 bytes \(not UTF-8 at offset 3: 42 61 64 \[FF\]\), expected text/);
    const db = new Database(site.db, { readonly: true });
    try {
      const names = db.prepare('SELECT id, display_name FROM users ORDER BY id').all() as Array<{ id: number; display_name: string | null }>;
      expect(names.slice(0, 2)).toEqual([{ id: 1, display_name: 'João' }, { id: 2, display_name: 'Zoë' }]);
      expect(names[4]).toEqual({ id: 5, display_name: 'Plain' });
      // The bad bytes are not published as text with `?` or U+FFFD in them.
      for (const { display_name } of names.slice(2, 4)) expect(display_name ?? '').not.toMatch(/[?\uFFFD]/);
    } finally {
      db.close();
    }
    // The column is clean now, and the next sync says nothing of it.
    const next = site.syncJson();
    expect(next.result.stderr).not.toMatch(/looks like UTF-8 read as latin1/);
  });
});
