import type { CacheControlConfig } from '../config/site-config.js';
import type { Format } from '../formats/format.js';

/**
 * How long a client or a CDN may keep each document: the Cache-Control header of every host
 * configuration (nginx, Apache, `_headers`), of the upload manifest and of `vidfeeds serve`.
 * A format belongs to one of three classes, whose values the configuration sets
 * (`cacheControl.feeds`, `.profiles`, `.site`; defaults in schemas/vidfeeds.config.schema.json,
 * documented in docs/hosting.md); `cacheControl.formats` overrides a single format.
 *
 * - feeds: documents that change with a user's activity (new videos, recommendations): short;
 * - profiles: documents that change when a user or a video is edited, rarely: longer;
 * - site: the site-wide files, which change when users or videos come and go: in between.
 */
export type CacheClass = 'feeds' | 'profiles' | 'site';

/** The class of each user and video format, by name; a site format is always `site`. */
const CLASS_OF: Readonly<Record<string, CacheClass>> = {
  rss: 'feeds',
  atom: 'feeds',
  // The newest archive page takes the feed's oldest item at each upload: kept no longer than the feed.
  'rss-archive': 'feeds',
  'atom-archive': 'feeds',
  recommendations: 'feeds',
  xspf: 'feeds',
  apml: 'feeds',
  opml: 'feeds',
  foaf: 'profiles',
  hcard: 'profiles',
};

/** The class of a format: the table above; a video document (oEmbed) is a profile, a site file `site`; anything else a feed. */
export function cacheClassOf(format: Format): CacheClass {
  if (format.scope === 'site') return 'site';
  if (format.scope === 'video') return 'profiles';
  // An unlisted user format is treated as a feed: kept briefly is the safe mistake.
  return CLASS_OF[format.name] ?? 'feeds';
}

/** The Cache-Control value of a format under a configuration. */
export function cacheControlOf(config: CacheControlConfig, format: Format): string {
  return config.formats[format.name] ?? config[cacheClassOf(format)];
}
