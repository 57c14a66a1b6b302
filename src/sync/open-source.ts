import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DEFAULT_READ_TIMEOUT_SECONDS } from './read-deadline.js';
import { MappingError } from './sync-errors.js';
import type { MysqlUrl } from './mysql-source.js';
import { passwordHint, redactUrl, type SourceOptions, type SyncSource } from './sync-source.js';

/** Which driver reads a source URL, and what the URL says: host, user, database, socket, file. */

/** The kinds of URL `--from` and `sync.from` accept. */
export const SOURCE_SCHEMES = ['mysql:', 'mariadb:', 'postgres:', 'postgresql:', 'sqlite:'] as const;

/** Opens the source a URL names; the drivers are loaded only for the kind asked for. */
export async function openSource(url: string, options: SourceOptions = {}): Promise<SyncSource> {
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0].toLowerCase();
  const timeout = options.readTimeoutSeconds ?? DEFAULT_READ_TIMEOUT_SECONDS;
  switch (scheme) {
    case 'mysql:':
    case 'mariadb:':
      return (await import('./mysql-source.js')).openMysqlSource(mysqlUrl(url), passwordOf(url, options), timeout, options.stop, options.serverWarnings);
    case 'postgres:':
    case 'postgresql:':
      return (await import('./postgres-source.js')).openPostgresSource(url, passwordOf(url, options) ?? options.environmentPassword, timeout, options.stop);
    case 'sqlite:':
      return (await import('./sqlite-source.js')).openSqliteSource(sqlitePath(url));
    default:
      throw new MappingError(`the source ${redactUrl(url)} is not a URL vidfeeds can read: it must start with ${SOURCE_SCHEMES.join(', ')}`);
  }
}

/**
 * A MySQL URL checked for what mysql2 would take silently (not a URL, no database), for mysql2 to
 * read; its `?socket=` goes to mysql2 as `socketPath` and its `?ssl=` as `ssl`. Any other
 * parameter stops the sync: dropped silently, a TLS setting such as `sslmode=REQUIRED` would let
 * the sync run in clear text; given to mysql2 as is, a misspelt one would only be warned about.
 */
function mysqlUrl(text: string): MysqlUrl {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new MappingError(`the source ${redactUrl(text)} is not a valid URL: write mysql://USER@HOST:PORT/DATABASE${passwordHint(text)}`);
  }
  if (url.pathname.replace(/^\//, '') === '') throw new MappingError(`the source ${redactUrl(text)} names no database: add /DATABASE after the host`);
  const unknown = [...url.searchParams.keys()].filter((name) => name !== 'socket' && name !== 'ssl');
  if (unknown.length > 0) {
    throw new MappingError(
      `the source ${redactUrl(text)} has the parameter ${unknown.join(', ')}, which vidfeeds does not read: a MySQL URL takes ?socket=PATH and ?ssl=true ` +
        '(TLS, checking the server\'s certificate against the system\'s authorities) or ?ssl={...} (mysql2\'s TLS options as JSON, such as {"ca":"..."}) (docs/adopting.md)',
    );
  }
  const socketPath = url.searchParams.get('socket') ?? undefined;
  const ssl = url.searchParams.has('ssl') ? sslOption(url.searchParams.get('ssl')!, redactUrl(text)) : undefined;
  url.search = '';
  return { uri: url.href, socketPath, ssl, hasPassword: url.password !== '' };
}

/** `?ssl=` as mysql2's `ssl` option: true (TLS, certificates checked), false (none), or its options as a JSON object. */
function sslOption(value: string, where: string): Record<string, unknown> | undefined {
  if (value === 'true') return {};
  if (value === 'false') return undefined;
  let options: unknown;
  try {
    options = JSON.parse(value);
  } catch {
    options = undefined;
  }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new MappingError(`the source ${where} has ?ssl=${value}, which is not true, false or a JSON object of mysql2's TLS options (docs/adopting.md)`);
  }
  return options as Record<string, unknown>;
}

function sqlitePath(url: string): string {
  const rest = url.slice('sqlite:'.length);
  // sqlite:///abs/path and sqlite:/abs/path name the same file; sqlite:relative is relative to the working directory.
  const path = rest.startsWith('//') ? decodeURIComponent(rest.replace(/^\/\/[^/]*/, '')) : decodeURIComponent(rest);
  if (path === '') throw new MappingError('the source sqlite: names no file: write sqlite:/path/to/site.db');
  return path;
}

/**
 * The first line of sync.passwordFile. A file that cannot be read stops the sync when the URL
 * holds no password; when it holds one, which wins over the file's anyway, the sync goes on with
 * it and the file is warned about: an operator who moved the password into the URL, or whose
 * file went missing, is told, and a working source is not stopped for a file it does not need.
 */
function passwordOf(url: string, options: SourceOptions): string | undefined {
  if (options.passwordFile === undefined || options.passwordFile === null) return undefined;
  try {
    return readFileSync(options.passwordFile, 'utf8').split(/\r?\n/)[0];
  } catch (error) {
    const path = resolve(options.passwordFile);
    const named = path === options.passwordFile ? path : `${options.passwordFile} (${path})`;
    const message = `sync.passwordFile ${named} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
    if (!holdsPassword(url)) throw new MappingError(message);
    options.warn?.(`${message}; the URL's password is used`);
    return undefined;
  }
}

/** Whether a URL holds a password (one that does not parse is left to its driver to name). */
function holdsPassword(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return false;
  }
}

