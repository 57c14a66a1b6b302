import mysql, { type Connection, type FieldPacket } from 'mysql2';
import type { Socket } from 'node:net';
import { deferRows, MYSQL_ROW_DIGEST_METHOD } from './mysql-row-digest.js';
import { CancelOnStop } from './cancel-on-stop.js';
import { ReadDeadline } from './read-deadline.js';
import type { DigestSeed } from './row-digest.js';
import { MappingError, noTls, SourceRefusedError, SourceUnavailableError } from './sync-errors.js';
import { columnsQuery, keysQuery, maxQuery, orderedQuery, type Dialect, type RowBatch, type ServerMessage, type SourceOptions, type SyncSource } from './sync-source.js';

/**
 * MySQL and MariaDB through mysql2. A BIGINT comes as a number where it fits one exactly and as
 * text where it does not, DECIMAL as text and dates as text (`supportBigNumbers`, `dateStrings`),
 * so nothing is rounded or moved to the machine's time zone on the way: src/sync/sync-values.ts
 * reads them. The session's time zone is UTC, so TIMESTAMP columns come in UTC; DATETIME columns
 * hold no zone and are read as UTC. The rows of a query arrive in batches, the connection paused
 * while the sync works through one. Rows are digested from the bytes the server sent
 * (src/sync/mysql-row-digest.ts). After each query that reads rows, the server is asked how many
 * warnings it raised (`SHOW COUNT(*) WARNINGS`, one round trip on the same connection), and, only
 * when there are some, which (`SHOW WARNINGS`): a query that reads text as a number where a
 * condition expects one gets 0 for it, and only a warning says so (docs/adopting.md).
 */

/**
 * Errors of the connection itself, or of a query the server's operator stopped, as opposed to a
 * wrong query: try again later.
 */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPIPE', 'ENOENT', 'PROTOCOL_CONNECTION_LOST',
  'ER_SERVER_SHUTDOWN', 'ER_CON_COUNT_ERROR', 'ER_LOCK_WAIT_TIMEOUT', 'ER_QUERY_INTERRUPTED', 'ER_STATEMENT_TIMEOUT',
]);
/**
 * The host has no address, the server refuses the login or knows no such database, or has no TLS
 * for a URL that asks for it (`?ssl=`): the URL or the account needs fixing, and trying again changes nothing.
 */
const REFUSED_CODES = new Set(['ENOTFOUND', 'ER_ACCESS_DENIED_ERROR', 'ER_DBACCESS_DENIED_ERROR', 'ER_BAD_DB_ERROR', 'ER_NOT_SUPPORTED_AUTH_MODE', 'HANDSHAKE_NO_SSL_SUPPORT']);

/** A MySQL or MariaDB URL as mysql2 reads it (`uri`), and the Unix socket of its `?socket=/path`. */
export interface MysqlUrl {
  /** The URL without its parameters, which mysql2 would take for options of its own. */
  uri: string;
  socketPath: string | undefined;
  /** mysql2's TLS options (`?ssl=`), undefined for none. */
  ssl?: Record<string, unknown>;
  /** The URL holds a password (which sync.passwordFile does not replace). */
  hasPassword: boolean;
}

/**
 * `stop`: aborted when the sync is asked to stop, which drops the connection at once (src/sync/read-deadline.ts).
 * `warned`: hears the warnings of each query that reads rows and had any.
 */
export async function openMysqlSource(url: MysqlUrl, passwordFromFile: string | undefined, readTimeoutSeconds: number, stop?: AbortSignal, warned?: Warned): Promise<SyncSource> {
  const options: mysql.ConnectionOptions = {
    uri: url.uri,
    socketPath: url.socketPath,
    ssl: url.ssl,
    password: url.hasPassword ? undefined : passwordFromFile,
    charset: 'utf8mb4',
    supportBigNumbers: true,
    dateStrings: true,
    connectTimeout: Math.min(10, readTimeoutSeconds) * 1000,
  };
  const connection = mysql.createConnection(options);
  const { host, port, socketPath } = connection.config;
  const where = socketPath ?? `${host}:${port}`;
  // A connection to a frozen server is dropped by destroying its socket: mysql2's `destroy` only
  // half-closes it, and waits for a server that will not answer.
  const socket = (connection as unknown as { stream: Socket }).stream;
  /**
   * The connection's own failure (lost, reset, killed). mysql2 hands it to the connection, not to
   * a streamed query, so a stream waiting for rows hears of it through `onBroken`.
   */
  let broken: Error | undefined;
  const streams = new Set<(error: Error) => void>();
  connection.on('error', (error) => {
    broken ??= error;
    for (const onBroken of streams) onBroken(error);
  });
  /** Set when the connection was dropped (a query left before its end, a deadline passed): it is not asked to finish. */
  let dropped = false;
  const deadline = new ReadDeadline(readTimeoutSeconds, where, () => {
    dropped = true;
    socket.destroy();
  }, stop);
  const run = (sql: string) =>
    deadline.within(
      new Promise<{ rows: unknown; fields: FieldPacket[] }>((resolve, reject) =>
        connection.query(sql, (error, rows, fields) => (error ? reject(broken ?? error) : resolve({ rows, fields: fields as FieldPacket[] }))),
      ),
    );
  const batches = <T>(options: QueryOptions, query: string, deferred?: DeferredRead) =>
    queryBatches<T>({ connection, streams, deadline, options, deferred, describe: (error) => describe(error, query), left: () => deadline.drop(), ended: () => askWarnings(run, query, warned) });
  let version: string;
  try {
    await deadline.within(new Promise<void>((resolve, reject) => connection.connect((error) => (error ? reject(error) : resolve()))));
    await setUpSession(run);
    await run('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
    version = String(((await run('SELECT VERSION() AS v')).rows as Array<{ v: string }>)[0]?.v ?? '');
  } catch (error) {
    socket.destroy();
    if (error instanceof SourceUnavailableError) throw error;
    const code = (error as { code?: string }).code ?? '';
    const cause = code === 'HANDSHAKE_NO_SSL_SUPPORT' ? `${noTls('?ssl=')} (${code})` : (error as Error).message;
    const message = `the source database (MySQL/MariaDB at ${where}, database ${connection.config.database}) cannot be read: ${cause}`;
    throw REFUSED_CODES.has(code) ? new SourceRefusedError(message) : new SourceUnavailableError(message);
  }
  const describe = (error: unknown, query: string) => mysqlError(broken ?? error, where, query);
  const cancel = new CancelOnStop(stop, Math.min(5, readTimeoutSeconds), (give) => killQuery(options, connection.threadId, give));
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
    digests: {
      method: MYSQL_ROW_DIGEST_METHOD,
      rows(query, keys, seed, filter) {
        const { sql, params } = orderedQuery(query, keys, DIALECT, filter);
        return batches<RowBatch[number]>({ sql, values: params }, query, { seed, keys });
      },
    },
    async max(query, column) {
      try {
        return ((await run(maxQuery(query, column, DIALECT))).rows as Array<{ vidfeeds_max: unknown }>)[0]?.vidfeeds_max ?? null;
      } catch (error) {
        throw describe(error, query);
      }
    },
    async close() {
      await cancel.settled();
      if (!dropped && broken === undefined) await deadline.within(new Promise<void>((resolve) => connection.end(() => resolve()))).catch(() => undefined);
      socket.destroy();
    },
  };
}

/**
 * The session's settings that decide how the server spells values, as src/sync/sync-values.ts
 * reads them, whatever the server sets for its clients.
 */
async function setUpSession(run: (sql: string) => Promise<unknown>): Promise<void> {
  // The character set asked for at the handshake, again: a server's init_connect runs after it,
  // and `SET NAMES utf8` there (old guides' my.cnf line) made every character past U+FFFF a `?`.
  await run('SET NAMES utf8mb4 COLLATE utf8mb4_general_ci');
  await run("SET time_zone = '+00:00'");
  // A CHAR column's value without the spaces it is stored with, as MySQL sends it by default:
  // a server whose sql_mode pads it sent `abc123      ` for a public id, and into every URL made of it.
  await run("SET SESSION sql_mode = REPLACE(@@SESSION.sql_mode, 'PAD_CHAR_TO_FULL_LENGTH', '')");
}

/** Ends the statement thread `threadId` runs, from a connection of its own (CancelOnStop). */
async function killQuery(options: mysql.ConnectionOptions, threadId: number, give: AbortSignal): Promise<void> {
  const killer = mysql.createConnection(options);
  const socket = (killer as unknown as { stream: Socket }).stream;
  give.addEventListener('abort', () => socket.destroy(), { once: true });
  killer.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => killer.query(`KILL QUERY ${Math.trunc(threadId)}`, (error) => (error ? reject(error) : resolve())));
}

/** The warnings the server lists of a statement: the first of them, of which the distinct ones are kept. */
const WARNINGS_LISTED = 64;
/** Distinct messages kept of a statement's warnings. */
const MESSAGES_KEPT = 5;

type Warned = SourceOptions['serverWarnings'];

/**
 * The warnings of the statement the connection ran last, which read `query`, handed to `warned`
 * when it had any. Both statements only read the server's diagnostics, which they leave as they are.
 */
async function askWarnings(run: (sql: string) => Promise<{ rows: unknown }>, query: string, warned: Warned): Promise<void> {
  if (warned === undefined) return;
  const counted = (await run('SHOW COUNT(*) WARNINGS')).rows as Array<Record<string, unknown>>;
  const count = Number(Object.values(counted[0] ?? {})[0] ?? 0);
  if (!(count > 0)) return;
  const listed = (await run(`SHOW WARNINGS LIMIT ${WARNINGS_LISTED}`)).rows as Array<{ Code?: unknown; Message?: unknown }>;
  const messages: ServerMessage[] = [];
  for (const { Code, Message } of listed) {
    const message = { code: Number(Code), message: String(Message) };
    if (messages.length < MESSAGES_KEPT && !messages.some((m) => m.code === message.code && m.message === message.message)) messages.push(message);
  }
  warned(query, { count, messages });
}

interface QueryOptions {
  sql: string;
  values?: unknown[];
  rowsAsArray?: boolean;
}

interface DeferredRead {
  seed: DigestSeed;
  keys: readonly string[];
}

interface BatchRead {
  connection: Connection;
  /** Where the stream registers to hear of the connection's failure. */
  streams: Set<(error: Error) => void>;
  deadline: ReadDeadline;
  options: QueryOptions;
  /** Given: the rows are deferred (DeferredRow), digested with this seed and keyed by these columns. */
  deferred: DeferredRead | undefined;
  describe(error: unknown): Error;
  /** Drops the connection: the query was left before its end, and cannot be asked to finish. */
  left(): void;
  /** Runs once the query's last row came, before its last batch is handed over (nothing else can ask the server first). */
  ended(): Promise<void>;
}

/**
 * Rows a MariaDB or MySQL query hands over at a time. Fewer than other sources' (SOURCE_BATCH): a
 * paused stream costs no round trip to resume, and a batch worked through while the next one's
 * rows are parsed dies young, which a batch of thousands may not: what it allocates then outlives
 * V8's young-generation collections, which copy and promote it (docs/performance.md).
 */
const ROWS_PER_BATCH = 256;

/**
 * A query's rows in batches of ROWS_PER_BATCH, the connection paused while the caller works through
 * one. It ends with the query's error, the connection's, or the deadline's when the server stays
 * silent. A query left before its end cannot be asked to finish: the connection is dropped.
 */
async function* queryBatches<T>({ connection, streams, deadline, options, deferred, describe, left, ended: afterEnd }: BatchRead): AsyncIterable<T[]> {
  let batch: T[] = [];
  let ended = false;
  let failure: unknown;
  let askedAfterEnd = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  const onBroken = (error: Error) => {
    failure ??= error;
    notify();
  };
  streams.add(onBroken);
  const query = connection.query(options);
  if (deferred !== undefined) deferRows(query, deferred.seed, deferred.keys);
  query
    .on('result', (row) => {
      if (batch.push(row as T) >= ROWS_PER_BATCH) {
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
      if (batch.length < ROWS_PER_BATCH && !ended && failure === undefined) {
        try {
          await deadline.within(new Promise<void>((resolve) => (wake = resolve)));
        } catch (error) {
          failure ??= error;
        }
      }
      if (ended && failure === undefined && !askedAfterEnd) {
        askedAfterEnd = true;
        await afterEnd().catch((error: unknown) => (failure ??= error));
      }
      if (failure !== undefined) throw failure instanceof SourceUnavailableError ? failure : describe(failure);
      const full = batch;
      batch = [];
      // Resuming hands over the rows that came while paused, at once: they start the next batch.
      if (!ended) connection.resume();
      if (full.length > 0) yield full;
      if (ended && batch.length === 0) return;
    }
  } finally {
    streams.delete(onBroken);
    if (!ended && failure === undefined) left();
  }
}

const DIALECT: Dialect = {
  quote: (name) => mysql.escapeId(name, true),
  param: () => '?',
};

/** SQLSTATE of a connection's failure (08) or of a query or connection killed (70100, which MariaDB's 1927 `Connection was killed` carries and mysql2 has no name for). */
const CONNECTION_STATES = /^(08|70100)/;

function mysqlError(error: unknown, where: string, query: string): Error {
  // The deadline's or a stop's: the connection is already dropped, and the query was not at fault.
  if (error instanceof SourceUnavailableError) return error;
  const e = error as { code?: string; fatal?: boolean; message?: string; sqlState?: string };
  if (e.fatal === true || (e.code !== undefined && CONNECTION_CODES.has(e.code)) || CONNECTION_STATES.test(e.sqlState ?? '')) {
    return new SourceUnavailableError(`the source database (${where}) stopped answering: ${e.message ?? String(error)}`);
  }
  return new MappingError(`${e.message ?? String(error)}${e.code === undefined ? '' : ` (${e.code})`}; the query: ${query.trim()}`);
}
