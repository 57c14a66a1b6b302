import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/**
 * What earlier builds wrote: every output path with the hash and size of its bytes, the format
 * and the user it belongs to. It lets a build leave byte-identical files untouched and remove
 * exactly the files an earlier build wrote that this one no longer produces, and nothing else.
 *
 * It is a small SQLite file kept outside the served tree (by default `.vidfeeds/<out>.state.sqlite`
 * beside the output directory), queried per path so memory stays flat in site size.
 */
export const STATE_VERSION = 1;

/** Stale outputs are read this many at a time. */
const STALE_PAGE = 1000;

export interface PreviousOutput {
  hash: Buffer;
  size: number;
}

/** Which outputs a build is responsible for: outputs outside the scope are never pruned. */
export interface PruneScope {
  formats: ReadonlySet<string>;
  /** Only outputs that belong to this user (their documents and their videos'). */
  user?: string;
}

export function defaultStateFile(outDir: string): string {
  const out = resolve(outDir);
  return join(dirname(out), '.vidfeeds', `${basename(out)}.state.sqlite`);
}

export class BuildState {
  private readonly db: Database.Database;
  private readonly stmt;
  private pending = 0;
  buildId = 0;

  constructor(file: string) {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS outputs (
        path    TEXT PRIMARY KEY,
        format  TEXT NOT NULL,
        user    TEXT,
        hash    BLOB NOT NULL,
        size    INTEGER NOT NULL,
        build   INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS outputs_user ON outputs(user);
    `);
    const version = this.getMeta('state_version');
    if (version !== null && version !== String(STATE_VERSION)) {
      // A state of another version is not trusted: start over (the next build is a full one).
      this.db.exec('DELETE FROM outputs; DELETE FROM meta;');
    }
    this.setMeta('state_version', String(STATE_VERSION));
    this.stmt = {
      get: this.db.prepare<[string], PreviousOutput>('SELECT hash, size FROM outputs WHERE path = ?'),
      put: this.db.prepare(
        `INSERT INTO outputs (path, format, user, hash, size, build) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(path) DO UPDATE SET format = excluded.format, user = excluded.user, hash = excluded.hash,
           size = excluded.size, build = excluded.build`,
      ),
      touch: this.db.prepare('UPDATE outputs SET build = ? WHERE path = ?'),
      forget: this.db.prepare('DELETE FROM outputs WHERE path = ?'),
      // Read in pages after the last path seen, so a prune holds one page in memory, and the
      // caller may forget paths between pages.
      staleAll: this.db.prepare<[number, string], { path: string; format: string }>(
        `SELECT path, format FROM outputs WHERE build <> ? AND path > ? ORDER BY path LIMIT ${STALE_PAGE}`,
      ),
      staleUser: this.db.prepare<[number, string, string], { path: string; format: string }>(
        `SELECT path, format FROM outputs WHERE build <> ? AND user = ? AND path > ? ORDER BY path LIMIT ${STALE_PAGE}`,
      ),
      count: this.db.prepare<[], { n: number }>('SELECT count(*) AS n FROM outputs'),
    };
  }

  getMeta(key: string): string | null {
    const row = this.db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?').get(key);
    return row?.value ?? null;
  }

  setMeta(key: string, value: string): void {
    this.db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  /** Starts a build: a new build id, and one write transaction, committed in batches. */
  begin(): number {
    this.buildId = Number(this.getMeta('last_build') ?? '0') + 1;
    this.setMeta('last_build', String(this.buildId));
    this.db.exec('BEGIN');
    return this.buildId;
  }

  previous(path: string): PreviousOutput | undefined {
    return this.stmt.get.get(path);
  }

  record(path: string, format: string, user: string | null, hash: Buffer, size: number): void {
    this.stmt.put.run(path, format, user, hash, size, this.buildId);
    this.tick();
  }

  /** Keeps an output as it is (its render failed): it is not pruned. */
  keep(path: string): void {
    this.stmt.touch.run(this.buildId, path);
    this.tick();
  }

  forget(path: string): void {
    this.stmt.forget.run(path);
    this.tick();
  }

  /** Outputs in scope that this build did not produce, by path; the caller may `forget` each. */
  *stale(scope: PruneScope): Generator<string> {
    let after = '';
    for (;;) {
      const rows =
        scope.user === undefined ? this.stmt.staleAll.all(this.buildId, after) : this.stmt.staleUser.all(this.buildId, scope.user, after);
      for (const row of rows) if (scope.formats.has(row.format)) yield row.path;
      if (rows.length < STALE_PAGE) return;
      after = rows[rows.length - 1]!.path;
    }
  }

  count(): number {
    return this.stmt.count.get()!.n;
  }

  /** Commits the build's records. */
  commit(): void {
    this.db.exec('COMMIT');
  }

  rollback(): void {
    if (this.db.inTransaction) this.db.exec('ROLLBACK');
  }

  close(): void {
    this.rollback();
    this.db.close();
  }

  private tick(): void {
    if (++this.pending >= 20000) {
      this.db.exec('COMMIT; BEGIN');
      this.pending = 0;
    }
  }
}
