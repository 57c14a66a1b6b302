import mysql, { type Connection, type FieldPacket } from 'mysql2';
import { MappingError, SourceUnavailableError } from './sync-errors.js';
import { columnsQuery, keysQuery, maxQuery, orderedQuery, type Dialect, type ServerUrl, type SyncSource } from './sync-source.js';

/**
 * MySQL and MariaDB through mysql2. BIGINT and DECIMAL come as strings and dates as text
 * (`supportBigNumbers`, `bigNumberStrings`, `dateStrings`), so nothing is rounded or moved to the
 * machine's time zone on the way: src/sync/sync-values.ts reads them. The session's time zone is
 * UTC, so TIMESTAMP columns come in UTC; DATETIME columns hold no zone and are read as UTC.
 * The rows of a query arrive as a stream that pauses the connection while the sync catches up.
 */

/** Errors of the connection itself, as opposed to the query: try again later. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ENOENT', 'PROTOCOL_CONNECTION_LOST', 'ER_ACCESS_DENIED_ERROR', 'ER_DBACCESS_DENIED_ERROR', 'ER_BAD_DB_ERROR', 'ER_SERVER_SHUTDOWN', 'ER_CON_COUNT_ERROR', 'ER_LOCK_WAIT_TIMEOUT']);

export async function openMysqlSource(url: ServerUrl, passwordFromFile: string | undefined): Promise<SyncSource> {
  const where = url.socket ?? `${url.host}:${url.port ?? 3306}`;
  const connection = mysql.createConnection({
    host: url.host,
    port: url.port,
    socketPath: url.socket,
    user: url.user,
    password: url.password ?? passwordFromFile,
    database: url.database,
    charset: 'utf8mb4',
    supportBigNumbers: true,
    bigNumberStrings: true,
    dateStrings: true,
    connectTimeout: 10_000,
  });
  // A connection that breaks while idle must not end the process: the next query reports it.
  connection.on('error', () => undefined);
  const run = (sql: string) =>
    new Promise<{ rows: unknown; fields: FieldPacket[] }>((resolve, reject) =>
      connection.query(sql, (error, rows, fields) => (error ? reject(error) : resolve({ rows, fields: fields as FieldPacket[] }))),
    );
  // Rows as a stream that pauses the connection while the sync catches up.
  async function* stream<T>(options: { sql: string; values?: unknown[]; rowsAsArray?: boolean }, query: string): AsyncIterable<T> {
    try {
      for await (const row of connection.query(options).stream({ highWaterMark: 2000 })) yield row as T;
    } catch (error) {
      throw describe(error, query);
    }
  }
  try {
    await new Promise<void>((resolve, reject) => connection.connect((error) => (error ? reject(error) : resolve())));
    await run("SET time_zone = '+00:00'");
    await run('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
  } catch (error) {
    connection.destroy();
    throw new SourceUnavailableError(`the source database (MySQL/MariaDB at ${where}, database ${url.database}) cannot be read: ${(error as Error).message}`);
  }
  const version = String(((await run('SELECT VERSION() AS v')).rows as Array<{ v: string }>)[0]?.v ?? '');
  const describe = (error: unknown, query: string) => mysqlError(error, where, query);
  return {
    description: `${version.includes('MariaDB') ? 'MariaDB' : 'MySQL'} ${version} at ${where}`,
    async columnsOf(query) {
      try {
        const { fields } = await run(columnsQuery(query));
        return fields.map((f) => f.name);
      } catch (error) {
        throw describe(error, query);
      }
    },
    rows(query, keys, filter) {
      const { sql, params } = orderedQuery(query, keys, DIALECT, filter);
      return stream<Record<string, unknown>>({ sql, values: params }, query);
    },
    keys(query, keys) {
      return stream<unknown[]>({ sql: keysQuery(query, keys, DIALECT), rowsAsArray: true }, query);
    },
    async max(query, column) {
      try {
        return ((await run(maxQuery(query, column, DIALECT))).rows as Array<{ vidfeeds_max: unknown }>)[0]?.vidfeeds_max ?? null;
      } catch (error) {
        throw describe(error, query);
      }
    },
    async close() {
      await new Promise<void>((resolve) => connection.end(() => resolve()));
      connection.destroy();
    },
  };
}

const DIALECT: Dialect = {
  quote: (name) => `\`${name.replaceAll('`', '``')}\``,
  param: () => '?',
};

function mysqlError(error: unknown, where: string, query: string): Error {
  const e = error as { code?: string; fatal?: boolean; message?: string };
  if (e.fatal === true || (e.code !== undefined && CONNECTION_CODES.has(e.code))) {
    return new SourceUnavailableError(`the source database (${where}) stopped answering: ${e.message ?? String(error)}`);
  }
  return new MappingError(`${e.message ?? String(error)}${e.code === undefined ? '' : ` (${e.code})`}; the query: ${query.trim()}`);
}
