import { posix } from 'node:path';
import { compressedFormOf } from './compression.js';
import { segmentProblem } from './names.js';

/**
 * The URL scheme, in one place: where a document lives under out/, the URL it is served at, and
 * back from a URL to the document (route matching). Site paths, the build, the host
 * configurations, the preview server, `vidfeeds formats`, the manifest and the sitemap all derive
 * from these functions; none writes `<key>/<dir>/<file>` itself.
 *
 * - A user's or video's document lives at `<key>/<dir>/<file>` and is addressed as
 *   `<base>/<key>/<dir>/<urlName>` (urlName '' for the directory index, `/<key>/<dir>/`).
 * - A site-wide document lives at `<file>` and is addressed as `<base>/<file>`.
 * - A key (username or video id) is one path segment; `keyProblem` is the one rule for which keys
 *   can be published, and everything that writes, serves or links a key applies it.
 *
 * The scheme needs only where each document goes, not how it is rendered: every format descriptor
 * (src/formats/format.ts) is a `Place`, and this module does not import the formats.
 */

/** Where a user's or video's document lives. */
export interface KeyedPlace {
  readonly name: string;
  readonly scope: 'user' | 'video';
  readonly dir: string;
  readonly file: string;
  readonly urlName: string;
  /**
   * A numbered series of documents (RFC 5005 archive pages) rather than one: page N lives at
   * `<key>/<dir>/<paged>/<N>/<file>` and is addressed as `<key>/<dir>/<paged>/<N>/<urlName>`.
   */
  readonly paged?: string;
}

/**
 * A page number as it appears in a path: 0, 1, 2, ... without leading zeros (one URL per page).
 * A page is numbered by a row id (src/formats/archive-places.ts), and ids go up to 2^53 - 1
 * (docs/database.md), which is 16 digits: every page the build can write must match, in the
 * route table and in the host configurations made from this pattern. The few 16-digit numbers
 * above 2^53 - 1 match too and name a file no build writes (`pageNumber` refuses them).
 */
export const PAGE_NUMBER = /^(0|[1-9][0-9]{0,15})$/;

/**
 * The page a path segment names, or null when it names none: PAGE_NUMBER, and a number that reads
 * back as itself (above 2^53 - 1, `9007199254740993` would read as the page `...992`).
 */
export function pageNumber(segment: string): number | null {
  if (!PAGE_NUMBER.test(segment)) return null;
  const number = Number(segment);
  return Number.isSafeInteger(number) ? number : null;
}

/** Where a site-wide document lives. */
export interface SitePlace {
  readonly name: string;
  readonly scope: 'site';
  readonly file: string;
  /** Other file names it may write (numbered sitemaps), as a pattern. */
  readonly alsoWrites?: RegExp;
}

export type Place = KeyedPlace | SitePlace;

/** The folder under out/ that holds a key's documents of one format (`dir`): `<key>/<dir>`. */
export function keyedFolder(place: Pick<KeyedPlace, 'dir'>, key: string): string {
  return `${key}/${place.dir}`;
}

/**
 * The file under out/ of a keyed document (for a paged place, of its page `page`: a number, or a
 * placeholder in a host configuration). Only for keys that passed `keyProblem`.
 */
export function keyedFile(place: Pick<KeyedPlace, 'dir' | 'file' | 'paged'>, key: string, page?: number | string): string {
  return place.paged === undefined ? `${keyedFolder(place, key)}/${place.file}` : `${keyedFolder(place, key)}/${place.paged}/${pageOf(place, page)}/${place.file}`;
}

function pageOf(place: Pick<KeyedPlace, 'paged'>, page: number | string | undefined): number | string {
  if (page === undefined) throw new Error(`the documents at ${place.paged}/ are numbered: a page is needed`);
  return page;
}

/**
 * The URL path, below the base URL and without its leading slash, of a keyed document. `urlKey` is
 * the key as it appears in a URL: percent-encoded for a real URL (`SitePaths.url`), or a
 * placeholder in a host configuration (`:key`, `*`).
 */
export function keyedUrlPath(place: Pick<KeyedPlace, 'dir' | 'urlName' | 'paged'>, urlKey: string, page?: number | string): string {
  return place.paged === undefined ? `${urlKey}/${place.dir}/${place.urlName}` : `${urlKey}/${place.dir}/${place.paged}/${pageOf(place, page)}/${place.urlName}`;
}

/**
 * Every URL path (as `keyedUrlPath`) a keyed document answers at: a directory index also without
 * its final slash (`alice/rss/` and `alice/rss`), never by a redirect (docs/hosting.md).
 */
export function keyedUrlPaths(place: Pick<KeyedPlace, 'dir' | 'urlName' | 'paged'>, urlKey: string, page?: number | string): string[] {
  const path = keyedUrlPath(place, urlKey, page);
  return place.urlName === '' ? [path, path.slice(0, -1)] : [path];
}

/** The URL path, without its leading slash, at which a file under out/ is a document: its segments percent-encoded. */
export function encodedFilePath(relativeFile: string): string {
  return relativeFile.split('/').map(encodeURIComponent).join('/');
}

/** The URL path pattern of a document, for people: `/<user>/rss/`, `/sitemap.xml`. */
export function urlPattern(place: Place): string {
  return place.scope === 'site' ? `/${place.file}` : `/${keyedUrlPath(place, `<${place.scope}>`, '<N>')}`;
}

/** The file pattern of a document, for people: `<user>/rss/index.rss`, `sitemap.xml`. */
export function filePattern(place: Place): string {
  return place.scope === 'site' ? place.file : keyedFile(place, `<${place.scope}>`, '<N>');
}

/**
 * Whether `name` is taken at the top of the tree by one of the site-wide documents of `places`, or
 * by a pre-compressed form of one (`robots.txt.gz`): reserved whether or not the configuration
 * writes forms, so which names are published never depends on `compress`.
 */
export function isSiteFileName(name: string, places: readonly Place[]): boolean {
  const lower = name.toLowerCase();
  const taken = (file: string) => places.some((p) => p.scope === 'site' && (p.file.toLowerCase() === file || (p.alsoWrites?.test(file) ?? false)));
  const form = compressedFormOf(lower);
  return taken(lower) || (form !== null && taken(form.document));
}

/**
 * Why a username or video id cannot be published (be a path segment under out/ and a URL
 * segment), or null when it can: the one rule (src/paths/names.ts; docs/database.md, "Names"), with
 * the names the site-wide documents of `places` take.
 */
export function keyProblem(key: string, places: readonly Place[]): string | null {
  return segmentProblem(key, (name) => isSiteFileName(name, places));
}

/**
 * Checks the table of places itself: no two documents may claim one file or one URL. Runs before
 * a build writes anything, naming both.
 */
export function checkPlaces(places: readonly Place[]): void {
  const seenFile = new Map<string, string>();
  const seenName = new Map<string, string>();
  for (const place of places) {
    if (seenName.has(place.name)) throw new Error(`format table: two formats are named ${place.name}`);
    seenName.set(place.name, place.name);
    const claims =
      place.scope === 'site'
        ? [`file ${place.file}`, `url ${place.file}`]
        : [`file ${keyedFile(place, '<key>', '<N>')}`, `url ${keyedUrlPath(place, '<key>', '<N>')}`];
    for (const claim of claims) {
      const normal = posix.normalize(claim);
      const other = seenFile.get(normal);
      // A directory index URL and its file legitimately coincide within one format.
      if (other !== undefined && other !== place.name) {
        throw new Error(`format table: ${place.name} and ${other} both claim ${claim}`);
      }
      seenFile.set(normal, place.name);
    }
  }
}

/** What a URL path (below the base path, split into decoded segments) names. */
export type RouteMatch<K extends KeyedPlace = KeyedPlace, S extends SitePlace = SitePlace> =
  | { kind: 'keyed'; format: K; key: string; file: string; page?: number }
  | { kind: 'site'; format: S; file: string };

/**
 * Resolves the decoded segments of a URL path below the base path (`/alice/rss/` is
 * `['alice', 'rss', '']`) to the document and its file. Returns null for anything the places do
 * not serve, and for a key that cannot be published. The caller has already refused segments that
 * hold a `/`, a NUL, or are `.`/`..` (see `splitUrlPath`).
 */
export function matchRoute<K extends KeyedPlace, S extends SitePlace>(
  places: { readonly keyed: readonly K[]; readonly site: readonly S[] },
  segments: readonly string[],
): RouteMatch<K, S> | null {
  if (segments.length === 1) {
    const name = segments[0]!;
    const format = places.site.find((f) => f.file === name || (f.alsoWrites?.test(name) ?? false));
    return format === undefined ? null : { kind: 'site', format, file: name };
  }
  if (segments.length === 4 || segments.length === 5) return matchPage(places, segments);
  if (segments.length !== 2 && segments.length !== 3) return null;
  const [key, dir, urlName = ''] = segments as [string, string, string?];
  if (keyProblem(key, places.site) !== null) return null;
  // Two segments: a directory URL without its final slash (`/alice/rss`).
  const format = places.keyed.find((f) => f.paged === undefined && f.dir === dir && f.urlName === urlName && (segments.length === 3 || f.urlName === ''));
  return format === undefined ? null : { kind: 'keyed', format, key, file: keyedFile(format, key) };
}

/** A page of a paged place: `[key, dir, paged, N]` (a directory URL without its final slash) or `[key, dir, paged, N, urlName]`. */
function matchPage<K extends KeyedPlace, S extends SitePlace>(
  places: { readonly keyed: readonly K[]; readonly site: readonly S[] },
  segments: readonly string[],
): RouteMatch<K, S> | null {
  const [key, dir, paged, page, urlName = ''] = segments as [string, string, string, string, string?];
  const number = pageNumber(page);
  if (number === null || keyProblem(key, places.site) !== null) return null;
  const format = places.keyed.find((f) => f.paged === paged && f.dir === dir && f.urlName === urlName && (segments.length === 5 || f.urlName === ''));
  if (format === undefined) return null;
  return { kind: 'keyed', format, key, file: keyedFile(format, key, number), page: number };
}

/**
 * The document a file under out/ is (`alice/rss/index.rss`, `sitemap-2.xml`), or null for a file
 * that is none (the build state, a stray file).
 */
export function matchFile<K extends KeyedPlace, S extends SitePlace>(
  places: { readonly keyed: readonly K[]; readonly site: readonly S[] },
  file: string,
): RouteMatch<K, S> | null {
  const parts = file.split('/');
  if (parts.length === 1) return matchRoute(places, parts);
  if (parts.length === 5) {
    const [key, dir, paged, page, name] = parts as [string, string, string, string, string];
    const format = places.keyed.find((f) => f.paged === paged && f.dir === dir && f.file === name);
    return format === undefined ? null : matchRoute(places, [key, dir, paged, page, format.urlName]);
  }
  if (parts.length !== 3) return null;
  const [key, dir, name] = parts as [string, string, string];
  const format = places.keyed.find((f) => f.paged === undefined && f.dir === dir && f.file === name);
  if (format === undefined) return null;
  return matchRoute(places, [key, dir, format.urlName]);
}

/**
 * Splits the path of a request (as sent: percent-encoded) into decoded segments below `basePath`
 * (the base URL's path, as `SitePaths.basePath` gives it). Returns null when the path is outside
 * the base path, is malformed, or plays tricks: an encoded `/` or `\`, NUL, `.` or `..` segments,
 * empty segments (`//`) anywhere but the final slash.
 */
export function splitUrlPath(rawPath: string, basePath: string): string[] | null {
  const decode = (path: string): string[] | null => {
    const segments: string[] = [];
    const parts = path.split('/');
    for (const [i, part] of parts.entries()) {
      let decoded: string;
      try {
        decoded = decodeURIComponent(part);
      } catch {
        return null;
      }
      if (decoded === '' && i !== parts.length - 1) return null;
      if (decoded === '.' || decoded === '..' || /[/\\\u0000]/.test(decoded)) return null;
      segments.push(decoded);
    }
    return segments;
  };
  if (!rawPath.startsWith('/')) return null;
  const segments = decode(rawPath.slice(1));
  const base = basePath === '' ? [] : decode(basePath.slice(1));
  if (segments === null || base === null || segments.length <= base.length) return null;
  // The base path compares decoded, as nginx compares it (`%C3%AD` and `%c3%ad` are one name).
  if (base.some((segment, i) => segments[i] !== segment)) return null;
  return segments.slice(base.length);
}
