import Database from 'better-sqlite3';
import { SITE_RANKS, type PlannedDocument } from './deploy-plan.js';
import type { StoredObject } from './object-store.js';
import { DOCUMENT_STEP_RANKS, SITE_STEP_RANKS, type PendingDocument, type PendingObject, type Source, type StepKind, type WritePlan } from './write-plan.js';

/**
 * A full compare's plan on disk: every planned object with its hashes and verdict, the documents
 * with their rank, the store's listing, and the keys to delete, in a temporary SQLite database
 * (SQLite removes its file itself, a killed deploy's included). The tree and the listing are added
 * as they come, side by side, and matched by key once both are in, whatever order the store lists
 * in, so a listing out of S3's order needs no second pass; the writes are then read back a page at
 * a time in the safe order. The deploy holds a page, never the plan.
 */

/** An object waiting for the store's headers (HEAD). */
export interface ObjectToCheck extends PendingObject {
  id: number;
}

export interface CheckResult {
  id: number;
  verdict: 'same' | 'write';
  /** Whether the store holds the key (its listing may have left it out). */
  stored: boolean;
  headersOnly: boolean;
}

/** Objects and documents read back at once. */
const PAGE = 512;

interface ObjectRow {
  id: number;
  key: string;
  file: string;
  size: number;
  sha256: string;
  md5: string;
  encoding: string | null;
  headers_only: number;
  content_type: string;
  cache_control: string;
  link: string | null;
  doc: number;
}

const OBJECT_COLUMNS = 'o.id, o.key, o.file, o.size, o.sha256, o.md5, o.encoding, o.headers_only, d.content_type, d.cache_control, d.link, o.doc';

export class PlanSpill {
  private readonly db: Database.Database;
  documents = 0;
  objects = 0;

  constructor() {
    // An empty name is a private temporary database: on disk once it outgrows its cache.
    this.db = new Database('');
    this.db.pragma('journal_mode = OFF');
    this.db.pragma('synchronous = OFF');
    this.db.pragma('cache_size = -8000');
    this.db.exec(`
      CREATE TABLE docs (id INTEGER PRIMARY KEY, file TEXT NOT NULL, rank INTEGER NOT NULL, content_type TEXT NOT NULL,
        cache_control TEXT NOT NULL, link TEXT, stored INTEGER NOT NULL DEFAULT 0, writes INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE objects (id INTEGER PRIMARY KEY, doc INTEGER NOT NULL, key TEXT NOT NULL, file TEXT NOT NULL, size INTEGER NOT NULL,
        sha256 TEXT NOT NULL, md5 TEXT NOT NULL, encoding TEXT, verdict TEXT, stored INTEGER NOT NULL DEFAULT 0,
        headers_only INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE listed (key TEXT PRIMARY KEY, size INTEGER NOT NULL, etag TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE deletions (key TEXT PRIMARY KEY) WITHOUT ROWID;
    `);
    this.insertDocument = this.db.prepare('INSERT INTO docs (file, rank, content_type, cache_control, link) VALUES (?, ?, ?, ?, ?)');
    this.insertObject = this.db.prepare('INSERT INTO objects (doc, key, file, size, sha256, md5, encoding) VALUES (?, ?, ?, ?, ?, ?, ?)');
    // A key listed twice (a store paging out of order can) keeps its last entry.
    this.insertListed = this.db.prepare('INSERT OR REPLACE INTO listed (key, size, etag) VALUES (?, ?, ?)');
  }

  private readonly insertDocument: Database.Statement;
  private readonly insertObject: Database.Statement;
  private readonly insertListed: Database.Statement;

  /** Adds documents of the tree, in one transaction. */
  addDocuments(documents: readonly PlannedDocument[]): void {
    this.db.transaction(() => {
      for (const document of documents) {
        const first = document.objects[0];
        const id = this.insertDocument.run(document.file, document.rank, first?.contentType ?? '', first?.cacheControl ?? '', first?.link ?? null).lastInsertRowid;
        for (const o of document.objects) this.insertObject.run(id, o.key, o.file, o.size, o.sha256, o.md5, o.contentEncoding ?? null);
        this.objects += document.objects.length;
      }
      this.documents += documents.length;
    })();
  }

  /** Adds a page of the store's listing, in one transaction. */
  addListed(listed: readonly StoredObject[]): void {
    this.db.transaction(() => {
      for (const object of listed) this.insertListed.run(object.key, object.size, object.etag);
    })();
  }

  /**
   * Once the tree and the listing are both in, the listing's verdicts: a planned object listed with
   * another size is to write; with its size, the same when the ETags can be trusted to be the
   * bytes' MD5 and equal, to write when they differ, and otherwise to ask the store about (HEAD). A
   * planned object the listing did not name is to write or, when the listing cannot be trusted to
   * be whole, to ask about. A listed key no planned object has is to delete when `owned` says it is
   * one of the tree's documents.
   */
  matchListing({ trustEtags, listingComplete, owned }: { trustEtags: boolean; listingComplete: boolean; owned: (key: string) => boolean }): void {
    this.db.function('vidfeeds_owned', { deterministic: true }, (key) => (owned(key as string) ? 1 : 0));
    this.db.transaction(() => {
      // Made once the rows are in: sorting them once costs less than keeping the indexes as they come.
      this.db.exec('CREATE INDEX objects_key ON objects (key); CREATE INDEX objects_doc ON objects (doc); CREATE INDEX docs_file ON docs (file)');
      this.db
        .prepare(
          `UPDATE objects SET stored = 1, verdict = CASE WHEN l.size <> objects.size THEN 'write'
             WHEN ? THEN CASE WHEN l.etag = objects.md5 THEN 'same' ELSE 'write' END ELSE 'check' END
           FROM listed l WHERE l.key = objects.key`,
        )
        .run(trustEtags ? 1 : 0);
      this.db.prepare('UPDATE objects SET verdict = ? WHERE stored = 0').run(listingComplete ? 'write' : 'check');
      this.db.exec('INSERT OR IGNORE INTO deletions (key) SELECT key FROM listed l WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.key = l.key) AND vidfeeds_owned(l.key)');
    })();
  }

  /** Objects to ask the store about, after `afterId`, a page at a time. */
  toCheck(afterId: number): ObjectToCheck[] {
    const rows = this.db
      .prepare<[number, number], ObjectRow>(`SELECT ${OBJECT_COLUMNS} FROM objects o JOIN docs d ON d.id = o.doc WHERE o.verdict = 'check' AND o.id > ? ORDER BY o.id LIMIT ?`)
      .all(afterId, PAGE);
    return rows.map((row) => ({ id: row.id, ...pendingOf(row) }));
  }

  applyChecks(results: readonly CheckResult[]): void {
    const update = this.db.prepare('UPDATE objects SET verdict = ?, stored = stored OR ?, headers_only = ? WHERE id = ?');
    this.db.transaction(() => {
      for (const r of results) update.run(r.verdict, r.stored ? 1 : 0, r.headersOnly ? 1 : 0, r.id);
    })();
  }

  /** Once every verdict is in: the plan to write from. */
  plan(record: Pick<WritePlan, 'known' | 'fingerprint' | 'checked'>): WritePlan {
    this.db.exec(`UPDATE docs SET (stored, writes) = (SELECT max(o.stored), max(o.verdict = 'write') FROM objects o WHERE o.doc = docs.id)`);
    this.db.exec('CREATE INDEX docs_writes ON docs (writes, rank, id)');
    const unchanged = this.db.prepare<[], { n: number }>("SELECT count(*) AS n FROM objects WHERE verdict = 'same'").get()!.n;
    const isPlanned = this.db.prepare<[string], { id: number }>('SELECT id FROM docs WHERE file = ?');
    return {
      documents: this.documents,
      objects: this.objects,
      unchanged,
      ...record,
      changedForReaders: () => this.changedForReaders(),
      steps: () => [
        ...DOCUMENT_STEP_RANKS.map((rank) => ({ kind: 'new' as StepKind, documents: this.pending(rank, 0) })),
        ...DOCUMENT_STEP_RANKS.map((rank) => ({ kind: 'changed' as StepKind, documents: this.pending(rank, 1) })),
        ...SITE_STEP_RANKS.map((rank) => ({ kind: 'site' as StepKind, documents: this.pending(rank, null) })),
      ],
      deletions: (size) => this.deletionBatches(size),
      isPlanned: (file) => isPlanned.get(file) !== undefined,
      close: () => this.close(),
    };
  }

  /** Read straight from the plan: no other statement of it runs until the iteration ends. */
  private changedForReaders(): Iterable<string> {
    return this.db
      .prepare<[], string>(
        `SELECT file FROM docs WHERE writes = 1 AND EXISTS (SELECT 1 FROM objects o WHERE o.doc = docs.id AND o.verdict = 'write' AND o.encoding IS NULL AND o.headers_only = 0)
         ORDER BY CASE WHEN rank < ${SITE_RANKS.plain} THEN stored ELSE 2 END, rank, id`,
      )
      .pluck()
      .iterate();
  }

  /** The documents of one step with something to write, a page at a time; `stored` 0 for new documents, 1 for changed ones. */
  private pending(rank: number, stored: 0 | 1 | null): Source<PendingDocument> {
    const page = this.db.prepare<[number, number, number | null, number | null, number], { id: number; file: string }>(
      'SELECT id, file FROM docs WHERE writes = 1 AND rank = ? AND id > ? AND (? IS NULL OR stored = ?) ORDER BY id LIMIT ?',
    );
    const writesOf = this.db.prepare<[string], ObjectRow>(
      `SELECT ${OBJECT_COLUMNS} FROM objects o JOIN docs d ON d.id = o.doc WHERE o.doc IN (SELECT value FROM json_each(?)) AND o.verdict = 'write' ORDER BY o.id`,
    );
    let buffer: PendingDocument[] = [];
    let last = 0;
    let done = false;
    return () => {
      if (buffer.length === 0 && !done) {
        const docs = page.all(rank, last, stored, stored, PAGE);
        done = docs.length < PAGE;
        if (docs.length > 0) {
          last = docs.at(-1)!.id;
          const byDoc = new Map(docs.map((d) => [d.id, { file: d.file, writes: [] as PendingObject[] }]));
          for (const row of writesOf.all(JSON.stringify(docs.map((d) => d.id)))) byDoc.get(row.doc)?.writes.push(pendingOf(row));
          buffer = [...byDoc.values()].reverse();
        }
      }
      return buffer.pop();
    };
  }

  private deletionBatches(size: number): Source<string[]> {
    const page = this.db.prepare<[string, number], { key: string }>('SELECT key FROM deletions WHERE key > ? ORDER BY key LIMIT ?');
    let last = '';
    let first = true;
    return () => {
      const keys = (first ? this.db.prepare<[number], { key: string }>('SELECT key FROM deletions ORDER BY key LIMIT ?').all(size) : page.all(last, size)).map((r) => r.key);
      first = false;
      if (keys.length === 0) return undefined;
      last = keys.at(-1)!;
      return keys;
    };
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

function pendingOf(row: ObjectRow): PendingObject {
  return {
    key: row.key,
    file: row.file,
    size: row.size,
    sha256: row.sha256,
    md5: row.md5,
    contentType: row.content_type,
    cacheControl: row.cache_control,
    ...(row.encoding === null ? {} : { contentEncoding: row.encoding }),
    ...(row.link === null ? {} : { link: row.link }),
    headersOnly: row.headers_only === 1,
  };
}
