import Database from 'better-sqlite3';
import { isEncoding, type Encoding } from '../paths/compression.js';
import { STATE_VERSION } from './build-state.js';

/** An output as the state recorded it. `size` is -1 for records carried over from another layout without their bytes. */
export interface RecordedOutput {
  path: string;
  format: string;
  hash: Buffer;
  size: number;
}

/**
 * A build state opened only to read it (`vidfeeds check`): never created, migrated or written, so
 * a check changes nothing, even beside a tree that a build is about to write.
 */
export class SavedState {
  private readonly db: Database.Database;
  private readonly lookupStmt;

  constructor(readonly file: string) {
    this.db = new Database(file, { readonly: true, fileMustExist: true });
    const version = this.db.prepare<[], { value: string }>(`SELECT value FROM meta WHERE key = 'state_version'`).get()?.value;
    if (version !== String(STATE_VERSION)) {
      this.db.close();
      throw new Error(`${file} is a build state of version ${version ?? '(none)'}, this vidfeeds reads version ${STATE_VERSION}: build once with this vidfeeds`);
    }
    this.lookupStmt = this.db.prepare<[string], { format: string }>('SELECT format FROM outputs WHERE path = ?');
  }

  /** Every recorded output, by path, read as it goes. */
  outputs(): IterableIterator<RecordedOutput> {
    return this.db.prepare<[], RecordedOutput>('SELECT path, format, hash, size FROM outputs ORDER BY path').iterate();
  }

  /** The format of the recorded output at `path`, or undefined when no build recorded it. */
  formatOf(path: string): string | undefined {
    return this.lookupStmt.get(path)?.format;
  }

  /** A build began on this state and never finished. */
  interrupted(): boolean {
    return this.db.prepare(`SELECT 1 FROM meta WHERE key = 'in_progress'`).get() !== undefined;
  }

  /** The compressed forms the last build left beside every text document (none when it recorded none). */
  compression(): readonly Encoding[] {
    if (this.encodings === undefined) {
      const text = this.db.prepare<[], { value: string }>(`SELECT value FROM meta WHERE key = 'compression'`).get()?.value;
      this.encodings = text === undefined ? [] : text.split(',').filter(isEncoding);
    }
    return this.encodings;
  }
  private encodings: readonly Encoding[] | undefined;

  close(): void {
    this.db.close();
  }
}
