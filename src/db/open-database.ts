import Database from 'better-sqlite3';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { migrate, schemaVersion, SchemaVersionError, SCHEMA_VERSION, type MigrationResult } from './migrations.js';
import { EXIT, VidfeedsError } from '../config/vidfeeds-error.js';

/** A database problem the operator must fix (missing file, wrong version). Exit code 2. */
export class DatabaseError extends VidfeedsError {
  constructor(message: string, cause?: unknown) {
    super(EXIT.usage, { what: message, cause });
  }
}

/**
 * Pages of the site database a reading connection keeps in its own cache, in KiB (SQLite's
 * `cache_size`, negative for KiB). better-sqlite3 sets 16 MB by default. A build reads a page many
 * times (a user's rows are spread over the tables), but from the operating system's cache: a cache
 * holding the whole database reads user bundles only a little faster, and SQLite's own default of
 * 2 MB keeps each reading connection small (docs/performance.md, "Reading").
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

/**
 * Refuses, before anything is read or created, a database that is not there or is a folder (SQLite
 * would say only "disk I/O error" of one). Commands call it before they make the state's folder.
 */
export function checkDatabaseFile(file: string, { mustExist = true }: { mustExist?: boolean } = {}): void {
  const stat = statSync(file, { throwIfNoEntry: false });
  if (stat === undefined) {
    if (!mustExist) return;
    throw new DatabaseError(`database ${file} does not exist: create it with \`vidfeeds init --db ${file}\` or \`vidfeeds demo --db ${file}\``);
  }
  if (stat.isDirectory()) {
    const inside = readdirSync(file).filter((name) => /\.(sqlite3?|db)$/i.test(name)).slice(0, 3);
    const hint = inside.length > 0 ? `; it holds ${inside.map((name) => join(file, name)).join(', ')}` : '';
    throw new DatabaseError(`database ${file} is a folder, not a SQLite file: name the database file itself${hint}`);
  }
}

function openExisting(file: string, readonly: boolean): Database.Database {
  checkDatabaseFile(file);
  let db: Database.Database;
  try {
    db = new Database(file, { readonly, fileMustExist: true });
  } catch (error) {
    throw new DatabaseError(`database ${file} cannot be opened: ${(error as Error).message}`, error);
  }
  const version = readVersion(db, file);
  if (version > SCHEMA_VERSION) {
    db.close();
    throw new SchemaVersionError(file, version, SCHEMA_VERSION);
  }
  if (version === 0) {
    const foreign = foreignTables(db);
    if (foreign !== null) {
      db.close();
      throw new DatabaseError(
        `${file} is another application's database (it has ${foreign} and no vidfeeds schema): vidfeeds renders from a database of its own. ` +
          `Create one with \`vidfeeds init --db vidfeeds.sqlite\` and fill it from this one with \`vidfeeds sync --db vidfeeds.sqlite --from sqlite:${file}\` and a mapping (docs/adopting.md)`,
      );
    }
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
  checkDatabaseFile(file, { mustExist: false });
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (error) {
    throw new DatabaseError(`database ${file} cannot be opened for writing: ${(error as Error).message}`, error);
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
      throw new DatabaseError(`cannot add vidfeeds's tables to ${file} (nothing was changed): ${(error as Error).message}`, error);
    }
    // After the migration, so that a refused one leaves even the journal mode as it was.
    db.pragma('journal_mode = WAL');
    return { db, ...versions };
  } catch (error) {
    if (db.open) db.close();
    throw error;
  }
}

/** The tables of a database without vidfeeds's `users` and `videos`, listed for a message; null when it has none or has those. */
function foreignTables(db: Database.Database): string | null {
  const tables = tableNames(db);
  if (tables.length === 0 || (tables.includes('users') && tables.includes('videos'))) return null;
  return `tables ${tables.length > 5 ? `${tables.slice(0, 5).join(', ')} and ${tables.length - 5} more` : tables.join(', ')}`;
}

function tableNames(db: Database.Database): string[] {
  return (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_' ORDER BY name`).all() as Array<{ name: string }>).map((t) => t.name);
}

/** A vidfeeds database has a schema version and vidfeeds's tables; an empty file becomes one. */
function refuseForeign(db: Database.Database, file: string, version: number): void {
  const tables = tableNames(db);
  const ours = tables.includes('users') && tables.includes('videos');
  if (tables.length === 0 || (version > 0 && ours)) return;
  const listed = tables.length > 5 ? `${tables.slice(0, 5).join(', ')} and ${tables.length - 5} more` : tables.join(', ');
  const why = version === 0 ? 'no vidfeeds schema version' : `schema version ${version} but not vidfeeds's tables`;
  throw new DatabaseError(
    `${file} is not a vidfeeds database: it has other tables (${listed}) and ${why}. ` +
      'Point --db at a new file and fill it from this one with `vidfeeds sync` (docs/adopting.md), or pass --force to add vidfeeds\'s tables to this one',
  );
}

function readVersion(db: Database.Database, file: string): number {
  try {
    return schemaVersion(db);
  } catch (error) {
    db.close();
    throw new DatabaseError(`${file} is not a SQLite database: ${(error as Error).message}`, error);
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
  if (now === null) return new DatabaseError(`database ${file} was removed while it was being read (${message})`, error);
  if (now.identity !== before.identity) return new DatabaseError(`database ${file} was replaced while it was being read (${message}): build again`, error);
  if (now.size < before.size) {
    return new DatabaseError(
      `database ${file} was truncated while it was being read: ${before.size} bytes when the build began, ${now.size} now (${message}); ` +
        'restore it from a backup, then build again',
      error,
    );
  }
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^SQLITE_(CORRUPT|NOTADB)/.test(code)) return new DatabaseError(`database ${file} is damaged (${message}): restore it from a backup`, error);
  return error;
}
