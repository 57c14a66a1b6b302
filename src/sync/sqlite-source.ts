import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { quoteIdentifier } from '../db/quote-identifier.js';
import { MappingError, SourceUnavailableError } from './sync-errors.js';
import { keysQuery, maxQuery, orderedQuery, trimQuery, SOURCE_BATCH, type Dialect, type SyncSource } from './sync-source.js';

/**
 * Another application's SQLite file, opened read-only: its integers come as BigInt (no value is
 * rounded on the way), and every query reads one snapshot (one read transaction).
 */
export async function openSqliteSource(file: string): Promise<SyncSource> {
  if (!existsSync(file)) throw new SourceUnavailableError(`the source database ${file} does not exist`);
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    db.exec('BEGIN');
    db.prepare('SELECT count(*) FROM sqlite_master').get();
  } catch (error) {
    throw new SourceUnavailableError(`the source database ${file} cannot be read: ${(error as Error).message}`);
  }
  const prepare = (sql: string, query: string) => {
    try {
      return db.prepare(sql);
    } catch (error) {
      throw new MappingError(`${(error as Error).message}; the query: ${query.trim()}`);
    }
  };
  return {
    description: `SQLite ${file}`,
    async columnsOf(query) {
      const statement = prepare(trimQuery(query), query);
      if (!statement.reader) throw new MappingError(`it returns no rows (not a SELECT); the query: ${query.trim()}`);
      return statement.columns().map((c) => c.name);
    },
    rows(query, keys, filter) {
      const { sql, params } = orderedQuery(query, keys, DIALECT, filter);
      return iterate<Record<string, unknown>>(prepare(sql, query).safeIntegers(true), params, query);
    },
    keys(query, keys) {
      return iterate<unknown[]>(prepare(keysQuery(query, keys, DIALECT), query).safeIntegers(true).raw(true), [], query);
    },
    async max(query, column) {
      const statement = prepare(maxQuery(query, column, DIALECT), query).safeIntegers(true);
      try {
        return (statement.get() as { vidfeeds_max: unknown } | undefined)?.vidfeeds_max ?? null;
      } catch (error) {
        throw queryError(error, query);
      }
    },
    async close() {
      if (db.inTransaction) db.exec('COMMIT');
      db.close();
    },
  };
}

const DIALECT: Dialect = {
  quote: quoteIdentifier,
  param: () => '?',
};

/**
 * The rows of a statement in batches. A query SQLite accepts can still fail on a row (malformed
 * JSON for `json_extract`, a function's domain): the mapping's fault as much as a query the
 * source refuses outright, so a MappingError naming the query (exit 2), as the servers' errors are.
 */
async function* iterate<T>(statement: Database.Statement, params: unknown[], query: string): AsyncIterable<T[]> {
  let batch: T[] = [];
  try {
    for (const row of statement.iterate(...params) as Iterable<T>) {
      if (batch.push(row) < SOURCE_BATCH) continue;
      yield batch;
      batch = [];
      // The rows come without waiting on anything: let signals and timers in between batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
  } catch (error) {
    throw queryError(error, query);
  }
  if (batch.length > 0) yield batch;
}

/** An error of the query itself (SQLITE_ERROR) as a MappingError naming it; any other as it is. */
function queryError(error: unknown, query: string): unknown {
  return error instanceof Database.SqliteError && error.code === 'SQLITE_ERROR' ? new MappingError(`${error.message}; the query: ${query.trim()}`) : error;
}
