import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { migrate, schemaVersion, SchemaVersionError, SCHEMA_VERSION, type MigrationResult } from './migrations.js';

/** A database problem the operator must fix (missing file, wrong version). Exit code 2. */
export class DatabaseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatabaseError';
  }
}

/** Opens an existing site database read-only, refusing any schema version but the current one. */
export function openForReading(file: string): Database.Database {
  const db = openExisting(file, true);
  db.pragma('query_only = ON');
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

/** Opens (creating if needed) a site database for writing and brings its schema up to date. */
export function openForWriting(file: string): { db: Database.Database } & MigrationResult {
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (error) {
    throw new DatabaseError(`database ${file} cannot be opened for writing: ${(error as Error).message}`);
  }
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    readVersion(db, file);
    return { db, ...migrate(db, file) };
  } catch (error) {
    db.close();
    throw error;
  }
}

function readVersion(db: Database.Database, file: string): number {
  try {
    return schemaVersion(db);
  } catch (error) {
    db.close();
    throw new DatabaseError(`${file} is not a SQLite database: ${(error as Error).message}`);
  }
}
