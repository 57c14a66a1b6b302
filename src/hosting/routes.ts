import type { ArchiveFormat, Format, SiteFormat, UserFormat, VideoFormat } from '../formats/format.js';
import type { RouteMatch as PlaceMatch } from '../paths/url-scheme.js';

/**
 * Which URL serves which file with which Content-Type, derived from the format table and the URL
 * scheme (src/paths/url-scheme.ts) and nothing else. The nginx, Apache and Netlify/Cloudflare
 * configurations, the manifest for object stores and `vidfeeds serve` all read these routes, so a
 * format added to the table is served everywhere.
 *
 * The rules every host follows (docs/hosting.md):
 * - only the URLs of the table are served; everything else is 404 (dot files, the build state,
 *   the files' own names such as `/alice/rss/index.rss`, directory listings);
 * - a directory URL (`/<user>/rss/`) is answered with its file directly, never by a redirect, and
 *   the same URL without its final slash (`/<user>/rss`) is answered the same way: feed readers and
 *   people drop slashes, a redirect costs a round trip some oEmbed consumers do not make, and the
 *   document names its canonical URL itself (sitemap, `atom:link rel="self"`);
 * - a key (username or video id) is one path segment that the build can publish (`keyProblem`);
 *   `..`, an encoded slash (`%2F`) or an empty segment never reaches a file.
 */

export type KeyedFormat = UserFormat | ArchiveFormat | VideoFormat;

/** The values of oEmbed's `format` parameter (oEmbed 1.0 section 2.2); other values get 501. */
export const OEMBED_FORMAT_VALUES = ['json', 'xml'] as const;

/** Query parameters of the oEmbed endpoint that a file cannot answer (seed section 4). */
export const OEMBED_DYNAMIC_PARAMS = ['url', 'maxwidth', 'maxheight', 'width', 'height', 'callback'] as const;

/** The query parameter of the recommendations document (seed section 4). */
export const RECOMMENDATIONS_PARAM = 'recommendations';
/** `?recommendations=N` is answered for N from 1 to this; other values get 400. */
export const MAX_RECOMMENDATIONS = 100;
/** Largest recommendation POST body accepted (form-encoded); larger ones get 413. */
export const RECOMMENDATION_POST_MAX_BYTES = 16 * 1024;

/** What a request path names: a document of the table, its key and its file. */
export type RouteMatch = PlaceMatch<KeyedFormat, SiteFormat>;

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
  /** The recommendations document (`recommendationEndpoint`), which takes `?recommendations=N` and the POST. */
  recommendations: UserFormat | null;
}

/** The extra response headers of a format (`headers` of its descriptor), as [name, value]. */
export function extraHeaders(format: Format): Array<[string, string]> {
  return Object.entries(format.headers ?? {});
}

export function routesOf(all: readonly Format[]): Routes {
  // A file that is no document (the head snippet) has no route: every host answers 404 for it.
  const formats = all.filter((f) => f.served !== false);
  const keyed = formats.filter((f): f is KeyedFormat => f.scope !== 'site');
  const site = formats.filter((f): f is SiteFormat => f.scope === 'site');
  const recommendations = formats.find((f): f is UserFormat => f.scope === 'user' && f.paged === undefined && f.recommendationEndpoint === true) ?? null;
  return { keyed, site, oembed: oembedEndpoint(keyed), recommendations };
}

/**
 * The seed addresses oEmbed by video id; the video documents are its forms. The endpoint is the
 * index of the video directory whose siblings are named like a `format` value (`json`, `xml`):
 * those are what `?format=` selects. Another video directory (the embed page's) is no endpoint.
 */
function oembedEndpoint(keyed: readonly KeyedFormat[]): OembedEndpoint | null {
  const video = keyed.filter((f): f is VideoFormat => f.scope === 'video');
  const index = video.find((f) => f.urlName === '' && video.some((g) => g.dir === f.dir && (OEMBED_FORMAT_VALUES as readonly string[]).includes(g.urlName)));
  if (index === undefined) return null;
  const forms = video.filter((f) => f.dir === index.dir);
  const byUrlName = new Map(forms.map((f) => [f.urlName, f]));
  const byFormatParam = new Map<string, VideoFormat>();
  for (const value of OEMBED_FORMAT_VALUES) {
    const form = byUrlName.get(value);
    if (form !== undefined) byFormatParam.set(value, form);
  }
  return { scope: 'video', dir: index.dir, index, byFormatParam, byUrlName };
}
