import Database from 'better-sqlite3';
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BuildState } from '../../src/pipeline/build-state.js';
import { runBuild } from '../../src/pipeline/run-build.js';
import { MemoryWriter } from '../../src/pipeline/write/output-writer.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { SITE_TABLES } from '../../src/db/columns.js';
import { MIGRATIONS } from '../../src/db/migrations.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { matchesKind } from '../../src/db/type-checks.js';
import { FORMATS } from '../../src/formats/registry.js';
import { cli } from '../helpers/cli.js';
import { T0, testConfig } from '../helpers/site-fixture.js';
import { xmllintWellFormed } from '../helpers/validators.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The read boundary's property (docs/database.md, "Values of the wrong type"): whatever storage
 * class or edge value any column of any table holds, every document still parses, none holds
 * `NaN`, `undefined`, `Invalid Date` or `[object`, the build finishes with exit code 0, and each
 * value that is not of its column's kind is reported, naming its table, row and column.
 *
 * The database is written at schema version 1, as a site's database was before the type checks
 * (which refuse all of these now), with one published row in every table, all of them read by
 * some document. Each (column, value) pair is tried in its own copy, so no value hides another.
 */

/** Values of every storage class and the edges of every domain, as SQL. */
const VALUES: Record<string, string> = {
  blob: `X'DEAD'`,
  text: `'yesterday'`,
  emptyText: `''`,
  real: '1.5',
  negative: '-1',
  zero: '0',
  two: '2',
  hugeReal: '1e300',
  infinity: '9e999',
  pastYear9999: '253402300800',
  beyondSafeInteger: '9007199254740993',
  null: 'NULL',
  invalidUtf8: `CAST(X'61FF62' AS TEXT)`,
  bidiName: `'gnp' || char(8238) || '.exe'`,
};

/**
 * The values worth trying in a column of a kind. A TEXT column turns a number into text as it
 * stores it (its affinity), so one number stands for all of them there; a numeric column keeps
 * text as text, so one kind of text stands for all of them there.
 */
const TEXT_KINDS = new Set(['text', 'url', 'name', 'mediaType', 'enum']);
function valuesFor(kind: string): Array<[string, string]> {
  const textual = TEXT_KINDS.has(kind);
  return Object.entries(VALUES).filter(([name]) =>
    textual ? ['blob', 'emptyText', 'real', 'null', 'invalidUtf8', 'bidiName'].includes(name) : !['emptyText', 'bidiName'].includes(name),
  );
}

/** One published user (1) with a row in every table, a friend (2) who supplies and owns what 1 does not. */
function fixture({ moderation = true } = {}): Buffer {
  const db = new Database(':memory:');
  db.exec(MIGRATIONS[0]!);
  // The columns migration 3 adds (moderation), without migration 2's change log, whose triggers
  // cannot log rows with a BLOB key, and without migration 4's type checks, which refuse them.
  if (moderation) db.exec(`
    ALTER TABLE recommendations ADD COLUMN status TEXT NOT NULL DEFAULT 'approved';
    ALTER TABLE recommendations ADD COLUMN submitter_address TEXT;
    ALTER TABLE recommendations ADD COLUMN reviewed_at INTEGER;
  `);
  db.pragma('user_version = 1');
  db.exec(`
    INSERT INTO users (id, username, display_name, title, given_name, family_name, email, show_email, phone, show_phone,
      homepage_url, avatar_url, openid_url, aim_chat_id, yahoo_chat_id, msn_chat_id, icq_chat_id, jabber_chat_id, show_chat_ids,
      street_address, locality, region, region_name, postal_code, country_name, show_address, history_public, state, created_at, updated_at)
    VALUES (1, 'alice', 'Alice A', 'Dr', 'Alice', 'A', 'alice@example.org', 1, '+1 555 0100', 1,
      'https://alice.example/', 'https://alice.example/a.png', 'https://alice.example/id', 'aim', 'yahoo', 'msn@example.org', '123', 'j@example.org', 1,
      '1 Road', 'Town', 'RG', 'Region', '12345', 'Country', 1, 1, 'active', ${T0}, ${T0 + 10});
    INSERT INTO users (id, username, display_name, created_at, updated_at) VALUES (2, 'bob', 'Bob B', ${T0}, ${T0});
    INSERT INTO online_accounts (id, user_id, service_homepage_url, account_name, profile_url) VALUES (1, 1, 'https://s.example/', 'alice', 'https://s.example/alice');
    INSERT INTO categories (id, name) VALUES (1, 'Music');
    INSERT INTO tags (id, name) VALUES (1, 'guitar');
    INSERT INTO interests (user_id, tag_id) VALUES (1, 1);
    INSERT INTO friendships (user_id, friend_id, created_at) VALUES (1, 2, ${T0});
    INSERT INTO videos (id, public_id, user_id, title, description, duration_seconds, file_url, file_size, file_type, width, height,
      thumbnail_url, thumbnail_width, thumbnail_height, captions_url, category_id, visibility, created_at, updated_at)
    VALUES (1, 'v1', 1, 'First', 'About it', 75, 'https://cdn.example/v1.mp4', 1000, 'video/mp4', 640, 480,
      'https://cdn.example/v1.jpg', 120, 90, 'https://cdn.example/v1.vtt', 1, 'public', ${T0 + 1}, ${T0 + 2});
    INSERT INTO videos (id, public_id, user_id, title, file_url, thumbnail_url, created_at, updated_at)
    VALUES (2, 'v2', 2, 'Second', 'https://cdn.example/v2.mp4', 'https://cdn.example/v2.jpg', ${T0 + 3}, ${T0 + 3});
    INSERT INTO video_tags (video_id, tag_id) VALUES (1, 1);
    INSERT INTO groups (id, slug, title, description, owner_id, featured_video_id, hidden, created_at, updated_at)
    VALUES (1, 'band', 'The band', 'We play', 2, 1, 0, ${T0}, ${T0 + 5});
    INSERT INTO group_members (group_id, user_id, joined_at) VALUES (1, 1, ${T0});
    INSERT INTO saved_videos (user_id, video_id, position, saved_at) VALUES (1, 2, 0, ${T0});
    INSERT INTO viewing_history (id, user_id, video_id, viewed_at) VALUES (1, 2, 1, ${T0});
    INSERT INTO recommendations (id, user_id, title, link, image, description, duration_seconds, is_public, created_at)
    VALUES (1, 1, 'Watch this', 'https://r.example/w', 'https://r.example/w.jpg', 'Good', 90, 1, ${T0});
    INSERT INTO attention_concepts (user_id, category_id, value, updated_at) VALUES (1, 1, 0.5, ${T0});
    INSERT INTO attention_sources (id, user_id, video_id, supplier_id, value, updated_at) VALUES (1, 1, 2, 2, 0.25, ${T0});
    INSERT INTO reading_list (id, user_id, category_id, title, description, html_url, xml_url, position, created_at, updated_at)
    VALUES (1, 1, 1, 'A blog', 'Posts', 'https://b.example/', 'https://b.example/feed', 0, ${T0}, ${T0 + 1});
  `);
  const bytes = db.serialize();
  db.close();
  return bytes;
}

/** The row of `table` a bad value goes into: the one every document of user 1 reads. */
function target(table: string): string {
  if (table === 'users') return 'id = 1';
  if (table === 'videos') return 'id = 1';
  if (table === 'viewing_history') return 'id = 1';
  const key = SITE_TABLES[table]!.key;
  return key.includes('id') ? 'id = 1' : key.map((k) => `${k} = ${k === 'friend_id' || k === 'video_id' && table === 'saved_videos' ? 2 : 1}`).join(' AND ');
}

const FORBIDDEN = ['NaN', 'undefined', 'Invalid Date', '[object', 'Infinity'];

describe('values of every storage class in every column', () => {
  it('never make a document unparsable or false, never stop the build, and are each reported', () => {
    const db = new Database(fixture());
    const site = createSiteContext(testConfig(), FORMATS, new Date(Date.UTC(2026, 0, 1)));
    // One connection, reader, state and writer for every trial: each trial writes its value,
    // builds in full, and puts the original value back. Each build hears of every bad value it reads.
    const writer = new MemoryWriter();
    const state = new BuildState(':memory:');
    const reader = new SiteReader(db, readLimits(8));
    const build = () => {
      const warnings: string[] = [];
      const report = runBuild({ reader, writer, state, site, formats: FORMATS, reporter: { warn: (m) => warnings.push(m) } });
      return { report, warnings, files: writer.files };
    };
    const clean = build();
    expect(clean.warnings).toEqual([]);
    expect(clean.report.skippedCount).toBe(0);

    // Every distinct document any trial produced, for the XML parser at the end.
    const xml: Record<string, string> = {};
    const seen = new Set<string>();
    let tried = 0;
    let reportedBad = 0;
    for (const [table, spec] of Object.entries(SITE_TABLES)) {
      for (const [column, columnSpec] of Object.entries(spec.columns)) {
        const original = db.prepare(`SELECT ${column} FROM ${table} WHERE ${target(table)}`).pluck().get();
        for (const [name, value] of valuesFor(columnSpec.kind)) {
          try {
            if (db.prepare(`UPDATE ${table} SET ${column} = ${value} WHERE ${target(table)}`).run().changes !== 1) throw new Error(`no row ${target(table)} in ${table}`);
          } catch (error) {
            const code = (error as { code?: string }).code ?? '';
            // NOT NULL, CHECK, UNIQUE, a foreign key or an INTEGER PRIMARY KEY refused it: it cannot be stored.
            if (code.startsWith('SQLITE_CONSTRAINT') || code === 'SQLITE_MISMATCH') continue;
            throw error;
          }
          tried++;
          const where = `${table}.${column} = ${name}`;
          const keyColumn = spec.key.includes(column);
          const stored = db
            .prepare(`SELECT ${column} AS value, CAST(${column} AS BLOB) AS bytes FROM ${table} WHERE ${keyColumn ? `${column} IS ${value}` : target(table)}`)
            .get() as { value: unknown; bytes: unknown } | undefined;
          const { report, warnings, files } = build();
          // Back to the fixture: a key column by the value it now holds.
          db.prepare(`UPDATE ${table} SET ${column} = ? WHERE ${keyColumn ? `${column} IS ${value}` : target(table)}`).run(original);

          expect(report.failed, where).toEqual([]);
          for (const [path, body] of files) {
            const text = body.toString('utf8');
            for (const word of FORBIDDEN) expect(text.includes(word), `${where}: ${path} holds ${word}`).toBe(false);
            if (path.endsWith('.json') || path.endsWith('/json')) expect(() => JSON.parse(text), `${where}: ${path}`).not.toThrow();
            const hash = createHash('sha1').update(body).digest('hex');
            if (!seen.has(hash) && /\.(xml|rdf|xspf|apml|opml|rss|atom)$|\/xml$/.test(path)) {
              seen.add(hash);
              xml[`${table}.${column}.${name}.${path}`] = text;
            }
          }

          // Each value not of its column's kind is reported, naming table, column and row.
          const invalidUtf8 = typeof stored?.value === 'string' && Buffer.isBuffer(stored.bytes) && !isUtf8(stored.bytes);
          const wrongKind = stored !== undefined && !matchesKind(columnSpec, stored.value);
          if (!wrongKind && !invalidUtf8) continue;
          // Bytes that are not UTF-8 in text no document shows decide nothing, and are not read.
          if (!wrongKind && columnSpec.rule === 'unused') continue;
          reportedBad++;
          const named = warnings.some(
            (w) =>
              (w.startsWith(`bad value: ${table} `) && w.includes(`, column ${column}: found`)) ||
              // A name that is not valid UTF-8 reads as U+FFFD: the path rule names it.
              (columnSpec.kind === 'name' && w.includes('U+FFFD')),
          );
          expect(named, `${where} (stored ${JSON.stringify(stored?.value)}) is not reported; warnings:\n${warnings.join('\n')}`).toBe(true);
        }
        expect(db.prepare(`SELECT ${column} FROM ${table} WHERE ${target(table)}`).pluck().get(), `${table}.${column} restored`).toEqual(original);
      }
    }
    state.close();
    db.close();
    expect(tried).toBeGreaterThan(400);
    expect(reportedBad).toBeGreaterThan(250);
    const parsed = xmllintWellFormed(xml);
    expect(parsed.output).toBe('');
    expect(parsed.ok).toBe(true);
  });

  it('the command line: a database of bad values upgrades with each named, and builds with exit code 0', () => {
    const { dir } = tempDir('vidfeeds-bad-values-');
    const file = join(dir, 'site.sqlite');
    // A database of schema version 1, as a site had it before vidfeeds's migrations: init adds the rest.
    const db = new Database(fixture({ moderation: false }));
    // Every column of user 1's rows at once: text in the numbers, BLOBs in the text.
    for (const [table, spec] of Object.entries(SITE_TABLES)) {
      for (const [column, c] of Object.entries(spec.columns)) {
        // Keys stay, and user 1 stays published (its creation time), so its other columns are read.
        if (c.kind === 'id' || c.kind === 'ref' || c.kind === 'name' || (table === 'users' && column === 'created_at')) continue;
        const value = TEXT_KINDS.has(c.kind) ? VALUES.blob : VALUES.text;
        try {
          db.prepare(`UPDATE ${table} SET ${column} = ${value} WHERE ${target(table)}`).run();
        } catch {
          // Refused by a constraint of schema version 1.
        }
      }
    }
    db.exec(`VACUUM INTO '${file.replaceAll("'", "''")}'`);
    db.close();
    const init = cli(['init', '--db', file]);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stderr).toMatch(/kept as stored: videos id=1, column title: found a BLOB of 2 bytes/);
    const out = join(dir, 'out');
    const built = cli(['build', '--db', file, '--out', out]);
    expect(built.code, built.stderr).toBe(0);
    expect(built.stderr).toMatch(/skipped video "v1": it has a BLOB of 2 bytes in title/);
    expect(built.stderr).toMatch(/bad value: users id=1, column display_name: found a BLOB of 2 bytes, expected text; the field is left out/);
    expect(built.stderr).toMatch(/bad value: users id=1, column email: found a BLOB of 2 bytes, expected text or NULL; the field is left out$/m);
    expect(built.stderr).toMatch(/skipped video "v1": it has a BLOB of 2 bytes in title \(expected text\)/);
    expect(built.stderr).toMatch(/\d+ bad values$/m);
  });
});
