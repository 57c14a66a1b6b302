import type { DigestSeed } from './row-digest.js';

/**
 * The site's own database, read through its own driver. Every source reads all of a sync's
 * queries in one read-only snapshot, so the rows of one table agree with those of another, and
 * streams each query's rows in key order without holding a table in memory.
 */
export interface SyncSource {
  /** What it is, for messages: `MariaDB 10.11.19 at db:3306`. */
  readonly description: string;
  /** The names of the columns a query returns, without reading its rows. */
  columnsOf(query: string): Promise<string[]>;
  /**
   * The rows of a query (those `filter` picks, if given), ordered by `keys` (columns it returns),
   * in batches of about SOURCE_BATCH: one await per batch, not per row, which is most of what
   * iterating costs beside the driver's own parsing.
   */
  rows(query: string, keys: readonly string[], filter?: RowFilter): AsyncIterable<Array<Record<string, unknown>>>;
  /**
   * Only the key columns of a query's rows, in key order, in batches: each row an array of its key's
   * values in the order of `keys` (arrays cost the drivers less to make than named rows, and a
   * key pass reads every row of the table).
   */
  keys(query: string, keys: readonly string[]): AsyncIterable<unknown[][]>;
  /** The greatest value of a column the query returns, as the driver gives it; null when there is none. */
  max(query: string, column: string): Promise<unknown>;
  /**
   * Present where the source digests rows itself: the server (a full sync then reads only each
   * row's key and digest, and reads in full only the rows whose digest moved:
   * src/sync/table-strategies.ts), or the driver from the bytes the server sent.
   */
  readonly digests?: SourceDigests;
  close(): Promise<void>;
}

/** A digest of each row the source makes, under DIGEST_COLUMN, 53 bits (a safe integer), with a secret seed. */
export interface SourceDigests {
  /** How the source digests a row: digests made another way are never compared with these. */
  readonly method: string;
  /** As `SyncSource.rows`, each row with its digest: in the row (DIGEST_COLUMN, null where the server has none), or deferred. */
  rows(query: string, keys: readonly string[], seed: DigestSeed, filter?: RowFilter): AsyncIterable<RowBatch>;
  /** The key columns of a query's rows and each row's digest, in key order, in batches: present where the server makes the digests. */
  keys?(query: string, keys: readonly string[], seed: DigestSeed): AsyncIterable<Array<Record<string, unknown>>>;
}

/** The column a source's row digest comes in; no vidfeeds table has a column of this name, so no mapping returns one. */
export const DIGEST_COLUMN = 'vidfeeds_row_digest';

/**
 * A row a driver hands over before making its values, where it digests each row as it reads it
 * (MySQL, from the row's bytes: src/sync/mysql-row-digest.ts): its key, in the order of the keys
 * the rows were asked by, and its digest come with it; its values are made when asked, which a
 * full sync does only for the rows whose digest moved.
 */
export interface DeferredRow {
  readonly [DEFERRED_ROW]: true;
  readonly key: readonly unknown[];
  /** The key's values are safe integers (read from the row's bytes), as vidfeeds stores them. */
  readonly integers: boolean;
  readonly digest: number;
  values(): Record<string, unknown>;
}

export const DEFERRED_ROW: unique symbol = Symbol('vidfeeds deferred row');

/** A batch of a query's rows: as the driver made them, or deferred (DeferredRow). */
export type RowBatch = Array<Record<string, unknown> | DeferredRow>;

export function isDeferred(row: Record<string, unknown> | DeferredRow): row is DeferredRow {
  return DEFERRED_ROW in row;
}

/** Rows a source hands over at a time. */
export const SOURCE_BATCH = 2000;

export interface SourceOptions {
  /**
   * A file whose first line is the password, used when the URL holds none. When the URL holds
   * one, it wins, and a file that cannot be read is only warned about.
   */
  passwordFile?: string | null;
  /**
   * PGPASSWORD of the environment vidfeeds runs in, which a PostgreSQL source uses as libpq does:
   * after the URL's password and sync.passwordFile, before ~/.pgpass.
   */
  environmentPassword?: string;
  /** How long the source may stay silent while vidfeeds waits for it (src/sync/read-deadline.ts). */
  readTimeoutSeconds?: number;
  /**
   * Aborted when the sync is asked to stop: a wait for the source ends at once, its connection
   * dropped, rather than when the query returns (src/sync/read-deadline.ts).
   */
  stop?: AbortSignal;
  /** Hears what the operator should fix though the sync goes on (a passwordFile the URL's password makes needless, missing). */
  warn?(message: string): void;
  /**
   * Hears the warnings the server raised while it read a mapping's query (MySQL, MariaDB), once
   * per statement that had any: a value the query converted (`Truncated incorrect DOUBLE value`),
   * which the rows it sent do not show.
   */
  serverWarnings?(query: string, warnings: QueryWarnings): void;
}

/** The warnings of one statement: how many the server counted, and the first of them, each once. */
export interface QueryWarnings {
  count: number;
  messages: ServerMessage[];
}

/** One of the server's warnings: its code (1292) and its text. */
export interface ServerMessage {
  code: number;
  message: string;
}

/**
 * A URL for messages: the password, if one was written in it, replaced by `***`. A password that
 * is not percent-encoded may hold `/`, `@`, `#` or `?`, so it runs from the user's `:` to the last
 * `@` of the text, not to the first `/` or `@`: masking part of a host or path is harmless,
 * showing part of a password is not. The URL need not parse: the message that says it does not
 * shows it too.
 */
export function redactUrl(text: string): string {
  const password = passwordSpan(text);
  return password === undefined ? text : `${text.slice(0, password.start)}***${text.slice(password.end)}`;
}

/** Where the password of a URL is: from the user's `:` to the last `@`. */
function passwordSpan(text: string): { start: number; end: number } | undefined {
  const user = /^[a-z][a-z0-9+.-]*:\/\/[^/@:]*:/i.exec(text);
  const end = text.lastIndexOf('@');
  return user === null || end < user[0].length ? undefined : { start: user[0].length, end };
}

/**
 * What a message about a URL that cannot be read adds when its password holds a character a URL
 * reads as its own (which is then why it cannot be read).
 */
export function passwordHint(text: string): string {
  const span = passwordSpan(text);
  if (span === undefined || !/[/@:#?]|%(?![0-9a-f]{2})/i.test(text.slice(span.start, span.end))) return '';
  return ' (a password with /, @, :, #, ? or % in it must be percent-encoded in the URL: %2F, %40, %3A, %23, %3F, %25; or leave it out of the URL and give it in sync.passwordFile)';
}

/**
 * Which rows of a query to read: those whose watermark column is past a value (`after`), and those
 * whose key is one of `keys` (each an array in key order).
 */
export interface RowFilter {
  after?: { column: string; value: unknown };
  keys: ReadonlyArray<readonly unknown[]>;
}

/** How a source's SQL names a column and a parameter (`?` or `$1`). */
export interface Dialect {
  quote(name: string): string;
  param(index: number): string;
}

/** What a query built around the mapping's selects: `*` unless told, with the parameters of the list (numbered first). */
export interface Selection {
  list: string;
  params: unknown[];
}

/**
 * `SELECT * FROM (query) AS vidfeeds_source [WHERE filter] ORDER BY keys`: the mapping's own
 * query, untouched, in key order.
 */
export function orderedQuery(
  query: string,
  keys: readonly string[],
  dialect: Dialect,
  filter?: RowFilter,
  select: Selection = { list: '*', params: [] },
): { sql: string; params: unknown[] } {
  const order = ` ORDER BY ${keys.map(dialect.quote).join(', ')}`;
  const params: unknown[] = [...select.params];
  if (filter === undefined) return { sql: `SELECT ${select.list} FROM ${derivedTable(query)}${order}`, params };
  const param = (value: unknown) => dialect.param(params.push(value));
  const picks = filter.after === undefined ? [] : [`${dialect.quote(filter.after.column)} >= ${param(filter.after.value)}`];
  // A key of several columns as (a = ? AND b = ?) OR ...: row values in IN lists are not read alike by every database.
  for (const key of filter.keys) picks.push(`(${keys.map((k, i) => `${dialect.quote(k)} = ${param(key[i])}`).join(' AND ')})`);
  return { sql: `SELECT ${select.list} FROM ${derivedTable(query)} WHERE ${picks.length === 0 ? 'FALSE' : picks.join(' OR ')}${order}`, params };
}

/** `SELECT keys[, more] FROM (query) AS vidfeeds_source ORDER BY keys`. */
export function keysQuery(query: string, keys: readonly string[], dialect: Dialect, more = ''): string {
  const columns = keys.map(dialect.quote).join(', ');
  return `SELECT ${columns}${more === '' ? '' : `, ${more}`} FROM ${derivedTable(query)} ORDER BY ${columns}`;
}

/** `SELECT max(column) FROM (query) AS alias`. */
export function maxQuery(query: string, column: string, dialect: Dialect): string {
  return `SELECT max(${dialect.quote(column)}) AS vidfeeds_max FROM ${derivedTable(query)}`;
}

/** `SELECT * FROM (query) AS alias LIMIT 0`: the columns a query returns, without its rows. */
export function columnsQuery(query: string): string {
  return `SELECT * FROM ${derivedTable(query)} LIMIT 0`;
}

/** The query as a derived table, on lines of its own so that a `-- comment` on its last line ends there. */
function derivedTable(query: string): string {
  return `(\n${trimQuery(query)}\n) AS vidfeeds_source`;
}

/** The query without a final semicolon, so that it can stand inside another. */
export function trimQuery(query: string): string {
  return query.trim().replace(/;\s*$/, '');
}
