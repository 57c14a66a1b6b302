import type Database from 'better-sqlite3';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config-schema.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import type { UserPart } from '../../src/model/views.js';
import { cli } from '../helpers/cli.js';
import { createDemoDb } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';

/** Every row of every table, in a stable order, as text: two databases with equal contents give equal text. */
function contents(db: Database.Database): string {
  const tables = db.prepare<[], { name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'site_meta' ORDER BY name`).all();
  return tables.map(({ name }) => `${name}\n${db.prepare(`SELECT * FROM "${name}"`).raw(true).all().map((row) => JSON.stringify(row)).sort().join('\n')}`).join('\n');
}

const PARTS = new Set<UserPart>(['uploads', 'groups', 'recommendations', 'playlist', 'friends']);

describe('demo shapes', () => {
  it('feed-heavy: every published generated user has full feeds', () => {
    const { db } = createDemoDb({ users: 60, seed: 5, shape: 'feed-heavy' });
    const reader = new SiteReader(db, readLimits(DEFAULT_CONFIG.recommendationsCount));
    const generated = reader.snapshot(() => [...reader.users()].filter((row) => row.id > 9).map((row) => reader.userBundle(row.id, PARTS)));
    expect(generated.length).toBeGreaterThan(45);
    for (const bundle of generated) {
      expect(bundle.uploads, bundle.user.username).toHaveLength(20);
      expect(bundle.recommendations, bundle.user.username).toHaveLength(DEFAULT_CONFIG.recommendationsCount);
      expect(bundle.playlist.source, bundle.user.username).toBe('saved');
      expect(bundle.groups.length, bundle.user.username).toBeGreaterThanOrEqual(15);
    }
    // Most Atom feeds are full (a few of a user's groups may be hidden or have a suspended owner).
    expect(generated.filter((bundle) => bundle.groups.length === 20).length).toBeGreaterThan(generated.length * 0.8);
  });

  it('the same users, seed and shape give the same rows; the shapes differ', () => {
    const a = createDemoDb({ users: 30, seed: 9, shape: 'feed-heavy' });
    const b = createDemoDb({ users: 30, seed: 9, shape: 'feed-heavy' });
    const demo = createDemoDb({ users: 30, seed: 9 });
    const demoNamed = createDemoDb({ users: 30, seed: 9, shape: 'demo' });
    expect(contents(a.db)).toBe(contents(b.db));
    expect(contents(demo.db)).toBe(contents(demoNamed.db));
    expect(contents(a.db)).not.toBe(contents(demo.db));
    const videos = (db: Database.Database) => (db.prepare('SELECT count(*) AS n FROM videos').get() as { n: number }).n;
    expect(videos(a.db)).toBeGreaterThan(20 * 21);
    expect(videos(demo.db)).toBeLessThan(10 * 30);
  });

  it('vidfeeds demo --shape feed-heavy writes one; an unknown shape is refused before any file is made', () => {
    const { dir } = tempDir();
    const db = join(dir, 'heavy.sqlite');
    const made = cli(['demo', '--db', db, '--users', '12', '--shape', 'feed-heavy']);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stderr).toMatch(/12 users, \d+ videos/);
    const bad = cli(['demo', '--db', join(dir, 'thin.sqlite'), '--shape', 'thin']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--shape: must be one of demo, feed-heavy, not "thin"');
    expect(readdirSync(dir)).toEqual(['heavy.sqlite']);
  });
});
