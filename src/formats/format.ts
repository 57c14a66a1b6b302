import type { CacheControlConfig, SiteConfig } from '../config/site-config.js';
import type { GroupView, UserBundle, UserPart, VideoBundle, VideoView, SiteIndex } from '../model/views.js';
import type { SitePaths } from '../paths/site-paths.js';
import type { KeyedPlace, SitePlace } from '../paths/url-scheme.js';
import type { EmbedRenderer } from '../render/embed.js';
import type { XmlEngine } from '../render/xml-engine.js';
import type { SitemapPartCache } from './sitemap-parts.js';

/**
 * How long a client or a CDN may keep a document: its Cache-Control header
 * (src/hosting/cache-control.ts). The configuration sets each class's value (`cacheControl.feeds`,
 * `.profiles`, `.site`; defaults in schemas/vidfeeds.config.schema.json); `cacheControl.formats`
 * overrides a single format.
 *
 * - feeds: documents that change with a user's activity (new videos, recommendations): short;
 * - profiles: documents that change when a user or a video is edited, rarely: longer;
 * - site: the site-wide files, which change when users or videos come and go: in between.
 */
export type CacheClass = Exclude<keyof CacheControlConfig, 'formats'>;

/**
 * A format is data plus one pure function. The descriptor says where the document lives (it is a
 * place of the URL scheme, src/paths/url-scheme.ts, which turns it into the URL and the file) and
 * how it is served and published (cache class, WebSub topic, upload order); `render` touches no
 * disk, database or clock (the build's "now" is `site.now`). Every host configuration, the deploy
 * and `vidfeeds serve` read that policy here, so a format added to the table needs nothing else.
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
  /** How long its document may be kept by clients and CDNs: when in doubt, `feeds` (kept briefly is the safe mistake). */
  readonly cacheClass: CacheClass;
  /**
   * A feed readers subscribe to: a WebSub topic (W3C Recommendation, 2018), which names the hubs
   * in `Link` headers and of which the hubs are told when its bytes change (src/deploy/notify.ts).
   */
  readonly websubTopic?: true;
  /**
   * Response headers the document is served with besides Content-Type, Cache-Control and nosniff
   * (the embed page's `frame-ancestors`). Every host configuration and `vidfeeds serve` send them.
   */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * False for a file the build writes that is no document of the site (the head snippet, for a
   * server-side include): no host configuration serves it, and it has no URL. Served by default.
   */
  readonly served?: false;
  /** Whether the configuration asks for the format's files; always, when absent. */
  enabled?(config: SiteConfig): boolean;
}

export interface UserFormat extends FormatBase, KeyedPlace {
  readonly scope: 'user';
  readonly dir: string;
  readonly file: string;
  readonly urlName: string;
  /** Which parts of the user's data `render` reads; the reader loads nothing else. */
  readonly needs: readonly UserPart[];
  /**
   * Its URL also answers `?recommendations=N` and takes the recommendation POST (seed section 4):
   * `vidfeeds serve` answers those from the database, behind every host configuration.
   */
  readonly recommendationEndpoint?: true;
  /** One document per user: not paged. */
  readonly paged?: undefined;
  render(view: UserBundle, site: SiteContext): string;
}

/** One page of a user's archive, as the build hands it to an ArchiveFormat. */
export interface ArchivePage {
  /** The page's number (src/formats/archive-places.ts, `planArchivePages`). */
  readonly number: number;
  /** The numbers of the pages before and after it; null for none. */
  readonly prev: number | null;
  readonly next: number | null;
  /** The page's rows of the list the format pages (the other list is empty). */
  readonly uploads: readonly VideoView[];
  readonly groups: readonly GroupView[];
}

/**
 * A numbered series of documents per user: the RFC 5005 archive pages of a feed, each holding
 * some rows of a list oldest first (`planArchivePages`, src/formats/archive-places.ts). The build
 * reads the list a page at a time and renders each page with `renderPage`.
 */
export interface ArchiveFormat extends FormatBase, KeyedPlace {
  readonly scope: 'user';
  readonly dir: string;
  readonly file: string;
  readonly urlName: string;
  readonly paged: string;
  /** The list its pages hold: the uploads beyond the RSS feed's, or the groups beyond the Atom feed's. */
  readonly list: 'uploads' | 'groups';
  /** Which parts of the user's data `renderPage` reads besides its page. */
  readonly needs: readonly UserPart[];
  renderPage(view: UserBundle, page: ArchivePage, site: SiteContext): string;
}

export interface VideoFormat extends FormatBase, KeyedPlace {
  readonly scope: 'video';
  readonly dir: string;
  readonly file: string;
  readonly urlName: string;
  /** The page that plays the video: the video sitemap names it as the video's player (`video:player_loc`). */
  readonly player?: true;
  render(view: VideoBundle, site: SiteContext): string;
}

/** A file a site format writes. Most write one; the sitemap writes an index and its parts. */
/** A file a site-wide format writes. */
export interface RenderedSiteFile {
  readonly file: string;
  readonly body: string;
}

/** A file a site-wide format writes, or (`unchanged`) one it keeps as an earlier build wrote it. */
export type SiteFile = RenderedSiteFile | { readonly file: string; readonly unchanged: true };

export interface SiteFormat extends FormatBase, SitePlace {
  readonly scope: 'site';
  readonly file: string;
  /**
   * Other file names this format may write (numbered sitemaps), as a pattern. No user or video may
   * take a name that matches it, since its directory would collide with the file.
   */
  readonly alsoWrites?: RegExp;
  /**
   * Uploaded by a deploy after every other site file, because it names them (robots.txt names the
   * sitemap): a crawler that reads it finds what it names in the store (src/deploy/deploy-plan.ts).
   */
  readonly deployLast?: true;
  /** Yields its files one at a time, so a large sitemap is never whole in memory. */
  render(index: SiteIndex, site: SiteContext): Iterable<SiteFile>;
}

/** A format rendered for each user: one document, or a numbered series of them. */
export type AnyUserFormat = UserFormat | ArchiveFormat;

export type Format = UserFormat | ArchiveFormat | VideoFormat | SiteFormat;

/** Everything a renderer may know besides its view: configuration, URLs, the build's clock. */
export interface SiteContext {
  readonly config: SiteConfig;
  readonly paths: SitePaths;
  /**
   * The build's "now", passed in so it is testable. Documents must not print it: every date in a
   * document comes from the data, so that the same database gives the same bytes on every build.
   */
  readonly now: Date;
  /** The formats this build knows, for documents that list or link to others (sitemap, robots). */
  readonly formats: readonly Format[];
  /** Renders the player markup from the configured Handlebars template. */
  readonly embed: EmbedRenderer;
  readonly generator: { name: string; version: string; uri: string };
  /** How XML documents are written (src/render/xml-engine.ts); 'fast' when absent. */
  readonly xmlEngine?: XmlEngine;
  /** The sitemap parts this process rendered, kept for its next builds (sitemap-parts.ts); absent: none kept. */
  readonly sitemapParts?: SitemapPartCache;
}
