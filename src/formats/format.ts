import type { SiteContext } from '../model/site-context.js';
import type { UserBundle, UserPart, VideoBundle, SiteIndex } from '../model/views.js';

/**
 * A format is data plus one pure function. The descriptor says where the document lives
 * (`src/paths/site-paths.ts` turns it into the URL and the file) and how it is served; `render`
 * touches no disk, database or clock (the build's "now" is `site.now`).
 *
 * Paths: a user or video document lives at `<key>/<dir>/<file>` and is addressed as
 * `<base>/<key>/<dir>/<urlName>` (urlName '' for the directory index). A site document lives at
 * `<file>` and is addressed as `<base>/<file>`.
 */
interface FormatBase {
  /** Stable name used on the command line (`--only rss,atom`) and in the build state. */
  readonly name: string;
  /** Content-Type header value, charset included where the format has one. */
  readonly mediaType: string;
  /** Listed in sitemap.xml. */
  readonly inSitemap: boolean;
  /** One line for `vidfeeds formats` and the docs. */
  readonly summary: string;
}

export interface UserFormat extends FormatBase {
  readonly scope: 'user';
  readonly dir: string;
  readonly file: string;
  readonly urlName: string;
  /** Which parts of the user's data `render` reads; the reader loads nothing else. */
  readonly needs: readonly UserPart[];
  render(view: UserBundle, site: SiteContext): string;
}

export interface VideoFormat extends FormatBase {
  readonly scope: 'video';
  readonly dir: string;
  readonly file: string;
  readonly urlName: string;
  render(view: VideoBundle, site: SiteContext): string;
}

/** A file a site format writes. Most write one; the sitemap writes an index and its parts. */
export interface SiteFile {
  readonly file: string;
  readonly body: string;
}

export interface SiteFormat extends FormatBase {
  readonly scope: 'site';
  readonly file: string;
  /**
   * Other file names this format may write (numbered sitemaps), as a pattern. No user or video may
   * take a name that matches it, since its directory would collide with the file.
   */
  readonly alsoWrites?: RegExp;
  /** Yields its files one at a time, so a large sitemap is never whole in memory. */
  render(index: SiteIndex, site: SiteContext): Iterable<SiteFile>;
}

export type Format = UserFormat | VideoFormat | SiteFormat;
