/** Every site-level setting the documents need. Loaded once, validated before any file is touched. */
export interface SiteConfig {
  /** Absolute http(s) URL the tree is served under; may carry a path. No trailing slash. */
  baseUrl: string;
  siteName: string;
  siteDescription: string;
  /** Language of the site's text (RSS `language`, Atom `hreflang`, OpenSearch `Language`). */
  language: string;
  copyright: string;
  /** Address of the site's operator: FOAF `admin:errorReportsTo`, OpenSearch `Contact`. */
  contactEmail: string;
  /** Site logo (RSS channel image, OpenSearch `Image`). */
  logoUrl: string;
  /**
   * The logo's size in pixels and media type, all three or none. The OpenSearch `Image` is
   * written only when they are known: feed validators require its height, width and type.
   */
  logoWidth: number | null;
  logoHeight: number | null;
  logoType: string | null;
  /** URL templates of the site's own pages, which our documents link to. */
  pages: PageTemplates;
  /** Number of recommendations in `/<user>/openrecommender/`. */
  recommendationsCount: number;
  /** The recommendation submit (POST and `vidfeeds recommend`): moderation and limits. */
  recommendationSubmit: RecommendationSubmitConfig;
  crossDomain: CrossDomainConfig;
  robots: RobotsConfig;
  player: PlayerConfig;
  oembed: OembedConfig;
  videoHead: VideoHeadConfig;
  /** Make an unpublishable row (a bad name) fatal instead of reported and skipped. */
  strict: boolean;
  /** A lock held longer than this is reported as stale (src/lock/lock.ts). */
  maxLockAgeSeconds: number;
  /** Pre-compressed forms written beside each text document (`.gz`, `.br`); none by default. */
  compress: Array<'gzip' | 'br'>;
  cacheControl: CacheControlConfig;
  /** WebSub hubs the feeds name and that are notified of changed feeds (docs/deploy.md). */
  websub: WebSubConfig;
  /** IndexNow: the key file in the tree and the submission of changed URLs. */
  indexNow: IndexNowConfig;
  /** Whether hubs and IndexNow hear of changes after a build (the tree is served) or after `vidfeeds deploy`. */
  notifyAfter: 'build' | 'deploy';
  /** Settings of the feeds. */
  feeds: FeedsConfig;
  /** `vidfeeds sync`: the site's own database and how its rows map to vidfeeds's tables. */
  sync: SyncConfig;
}

export interface FeedsConfig {
  /** Podcast-grade RSS (iTunes and Podcasting 2.0 tags); null: plain RSS. */
  podcast: PodcastConfig | null;
}

/** What podcast directories need that the database does not hold (docs/formats.md, "Podcast feeds"). */
export interface PodcastConfig {
  /** Apple's category, or `Category > Subcategory`. */
  category: string;
  explicit: boolean;
  owner: { name: string; email: string };
  /** Null: the site's language. */
  language: string | null;
  locked: boolean;
  /** Channel artwork; null: the site logo, if any. */
  image: string | null;
}

export interface WebSubConfig {
  /** Hub URLs; empty for none. */
  hubs: string[];
  /** Feeds named in one publish request (repeated `hub.url`). */
  feedsPerRequest: number;
}

export interface IndexNowConfig {
  /** The site's key (8 to 128 of `[A-Za-z0-9-]`), or null: no key file, no submissions. */
  key: string | null;
  endpoint: string;
}

/** Where `vidfeeds sync` reads from and, per vidfeeds table, the query that maps it (docs/adopting.md). */
export interface SyncConfig {
  /** The source's URL (mysql:, mariadb:, postgres:, postgresql:, sqlite:); `--from` wins. */
  from: string | null;
  /** An environment variable holding the URL, read by the command line when `from` is null. */
  fromEnv: string | null;
  /** A file holding the source's password. */
  passwordFile: string | null;
  /** How long the source may stay silent while sync waits for it before the sync stops (exit 75). */
  readTimeoutSeconds: number;
  /** Per vidfeeds table, its SELECT (a string, or an array of lines) or the SELECT with options. */
  tables: Record<string, string | string[] | SyncTableConfig>;
}

export interface SyncTableConfig {
  query: string | string[];
  /** Text columns whose HTML character references are decoded. */
  decodeEntities?: string[];
  /** A column the query returns beside the table's, holding when the source row last changed (`sync --changed-only`). */
  watermark?: string;
}

/**
 * The Cache-Control header every host configuration and `vidfeeds serve` send, per format: the
 * format's class (`cacheClass` of its descriptor in src/formats/), unless `formats` names it.
 */
export interface CacheControlConfig {
  /** Feeds and lists that change with a user's activity: RSS, Atom, recommendations, XSPF, APML, OPML. */
  feeds: string;
  /** Documents that change rarely: oEmbed, FOAF, hCard. */
  profiles: string;
  /** Site-wide files: sitemap, robots.txt, opensearch.xml, crossdomain.xml. */
  site: string;
  /** Per format name, over its class. */
  formats: Record<string, string>;
}

export interface PageTemplates {
  /** Profile page of a user. Placeholders: {base}, {user}. */
  user: string;
  /**
   * Page of a video: RSS and XSPF links, oEmbed `web_page`, and what oEmbed's `url` parameter
   * accepts. Placeholders: {base}, {video}. By default the embed page vidfeeds publishes
   * (`/<video>/embed/`), a complete page that plays the video, which every host configuration serves.
   */
  video: string;
  /** Page of a group. Placeholders: {base}, {group}. */
  group: string;
  /** Page listing a tag's videos. Placeholders: {base}, {tag}. */
  tag: string;
  /** The site's search, as an OpenSearch template. Placeholders: {base}, {searchTerms} (kept for clients). */
  search: string;
}

/** At most `limit` submissions in any `windowSeconds`, and at most `maxPending` awaiting moderation. */
export interface SubmitLimit {
  limit: number;
  windowSeconds: number;
  maxPending: number;
}

export interface RecommendationSubmitConfig {
  /** Publish submissions at once (status `approved`) instead of holding them for moderation. */
  publishAtOnce: boolean;
  /** Hosts (or `*.example.org` suffixes) a submitted link and image may point at. Empty: any host. */
  allowedHosts: string[];
  /** Per client address (the POST only; the command line has none). */
  perClient: SubmitLimit;
  /** Per user whose list receives them. */
  perUser: SubmitLimit;
  /**
   * Addresses (or CIDR ranges) of proxies whose X-Forwarded-For `vidfeeds serve` believes; a
   * request from any other address is counted under the address it comes from.
   */
  trustedProxies: string[];
}

export interface CrossDomainConfig {
  /** Domains (or `*.example.org` wildcards) allowed to read the site from Flash. Empty: none. */
  allowAccessFrom: string[];
  permittedCrossDomainPolicies: 'none' | 'master-only' | 'by-content-type' | 'all';
}

export interface RobotsConfig {
  /** Extra path prefixes to disallow for every crawler. */
  disallow: string[];
}

export interface OembedConfig {
  /**
   * The `html` field: `iframe`, an `<iframe>` of the video's embed page (what WordPress and most
   * consumers keep from a provider they do not list), or `inline`, the embed template's markup.
   */
  html: 'iframe' | 'inline';
}

export interface VideoHeadConfig {
  /** Write each public video's head snippet to `<video>/embed/head.html`, for a server-side include. */
  file: boolean;
}

export interface PlayerConfig {
  /**
   * Name of the embed template in the templates directory: `html5` (the default, a `<video>` that
   * plays in current browsers) or `flash` (the seed's object/embed) ship with vidfeeds.
   */
  template: string;
  /** A site's own templates directory; templates found there win over the shipped ones. */
  templatesDir: string | null;
  width: number;
  height: number;
  /** URL of the Flash player file (`movie`, `data`, flashvar `location`). */
  playerUrl: string;
  /** Watermark image (flashvar `logo`); empty for none. */
  logoUrl: string;
  /** Statistics callback URL (flashvar `callback`); empty for none. */
  statsCallbackUrl: string;
  /** Flashvar `linkfromdisplay`: clicking the picture opens the video page. */
  linkFromDisplay: boolean;
  linkTarget: string;
  /**
   * The HTML5 player asks for the video and captions with CORS (`crossorigin="anonymous"`), which a
   * `<track>` on another host than the embedding page needs, and which fails unless the hosts of
   * the files send `Access-Control-Allow-Origin`. Off by default, so a host without CORS still plays.
   */
  crossOrigin: boolean;
  backColor: string;
  frontColor: string;
  lightColor: string;
  bgColor: string;
}
