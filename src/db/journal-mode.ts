import type Database from 'better-sqlite3';
import { closeSync, openSync, readSync, statSync } from 'node:fs';

/**
 * A live site's database must run in WAL mode (docs/database.md, "A live site's database"): a
 * build reads one snapshot in one read transaction, and in a rollback-journal mode that
 * transaction keeps every writer of the site from committing until the build ends (their busy
 * timeout runs out: "database is locked"). In WAL mode readers and writers never wait for each
 * other.
 */

/** The first bytes of a rollback journal that a writer is using (SQLite's file format, "The Rollback Journal"). */
const JOURNAL_MAGIC = Buffer.from([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]);

/**
 * A warning when the database is not in WAL mode while a writer of the site has a transaction
 * open on it (its rollback journal is there): the writer waits for the build. Null otherwise.
 */
export function rollbackJournalWarning(db: Database.Database, file: string): string | null {
  const mode = String(db.pragma('journal_mode', { simple: true })).toLowerCase();
  if (mode === 'wal' || !writerActive(`${file}-journal`, mode)) return null;
  return (
    `database ${file} is in ${mode} journal mode, not WAL, and the site is writing to it: every build holds its writers ` +
    `back for as long as it reads (they fail with "database is locked" when their busy timeout runs out). ` +
    `Switch it to WAL once, while the site is quiet: sqlite3 ${file} 'PRAGMA journal_mode=WAL' (docs/database.md)`
  );
}

/** Whether a rollback journal holds a transaction in progress: in `persist` mode an idle one stays, with its header zeroed. */
function writerActive(journal: string, mode: string): boolean {
  const size = statSync(journal, { throwIfNoEntry: false })?.size;
  if (size === undefined || size === 0) return false;
  if (mode !== 'persist') return true;
  const head = Buffer.alloc(JOURNAL_MAGIC.length);
  let fd: number | undefined;
  try {
    fd = openSync(journal, 'r');
    readSync(fd, head, 0, head.length, 0);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  return head.equals(JOURNAL_MAGIC);
}
