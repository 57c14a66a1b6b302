import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expected, SITE_TABLES } from '../../src/db/columns.js';
import { issueOf } from '../../src/db/decode.js';
import { generateDemo } from '../../src/db/demo-data.js';
import { MIGRATIONS, SCHEMA_VERSION, TYPE_CHECK_VERSION, migrate } from '../../src/db/migrations.js';
import { cli } from '../helpers/cli.js';
import { createTestDb, insertUser, insertVideo, T0 } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';

/** Migration 4: the schema refuses values of the wrong type, and reports (and keeps) those already stored. */

/** A wrong value for every kind of column: a BLOB is of no kind's storage class. */
const BLOB = Buffer.from([0xde, 0xad]);

function tables(db: Database.Database): string[] {
  return (db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).pluck().all() as string[])
    .filter((name) => name !== 'change_log' && name !== 'site_meta');
}

describe('the description of the site database', () => {
  it('names every column of every table the schema has, and no other', () => {
    const { db } = createTestDb();
    expect(Object.keys(SITE_TABLES).sort()).toEqual(tables(db));
    for (const table of tables(db)) {
      const columns = (db.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table) as string[]).sort();
      expect(Object.keys(SITE_TABLES[table]!.columns).sort(), table).toEqual(columns);
    }
  });
});

describe('docs/database.md', () => {
  it('lists every column with what it must hold and what a value that does not hold it does', () => {
    const docs = readFileSync(resolve(import.meta.dirname, '../../docs/database.md'), 'utf8');
    for (const [table, spec] of Object.entries(SITE_TABLES)) {
      for (const [column, c] of Object.entries(spec.columns)) {
        expect(docs, `${table}.${column}`).toContain(`| \`${table}.${column}\` | ${expected(c)} | ${issueOf(table, '', column, null).outcome} |`);
      }
    }
  });
});

describe('migrations 4 and 5', () => {
  it('are generated from the description as they were released, though columns have been given finer kinds since', () => {
    // A released migration never changes: a database made before and one made after hold the
    // same triggers. test/fixtures/released-migrations/ holds the text as it was released.
    const released = (version: number) => readFileSync(resolve(import.meta.dirname, `../fixtures/released-migrations/${version}.sql`), 'utf8');
    expect(SITE_TABLES.videos!.columns.file_type!.kind).toBe('mediaType');
    expect(MIGRATIONS[3]).toBe(released(4));
    expect(MIGRATIONS[4]).toBe(released(5));
  });
});

describe('type checks at write time', () => {
  it('refuse a value of the wrong storage class in every column, on insert and update, naming the column', () => {
    const { db } = createTestDb();
    generateDemo(db, { users: 6, seed: 3 });
    for (const [table, spec] of Object.entries(SITE_TABLES)) {
      expect(db.prepare(`SELECT count(*) FROM ${table}`).pluck().get(), `the demo has rows in ${table}`).toBeGreaterThan(0);
      for (const [column, c] of Object.entries(spec.columns)) {
        // SQLite itself refuses anything but an integer in an INTEGER PRIMARY KEY (datatype mismatch).
        if (c.kind === 'id') continue;
        const update = () => db.prepare(`UPDATE ${table} SET ${column} = ? WHERE rowid IN (SELECT rowid FROM ${table} LIMIT 1)`).run(BLOB);
        const updateWithoutRowid = () => db.prepare(`UPDATE ${table} SET ${column} = ?`).run(BLOB);
        const hasRowid = !(db.prepare(`SELECT sql FROM sqlite_schema WHERE name = ?`).pluck().get(table) as string).includes('WITHOUT ROWID');
        expect(hasRowid ? update : updateWithoutRowid, `${table}.${column}`).toThrow(`${table}.${column}: expected`);
        // The same through INSERT: a copy of a row with the one column wrong.
        const others = Object.keys(spec.columns).filter((c) => c !== column && c !== 'id');
        const insert = () =>
          db.prepare(`INSERT INTO ${table} (${[...others, column].join(', ')}) SELECT ${others.join(', ')}${others.length ? ', ' : ''}? FROM ${table} LIMIT 1`).run(BLOB);
        expect(insert, `insert ${table}.${column}`).toThrow(`${table}.${column}: expected`);
      }
    }
  });

  it('refuse text in a time, a real in a count, a time past 9999 and a flag of 2; take what SQLite converts to the right type', () => {
    const { db } = createTestDb();
    const u = insertUser(db, { username: 'u' });
    expect(() => db.prepare('UPDATE users SET created_at = ? WHERE id = ?').run('yesterday', u.id)).toThrow('users.created_at: expected an integer number of Unix seconds');
    expect(() => db.prepare('UPDATE users SET created_at = ? WHERE id = ?').run(253_402_300_800, u.id)).toThrow('users.created_at');
    expect(() => db.prepare('UPDATE users SET created_at = ? WHERE id = ?').run(-1, u.id)).toThrow('users.created_at');
    expect(() => db.prepare('UPDATE users SET show_email = 2 WHERE id = ?').run(u.id)).toThrow();
    expect(() => insertVideo(db, u.id, { file_size: 1.5 })).toThrow('videos.file_size: expected an integer from 0 to 9007199254740991 or NULL');
    expect(() => insertVideo(db, u.id, { duration_seconds: Infinity })).toThrow('videos.duration_seconds');
    // Text that SQLite stores as an integer (INTEGER affinity), as a site's code may bind it.
    db.prepare('UPDATE users SET created_at = ? WHERE id = ?').run(String(T0 + 5), u.id);
    expect(db.prepare('SELECT typeof(created_at) FROM users WHERE id = ?').pluck().get(u.id)).toBe('integer');
  });
});

describe('upgrading a database that already holds wrong values', () => {
  it('reports every such value, loses no row, and init names them on stderr', () => {
    const { dir } = tempDir('vidfeeds-upgrade-');
    const file = join(dir, 'old.sqlite');
    const db = new Database(file);
    // Schema version 1: what a site had before the change log and the type checks (the change
    // log's triggers cannot log a BLOB key, so these rows date from before it).
    db.exec(MIGRATIONS[0]!);
    db.pragma('user_version = 1');
    db.prepare(`INSERT INTO users (id, username, created_at, updated_at) VALUES (1, 'fine', ?, ?), (2, ?, 'yesterday', ?)`).run(T0, T0, BLOB, T0);
    db.prepare(
      `INSERT INTO videos (id, public_id, user_id, title, file_url, thumbnail_url, file_size, created_at, updated_at)
       VALUES (10, 'v', 1, ?, 'https://e.example/v.mp4', 'https://e.example/t.jpg', 1.5, ?, ?)`,
    ).run(BLOB, T0, T0);
    const rowsBefore = db.prepare('SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM videos)').pluck().get();
    db.close();

    const result = cli(['init', '--db', file]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`upgraded ${file} from schema version 1 to ${SCHEMA_VERSION}`);
    expect(result.stderr).toMatch(/users id=2, column username: found a BLOB of 2 bytes, expected text \(a path segment\)/);
    expect(result.stderr).toMatch(/users id=2, column created_at: found text "yesterday"/);
    expect(result.stderr).toMatch(/videos id=10, column title: found a BLOB of 2 bytes/);
    expect(result.stderr).toMatch(/videos id=10, column file_size: found the real 1\.5/);
    expect(result.stderr).toContain('4 stored values are of the wrong type');

    const after = new Database(file);
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(after.prepare('SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM videos)').pluck().get()).toBe(rowsBefore);
    expect(after.prepare('SELECT typeof(created_at) FROM users WHERE id = 2').pluck().get()).toBe('text');
    after.close();

    // Run again: nothing to upgrade, nothing reported again.
    const again = cli(['init', '--db', file]);
    expect(again.stderr).not.toContain('wrong type');
  });

  it('reports nothing when creating a database', () => {
    expect(TYPE_CHECK_VERSION).toBeLessThanOrEqual(SCHEMA_VERSION);
    const fresh = new Database(join(tempDir().dir, 'new.sqlite'));
    expect(migrate(fresh, 'new.sqlite')).toEqual({ from: 0, to: SCHEMA_VERSION, wrongTypes: [] });
    fresh.close();
  });
});
