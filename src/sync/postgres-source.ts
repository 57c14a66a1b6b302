import { Socket } from 'node:net';
import pg from 'pg';
import { parseIntoClientConfig } from 'pg-connection-string';
import Cursor from 'pg-cursor';
import pgpass from 'pgpass';
import { CancelOnStop } from './cancel-on-stop.js';
import { ReadDeadline } from './read-deadline.js';
import { MappingError, noTls, SourceRefusedError, SourceUnavailableError } from './sync-errors.js';
import { seedBits, type DigestSeed } from './row-digest.js';
import { columnsQuery, DIGEST_COLUMN, keysQuery, maxQuery, orderedQuery, passwordHint, redactUrl, SOURCE_BATCH, type Dialect, type SourceDigests, type SyncSource } from './sync-source.js';

/**
 * PostgreSQL through pg. int8 comes as a number where it fits one exactly and as text where it
 * does not, numeric as text (pg's default), and dates as their text (`timestamp`, `timestamptz`,
 * `date`, in ISO style whatever DateStyle the site set; floats with every digit): pg would otherwise read a `timestamp` without zone in this machine's zone. src/sync/sync-values.ts reads `timestamp` text as UTC. All queries run
 * in one REPEATABLE READ, READ ONLY transaction; rows are read through a cursor, 2,000 at a time.
 * Without a password in the URL, sync.passwordFile or PGPASSWORD (which src/cli reads), the
 * password file (~/.pgpass or PGPASSFILE) is read as libpq does.
 *
 * The server digests rows itself (src/sync/sync-source.ts, SourceDigests), with the sync's secret
 * seed, cut to 53 bits. From PostgreSQL 14, `hash_record_extended` over the row's columns, each
 * hashed by a rule that sees every change of its text: integers, booleans, dates, times and bytes
 * by their own hash; text as bytes (`COLLATE "C"`, not a case-blind collation's); every other
 * type (numeric, floats, citext, enums, json...) by its text, since its own hash follows its
 * equality, which may ignore what its text shows (1.0 and 1.00, -0 and 0, a letter's case, an
 * enum label renamed). PostgreSQL 11 to 13: `hashtextextended` of the whole row's text, exact too but
 * about three times the server's work.
 */

const DATE_TYPES = new Set([1082, 1114, 1184]);
const INT8 = 20;
const BPCHAR = 1042;
const TYPES = {
  getTypeParser: ((oid: number, format?: string) =>
    DATE_TYPES.has(oid) ? (text: string) => text
    : oid === INT8 ? int8
    : oid === BPCHAR ? unpadded
    : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/**
 * A `character(n)` value without the spaces that pad it to n: PostgreSQL disregards them (in
 * comparisons, and in a cast to text, which the server's digests read), and so does MySQL.
 * Padded, `active  ` was no user state and `ana         ` no username.
 */
function unpadded(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0x20) end--;
  return text.slice(0, end);
}

/** An int8 as a number where it is one exactly, else its text (which the sync then names as too large). */
function int8(text: string): number | string {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : text;
}

/**
 * A client of the source, not yet connected, and its socket: vidfeeds makes the socket (pg's
 * `stream`) so that it can drop a connection to a frozen server, which pg's own `end` waits on.
 */
function newClient(url: string, password: string | undefined, connectSeconds: number): { client: pg.Client; socket: Socket } {
  let config: pg.ClientConfig;
  try {
    config = parseIntoClientConfig(url);
  } catch (error) {
    throw new MappingError(`the source URL ${redactUrl(url)} cannot be read: ${(error as Error).message}${passwordHint(url)}`);
  }
  // Parsed here, not given to pg as a connectionString: pg lays that over the options beside it,
  // and the URL's missing password (parsed as '') would hide the file's.
  const { password: inUrl, ...where } = config;
  const socket = new Socket();
  const client: pg.Client = new pg.Client({
    ...where,
    stream: () => socket,
    // None found: pg fails the login, and openPostgresSource says where one goes.
    password: typeof inUrl === 'string' && inUrl !== '' ? inUrl : (password ?? ((): Promise<string> => passwordFileEntry(client) as Promise<string>)),
    types: TYPES,
    connectionTimeoutMillis: connectSeconds * 1000,
    application_name: 'vidfeeds sync',
  });
  return { client, socket };
}

/**
 * Where libpq finds a password the URL, sync.passwordFile and PGPASSWORD lack: the password file
 * (PGPASSFILE, else ~/.pgpass), read here with pg's own reader: pg's reading of it warns on every
 * connection that it goes in pg 9.
 */
async function passwordFileEntry(client: pg.Client): Promise<string | undefined> {
  const { host, port, database, user } = client;
  return new Promise<string | undefined>((found) => pgpass({ host, port, database, user }, found));
}

/** SQLSTATE classes of the connection, not the query: 08 connection, 53 resources, 57 operator intervention. */
const CONNECTION_STATES = /^(08|53|57)/;
/** SQLSTATE classes of a login the server refuses: 28 authorisation, 3D no such database; and a host without an address. */
const REFUSED_STATES = /^(28|3D|ENOTFOUND$)/;

/**
 * Each query's digest column, made from the types of the columns it returns (`describeColumns`,
 * asked once per query; before PostgreSQL 14 no types are needed).
 */
function digestColumns(versionNumber: number, describeColumns: (query: string) => Promise<pg.FieldDef[]>): (query: string) => Promise<string> {
  const columns = new Map<string, string>();
  return async (query) => {
    let column = columns.get(query);
    if (column === undefined) {
      const fields = versionNumber >= 140000 ? await describeColumns(query) : [];
      column = digestColumn(fields, '$1');
      columns.set(query, column);
    }
    return column;
  };
}

/**
 * `password`: from sync.passwordFile, else PGPASSWORD (src/cli passes it in); the URL's wins over
 * it. `stop`: aborted when the sync is asked to stop, which drops the connection at once.
 */
export async function openPostgresSource(url: string, password: string | undefined, readTimeoutSeconds: number, stop?: AbortSignal): Promise<SyncSource> {
  const { client, socket } = newClient(url, password, Math.min(10, readTimeoutSeconds));
  let broken: Error | undefined;
  // A connection that breaks while idle must not end the process: the next query reports it, at
  // once. Submitted on the broken client, it would wait for an answer until the read deadline.
  client.on('error', (error) => {
    broken ??= error;
    socket.destroy();
  });
  const deadline = new ReadDeadline(readTimeoutSeconds, redactUrl(url), () => socket.destroy(), stop);
  // Closed under pg by the server or the network (not by vidfeeds: `close` ends the client only
  // after its last wait), the connection ends every wait at once.
  // Told as the connection lost whatever pg's last error was: a plain Error is never a query's.
  socket.once('close', () => deadline.lose(postgresError(new Error(broken?.message ?? 'the server closed the connection'), url, '')));
  const query = <R extends pg.QueryResultRow = Record<string, unknown>>(sql: string) =>
    broken === undefined ? deadline.within(client.query<R>(sql)) : Promise.reject(broken);
  const { version, versionNumber } = await begin(client, deadline, query, url);
  const describe = (error: unknown, query: string) => postgresError(broken ?? error, url, query);
  const backend = (client as unknown as { processID: number | null }).processID;
  const cancel = new CancelOnStop(stop, Math.min(5, readTimeoutSeconds), (give) => cancelBackend(url, password, backend, give));
  const digestOf = digestColumns(versionNumber, async (text) => {
    try {
      return (await query(columnsQuery(text))).fields;
    } catch (error) {
      throw error instanceof SourceUnavailableError ? error : describe(error, text);
    }
  });
  // Rows through a cursor, a batch at a time.
  async function* read<T>(cursor: Cursor, text: string): AsyncIterable<T[]> {
    if (broken !== undefined) throw describe(broken, text);
    client.query(cursor);
    let failure: Error | undefined;
    try {
      for (;;) {
        const batch = (await deadline.within(cursor.read(SOURCE_BATCH))) as T[];
        if (batch.length === 0) break;
        yield batch;
      }
    } catch (error) {
      failure = error instanceof SourceUnavailableError ? error : describe(error, text);
      throw failure;
    } finally {
      // A connection that broke (terminated, reset, the server shut down) is dropped, not asked to
      // close the cursor: pg-cursor's close waits for an answer it never sends, and the socket is
      // not destroyed by the server's FIN alone, so the sync would wait out the read deadline.
      if (broken !== undefined || failure instanceof SourceUnavailableError) socket.destroy();
      else if (!socket.destroyed) await deadline.within(cursor.close()).catch(() => undefined);
    }
  }
  const digests: SourceDigests = {
    method: versionNumber >= 140000 ? 'postgresql hash_record_extended' : 'postgresql hashtextextended(row text)',
    async *keys(query, keys, seed) {
      const sql = keysQuery(query, keys, DIALECT, await digestOf(query));
      yield* read<Record<string, unknown>>(new Cursor(sql, [seedParameter(seed)]), query);
    },
    async *rows(query, keys, seed, filter) {
      const select = { list: `vidfeeds_source.*, ${await digestOf(query)}`, params: [seedParameter(seed)] };
      const { sql, params } = orderedQuery(query, keys, DIALECT, filter, select);
      yield* read<Record<string, unknown>>(new Cursor(sql, params), query);
    },
  };
  return {
    description: `PostgreSQL ${version} at ${redactUrl(url)}`,
    ...(versionNumber >= 110000 ? { digests } : {}),
    async columnsOf(text) {
      // In a savepoint: a query that fails would otherwise abort the transaction, and the
      // mapping's other queries could not be checked in the same run.
      try {
        await query('SAVEPOINT vidfeeds_check');
        const result = await query(columnsQuery(text));
        await query('RELEASE SAVEPOINT vidfeeds_check');
        return result.fields.map((f) => f.name);
      } catch (error) {
        if (error instanceof SourceUnavailableError) throw error;
        const failure = describe(error, text);
        if (failure instanceof MappingError) await query('ROLLBACK TO SAVEPOINT vidfeeds_check').catch(() => undefined);
        throw failure;
      }
    },
    rows(query, keys, filter) {
      const { sql, params } = orderedQuery(query, keys, DIALECT, filter);
      return read<Record<string, unknown>>(new Cursor(sql, params), query);
    },
    keys(query, keys) {
      return read<unknown[]>(new Cursor(keysQuery(query, keys, DIALECT), [], { rowMode: 'array' }), query);
    },
    async max(text, column) {
      try {
        return (await query(maxQuery(text, column, DIALECT))).rows[0]?.vidfeeds_max ?? null;
      } catch (error) {
        throw error instanceof SourceUnavailableError ? error : describe(error, text);
      }
    },
    async close() {
      await cancel.settled();
      if (!socket.destroyed && broken === undefined) await deadline.within(client.end()).catch(() => undefined);
      socket.destroy();
    },
  };
}

/** Cancels the statement the backend `pid` runs, from a connection of its own (CancelOnStop). */
async function cancelBackend(url: string, password: string | undefined, pid: number | null, give: AbortSignal): Promise<void> {
  if (pid === null) return;
  const { client, socket } = newClient(url, password, 5);
  give.addEventListener('abort', () => socket.destroy(), { once: true });
  client.on('error', () => undefined);
  await client.connect();
  await client.query('SELECT pg_cancel_backend($1)', [pid]);
}

/**
 * Connects and opens the sync's read-only snapshot: the server's version, or the error that says
 * why not (refused: exit 2; unreachable or silent: 75).
 */
async function begin(
  client: pg.Client,
  deadline: ReadDeadline,
  query: (sql: string) => Promise<pg.QueryResult<Record<string, unknown>>>,
  url: string,
): Promise<{ version: string; versionNumber: number }> {
  try {
    await deadline.within(client.connect());
    await query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    // Values as src/sync/sync-values.ts reads them, whatever the site set for its own code (ALTER
    // DATABASE or ROLE ... SET): DateStyle = 'SQL, DMY' spells times 01/03/2015 08:00:00 UTC, and
    // extra_float_digits below 0 rounds floats (1425196800 as 1e+09); 3 is every digit on every
    // version. For this transaction alone: a pooler's connection is left as it was.
    await query("SET LOCAL DateStyle = 'ISO'");
    await query('SET LOCAL extra_float_digits = 3');
    const version = String((await query('SHOW server_version')).rows[0]?.server_version ?? '');
    const versionNumber = Number((await query('SHOW server_version_num')).rows[0]?.server_version_num ?? 0);
    return { version, versionNumber };
  } catch (error) {
    deadline.drop();
    if (error instanceof SourceUnavailableError) throw error;
    const { cause, refused } = loginFailure(error as Error);
    const message = `the source database (PostgreSQL at ${redactUrl(url)}) cannot be read: ${cause}`;
    throw refused || REFUSED_STATES.test((error as { code?: string }).code ?? '') ? new SourceRefusedError(message) : new SourceUnavailableError(message);
  }
}

/**
 * What pg's failure to connect means, in words an operator acts on, and whether trying again
 * would change nothing: pg says so only in its messages, without a code.
 */
function loginFailure(error: Error): { cause: string; refused: boolean } {
  // When the server asks for a password and none was found.
  if (/client password must be a string/.test(error.message)) {
    return {
      cause: 'the server asks for a password and none was given (in the URL, sync.passwordFile, PGPASSWORD, or a line of ~/.pgpass or PGPASSFILE for this host, port, database and user)',
      refused: true,
    };
  }
  // When the URL's sslmode asks for TLS (pg does for every sslmode but disable) and the server has none.
  if (/does not support SSL connections/.test(error.message)) return { cause: noTls('sslmode'), refused: true };
  return { cause: error.message, refused: false };
}

/** Types whose own hash tells apart every two values of different text: bool, bytea, int8, int2, int4, oid, date, timestamp, timestamptz, uuid. */
const HASHED_AS_IS = new Set([16, 17, 20, 21, 23, 26, 1082, 1114, 1184, 2950]);
/** text and varchar: hashed as bytes. */
const TEXT_TYPES = new Set([25, 1043]);

/**
 * The digest of a row of the derived table, with the seed parameter `seed`, 53 bits (a safe
 * integer): over its columns (`fields`, from PostgreSQL 14), or its whole text (none given, or
 * two columns of one name).
 */
function digestColumn(fields: ReadonlyArray<{ name: string; dataTypeID: number }>, seed: string): string {
  const names = fields.map((field) => field.name);
  if (names.length === 0 || new Set(names).size < names.length) return `hashtextextended(vidfeeds_source::text, ${seed}) & 9007199254740991 AS ${DIGEST_COLUMN}`;
  const columns = fields.map(({ name, dataTypeID }) => {
    const column = `vidfeeds_source.${DIALECT.quote(name)}`;
    return HASHED_AS_IS.has(dataTypeID) ? column : TEXT_TYPES.has(dataTypeID) ? `${column} COLLATE "C"` : `${column}::text COLLATE "C"`;
  });
  return `hash_record_extended(ROW(${columns.join(', ')}), ${seed}) & 9007199254740991 AS ${DIGEST_COLUMN}`;
}

/** The seed's two 32-bit halves as one int8, in text (pg sends it as is). */
function seedParameter(seed: DigestSeed): string {
  return BigInt.asIntN(64, seedBits(seed)).toString();
}

const DIALECT: Dialect = {
  quote: pg.escapeIdentifier,
  param: (index) => `$${index}`,
};

function postgresError(error: unknown, url: string, query: string): Error {
  const e = error as { code?: string; message?: string };
  // Only the server's own errors carry a SQLSTATE: a socket's (EPIPE, ECONNRESET) also has five
  // capitals in `code`, and is the connection breaking.
  if (!(error instanceof pg.DatabaseError) || e.code === undefined || CONNECTION_STATES.test(e.code)) {
    return new SourceUnavailableError(`the source database (${redactUrl(url)}) stopped answering: ${e.message ?? String(error)}`);
  }
  return new MappingError(`${e.message ?? String(error)} (SQLSTATE ${e.code}); the query: ${query.trim()}`);
}
