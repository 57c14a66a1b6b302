import type { SiteContext, VideoFormat } from './format.js';
import { embedPageFormat } from './embed-page.js';
import { oembedDiscoveryLinks } from './oembed.js';
import type { VideoView } from '../model/views.js';
import { rfc3339 } from '../render/dates.js';
import { scriptSafeJson } from '../render/script-json.js';
import { escapeAttr, personName, videoName, xmlChars } from '../render/xml-text.js';

/**
 * The snippet for the `<head>` of the site's own page of a public video: what link previews
 * (Slack, Discord, Telegram, Facebook, X, Mastodon), oEmbed consumers and search engines read
 * there. `vidfeeds head` prints it (docs/oembed.md, "The video page's head").
 *
 * - the oEmbed discovery links (JSON and XML);
 * - Open Graph: `og:type` video.other, the title, description, the video's page as `og:url`, the
 *   thumbnail with its size, the embed page as `og:video` (and `og:video:secure_url` on https)
 *   of type text/html at the player's size, the site's name;
 * - the Twitter player card: the embed page as `twitter:player` at the player's size, the
 *   thumbnail, and the file itself as `twitter:player:stream` when it is a type browsers play;
 * - a schema.org `VideoObject` in JSON-LD, with the upload time in UTC and the duration in ISO 8601.
 *
 * Every value comes from the published view (nothing private is in it) and is escaped for where it
 * goes: attribute values as in every HTML document; the JSON-LD through `scriptSafeJson`, so a
 * `</script>` or U+2028 in a title stays inside its string.
 */

/** Media types every current browser's `<video>` plays, which Twitter accepts as a stream. */
const BROWSER_PLAYABLE = new Set(['video/mp4', 'video/webm', 'video/ogg']);

/** Seconds as an ISO 8601 duration (`PT1H2M3S`), as schema.org's `duration` takes it. */
export function isoDuration(totalSeconds: number): string {
  const seconds = Math.max(0, Math.round(totalSeconds));
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (seconds === 0) return 'PT0S';
  return `PT${h > 0 ? `${h}H` : ''}${m > 0 ? `${m}M` : ''}${s > 0 ? `${s}S` : ''}`;
}

/** The bare media type (`video/mp4` of `video/mp4; codecs="avc1"`), lower case. */
function bareType(fileType: string): string {
  return fileType.split(';')[0]!.trim().toLowerCase();
}

export function videoHead(video: VideoView, site: SiteContext): string {
  const { config, paths } = site;
  const page = paths.videoPage(video.publicId);
  const embed = paths.url(embedPageFormat, video.publicId);
  const title = xmlChars(videoName(video));
  const description = xmlChars(video.description).trim();
  const { width, height } = config.player;
  const stream = BROWSER_PLAYABLE.has(bareType(video.fileType)) ? video.fileUrl : null;

  const meta = (attribute: 'property' | 'name', name: string, value: string | number) => `<meta ${attribute}="${name}" content="${escapeAttr(String(value))}">\n`;
  const og = (name: string, value: string | number) => meta('property', `og:${name}`, value);
  const twitter = (name: string, value: string | number) => meta('name', `twitter:${name}`, value);

  let out = oembedDiscoveryLinks(video.publicId, paths);
  out += og('type', 'video.other') + og('title', title);
  if (description !== '') out += og('description', description);
  out += og('url', page) + og('image', video.thumbnailUrl) + og('image:width', video.thumbnailWidth) + og('image:height', video.thumbnailHeight);
  out += og('video', embed);
  if (embed.startsWith('https:')) out += og('video:secure_url', embed);
  out += og('video:type', 'text/html') + og('video:width', width) + og('video:height', height) + og('site_name', xmlChars(config.siteName));
  out += twitter('card', 'player') + twitter('title', title);
  if (description !== '') out += twitter('description', description);
  out += twitter('image', video.thumbnailUrl) + twitter('player', embed) + twitter('player:width', width) + twitter('player:height', height);
  if (stream !== null) out += twitter('player:stream', stream) + twitter('player:stream:content_type', bareType(video.fileType));
  out += `<script type="application/ld+json">${scriptSafeJson(videoObject(video, site, { page, embed, title, description }))}</script>\n`;
  return out;
}

/**
 * The snippet as a file per video, `<video>/embed/head.html`, for a server-side include in the
 * site's own video page (`videoHead.file` in the configuration). It is written, rewritten, removed
 * and checked as every document is, and served by no host configuration: it is a part of another
 * page, not a page.
 */
export const videoHeadFormat: VideoFormat = {
  scope: 'video',
  dir: 'embed',
  file: 'head.html',
  urlName: 'head.html',
  name: 'head',
  mediaType: 'text/html; charset=utf-8',
  inSitemap: false,
  served: false,
  enabled: (config) => config.videoHead.file,
  summary: "the <head> snippet of a public video's page, for a server-side include (videoHead.file; not served)",
  cacheClass: 'profiles',
  render: ({ video }, site) => videoHead(video, site),
};

/** The schema.org VideoObject of a video. */
function videoObject(video: VideoView, site: SiteContext, text: { page: string; embed: string; title: string; description: string }): Record<string, unknown> {
  const author = video.uploader.username;
  return {
    '@context': 'https://schema.org',
    '@type': 'VideoObject',
    name: text.title,
    // Search engines require a description; the title stands in for a video without one.
    description: text.description === '' ? text.title : text.description,
    thumbnailUrl: video.thumbnailUrl,
    uploadDate: rfc3339(video.createdAt),
    ...(video.durationSeconds === null ? {} : { duration: isoDuration(video.durationSeconds) }),
    contentUrl: video.fileUrl,
    embedUrl: text.embed,
    url: text.page,
    author: { '@type': 'Person', name: xmlChars(personName(video.uploader)), url: site.paths.userPage(author) },
  };
}
