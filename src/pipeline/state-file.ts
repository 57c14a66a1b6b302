import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';

/**
 * The build state's file (build-state.ts): opening it so that a damaged file is found at once,
 * setting an unreadable one aside, and the columns a deploy follows changes by.
 */

/**
 * The state's page cache, in KiB (SQLite's `cache_size`, negative for KiB). A build looks up and
 * records each path once, in the order it writes them, so a page is seldom wanted twice: a larger
 * cache (better-sqlite3's default is 16 MB) fills with pages read once and adds to the build's
 * peak memory, and the sort that makes the user index at a commit is no slower with a small one.
 */
const STATE_CACHE_KIB = 2000;

/**
 * What lets a deploy publish only what changed since the build it last published
 * (src/pipeline/state-changes.ts): each output's `seq`, the number of the build that last changed
 * its bytes, and `added`, of the build that first recorded it (both null on rows older than the
 * columns: changed before any deploy could have recorded this state); the tombstones of removed
 * paths (`removed`, with the number of the build that removed them); and `state_id`, which names
 * this state's lineage: a state set aside, replaced or made anew gets another, so a deploy record
 * of the old one is not trusted.
 */
export function addChangeSequence(db: Database.Database): void {
  const columns = new Set(db.prepare<[], { name: string }>('PRAGMA table_info(outputs)').all().map((c) => c.name));
  if (!columns.has('seq')) db.exec('ALTER TABLE outputs ADD COLUMN seq INTEGER');
  if (!columns.has('added')) db.exec('ALTER TABLE outputs ADD COLUMN added INTEGER');
  db.exec('CREATE INDEX IF NOT EXISTS outputs_seq ON outputs(seq)');
  db.exec('CREATE INDEX IF NOT EXISTS removed_seq ON removed(seq)');
  db.prepare(`INSERT INTO meta (key, value) VALUES ('state_id', ?) ON CONFLICT(key) DO NOTHING`).run(randomUUID());
}

/**
 * Opens a state file so that a truncated or overwritten file is found here, named, rather than
 * halfway through a build. A file that is not a database at all fails to open. A state left as
 * its last build closed it (no write-ahead log beside it) is as long as its header says, to the
 * byte; only when it is not, or a log is there (a killed build), is it read through (SQLite's
 * quick_check): that reads every page, which every watch rebuild and one-video edit would otherwise
 * pay (docs/performance.md, "Figures behind the code").
 */
export function openState(file: string): Database.Database {
  const unlogged = file === ':memory:' || !((statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0) > 0);
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma(`cache_size = -${STATE_CACHE_KIB}`);
    const pages = (db.pragma('page_count', { simple: true }) as number) * (db.pragma('page_size', { simple: true }) as number);
    const whole = unlogged && (file === ':memory:' || statSync(file).size === pages);
    const verdict = whole ? 'ok' : db.pragma('quick_check', { simple: true });
    if (verdict !== 'ok') throw new UnreadableState(String(verdict));
    db.exec('CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
    db.exec('CREATE TABLE IF NOT EXISTS removed (path TEXT PRIMARY KEY, seq INTEGER NOT NULL)');
    // Earlier layouts of `outputs` are taken over by replaceLayout: only `meta` must read as ours.
    db.prepare('SELECT key, value FROM meta LIMIT 1').get();
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

class UnreadableState extends Error {}

/**
 * Whether an error opening the state says the file is not a state we can read (corrupt, not a
 * database, another layout), rather than that it cannot be reached now (busy, read-only, full, I/O).
 */
export function isUnreadableState(error: unknown): boolean {
  if (error instanceof UnreadableState) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return false;
  return !/^SQLITE_(BUSY|LOCKED|READONLY|CANTOPEN|FULL|IOERR|NOMEM|PERM|AUTH|INTERRUPT)/.test(code);
}

/** Moves an unreadable state file (and its WAL) aside, kept for inspection; returns where. */
export function setAside(file: string): string {
  const movedTo = `${file}.unreadable-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  renameSync(file, movedTo);
  if (existsSync(`${file}-wal`)) renameSync(`${file}-wal`, `${movedTo}-wal`);
  rmSync(`${file}-shm`, { force: true });
  return movedTo;
}
