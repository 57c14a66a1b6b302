import Database from 'better-sqlite3';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { EXIT, VidfeedsError } from '../config/vidfeeds-error.js';

/**
 * What a deploy owes its listeners (each WebSub hub, IndexNow, the `--on-change` command), in a
 * SQLite database beside the deploy record: one row per listener of a target and document, with
 * whether the document changed or was removed. A first deploy of a large site owes millions of
 * rows; they are written as they stream from the plan and read back a page at a time, so nothing
 * here is held whole. The file is made by the first deploy that owes something.
 *
 * Each commit is on the disk before it returns (a rollback journal, `synchronous = EXTRA`: the
 * journal's folder is flushed too), so what a deploy records before its first write outlives a
 * `kill -9` and a power cut. WAL with `synchronous = NORMAL` could lose the last commits to a
 * power cut, and the listeners would never hear of what was then published.
 */

/** A document owed, as a deploy records it: which of the run's listeners hear of it. */
export interface OwedEntry {
  file: string;
  removed: boolean;
  heardBy: readonly string[];
}

export interface OwedFile {
  file: string;
  removed: boolean;
}

/** The version of the tables below, in `user_version`. */
const SCHEMA = 1;

export function owedStoreFileOf(recordFile: string): string {
  return `${recordFile.replace(/\.json$/, '')}.owed.sqlite`;
}

export class OwedStore {
  private db: Database.Database | null = null;

  constructor(readonly file: string) {}

  /**
   * Adds documents to what the listeners of a target are owed, in one transaction that is on the
   * disk before this returns. A removed document is first taken from every one of `listeners`
   * (then owed to those that hear of it): a document changed after it was removed, or removed
   * after it changed, is owed once, as it is now.
   */
  owe(target: string, listeners: readonly string[], entries: Iterable<OwedEntry>): void {
    const db = this.open(true)!;
    const ids = new Map<string, number>();
    const addListener = db.prepare<[string, string], { id: number }>('INSERT INTO listeners (target, name) VALUES (?, ?) ON CONFLICT DO UPDATE SET name = name RETURNING id');
    const upsert = db.prepare('INSERT INTO owed (listener, file, removed) VALUES (?, ?, ?) ON CONFLICT (listener, file) DO UPDATE SET removed = excluded.removed');
    const drop = db.prepare('DELETE FROM owed WHERE listener = ? AND file = ?');
    const idOf = (name: string) => ids.get(name) ?? ids.set(name, addListener.get(target, name)!.id).get(name)!;
    db.transaction(() => {
      for (const name of listeners) idOf(name);
      for (const entry of entries) {
        if (entry.removed) for (const name of listeners) drop.run(idOf(name), entry.file);
        for (const name of entry.heardBy) upsert.run(idOf(name), entry.file, entry.removed ? 1 : 0);
      }
    })();
  }

  /** The listeners of a target that are owed something. */
  listeners(target: string): string[] {
    const db = this.open(false);
    if (db === null) return [];
    return db.prepare<[string], string>('SELECT name FROM listeners l WHERE target = ? AND EXISTS (SELECT 1 FROM owed WHERE listener = l.id) ORDER BY name').pluck().all(target);
  }

  /** Documents left out of the pages until the next call: those not in the store as the tree has them yet. */
  setPending(files: Iterable<string>): void {
    const db = this.open(false);
    if (db === null) return;
    const insert = db.prepare('INSERT OR IGNORE INTO temp.pending (file) VALUES (?)');
    db.transaction(() => {
      db.exec('DELETE FROM temp.pending');
      for (const file of files) insert.run(file);
    })();
  }

  /** Up to `size` documents owed to a listener, after `after` in file order, none of them pending. */
  page(target: string, listener: string, after: string, size: number): OwedFile[] {
    const db = this.open(false);
    if (db === null) return [];
    return db
      .prepare<[string, string, string, number], { file: string; removed: number }>(
        `SELECT o.file, o.removed FROM owed o JOIN listeners l ON l.id = o.listener
         WHERE l.target = ? AND l.name = ? AND o.file > ? AND o.file NOT IN (SELECT file FROM temp.pending) ORDER BY o.file LIMIT ?`,
      )
      .all(target, listener, after, size)
      .map((row) => ({ file: row.file, removed: row.removed === 1 }));
  }

  /** Clears documents a listener heard of. */
  settle(target: string, listener: string, files: readonly string[]): void {
    const db = this.open(false);
    if (db === null) return;
    const drop = db.prepare('DELETE FROM owed WHERE listener = (SELECT id FROM listeners WHERE target = ? AND name = ?) AND file = ?');
    db.transaction(() => {
      for (const file of files) drop.run(target, listener, file);
    })();
  }

  /** Clears all a listener is owed (one no longer configured). */
  forget(target: string, listener: string): void {
    this.open(false)?.prepare('DELETE FROM listeners WHERE target = ? AND name = ?').run(target, listener);
  }

  /** How many documents are owed to any listener of the target. */
  count(target: string): number {
    const db = this.open(false);
    if (db === null) return 0;
    return db.prepare<[string], number>('SELECT count(DISTINCT o.file) FROM owed o JOIN listeners l ON l.id = o.listener WHERE l.target = ?').pluck().get(target)!;
  }

  /**
   * Gives the disk back once nothing is owed: a first deploy's rows leave their pages free when
   * they are delivered, as large as the site. While anything is owed the free pages are kept for
   * the next deploy's rows (copying what is left would cost as much as it saves).
   */
  compact(): void {
    const db = this.open(false);
    if (db === null || db.prepare('SELECT EXISTS (SELECT 1 FROM owed)').pluck().get() === 1) return;
    try {
      if ((db.pragma('freelist_count', { simple: true }) as number) > 0) db.exec('VACUUM');
    } catch {
      // Another deploy sharing the record reads or writes it: the next one that finds nothing owed compacts.
    }
  }

  close(): void {
    this.db?.close();
    this.db = null;
  }

  /** The database, made when `create` asks for it; null when there is none (nothing is owed). */
  private open(create: boolean): Database.Database | null {
    if (this.db !== null || (!create && !existsSync(this.file))) return this.db;
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      const db = new Database(this.file);
      try {
        prepare(db);
      } catch (error) {
        db.close();
        throw error;
      }
      this.db = db;
      return db;
    } catch (error) {
      if (error instanceof VidfeedsError) throw error;
      throw new VidfeedsError(EXIT.usage, { what: `cannot open what the deploy owes its listeners: ${(error as Error).message}`, where: this.file, hint: 'move the file aside to forget what is owed', cause: error });
    }
  }
}

function prepare(db: Database.Database): void {
  // Deploys of other trees or targets may share a record: one waits while another's first deploy owes its whole site.
  db.pragma('busy_timeout = 120000');
  db.pragma('journal_mode = DELETE');
  db.pragma('synchronous = EXTRA');
  db.pragma('foreign_keys = ON');
  // Checked and made under the write lock: two deploys sharing a record make the tables once.
  db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > SCHEMA) throw new VidfeedsError(EXIT.usage, { what: `what the deploy owes its listeners was written by a later vidfeeds (schema ${version})`, where: db.name, hint: 'deploy with that vidfeeds' });
    if (version === 0) {
      db.exec(`
        CREATE TABLE listeners (id INTEGER PRIMARY KEY, target TEXT NOT NULL, name TEXT NOT NULL, UNIQUE (target, name));
        CREATE TABLE owed (listener INTEGER NOT NULL REFERENCES listeners (id) ON DELETE CASCADE, file TEXT NOT NULL, removed INTEGER NOT NULL,
          PRIMARY KEY (listener, file)) WITHOUT ROWID;
        PRAGMA user_version = ${SCHEMA};
      `);
    }
  }).immediate();
  db.exec('CREATE TEMP TABLE pending (file TEXT PRIMARY KEY) WITHOUT ROWID');
}
