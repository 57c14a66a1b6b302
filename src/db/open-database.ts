import Database from 'better-sqlite3';
import { existsSync, statSync } from 'node:fs';
import { migrate, schemaVersion, SchemaVersionError, SCHEMA_VERSION, type MigrationResult } from './migrations.js';
import { EXIT, VidfeedsError } from '../config/vidfeeds-error.js';

/** A database problem the operator must fix (missing file, wrong version). Exit code 2. */
export class DatabaseError extends VidfeedsError {
  constructor(message: string) {
    super(EXIT.usage, { what: message });
  }
}

/**
 * Pages of the site database a reading connection keeps in its own cache, in KiB (SQLite's
 * `cache_size`, negative for KiB). better-sqlite3 sets 16 MB by default; a build reads each page
 * a few times at most, and the operating system caches the file anyway, so SQLite's own default
 * of 2 MB reads as fast and each reading connection holds 14 MB less.
 */
export const READ_CACHE_KIB = 2000;

/** Opens an existing site database read-only, refusing any schema version but the current one. */
export function openForReading(file: string): Database.Database {
  const db = openExisting(file, true);
  db.pragma('query_only = ON');
  db.pragma(`cache_size = -${READ_CACHE_KIB}`);
  return db;
}

/**
 * Opens an existing site database to add to it (a stored recommendation), refusing any schema
 * version but the current one. Unlike `openForWriting` it creates nothing, migrates nothing and
 * leaves the journal mode as the site set it: the database is the site's, not ours.
 */
export function openForUpdate(file: string): Database.Database {
  const db = openExisting(file, false);
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  return db;
}

function openExisting(file: string, readonly: boolean): Database.Database {
  if (!existsSync(file)) {
    throw new DatabaseError(`database ${file} does not exist: create it with \`vidfeeds init --db ${file}\` or \`vidfeeds demo --db ${file}\``);
  }
  let db: Database.Database;
  try {
    db = new Database(file, { readonly, fileMustExist: true });
  } catch (error) {
    throw new DatabaseError(`database ${file} cannot be opened: ${(error as Error).message}`);
  }
  const version = readVersion(db, file);
  if (version > SCHEMA_VERSION) {
    db.close();
    throw new SchemaVersionError(file, version, SCHEMA_VERSION);
  }
  if (version < SCHEMA_VERSION) {
    db.close();
    throw new DatabaseError(
      `database ${file} has schema version ${version}, this vidfeeds needs version ${SCHEMA_VERSION}: ` +
        `upgrade it with \`vidfeeds init --db ${file}\``,
    );
  }
  return db;
}

/**
 * Opens (creating if needed) a site database for writing and brings its schema up to date. A
 * SQLite file that holds tables but no vidfeeds schema (another application's database, a wrong
 * --db) is refused untouched, unless `adopt` asks for vidfeeds's tables to be added to it.
 */
export function openForWriting(file: string, { adopt = false }: { adopt?: boolean } = {}): { db: Database.Database } & MigrationResult {
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (error) {
    throw new DatabaseError(`database ${file} cannot be opened for writing: ${(error as Error).message}`);
  }
  try {
    // Checked before anything is changed, the journal mode included.
    const version = readVersion(db, file);
    if (!adopt) refuseForeign(db, file, version);
    db.pragma('foreign_keys = ON');
    let versions: MigrationResult;
    try {
      versions = migrate(db, file);
    } catch (error) {
      if (error instanceof SchemaVersionError) throw error;
      throw new DatabaseError(`cannot add vidfeeds's tables to ${file} (nothing was changed): ${(error as Error).message}`);
    }
    // After the migration, so that a refused one leaves even the journal mode as it was.
    db.pragma('journal_mode = WAL');
    return { db, ...versions };
  } catch (error) {
    if (db.open) db.close();
    throw error;
  }
}

/** A vidfeeds database has a schema version and vidfeeds's tables; an empty file becomes one. */
function refuseForeign(db: Database.Database, file: string, version: number): void {
  const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_' ORDER BY name`).all() as Array<{ name: string }>).map((t) => t.name);
  const ours = tables.includes('users') && tables.includes('videos');
  if (tables.length === 0 || (version > 0 && ours)) return;
  const listed = tables.length > 5 ? `${tables.slice(0, 5).join(', ')} and ${tables.length - 5} more` : tables.join(', ');
  const why = version === 0 ? 'no vidfeeds schema version' : `schema version ${version} but not vidfeeds's tables`;
  throw new DatabaseError(
    `${file} is not a vidfeeds database: it has other tables (${listed}) and ${why}. ` +
      'Point --db at a new file, or pass --force to add vidfeeds\'s tables to this one',
  );
}

function readVersion(db: Database.Database, file: string): number {
  try {
    return schemaVersion(db);
  } catch (error) {
    db.close();
    throw new DatabaseError(`${file} is not a SQLite database: ${(error as Error).message}`);
  }
}

/** A database file's size and identity, to tell later whether it was truncated or replaced. */
export interface DatabaseFileState {
  size: number;
  identity: string;
}

export function databaseFileState(file: string): DatabaseFileState | null {
  const stat = statSync(file, { throwIfNoEntry: false, bigint: true });
  return stat === undefined ? null : { size: Number(stat.size), identity: `${stat.dev}:${stat.ino}` };
}

/**
 * An error met while reading the database, explained when the file changed under the reader: a
 * truncated or replaced file makes SQLite say "database disk image is malformed", or, through an
 * open cursor, "This database connection is busy executing a query", neither of which names it.
 * Errors of a file that did not change are returned as they are.
 */
export function explainReadFailure(file: string, before: DatabaseFileState | null, error: unknown): unknown {
  if (before === null) return error;
  const now = databaseFileState(file);
  const message = (error as Error).message ?? String(error);
  if (now === null) return new DatabaseError(`database ${file} was removed while it was being read (${message})`);
  if (now.identity !== before.identity) return new DatabaseError(`database ${file} was replaced while it was being read (${message}): build again`);
  if (now.size < before.size) {
    return new DatabaseError(
      `database ${file} was truncated while it was being read: ${before.size} bytes when the build began, ${now.size} now (${message}); ` +
        'restore it from a backup, then build again',
    );
  }
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^SQLITE_(CORRUPT|NOTADB)/.test(code)) return new DatabaseError(`database ${file} is damaged (${message}): restore it from a backup`);
  return error;
}
