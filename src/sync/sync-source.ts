
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
  /** The rows of a query, ordered by `keys` (columns it returns). */
  rows(query: string, keys: readonly string[]): AsyncIterable<Record<string, unknown>>;
  close(): Promise<void>;
}

export interface SourceOptions {
  /** A file whose first line is the password, used when the URL holds none. */
  passwordFile?: string | null;
}

/** Where a MySQL or MariaDB server is, from its URL. */
export interface ServerUrl {
  host: string;
  port: number | undefined;
  user: string;
  password: string | undefined;
  database: string;
  /** A Unix socket (`?socket=/path`). */
  socket: string | undefined;
}

/** A URL for messages: the password, if one was written in it, replaced by `***`. */
export function redactUrl(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*:)[^/@]*@/i, '$1***@');
}

/** `SELECT * FROM (query) AS alias ORDER BY keys`: the mapping's own query, untouched, in key order. */
export function orderedQuery(query: string, keys: readonly string[], quote: (name: string) => string): string {
  return `SELECT * FROM ${derivedTable(query)} ORDER BY ${keys.map(quote).join(', ')}`;
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
