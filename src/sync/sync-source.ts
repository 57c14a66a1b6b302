import { readFileSync } from 'node:fs';
import { MappingError } from './sync-errors.js';

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

/** The kinds of URL `--from` and `sync.from` accept. */
export const SOURCE_SCHEMES = ['mysql:', 'mariadb:', 'postgres:', 'postgresql:', 'sqlite:'] as const;

/** Opens the source a URL names; the drivers are loaded only for the kind asked for. */
export async function openSource(url: string, options: SourceOptions = {}): Promise<SyncSource> {
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0].toLowerCase();
  switch (scheme) {
    case 'mysql:':
    case 'mariadb:':
      return (await import('./mysql-source.js')).openMysqlSource(parseServerUrl(url), passwordOf(options));
    case 'postgres:':
    case 'postgresql:':
      return (await import('./postgres-source.js')).openPostgresSource(url, passwordOf(options));
    case 'sqlite:':
      return (await import('./sqlite-source.js')).openSqliteSource(sqlitePath(url));
    default:
      throw new MappingError(`the source ${redactUrl(url)} is not a URL vidfeeds can read: it must start with ${SOURCE_SCHEMES.join(', ')}`);
  }
}

export interface ServerUrl {
  host: string;
  port: number | undefined;
  user: string;
  password: string | undefined;
  database: string;
  /** A Unix socket (`?socket=/path`). */
  socket: string | undefined;
}

function parseServerUrl(text: string): ServerUrl {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new MappingError(`the source ${redactUrl(text)} is not a valid URL`);
  }
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (database === '') throw new MappingError(`the source ${redactUrl(text)} names no database: add /DATABASE after the host`);
  return {
    host: url.hostname === '' ? 'localhost' : url.hostname,
    port: url.port === '' ? undefined : Number(url.port),
    user: decodeURIComponent(url.username),
    password: url.password === '' ? undefined : decodeURIComponent(url.password),
    database,
    socket: url.searchParams.get('socket') ?? undefined,
  };
}

function sqlitePath(url: string): string {
  const rest = url.slice('sqlite:'.length);
  // sqlite:///abs/path and sqlite:/abs/path name the same file; sqlite:relative is relative to the working directory.
  const path = rest.startsWith('//') ? decodeURIComponent(rest.replace(/^\/\/[^/]*/, '')) : decodeURIComponent(rest);
  if (path === '') throw new MappingError('the source sqlite: names no file: write sqlite:/path/to/site.db');
  return path;
}

function passwordOf(options: SourceOptions): string | undefined {
  if (options.passwordFile === undefined || options.passwordFile === null) return undefined;
  try {
    return readFileSync(options.passwordFile, 'utf8').split(/\r?\n/)[0];
  } catch (error) {
    throw new MappingError(`sync.passwordFile ${options.passwordFile} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** A URL for messages: the password, if one was written in it, replaced by `***`. */
export function redactUrl(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*:)[^/@]*@/i, '$1***@');
}

/** `SELECT * FROM (query) AS alias ORDER BY keys`: the mapping's own query, untouched, in key order. */
export function orderedQuery(query: string, keys: readonly string[], quote: (name: string) => string): string {
  return `SELECT * FROM (${trimQuery(query)}) AS vidfeeds_source ORDER BY ${keys.map(quote).join(', ')}`;
}

/** The query without a final semicolon, so that it can stand inside another. */
export function trimQuery(query: string): string {
  return query.trim().replace(/;\s*$/, '');
}
