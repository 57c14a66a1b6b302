import type Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { isEncoding, type Encoding } from '../paths/compression.js';
import type { ShownEntries } from '../model/views.js';
import { DOCUMENT_HASH } from '../render/document-hash.js';
import { addChangeSequence, isUnreadableState, openState, setAside } from './state-file.js';

/**
 * What earlier builds wrote: every output path with the hash and size of its bytes, the format,
 * the owner it belongs to (a user, a video, or the site) and the username it is filed under. It lets
 * a build leave byte-identical files untouched and remove exactly the files an earlier build wrote
 * that this one no longer produces, and nothing else.
 *
 * It also keeps the basis of the last complete build (vidfeeds version, hashes of configuration,
 * format table and templates, database identity, change log position): an incremental build may
 * follow only from the same basis (src/pipeline/incremental.ts).
 *
 * Each output also keeps when its bytes last changed (`changed`, Unix seconds of the build that
 * wrote different bytes): the sitemap's `<lastmod>`, which a rebuild that changes nothing leaves as
 * it was. A video's own entry in the sitemap shows what no document of the video does (its
 * description, its duration): `video_entries` keeps a hash of what each entry shows and when that
 * last changed, which dates the entry too (src/formats/sitemap-video.ts).
 *
 * It is a small SQLite file kept outside the served tree (by default `.vidfeeds/<out>.state.sqlite`
 * beside the output directory), queried per path so memory stays flat in site size.
 */
export const STATE_VERSION = 4;

/** Stale outputs are read this many at a time. */
const STALE_PAGE = 1000;

/**
 * The index that finds a user's outputs (their videos' among them) for a build of that user. Its
 * entries come in no order a build writes in, so kept entry by entry it has most of its pages
 * rewritten at every commit; a build into an empty state makes it at its commit, in one sort.
 */
const USER_INDEX = 'CREATE INDEX IF NOT EXISTS outputs_user ON outputs(user)';

export interface PreviousOutput {
  hash: Buffer;
  size: number;
  /** The row id of the user or video it was written for (null for a site file). */
  ownerId: number | null;
}

/** Who a document belongs to: its owner's documents are rendered (and pruned) together. */
export type Owner = { kind: 'user' | 'video'; id: number } | { kind: 'site' };
export type OwnerKind = Owner['kind'];

/** Which outputs a build is responsible for: outputs outside the scope are never pruned. */
export interface PruneScope {
  formats: ReadonlySet<string>;
  /** Only outputs that belong to this user (their documents and their videos'). */
  user?: string;
}

/** What a complete build was made from and how far into the change log it had applied. */
export interface BuildBasis {
  vidfeedsVersion: string;
  codeHash: string;
  configHash: string;
  formatsHash: string;
  templatesHash: string;
  databaseId: string;
  /** The change log position of the build's snapshot: changes after it are not in the tree. */
  position: number;
  /** The identity of the log entry at `position` (ChangeLogPosition.identity), when it had one. */
  positionIdentity?: string | null;
}

export function defaultStateFile(outDir: string): string {
  const out = resolve(outDir);
  return join(dirname(out), '.vidfeeds', `${basename(out)}.state.sqlite`);
}

export class BuildState {
  private readonly db: Database.Database;
  private readonly stmt;
  private pending = 0;
  /** Whether this build makes the user index at its commit (it began with no outputs). */
  private userIndexLater = false;
  buildId = 0;
  /** When this build runs (Unix seconds): the change time of every output whose bytes it changes. */
  changeTime = Math.floor(Date.now() / 1000);
  /** The version of the state file found when it was another one (its basis is dropped), else null. */
  readonly replacedVersion: number | null = null;
  /** A state file that could not be read, set aside for inspection: where it went and why; else null. */
  readonly setAside: { file: string; movedTo: string; cause: string } | null = null;

  constructor(file: string) {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    try {
      this.db = openState(file);
    } catch (error) {
      if (file === ':memory:' || !isUnreadableState(error)) throw error;
      const cause = (error as Error).message;
      this.setAside = { file, movedTo: setAside(file), cause };
      this.db = openState(file);
      // The fresh state has no basis: the next build is full, and says why.
      this.setMeta('basis_dropped', `the saved state ${file} could not be read (${cause}): it was set aside as ${this.setAside.movedTo}`);
      this.setMeta('sweep', '1');
    }
    const version = this.getMeta('state_version');
    if (version !== null && version !== String(STATE_VERSION)) {
      this.replacedVersion = Number(version);
      // States before version 3 recorded SHA-1s, with no `document_hash`.
      this.replaceLayout(this.getMeta('document_hash') === DOCUMENT_HASH);
    }
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS outputs (
        path        TEXT PRIMARY KEY,
        format      TEXT NOT NULL,
        owner_kind  TEXT,
        owner_id    INTEGER,
        user        TEXT,
        hash        BLOB NOT NULL,
        size        INTEGER NOT NULL,
        build       INTEGER NOT NULL,
        changed     INTEGER,
        seq         INTEGER,
        added       INTEGER
      );
      ${USER_INDEX};
      CREATE INDEX IF NOT EXISTS outputs_owner ON outputs(owner_kind, owner_id);
      CREATE TABLE IF NOT EXISTS video_entries (
        video_id  INTEGER PRIMARY KEY,
        shown     BLOB NOT NULL,
        changed   INTEGER
      );
    `);
    addChangeSequence(this.db);
    this.setMeta('state_version', String(STATE_VERSION));
    this.setMeta('document_hash', DOCUMENT_HASH);
    this.stmt = {
      get: this.db.prepare<[string], PreviousOutput>('SELECT hash, size, owner_id AS ownerId FROM outputs WHERE path = ?'),
      put: this.db.prepare(
        `INSERT INTO outputs (path, format, owner_kind, owner_id, user, hash, size, build, changed, seq, added) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(path) DO UPDATE SET format = excluded.format, owner_kind = excluded.owner_kind, owner_id = excluded.owner_id,
           user = excluded.user, hash = excluded.hash, size = excluded.size, build = excluded.build,
           changed = CASE WHEN outputs.hash = excluded.hash AND outputs.changed IS NOT NULL THEN outputs.changed ELSE excluded.changed END,
           seq = CASE WHEN outputs.hash = excluded.hash THEN outputs.seq ELSE excluded.seq END`,
      ),
      // Rows as arrays, all at once: a part's ~2,000 rows cost 40% less than as objects through an iterator.
      changedIn: this.db
        .prepare<[string, number, number], [string, number]>('SELECT path, changed FROM outputs WHERE owner_kind = ? AND owner_id BETWEEN ? AND ? AND changed IS NOT NULL')
        .raw(true),
      shownIn: this.db
        .prepare<[number, number], [number, Buffer, number | null]>('SELECT video_id, shown, changed FROM video_entries WHERE video_id BETWEEN ? AND ?')
        .raw(true),
      putShown: this.db.prepare(
        'INSERT INTO video_entries (video_id, shown, changed) VALUES (?, ?, ?) ON CONFLICT(video_id) DO UPDATE SET shown = excluded.shown, changed = excluded.changed',
      ),
      // The entries of videos no output belongs to any more (pruned, or never written).
      forgetShown: this.db.prepare(`DELETE FROM video_entries WHERE video_id NOT IN (SELECT owner_id FROM outputs WHERE owner_kind = 'video')`),
      forgetShownOf: this.db.prepare(`DELETE FROM video_entries WHERE video_id = ? AND NOT EXISTS (SELECT 1 FROM outputs WHERE owner_kind = 'video' AND owner_id = video_entries.video_id)`),
      revive: this.db.prepare('DELETE FROM removed WHERE path = ?'),
      tombstone: this.db.prepare('INSERT INTO removed (path, seq) VALUES (?, ?) ON CONFLICT(path) DO UPDATE SET seq = excluded.seq'),
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
      staleOwner: this.db.prepare<[string, number, number], string>(
        'SELECT path FROM outputs WHERE owner_kind = ? AND owner_id = ? AND build <> ? ORDER BY path',
      ).pluck(),
      // Few rows (the site's own files): the owner index finds them.
      staleSite: this.db.prepare<[number], { path: string; format: string }>(`SELECT path, format FROM outputs WHERE owner_kind = 'site' AND build <> ? ORDER BY path`),
      siteFiles: this.db.prepare<[], string>(`SELECT path FROM outputs WHERE owner_kind = 'site'`).pluck(),
      // Every owner of a kind: in pages by rowid, a walk along the table that a caller's `forget`
      // between pages does not disturb (the unary + keeps SQLite from sorting the owner index).
      staleKind: this.db.prepare<[string, number, number], { rowid: number; path: string }>(
        `SELECT rowid, path FROM outputs WHERE +owner_kind = ? AND build <> ? AND rowid > ? ORDER BY rowid LIMIT ${STALE_PAGE}`,
      ),
      count: this.db.prepare<[], { n: number }>('SELECT count(*) AS n FROM outputs'),
      any: this.db.prepare<[], number>('SELECT 1 FROM outputs LIMIT 1').pluck(),
    };
  }

  /**
   * A state of another layout: keep only what every layout has (the paths, and their hashes and
   * sizes where they are of this kind), so the full build that follows still removes the files
   * earlier builds wrote and it does not. A path kept without them (size -1) is compared with the
   * bytes on disk (write-documents.ts), so an unchanged file keeps its time.
   */
  private replaceLayout(sameHashes: boolean): void {
    this.db.exec('DROP TABLE IF EXISTS outputs_old');
    const hasOutputs = this.db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'outputs'`).get() !== undefined;
    this.db.transaction(() => {
      if (hasOutputs) this.db.exec('ALTER TABLE outputs RENAME TO outputs_old');
      this.db.exec(`DELETE FROM meta; DROP INDEX IF EXISTS outputs_user; DROP INDEX IF EXISTS outputs_owner; DROP TABLE IF EXISTS video_entries;`);
      this.db.exec(`CREATE TABLE outputs (
        path TEXT PRIMARY KEY, format TEXT NOT NULL, owner_kind TEXT, owner_id INTEGER, user TEXT,
        hash BLOB NOT NULL, size INTEGER NOT NULL, build INTEGER NOT NULL, changed INTEGER, seq INTEGER, added INTEGER)`);
      this.db.exec('DELETE FROM removed');
      if (hasOutputs) {
        const kept = sameHashes ? 'hash, size' : `x'', -1`;
        try {
          this.db.exec(`INSERT INTO outputs (path, format, hash, size, build) SELECT path, format, ${kept}, 0 FROM outputs_old`);
        } catch {
          this.db.exec(`INSERT INTO outputs (path, format, hash, size, build) SELECT path, '', x'', -1, 0 FROM outputs_old`);
        }
        this.db.exec('DROP TABLE outputs_old');
      }
    })();
  }

  getMeta(key: string): string | null {
    const row = this.db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?').get(key);
    return row?.value ?? null;
  }

  setMeta(key: string, value: string): void {
    this.db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  private deleteMeta(key: string): void {
    this.db.prepare('DELETE FROM meta WHERE key = ?').run(key);
  }

  /** The basis of the last complete build, or null when there is none to follow from. */
  basis(): BuildBasis | null {
    const text = this.getMeta('basis');
    return text === null ? null : (JSON.parse(text) as BuildBasis);
  }

  /** Why there is no basis, when an earlier build dropped it (failures), else null. */
  basisDropped(): string | null {
    return this.getMeta('basis_dropped');
  }

  /**
   * A partial build added or removed documents without rendering the site files, which list the
   * published names: the next build renders them.
   */
  siteFilesStale(): boolean {
    return this.getMeta('site_files_stale') !== null;
  }

  setSiteFilesStale(stale: boolean): void {
    if (stale) this.setMeta('site_files_stale', '1');
    else this.deleteMeta('site_files_stale');
  }

  /**
   * Owners whose documents changed bytes in builds that left the site files for later (watch's
   * `deferLastmods`): the sitemap parts that list them still carry their old `lastmod`, and the
   * next build that renders the site files renders those parts too. Null when none are owed.
   */
  lastmodsOwed(): { user: Set<number>; video: Set<number> } | null {
    const text = this.getMeta('lastmods_owed');
    if (text === null) return null;
    const owed = JSON.parse(text) as { user: number[]; video: number[] };
    return { user: new Set(owed.user), video: new Set(owed.video) };
  }

  /** Records the owners a build relisted without rendering the site files (see lastmodsOwed); null clears them. */
  setLastmodsOwed(owed: { user: ReadonlySet<number>; video: ReadonlySet<number> } | null): void {
    if (owed === null) this.deleteMeta('lastmods_owed');
    else this.setMeta('lastmods_owed', JSON.stringify({ user: [...owed.user], video: [...owed.video] }));
  }

  /**
   * The encodings of the compressed forms beside every document, as the last full build left them
   * (src/pipeline/compression.ts); null when no build recorded them, or a build since wrote others.
   */
  compression(): Encoding[] | null {
    return this.getMeta('compression')?.split(',').filter(isEncoding) ?? null;
  }

  setCompression(encodings: readonly Encoding[]): void {
    this.setMeta('compression', encodings.join(','));
  }

  /** A build writes other forms than recorded: which are beside a document is unknown until a full build records them. */
  unsettleCompression(): void {
    this.deleteMeta('compression');
  }

  /** A build began on this state and never finished (it was killed, or crashed). */
  interrupted(): boolean {
    return this.getMeta('in_progress') !== null;
  }

  /**
   * Whether the output directory may hold files no record names (a build was killed after placing
   * them, the state was set aside or made for another directory): the next full build compares
   * every file with the disk and sweeps the format folders (src/pipeline/prune/sweep-tree.ts).
   */
  needsSweep(): boolean {
    return this.getMeta('sweep') !== null;
  }

  /** Drops the basis for `reason` and asks for a sweeping full build (needsSweep). */
  dropBasisAndSweep(reason: string): void {
    this.deleteMeta('basis');
    this.setMeta('basis_dropped', reason);
    this.setMeta('sweep', '1');
  }

  /** The sweep is done: the tree holds only what the records name. */
  swept(): void {
    this.deleteMeta('sweep');
  }

  /** Whether `path` is recorded (after a full build's prune, every record is this build's). */
  recorded(path: string): boolean {
    return this.stmt.get.get(path) !== undefined;
  }

  /**
   * Starts a build: a new build id, a mark that a build is running (committed at once, so a killed
   * build is noticed by the next one), and one write transaction, committed in batches.
   */
  begin(): number {
    // The build before was killed: files it placed may be recorded nowhere; a full build sweeps them.
    if (this.interrupted()) this.setMeta('sweep', '1');
    this.buildId = Number(this.getMeta('last_build') ?? '0') + 1;
    this.setMeta('last_build', String(this.buildId));
    this.setMeta('in_progress', new Date().toISOString());
    this.userIndexLater = this.isEmpty();
    // Made again when the build commits or rolls back, or when a killed build's state is opened.
    if (this.userIndexLater) this.db.exec('DROP INDEX IF EXISTS outputs_user');
    this.db.exec('BEGIN');
    return this.buildId;
  }

  previous(path: string): PreviousOutput | undefined {
    return this.stmt.get.get(path);
  }

  record(path: string, format: string, owner: Owner, user: string | null, hash: Buffer, size: number): void {
    this.stmt.put.run(path, format, owner.kind, owner.kind === 'site' ? null : owner.id, user, hash, size, this.buildId, this.changeTime, this.buildId, this.buildId);
    this.stmt.revive.run(path);
    this.tick();
  }

  /** Keeps an output as it is (its render failed): it is not pruned. */
  keep(path: string): void {
    this.stmt.touch.run(this.buildId, path);
    this.tick();
  }

  /**
   * When the bytes of each recorded output of the owners of a kind with `from <= id <= to` last
   * changed, by path: one query on the owner index for a whole sitemap part, where a lookup per
   * path would cost most of the part's rendering.
   */
  changedIn(kind: 'user' | 'video', from: number, to: number): Map<string, Date> {
    const dates = new Map<string, Date>();
    for (const [path, changed] of this.stmt.changedIn.all(kind, from, to)) dates.set(path, new Date(changed * 1000));
    return dates;
  }

  /**
   * What the sitemap entries of the videos with `from <= id <= to` showed, read at once for a
   * part; `changed` records what an entry shows now when it differs, dated by this build, or by
   * nothing when it is the entry's first record (see ShownEntries).
   */
  shownEntriesIn(from: number, to: number): ShownEntries {
    const recorded = new Map<number, { shown: Buffer; changed: number | null }>();
    for (const [id, shown, changed] of this.stmt.shownIn.all(from, to)) recorded.set(id, { shown, changed });
    return {
      changed: (videoId, shown) => {
        const before = recorded.get(videoId);
        if (before !== undefined && before.shown.equals(shown)) return before.changed === null ? null : new Date(before.changed * 1000);
        const changed = before === undefined ? null : this.changeTime;
        this.stmt.putShown.run(videoId, shown, changed);
        recorded.set(videoId, { shown, changed });
        this.tick();
        return changed === null ? null : new Date(changed * 1000);
      },
    };
  }

  /**
   * Forgets the sitemap entries of videos that have no output any more, after a build's prune: of
   * every video (a full build), or of those an incremental build followed. A row that later takes
   * a gone video's id is not dated by its entry.
   */
  forgetGoneEntries(videoIds?: Iterable<number>): void {
    if (videoIds === undefined) this.stmt.forgetShown.run();
    else for (const id of videoIds) if (this.stmt.forgetShownOf.run(id).changes > 0) this.tick();
  }

  /** The site-wide files recorded (sitemap parts among them), as paths under out/. */
  siteFiles(): Set<string> {
    return new Set(this.stmt.siteFiles.all());
  }

  /** Drops a path's record, leaving its tombstone (this build's number) for a deploy to find. */
  forget(path: string): void {
    this.stmt.forget.run(path);
    this.stmt.tombstone.run(path, this.buildId);
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

  /**
   * Outputs of one owner (or of every owner of a kind) that this build did not produce; the caller
   * may `forget` each. Every owner of a kind is read a page at a time, since a build may have
   * dropped most of a large site.
   */
  *staleOwned(kind: OwnerKind, id?: number): Generator<string> {
    if (id !== undefined) return yield* this.stmt.staleOwner.all(kind, id, this.buildId);
    if (kind === 'site') return yield* this.staleSite(new Set());
    let after = 0;
    for (;;) {
      const rows = this.stmt.staleKind.all(kind, this.buildId, after);
      for (const row of rows) yield row.path;
      if (rows.length < STALE_PAGE) return;
      after = rows[rows.length - 1]!.rowid;
    }
  }

  /**
   * The site files an earlier build wrote and this one did not, but those of the formats in `kept`:
   * a site format that failed part-way did not reach its later files, which must stay.
   */
  *staleSite(kept: ReadonlySet<string>): Generator<string> {
    for (const row of this.stmt.staleSite.all(this.buildId)) if (!kept.has(row.format)) yield row.path;
  }

  /** How many outputs are recorded: a walk over the whole table, for full builds' progress only. */
  count(): number {
    return this.stmt.count.get()!.n;
  }

  /** Whether no output is recorded (one row read). */
  isEmpty(): boolean {
    return this.stmt.any.get() === undefined;
  }

  /**
   * Ends a build's records. `basis` is what the next incremental build follows from: the new
   * basis, the old one kept (a partial build, or an incremental one with failures), or a reason to
   * have none (a full build with failures: the next build is full again).
   */
  finish(basis: BuildBasis | { dropped: string } | 'keep'): void {
    if (basis !== 'keep') {
      if ('dropped' in basis) {
        this.deleteMeta('basis');
        this.setMeta('basis_dropped', basis.dropped);
      } else {
        this.setMeta('basis', JSON.stringify(basis));
        this.deleteMeta('basis_dropped');
      }
    }
    this.deleteMeta('in_progress');
  }

  /** Commits the build's records. */
  commit(): void {
    this.makeUserIndex();
    this.db.exec('COMMIT');
  }

  rollback(): void {
    if (this.db.inTransaction) this.db.exec('ROLLBACK');
    try {
      this.makeUserIndex();
    } catch {
      // A state that cannot take it now (a full disk) is given it when it is next opened.
    }
  }

  private makeUserIndex(): void {
    if (this.userIndexLater) this.db.exec(USER_INDEX);
    this.userIndexLater = false;
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
