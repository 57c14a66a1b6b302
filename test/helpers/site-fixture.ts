import type { XmlEngine } from '../../src/render/xml-engine.js';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { tempDir } from './temp-dir.js';
import { BuildState } from '../../src/pipeline/build-state.js';
import type { BuildReport } from '../../src/pipeline/build-report.js';
import { runBuild, type BuildOptions } from '../../src/pipeline/run-build.js';
import { DEFAULT_CONFIG } from '../../src/config/config-schema.js';
import { validateConfig } from '../../src/config/load-config.js';
import type { SiteConfig } from '../../src/config/site-config.js';
import { MemoryWriter, type OutputWriter } from '../../src/pipeline/write/output-writer.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { generateDemo, type DemoOptions } from '../../src/db/demo-data.js';
import { migrate } from '../../src/db/migrations.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { FORMATS } from '../../src/formats/registry.js';

/** Times in fixtures: 2024-01-01T00:00:00Z plus an offset. */
export const T0 = 1_704_067_200;

/** A fresh site database on disk, removed when the test ends (each test gets its own). */
export function createTestDb(): { db: Database.Database; file: string; cleanup: () => void } {
  const { dir, cleanup } = tempDir('vidfeeds-db-');
  const file = join(dir, 'site.sqlite');
  const db = new Database(file);
  db.pragma('foreign_keys = ON');
  migrate(db, file);
  return {
    db,
    file,
    cleanup: () => {
      if (db.open) db.close();
      cleanup();
    },
  };
}

/** A database holding the demo site (small by default). */
export function createDemoDb(options: DemoOptions = { users: 40, seed: 7 }) {
  const fixture = createTestDb();
  generateDemo(fixture.db, options);
  return fixture;
}

let nextId = 1000;

export function insertUser(db: Database.Database, fields: Record<string, unknown> = {}): { id: number; username: string } {
  const id = (fields.id as number | undefined) ?? nextId++;
  const row = {
    id,
    username: `user${id}`,
    display_name: `User ${id}`,
    state: 'active',
    created_at: T0,
    updated_at: T0,
    ...fields,
  };
  const columns = Object.keys(row);
  db.prepare(`INSERT INTO users (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`).run(row);
  return { id, username: row.username as string };
}

export function insertVideo(db: Database.Database, userId: number, fields: Record<string, unknown> = {}): { id: number; publicId: string } {
  const id = (fields.id as number | undefined) ?? nextId++;
  const row = {
    id,
    public_id: `vid${id}`,
    user_id: userId,
    title: `Video ${id}`,
    description: `About video ${id}`,
    duration_seconds: 75,
    file_url: `https://cdn.example.org/v/${id}.flv`,
    file_size: 123456,
    file_type: 'video/x-flv',
    thumbnail_url: `https://cdn.example.org/t/${id}.jpg`,
    visibility: 'public',
    created_at: T0 + id,
    updated_at: T0 + id,
    ...fields,
  };
  const columns = Object.keys(row);
  db.prepare(`INSERT INTO videos (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`).run(row);
  return { id, publicId: row.public_id as string };
}

/** Inserts a row into any table, columns from the object. */
export function insertRow(db: Database.Database, table: string, row: Record<string, unknown>): void {
  const columns = Object.keys(row);
  db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`).run(row);
}

export function testConfig(overrides: Partial<SiteConfig> = {}): SiteConfig {
  const raw = { ...structuredClone(DEFAULT_CONFIG), baseUrl: 'https://videos.example.org', ...overrides };
  return validateConfig(raw as never, 'test');
}

export interface BuiltSite {
  writer: MemoryWriter;
  report: BuildReport;
  warnings: string[];
}

/**
 * Builds a database into memory with the real pipeline. Pass the same `state` and `writer` to
 * build again incrementally.
 */
export function buildInMemory(
  dbFile: string,
  options: BuildOptions & { config?: SiteConfig; state?: BuildState; writer?: OutputWriter; xmlEngine?: XmlEngine } = {},
): BuiltSite {
  const config = options.config ?? testConfig();
  const site = createSiteContext(config, FORMATS, new Date(Date.UTC(2026, 0, 1)), options.xmlEngine);
  const db = new Database(dbFile, { readonly: true });
  const state = options.state ?? new BuildState(':memory:');
  const writer = (options.writer ?? new MemoryWriter()) as MemoryWriter;
  const warnings: string[] = [];
  try {
    const report = runBuild(
      { reader: new SiteReader(db, readLimits(config.recommendationsCount)), writer, state, site, formats: FORMATS, reporter: { warn: (m) => warnings.push(m) } },
      { only: options.only, user: options.user, strict: options.strict ?? config.strict, shard: options.shard },
    );
    return { writer, report, warnings };
  } finally {
    db.close();
    if (options.state === undefined) state.close();
  }
}
