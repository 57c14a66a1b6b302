import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'vitest';
import { BIN, cli, readTree, type CliResult } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';
import { undated } from '../helpers/tree.js';
import { validateReport } from '../helpers/report-schema.js';
import { SYNC_ORDER } from '../../src/sync/table-plan.js';

/**
 * What the sync tests of both servers share: the worked examples of docs/adopting.md (read from
 * the page itself, so that the page shows what the tests run), a vidfeeds database and its
 * configuration in a temporary directory, and ways to look at that database.
 */

const ADOPTING = resolve(import.meta.dirname, '../../docs/adopting.md');

/** The fenced block of docs/adopting.md whose info string ends with `name` (```sql mariadb-schema). */
export function docBlock(name: string): string {
  const text = readFileSync(ADOPTING, 'utf8');
  const match = new RegExp('^```\\w+ ' + name + '\\n([\\s\\S]*?)^```$', 'm').exec(text);
  if (match === null) throw new Error(`docs/adopting.md has no block ${name}`);
  return match[1]!;
}

export interface SyncSite {
  dir: string;
  db: string;
  config: string;
  out: string;
  sync(extra?: string[]): CliResult;
  syncJson(extra?: string[]): { result: CliResult; report: SyncJson };
  build(extra?: string[]): CliResult;
  /** What `read` finds in vidfeeds's database, opened read-only for it and closed after. */
  read<T>(read: (db: Database.Database) => T): T;
}

export interface SyncJson {
  ok: boolean;
  exitCode: number;
  changes: number;
  logged: number;
  tables: Record<string, { inserted: number; updated: number; deleted: number; unchanged: number; skipped: number; mode: 'full' | 'changed'; reason?: string }>;
  skipped: Array<{ table: string; row: string; reason: string }>;
  issues: Array<{ table: string; row: string; column: string; found: string; outcome: string }>;
  serverWarnings?: Array<{ table: string; count: number; messages: Array<{ code: number; message: string }> }>;
  error?: string;
}

/** A vidfeeds database and a configuration holding the doc's mapping (`from` given by the caller's flags or environment). */
export function syncSite(dir: string, configBlock: string, from: string | null): SyncSite {
  const db = join(dir, 'vidfeeds.sqlite');
  const config = join(dir, 'vidfeeds.config.json');
  const out = join(dir, 'out');
  const mapping = JSON.parse(configBlock) as { sync: Record<string, unknown> };
  delete mapping.sync.passwordFile;
  writeFileSync(config, JSON.stringify({ baseUrl: 'https://videos.example.org', siteName: 'Example', ...mapping }, null, 2));
  const init = cli(['init', '--db', db]);
  expect(init.code, init.stderr).toBe(0);
  const fromFlags = from === null ? [] : ['--from', from];
  const sync = (extra: string[] = []) => cli(['sync', '--db', db, '--config', config, ...fromFlags, ...extra]);
  return {
    dir,
    db,
    config,
    out,
    sync,
    syncJson(extra = []) {
      const result = sync(['--json', ...extra]);
      const report = JSON.parse(result.stdout) as SyncJson;
      expect(validateReport(report)).toEqual([]);
      return { result, report };
    },
    build: (extra: string[] = []) => cli(['build', '--db', db, '--config', config, '--out', out, ...extra]),
    read(read) {
      const opened = new Database(db, { readonly: true });
      try {
        return read(opened);
      } finally {
        opened.close();
      }
    },
  };
}

/**
 * A dry-run sync of the site from `url`, a URL without a password, by its configuration with
 * `sync.passwordFile` naming a file that holds `password` (null: no file named).
 */
export function syncWithPasswordFile(site: SyncSite, url: string, password: string | null): CliResult {
  const config = JSON.parse(readFileSync(site.config, 'utf8')) as { sync: Record<string, unknown> };
  delete config.sync.passwordFile;
  if (password !== null) {
    // Relative, as a configuration beside its secrets names it: a place beside the file, wherever
    // the sync runs from (the test runs it from another folder).
    config.sync.passwordFile = 'source-password';
    writeFileSync(join(site.dir, 'source-password'), `${password}\n`);
  }
  const file = join(site.dir, 'password-file.config.json');
  writeFileSync(file, JSON.stringify(config));
  return cli(['sync', '--db', site.db, '--config', file, '--from', url, '--dry-run'], { cwd: tmpdir() });
}

/** Every row of every vidfeeds table (and the change log's length): equal dumps are equal databases. */
export function dumpTables(file: string): string {
  const db = new Database(file, { readonly: true });
  try {
    const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).all() as Array<{ name: string }>).map((t) => t.name);
    // The log's times are the clock's, not the rows': two syncs of the same rows log the same entries at other times.
    const columns = (t: string) => (t === 'change_log' ? 'seq, table_name, op, old_keys, new_keys' : '*');
    return JSON.stringify(tables.map((t) => [t, db.prepare(`SELECT ${columns(t)} FROM "${t}" ORDER BY 1, 2`).raw(true).all()]));
  } finally {
    db.close();
  }
}

/** The rows of vidfeeds's site tables alone, in key order: equal for two databases synced to the same rows, whatever their logs and marks. */
export function siteRows(file: string): string {
  const db = new Database(file, { readonly: true });
  try {
    return JSON.stringify(SYNC_ORDER.map((t) => [t, db.prepare(`SELECT * FROM "${t}" ORDER BY 1, 2`).raw(true).all()]));
  } finally {
    db.close();
  }
}

/**
 * After the caller changed, added and deleted one account each in the source: `sync --changed-only`
 * reads users by their watermark (the others in full, having none) and leaves exactly the rows a
 * full sync into a new database gives; a second one finds nothing.
 */
export function expectChangedOnlyLikeFull(site: SyncSite, configBlock: string, from: string | null): void {
  const { result, report } = site.syncJson(['--changed-only']);
  expect(result.code, result.stderr).toBe(0);
  expect(report.tables.users).toMatchObject({ mode: 'changed', inserted: 1, updated: 1, deleted: 1, skipped: 0 });
  expect(report.tables.users!.unchanged).toBeLessThan(3);
  expect(report.tables.videos).toMatchObject({ mode: 'full', reason: expect.stringMatching(/no watermark column/) });
  const dir = join(site.dir, 'reference');
  mkdirSync(dir);
  const reference = syncSite(dir, configBlock, from);
  expect(reference.sync().code).toBe(0);
  expect(siteRows(site.db)).toBe(siteRows(reference.db));
  expect(site.syncJson(['--changed-only']).report).toMatchObject({ changes: 0, tables: { users: { mode: 'changed' } } });
}

/** The change log's entries after `seq`, as `table op keys`. */
export function logAfter(file: string, seq: number): Array<{ table_name: string; op: string; old_keys: string | null; new_keys: string | null }> {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT table_name, op, old_keys, new_keys FROM change_log WHERE seq > ? ORDER BY seq').all(seq) as never;
  } finally {
    db.close();
  }
}

export function logPosition(file: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('SELECT coalesce(max(seq), 0) AS n FROM change_log').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** Copies a closed database (and its WAL, if any) aside or back. */
export function copyDatabase(from: string, to: string): void {
  for (const suffix of ['-wal', '-shm']) rmSync(`${to}${suffix}`, { force: true });
  copyFileSync(from, to);
  if (existsSync(`${from}-wal`)) copyFileSync(`${from}-wal`, `${to}-wal`);
}

/** Runs `vidfeeds sync` and sends it `signal` after `afterMs`; resolves with its exit code (or signal). */
export function syncAndSignal(args: string[], afterMs: number, signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [BIN, 'sync', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill(signal), afterMs);
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      resolvePromise({ code, signal: sig, stderr });
    });
  });
}

/** The full build of the synced database, in a directory of its own, equals the incremental tree byte for byte. */
export function expectTreeEqualsFullBuild(site: SyncSite): void {
  const fullOut = join(site.dir, 'full-out');
  rmSync(fullOut, { recursive: true, force: true });
  const full = cli(['build', '--db', site.db, '--config', site.config, '--out', fullOut, '--full']);
  expect(full.code, full.stderr).toBe(0);
  const incremental = readTree(site.out);
  const reference = readTree(fullOut);
  expect([...incremental.keys()].sort()).toEqual([...reference.keys()].sort());
  for (const [path, bytes] of reference) {
    const built = incremental.get(path);
    expect(built !== undefined && undated(path, built).equals(undated(path, bytes)), path).toBe(true);
  }
}

/** The URLs an incremental `build --json` wrote and removed. */
export function buildUrls(result: CliResult): { mode: string; written: string[]; removed: string[] } {
  const report = JSON.parse(result.stdout) as { mode: string; urls: { written: string[]; removed: string[] } };
  return { mode: report.mode, written: report.urls.written, removed: report.urls.removed };
}

/** A site database in SQLite made by `sql`, a vidfeeds database, and a configuration syncing `tables` from one to the other. */
export function sqliteSyncSite(prefix: string, sql: string, tables: Record<string, string>, config: Record<string, unknown> = {}) {
  const { dir } = tempDir(prefix);
  const source = join(dir, 'site.db');
  const site = new Database(source);
  site.exec(sql);
  const db = join(dir, 'vidfeeds.sqlite');
  const init = cli(['init', '--db', db]);
  expect(init.code, init.stderr).toBe(0);
  const file = join(dir, 'vidfeeds.config.json');
  writeFileSync(file, JSON.stringify({ baseUrl: 'https://videos.example.org', ...config, sync: { from: `sqlite:${source}`, tables } }));
  return { dir, site, db, config: file, sync: (extra: string[] = []) => cli(['sync', '--db', db, '--config', file, ...extra]) };
}
