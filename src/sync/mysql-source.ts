import mysql, { type Connection, type FieldPacket } from 'mysql2';
import { MappingError, SourceRefusedError, SourceUnavailableError } from './sync-errors.js';
import { columnsQuery, keysQuery, maxQuery, orderedQuery, SOURCE_BATCH, type Dialect, type ServerUrl, type SyncSource } from './sync-source.js';

/**
 * MySQL and MariaDB through mysql2. A BIGINT comes as a number where it fits one exactly and as
 * text where it does not, DECIMAL as text and dates as text (`supportBigNumbers`, `dateStrings`),
 * so nothing is rounded or moved to the machine's time zone on the way: src/sync/sync-values.ts
 * reads them. The session's time zone is UTC, so TIMESTAMP columns come in UTC; DATETIME columns
 * hold no zone and are read as UTC. The rows of a query arrive in batches, the connection paused
 * while the sync works through one.
 */

/** Errors of the connection itself, as opposed to the query: try again later. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ENOENT', 'PROTOCOL_CONNECTION_LOST', 'ER_SERVER_SHUTDOWN', 'ER_CON_COUNT_ERROR', 'ER_LOCK_WAIT_TIMEOUT']);
/** The server refuses the login or knows no such database: the URL or the account needs fixing. */
const REFUSED_CODES = new Set(['ER_ACCESS_DENIED_ERROR', 'ER_DBACCESS_DENIED_ERROR', 'ER_BAD_DB_ERROR', 'ER_NOT_SUPPORTED_AUTH_MODE']);

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
    dateStrings: true,
    connectTimeout: 10_000,
  });
  // A connection that breaks while idle must not end the process: the next query reports it.
  connection.on('error', () => undefined);
  const run = (sql: string) =>
    new Promise<{ rows: unknown; fields: FieldPacket[] }>((resolve, reject) =>
      connection.query(sql, (error, rows, fields) => (error ? reject(error) : resolve({ rows, fields: fields as FieldPacket[] }))),
    );
  /** Set when a query was left before its end: the connection is dropped, not asked to finish it. */
  let abandoned = false;
  const batches = <T>(options: QueryOptions, query: string) =>
    queryBatches<T>(connection, options, (error) => describe(error, query), () => (abandoned = true));
  try {
    await new Promise<void>((resolve, reject) => connection.connect((error) => (error ? reject(error) : resolve())));
    await run("SET time_zone = '+00:00'");
    await run('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
  } catch (error) {
    connection.destroy();
    const message = `the source database (MySQL/MariaDB at ${where}, database ${url.database}) cannot be read: ${(error as Error).message}`;
    throw REFUSED_CODES.has((error as { code?: string }).code ?? '') ? new SourceRefusedError(message) : new SourceUnavailableError(message);
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
      return batches<Record<string, unknown>>({ sql, values: params }, query);
    },
    keys(query, keys) {
      return batches<unknown[]>({ sql: keysQuery(query, keys, DIALECT), rowsAsArray: true }, query);
    },
    async max(query, column) {
      try {
        return ((await run(maxQuery(query, column, DIALECT))).rows as Array<{ vidfeeds_max: unknown }>)[0]?.vidfeeds_max ?? null;
      } catch (error) {
        throw describe(error, query);
      }
    },
    async close() {
      if (!abandoned) await new Promise<void>((resolve) => connection.end(() => resolve()));
      connection.destroy();
    },
  };
}

interface QueryOptions {
  sql: string;
  values?: unknown[];
  rowsAsArray?: boolean;
}

/**
 * A query's rows in batches of SOURCE_BATCH, the connection paused while the caller works through
 * one. A query left before its end cannot be asked to finish: the connection is dropped (`left`).
 */
async function* queryBatches<T>(connection: Connection, options: QueryOptions, describe: (error: unknown) => Error, left: () => void): AsyncIterable<T[]> {
  let batch: T[] = [];
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = () => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  connection
    .query(options)
    .on('result', (row) => {
      if (batch.push(row as T) >= SOURCE_BATCH) {
        connection.pause();
        notify();
      }
    })
    .on('error', (error) => {
      failure ??= error;
      notify();
    })
    .on('end', () => {
      ended = true;
      notify();
    });
  try {
    for (;;) {
      if (batch.length < SOURCE_BATCH && !ended && failure === undefined) await new Promise<void>((resolve) => (wake = resolve));
      if (failure !== undefined) throw describe(failure);
      const full = batch;
      batch = [];
      // Resuming hands over the rows that came while paused, at once: they start the next batch.
      if (!ended) connection.resume();
      if (full.length > 0) yield full;
      if (ended && batch.length === 0) return;
    }
  } finally {
    if (!ended && failure === undefined) {
      left();
      connection.destroy();
    }
  }
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
