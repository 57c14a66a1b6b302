import Database from 'better-sqlite3';
import { copyFileSync, cpSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BuildState } from '../../src/pipeline/build-state.js';
import { MemoryWriter } from '../../src/pipeline/write/output-writer.js';
import { runBuild } from '../../src/pipeline/run-build.js';
import { buildSite } from '../../src/pipeline/site-build.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { createDemoDb, testConfig } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';
import { PROBED } from '../helpers/probe-formats.js';
import { readTree, treeDifferences } from '../helpers/tree.js';

/**
 * Every column a document shows is covered by the change log: for each column of each table of
 * the schema (read from the database itself, so a column added by a later migration is tried
 * too), a change of that column in every row is followed by an incremental build that gives the
 * bytes of a full build. A column whose change no trigger logged, or whose owners the build did
 * not find, leaves a document stale and fails here, naming the table and the column.
 *
 * Probe formats print each user's whole bundle and each whole video view, so a column counts as
 * shown when the reader exposes it, whichever real formats exist.
 */


const NOT_SITE_DATA = new Set(['change_log', 'site_meta']);

interface Column {
  table: string;
  name: string;
  type: string;
  /** The values a CHECK (column IN (...)) allows, when it has one. */
  allowed: string[] | null;
}

function columnsOf(db: Database.Database): Column[] {
  const tables = db
    .prepare<[], { name: string; sql: string }>(`SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
    .all()
    .filter((t) => !NOT_SITE_DATA.has(t.name));
  return tables.flatMap(({ name: table, sql }) =>
    db
      .prepare<[], { name: string; type: string }>(`SELECT name, type FROM pragma_table_info('${table}')`)
      .all()
      .map(({ name, type }) => {
        const check = new RegExp(`CHECK \\(${name} IN \\(([^)]*)\\)\\)`).exec(sql);
        const allowed = check === null ? null : check[1]!.split(',').map((v) => v.trim().replace(/^'|'$/g, ''));
        return { table, name, type: type.toUpperCase(), allowed };
      }),
  );
}

/**
 * SQL expressions that give each row another value the schema accepts, tried in order: the other
 * values of a CHECK list, then by type. Keys move far out of the way (foreign keys are off on
 * this connection, as on many sites' own connections, so references may point nowhere).
 */
function newValues({ name, type, allowed }: Column): string[] {
  if (allowed !== null) {
    const next = allowed.map((value, i) => `WHEN ${isNaN(Number(value)) ? `'${value}'` : value} THEN ${quote(allowed[(i + 1) % allowed.length]!)}`);
    return [`CASE ${name} ${next.join(' ')} ELSE ${name} END`];
  }
  if (type.includes('INT')) return [`${name} + 1000003`, `${name} + 60`];
  if (type.includes('REAL')) return [`${name} / 2`];
  return [`${name} || 'x'`];
}

function quote(value: string): string {
  return isNaN(Number(value)) ? `'${value}'` : value;
}

describe('the change log covers every column a document shows', () => {
  const cleanups: Array<() => void> = [];
  afterAll(() => cleanups.forEach((c) => c()));
  const probeDb = createDemoDb({ users: 5, seed: 3 });
  cleanups.push(probeDb.cleanup);
  const columns = columnsOf(probeDb.db);

  it('reads the columns of the schema', () => {
    expect(columns.length).toBeGreaterThan(100);
    expect(columns).toContainEqual(expect.objectContaining({ table: 'users', name: 'display_name' }));
  });

  // One demo site, built once; each column starts from a copy of it (database, tree and state).
  const template = tempDir('vidfeeds-cover-');
  cleanups.push(template.cleanup);
  const config = testConfig();
  const site = createSiteContext(config, PROBED, new Date(Date.UTC(2026, 0, 1)));
  probeDb.db.close();
  const first = buildSite({ db: probeDb.file, out: join(template.dir, 'out'), stateFile: join(template.dir, 'state.sqlite'), config, site, formats: PROBED });

  it('starts from a full build', () => {
    expect(first.mode).toBe('full');
  });

  for (const column of columns) {
    it(`${column.table}.${column.name}`, () => {
      const work = tempDir('vidfeeds-cover-');
      const file = join(work.dir, 'site.sqlite');
      const out = join(work.dir, 'out');
      const stateFile = join(work.dir, 'state.sqlite');
      copyFileSync(probeDb.file, file);
      copyFileSync(join(template.dir, 'state.sqlite'), stateFile);
      cpSync(join(template.dir, 'out'), out, { recursive: true });
      // The copied state was made for the template's output directory: it is told this one is the
      // same tree, or the build would rightly start again in full.
      const state = new Database(stateFile);
      state.prepare(`UPDATE meta SET value = ? WHERE key = 'output_dir'`).run(realpathSync(out));
      state.close();

      const db = new Database(file);
      let changed = 0;
      for (const value of newValues(column)) {
        try {
          changed = db.prepare(`UPDATE ${column.table} SET ${column.name} = ${value} WHERE ${column.name} IS NOT NULL`).run().changes;
          break;
        } catch (error) {
          if (!(error as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) throw error;
        }
      }
      db.close();
      if (changed === 0) return; // an empty table, or a column no row sets

      const report = buildSite({ db: file, out, stateFile, config, site, formats: PROBED });
      expect(report.mode).toBe('incremental');
      // A full build of the same database, in memory.
      const full = new MemoryWriter();
      const reading = new Database(file, { readonly: true });
      runBuild({ reader: new SiteReader(reading, readLimits(config.recommendationsCount)), writer: full, state: new BuildState(':memory:'), site, formats: PROBED });
      reading.close();
      const expected = new Map([...full.files].map(([path, body]) => [path, { body, mtimeNs: 0n, ino: 0n }]));
      expect(treeDifferences(readTree(out), expected), `after changing ${column.table}.${column.name} in ${changed} rows`).toEqual([]);
    });
  }
});
