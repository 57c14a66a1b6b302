import pg from 'pg';
import Cursor from 'pg-cursor';
import { MappingError, SourceUnavailableError } from './sync-errors.js';
import { columnsQuery, keysQuery, maxQuery, orderedQuery, redactUrl, SOURCE_BATCH, type Dialect, type SyncSource } from './sync-source.js';

/**
 * PostgreSQL through pg. int8 comes as a number where it fits one exactly and as text where it
 * does not, numeric as text (pg's default), and dates as their text (`timestamp`, `timestamptz`,
 * `date`): pg would otherwise read a `timestamp` without zone in this machine's zone. src/sync/sync-values.ts reads `timestamp` text as UTC. All queries run
 * in one REPEATABLE READ, READ ONLY transaction; rows are read through a cursor, 2,000 at a time.
 * Without a password in the URL or the configuration, pg reads PGPASSWORD and ~/.pgpass (or
 * PGPASSFILE) as libpq does.
 */

const DATE_TYPES = new Set([1082, 1114, 1184]);
const INT8 = 20;
const TYPES = {
  getTypeParser: ((oid: number, format?: string) =>
    DATE_TYPES.has(oid) ? (text: string) => text : oid === INT8 ? int8 : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** An int8 as a number where it is one exactly, else its text (which the sync then names as too large). */
function int8(text: string): number | string {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : text;
}

/** SQLSTATE classes of the connection, not the query: 08 connection, 28 authorisation, 53 resources, 57 operator intervention, 3D no such database. */
const CONNECTION_STATES = /^(08|28|53|57|3D)/;

export async function openPostgresSource(url: string, passwordFromFile: string | undefined): Promise<SyncSource> {
  const client = new pg.Client({
    connectionString: url,
    ...(passwordFromFile === undefined ? {} : { password: passwordFromFile }),
    types: TYPES,
    connectionTimeoutMillis: 10_000,
    application_name: 'vidfeeds sync',
  });
  let broken: Error | undefined;
  // A connection that breaks while idle must not end the process: the next query reports it.
  client.on('error', (error) => (broken = error));
  try {
    await client.connect();
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  } catch (error) {
    await client.end().catch(() => undefined);
    throw new SourceUnavailableError(`the source database (PostgreSQL at ${redactUrl(url)}) cannot be read: ${(error as Error).message}`);
  }
  const version = String((await client.query('SHOW server_version')).rows[0]?.server_version ?? '');
  const describe = (error: unknown, query: string) => postgresError(broken ?? error, url, query);
  // Rows through a cursor, a batch at a time.
  async function* read<T>(cursor: Cursor, query: string): AsyncIterable<T[]> {
    client.query(cursor);
    try {
      for (;;) {
        const batch = (await cursor.read(SOURCE_BATCH)) as T[];
        if (batch.length === 0) break;
        yield batch;
      }
    } catch (error) {
      throw describe(error, query);
    } finally {
      await cursor.close().catch(() => undefined);
    }
  }
  return {
    description: `PostgreSQL ${version} at ${redactUrl(url)}`,
    async columnsOf(query) {
      try {
        const result = await client.query(columnsQuery(query));
        return result.fields.map((f) => f.name);
      } catch (error) {
        throw describe(error, query);
      }
    },
    rows(query, keys, filter) {
      const { sql, params } = orderedQuery(query, keys, DIALECT, filter);
      return read<Record<string, unknown>>(new Cursor(sql, params), query);
    },
    keys(query, keys) {
      return read<unknown[]>(new Cursor(keysQuery(query, keys, DIALECT), [], { rowMode: 'array' }), query);
    },
    async max(query, column) {
      try {
        return (await client.query(maxQuery(query, column, DIALECT))).rows[0]?.vidfeeds_max ?? null;
      } catch (error) {
        throw describe(error, query);
      }
    },
    async close() {
      await client.end().catch(() => undefined);
    },
  };
}

const DIALECT: Dialect = {
  quote: (name) => `"${name.replaceAll('"', '""')}"`,
  param: (index) => `$${index}`,
};

function postgresError(error: unknown, url: string, query: string): Error {
  const e = error as { code?: string; message?: string };
  if (e.code === undefined || !/^[0-9A-Z]{5}$/.test(e.code) || CONNECTION_STATES.test(e.code)) {
    return new SourceUnavailableError(`the source database (${redactUrl(url)}) stopped answering: ${e.message ?? String(error)}`);
  }
  return new MappingError(`${e.message ?? String(error)} (SQLSTATE ${e.code}); the query: ${query.trim()}`);
}
