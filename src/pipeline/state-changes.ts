import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';

/**
 * A build state read for a deploy (src/pipeline/build-state.ts keeps it): which outputs changed,
 * were added and were removed after a given build, by the change sequence every row and tombstone
 * carries. Read-only; the deploy holds the build lock, so no build writes it meanwhile.
 */
export interface StateChanges {
  /** Names this state's lineage: another id is another state. */
  stateId: string;
  /** The number of the last build begun on it. */
  lastBuild: number;
  /** A build began and never finished (killed): its files and records may disagree. */
  interrupted: boolean;
  /**
   * The encodings of the compressed forms beside documents, as the last full build left them; null
   * when none recorded them, or a build since wrote forms of others (a changed `compress`).
   */
  compression: string | null;
  /** Paths whose bytes changed after build `after`, in path order, with whether each was added after it. */
  changedAfter(after: number): Iterable<{ path: string; isNew: boolean }>;
  /** Paths removed after build `after` and not recorded again. */
  removedAfter(after: number): Iterable<string>;
  /** What the state records of a document's bytes (src/render/document-hash.ts's hash, and the size), if it records it. */
  recordOf(path: string): { hash: Buffer; size: number } | undefined;
  /** How many paths changed or were removed after build `after`, counted up to `atMost` (an index reads no more). */
  countAfter(after: number, atMost: number): number;
  close(): void;
}

/** Opens the state, or says why it cannot be used. */
export function readStateChanges(file: string): StateChanges | { problem: string } {
  if (!existsSync(file)) return { problem: `there is no build state at ${file}` };
  let db: Database.Database;
  try {
    // Opened for writing (a WAL state read-only needs its shared-memory file); the deploy writes nothing to it.
    db = new Database(file, { fileMustExist: true });
  } catch (error) {
    return { problem: `the build state ${file} cannot be read (${(error as Error).message})` };
  }
  try {
    const meta = (key: string) => db.prepare<[string], string>('SELECT value FROM meta WHERE key = ?').pluck().get(key) ?? null;
    const stateId = meta('state_id');
    const columns = new Set(db.prepare<[], { name: string }>('PRAGMA table_info(outputs)').all().map((c) => c.name));
    const hasTombstones = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'removed'`).get() !== undefined;
    if (stateId === null || !columns.has('seq') || !hasTombstones) {
      db.close();
      return { problem: `the build state ${file} keeps no change sequence (a build by this version adds it)` };
    }
    // Through the change sequence's index, then sorted: left to itself SQLite walks the whole
    // table in path order (no statistics say how few rows are past `seq`), which costs every
    // incremental deploy the site's size (a tenth of a second at 10,000 users) for a few changed rows.
    const bySeq = (table: string, index: string) =>
      db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?`).get(index) === undefined ? table : `${table} INDEXED BY ${index}`;
    const changed = db.prepare<[number, number], { path: string; isNew: number }>(
      `SELECT path, (added IS NOT NULL AND added > ?) AS isNew FROM ${bySeq('outputs', 'outputs_seq')} WHERE seq > ? ORDER BY path`,
    );
    const recorded = db.prepare<[string], { hash: Buffer; size: number }>('SELECT hash, size FROM outputs WHERE path = ?');
    const removed = db.prepare<[number], string>(`SELECT path FROM ${bySeq('removed', 'removed_seq')} WHERE seq > ? ORDER BY path`).pluck();
    const counted = db
      .prepare<[number, number, number, number], number>(
        'SELECT (SELECT count(*) FROM (SELECT 1 FROM outputs WHERE seq > ? LIMIT ?)) + (SELECT count(*) FROM (SELECT 1 FROM removed WHERE seq > ? LIMIT ?))',
      )
      .pluck();
    return {
      stateId,
      lastBuild: Number(meta('last_build') ?? '0'),
      interrupted: meta('in_progress') !== null,
      compression: meta('compression'),
      *changedAfter(after) {
        for (const row of changed.iterate(after, after)) yield { path: row.path, isNew: row.isNew === 1 };
      },
      removedAfter: (after) => removed.iterate(after),
      recordOf: (path) => recorded.get(path),
      countAfter: (after, atMost) => Math.min(counted.get(after, atMost, after, atMost)!, atMost),
      close: () => db.close(),
    };
  } catch (error) {
    db.close();
    return { problem: `the build state ${file} cannot be read (${(error as Error).message})` };
  }
}
