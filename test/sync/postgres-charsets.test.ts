import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { looksLikeMojibake } from '../../src/sync/mojibake.js';
import { postgresMissing, startPostgres, type RunningPostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp-dir.js';
import { syncSite, type SyncJson, type SyncSite } from './sync-scenario.js';

/**
 * docs/adopting.md "Character sets" on PostgreSQL: text that a site moved from a latin1 MySQL
 * table holds as UTF-8 read as Windows-1252 (`JoÃ£o`, and an emoji's four bytes as `ðŸ˜€`). The
 * naive mapping is warned about with the expression PostgreSQL accepts (it has no CAST to
 * BINARY); mapped by it, the bytes are decoded as UTF-8.
 */

const missing = postgresMissing();

const mapping = (name: string) =>
  JSON.stringify({ sync: { tables: { users: `SELECT id, login AS username, ${name} AS display_name, 1238587200 AS created_at, 1238587200 AS updated_at FROM moved_members` } } });

describe('text that looks like UTF-8 read as latin1', () => {
  it('includes the four bytes of a character past U+FFFF', () => {
    expect(looksLikeMojibake('ðŸ˜€')).toBe(true);
    expect(looksLikeMojibake('JoÃ£o')).toBe(true);
    expect(looksLikeMojibake('ð and ô in real text: Þórður, ôter')).toBe(false);
  });
});

describe.skipIf(missing !== null)('vidfeeds sync of text that is UTF-8 read as latin1 (PostgreSQL)', () => {
  let server: RunningPostgres;
  let site: SyncSite;
  const temp = tempDir('vidfeeds-sync-pg-charsets-');

  beforeAll(async () => {
    server = await startPostgres();
    await server.admin.query(
      'CREATE TABLE moved_members (id int PRIMARY KEY, login text, name text); ' +
        "INSERT INTO moved_members VALUES (1, 'joao', 'JoÃ£o'), (2, 'smile', 'Hi ðŸ˜€'), (3, 'quote', 'itâ€™s'), (4, 'plain', 'Plain')",
    );
    site = syncSite(temp.dir, mapping('name'), server.url);
  });

  afterAll(async () => {
    await server?.stop();
    temp.cleanup();
  });

  it("the naive mapping is warned about with PostgreSQL's expression, the emoji's row counted", () => {
    const { result, report } = site.syncJson(['--dry-run']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/sync: users\.display_name holds text that looks like UTF-8 read as latin1 in 3 rows \(users id=1: "JoÃ£o"\): .*mapped as convert_to\(column, 'WIN1252'\)/);
    expect(result.stderr).not.toMatch(/AS BINARY/);
    expect((report as SyncJson & { mojibake: unknown[] }).mojibake).toEqual([{ table: 'users', column: 'display_name', rows: 3, row: 'id=1', found: 'JoÃ£o' }]);
  });

  it("convert_to(…, 'WIN1252') stores the UTF-8 text", () => {
    writeFileSync(site.config, JSON.stringify({ baseUrl: 'https://videos.example.org', ...JSON.parse(mapping("convert_to(name, 'WIN1252')")) }));
    const { result, report } = site.syncJson();
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toMatch(/looks like UTF-8 read as latin1/);
    expect(report.issues).toEqual([]);
    const db = new Database(site.db, { readonly: true });
    try {
      expect(db.prepare('SELECT display_name FROM users ORDER BY id').pluck().all()).toEqual(['João', 'Hi 😀', 'it’s', 'Plain']);
    } finally {
      db.close();
    }
  });
});
