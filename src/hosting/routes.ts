import type { Format, SiteFormat, UserFormat, VideoFormat } from '../formats/format.js';

/**
 * Which URL serves which file with which Content-Type, derived from the format table and nothing
 * else. The nginx, Apache and Netlify/Cloudflare configurations, the manifest for object stores and
 * `vidfeeds serve` all read these routes, so a format added to the table is served everywhere.
 *
 * The rules every host follows (docs/deploy.md):
 * - only the URLs of the table are served; everything else is 404 (dot files, the build state,
 *   the files' own names such as `/alice/rss/index.rss`, directory listings);
 * - a directory URL (`/<user>/rss/`) is answered with its file directly, never by a redirect, and
 *   the same URL without its final slash (`/<user>/rss`) is answered the same way: feed readers and
 *   people drop slashes, a redirect costs a round trip some oEmbed consumers do not make, and the
 *   document names its canonical URL itself (sitemap, `atom:link rel="self"`);
 * - a key (username or video id) is one path segment that does not start with a dot; `..`, an
 *   encoded slash (`%2F`) or an empty segment never reaches a file.
 */

export type KeyedFormat = UserFormat | VideoFormat;

/** The values of oEmbed's `format` parameter (oEmbed 1.0 section 2.2); other values get 501. */
export const OEMBED_FORMAT_VALUES = ['json', 'xml'] as const;

/** Query parameters of the oEmbed endpoint that a file cannot answer (seed section 4). */
export const OEMBED_DYNAMIC_PARAMS = ['url', 'maxwidth', 'maxheight', 'width', 'height', 'callback'] as const;

/** Name of the format whose URL takes `?recommendations=N` and the recommendation POST. */
export const RECOMMENDATIONS_FORMAT = 'recommendations';
/** Its query parameter (seed section 4). */
export const RECOMMENDATIONS_PARAM = 'recommendations';
/** `?recommendations=N` is answered for N from 1 to this; other values get 400. */
export const MAX_RECOMMENDATIONS = 100;
/** Largest recommendation POST body accepted (form-encoded); larger ones get 413. */
export const RECOMMENDATION_POST_MAX_BYTES = 16 * 1024;

/** The oEmbed endpoint: the video directory whose index answers `?format=` from its siblings. */
export interface OembedEndpoint {
  scope: 'video';
  dir: string;
  /** The directory index (`/<video>/oembed/`): JSON, the default. */
  index: VideoFormat;
  /** Sibling documents by `format` value (`json`, `xml`) that `?format=` selects. */
  byFormatParam: ReadonlyMap<string, VideoFormat>;
  /** Every form by its URL name ('' for the index, `json`, `xml`, `html`). */
  byUrlName: ReadonlyMap<string, VideoFormat>;
}

export interface Routes {
  /** User and video documents: `/<key>/<dir>/<urlName>` → `<key>/<dir>/<file>`. */
  keyed: readonly KeyedFormat[];
  /** Site-wide files: `/<file>` → `<file>` (and the numbered files of `alsoWrites`). */
  site: readonly SiteFormat[];
  /** The oEmbed endpoint, when the table has video documents. */
  oembed: OembedEndpoint | null;
  /** The recommendations document, which takes `?recommendations=N` and the POST. */
  recommendations: UserFormat | null;
}

export function routesOf(formats: readonly Format[]): Routes {
  const keyed = formats.filter((f): f is KeyedFormat => f.scope !== 'site');
  const site = formats.filter((f): f is SiteFormat => f.scope === 'site');
  const recommendations = formats.find((f): f is UserFormat => f.scope === 'user' && f.name === RECOMMENDATIONS_FORMAT) ?? null;
  return { keyed, site, oembed: oembedEndpoint(keyed), recommendations };
}

/**
 * The seed addresses oEmbed by video id; the video documents are its forms. The index of the video
 * directory is the endpoint; its siblings named like a `format` value are what `?format=` selects.
 */
function oembedEndpoint(keyed: readonly KeyedFormat[]): OembedEndpoint | null {
  const index = keyed.find((f): f is VideoFormat => f.scope === 'video' && f.urlName === '');
  if (index === undefined) return null;
  const forms = keyed.filter((f): f is VideoFormat => f.scope === 'video' && f.dir === index.dir);
  const byUrlName = new Map(forms.map((f) => [f.urlName, f]));
  const byFormatParam = new Map<string, VideoFormat>();
  for (const value of OEMBED_FORMAT_VALUES) {
    const form = byUrlName.get(value);
    if (form !== undefined) byFormatParam.set(value, form);
  }
  return { scope: 'video', dir: index.dir, index, byFormatParam, byUrlName };
}

/** What a URL path (below the base path, already split into decoded segments) names. */
export type RouteMatch =
  | { kind: 'keyed'; format: KeyedFormat; key: string; file: string }
  | { kind: 'site'; format: SiteFormat; file: string };

/**
 * Resolves the decoded segments of a URL path below the base path (`/alice/rss/` is
 * `['alice', 'rss', '']`). Returns null for anything the table does not serve. The caller has
 * already refused segments that hold a `/`, a NUL, or are `.`/`..` (see `splitUrlPath`).
 */
export function matchRoute(routes: Routes, segments: readonly string[]): RouteMatch | null {
  if (segments.length === 1) {
    const name = segments[0]!;
    const format = routes.site.find((f) => f.file === name || (f.alsoWrites?.test(name) ?? false));
    return format === undefined ? null : { kind: 'site', format, file: name };
  }
  if (segments.length !== 2 && segments.length !== 3) return null;
  const [key, dir, urlName = ''] = segments as [string, string, string?];
  if (!isServableKey(key)) return null;
  // Two segments: a directory URL without its final slash (`/alice/rss`).
  const format = routes.keyed.find((f) => f.dir === dir && f.urlName === urlName && (segments.length === 3 || f.urlName === ''));
  return format === undefined ? null : { kind: 'keyed', format, key, file: `${key}/${format.dir}/${format.file}` };
}

/** A key can name a directory we serve: one non-empty segment, not hidden. */
export function isServableKey(key: string): boolean {
  return key !== '' && !key.startsWith('.') && !key.includes('/') && !key.includes('\\') && !key.includes('\u0000');
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

/** The URL path pattern of a keyed format, for people: `/<user>/rss/`. */
export function urlPattern(format: Format): string {
  return format.scope === 'site' ? `/${format.file}` : `/<${format.scope}>/${format.dir}/${format.urlName}`;
}

/** The media type without its parameters (`application/rss+xml`), for hosts that match on it. */
export function bareMediaType(mediaType: string): string {
  return mediaType.split(';')[0]!.trim();
}

/** Media types worth compressing: text and XML/JSON/JavaScript, which every document of ours is. */
export function isCompressible(mediaType: string): boolean {
  const bare = bareMediaType(mediaType);
  return bare.startsWith('text/') || /[+/](xml|json|javascript)\b/.test(bare);
}
