import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { byCodePoint } from '../../src/db/by-code-point.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { createTestDb, insertUser, insertVideo } from '../helpers/site-fixture.js';
import { cleanUpAfterTest } from '../helpers/temp-dir.js';

/**
 * A video's tags are read as ids and named from a map kept per snapshot (src/db/site-reader.ts,
 * `tagNames`); SQLite itself is the oracle for their order: `ORDER BY name` in its BINARY collation.
 */
describe("a video's tags", () => {
  // Names whose UTF-16 order is not their UTF-8 order (U+E000..U+FFFF against astral characters),
  // case, accents, prefixes, the empty name, and a name outside the Basic Multilingual Plane.
  const NAMES = ['b', 'a', 'B', 'aa', 'é', 'e\u0301', '\uE000', '\uFFFD\uFFFC', '\u{1F600}', '\u{10400}', '\uFF21', 'Z', '', 'dup', '日本', '\u0000x'];

  it('come in SQLite order of their names, each tag once, whether read in a snapshot or not', () => {
    const { db, file } = createTestDb();
    const user = insertUser(db, { username: 'tagger' });
    const video = insertVideo(db, user.id, { public_id: 'tagged' });
    const other = insertVideo(db, user.id, { public_id: 'other' });
    const insertTag = db.prepare('INSERT INTO tags (name) VALUES (?)');
    const link = db.prepare('INSERT INTO video_tags (video_id, tag_id) VALUES (?, ?)');
    // Inserted in a shuffled order, so ids do not follow names.
    for (const name of [...NAMES].reverse()) link.run(video.id, insertTag.run(name).lastInsertRowid);
    link.run(other.id, insertTag.run('only-other').lastInsertRowid);

    const readOnly = new Database(file, { readonly: true });
    cleanUpAfterTest(() => readOnly.close());
    const expected = readOnly
      .prepare<[number], string>(`SELECT t.name FROM video_tags vt JOIN tags t ON t.id = vt.tag_id WHERE vt.video_id = ? ORDER BY t.name, t.id`)
      .pluck()
      .all(video.id)
      // The reader leaves out names that are not valid UTF-8 (U+FFFD stands for the bytes).
      .filter((name) => !name.includes('\uFFFD'));
    expect(expected).toHaveLength(NAMES.length - 1);
    const reader = new SiteReader(readOnly, readLimits(8));
    const tagsOf = () => reader.videoByPublicId('tagged');
    const outside = tagsOf();
    expect(outside.status === 'published' && outside.video.tags).toEqual(expected);
    reader.snapshot(() => {
      for (let i = 0; i < 2; i++) {
        const inside = tagsOf();
        expect(inside.status === 'published' && inside.video.tags).toEqual(expected);
      }
      const second = reader.videoByPublicId('other');
      expect(second.status === 'published' && second.video.tags).toEqual(['only-other']);
    });
  });

  it('byCodePoint orders strings as SQLite orders UTF-8 text', () => {
    const db = new Database(':memory:');
    cleanUpAfterTest(() => db.close());
    const strings = ['', 'a', 'ab', 'b', '\uD7FF', '\uE000', '\uFFFF', '\u{10000}', '\u{10FFFF}', 'a\u{1F600}', 'a\uFFFF', 'A', '\u00E9'];
    const sqlite = db
      .prepare<[string], string>(`SELECT value FROM json_each(?) ORDER BY value`)
      .pluck()
      .all(JSON.stringify(strings));
    expect([...strings].sort(byCodePoint)).toEqual(sqlite);
  });
});

/**
 * A video's category is read as its `category_id` and named from a map kept per snapshot
 * (src/db/site-reader.ts, `categoryName`); SQLite's own join is the oracle, whatever the column holds.
 */
describe("a video's category", () => {
  it('is the one joining categories on category_id gives, for ids of every storage class, in a snapshot or not', () => {
    const { db, file } = createTestDb();
    // Values a site's database held before the type checks (which refuse all but the integers now).
    db.exec('DROP TRIGGER videos_types_insert; DROP TRIGGER videos_types_update; DROP TRIGGER categories_types_insert; PRAGMA foreign_keys = OFF');
    db.exec(`INSERT INTO categories (id, name) VALUES (1, 'Music'), (2, CAST(X'FF' AS TEXT)), (3, 'Sport'), (4, X'00'), (-5, 'Negative')`);
    const user = insertUser(db, { username: 'categorised' });
    const ids: Record<string, string> = { one: '1', three: '3', invalidUtf8Name: '2', blobName: '4', negative: '-5', none: 'NULL', missing: '99', text: `'x'`, textHex: `'0x3'`, real: '1.5', blob: `X'01'` };
    for (const [publicId, sql] of Object.entries(ids)) {
      const video = insertVideo(db, user.id, { public_id: publicId });
      db.exec(`UPDATE videos SET category_id = ${sql} WHERE id = ${video.id}`);
    }
    const storedAs = db.prepare<[], [string, string]>(`SELECT public_id, typeof(category_id) FROM videos`).raw().all();
    expect(Object.fromEntries(storedAs)).toMatchObject({ one: 'integer', none: 'null', text: 'text', textHex: 'text', real: 'real', blob: 'blob' });
    const readOnly = new Database(file, { readonly: true });
    cleanUpAfterTest(() => readOnly.close());
    const joined = readOnly
      .prepare<[string], string | null>(`SELECT (SELECT c.name FROM categories c WHERE c.id = v.category_id AND typeof(c.name) = 'text') FROM videos v WHERE v.public_id = ?`)
      .pluck();
    const reader = new SiteReader(readOnly, readLimits(8));
    const categoryOf = (publicId: string) => {
      const found = reader.videoByPublicId(publicId);
      return found.status === 'published' ? found.video.category : `not published: ${found.status}`;
    };
    const expected = Object.fromEntries(
      // The reader leaves out names that are not valid UTF-8 (U+FFFD stands for the bytes).
      Object.keys(ids).map((publicId) => [publicId, joined.get(publicId)?.includes('\uFFFD') ? null : (joined.get(publicId) ?? null)]),
    );
    expect(expected).toMatchObject({ one: 'Music', three: 'Sport', negative: 'Negative', invalidUtf8Name: null, text: null, textHex: null, real: null });
    const read = () => Object.fromEntries(Object.keys(ids).map((publicId) => [publicId, categoryOf(publicId)]));
    expect(read()).toEqual(expected);
    reader.snapshot(() => {
      expect(read()).toEqual(expected);
      expect(read()).toEqual(expected);
    });
  });
});
