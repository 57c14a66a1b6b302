import { createHash } from 'node:crypto';
import type { PodcastConfig } from '../config/site-config.js';
import type { UserView, VideoView } from '../model/views.js';
import { numberText } from '../render/number-text.js';
import { truncate } from '../render/truncate.js';
import { blank, xmlAttr, xmlChars, xmlLeaf } from '../render/xml-text.js';

/**
 * The podcast tags of a user's RSS feed, written when the configuration has `feeds.podcast`:
 * Apple's iTunes tags (what Apple Podcasts requires of a feed, and what every podcast app reads)
 * and the Podcasting 2.0 namespace's guid, medium, transcript and locked. The feed keeps its own
 * elements (the enclosure is the video file, the item guid the video's page); these are added.
 * Values go through xml-text.ts's escaping, as rss.ts writes its markup (its test holds both to
 * the document xmlDocument makes of the same calls).
 */

/** The namespaces, declared on `<rss>` only when the tags are written. */
export const PODCAST_NS = {
  itunes: 'http://www.itunes.com/dtds/podcast-1.0.dtd',
  podcast: 'https://podcastindex.org/namespace/1.0',
} as const;

/** The namespace UUID the Podcasting 2.0 `guid` tag names its UUIDv5 under. */
export const PODCAST_GUID_NAMESPACE = 'ead4c236-bf58-58c6-a2c6-a6b28d128cb6';

/** RFC 9562 (4122) version 5: the SHA-1 of the namespace's 16 bytes and the name's UTF-8, version and variant bits set. */
export function uuidV5(name: string, namespace: string): string {
  const hash = createHash('sha1').update(Buffer.from(namespace.replaceAll('-', ''), 'hex')).update(name, 'utf8').digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The feed's `podcast:guid`: the UUIDv5 of its URL without the scheme and without trailing
 * slashes (`videos.example.org/alice/rss`), as the namespace specifies, so a directory that
 * computes it from the URL finds the same value. It depends on the URL alone: the same on every
 * build, and it changes only when the base URL does.
 */
export function podcastGuid(feedUrl: string): string {
  return uuidV5(feedUrl.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//, '').replace(/\/+$/, ''), PODCAST_GUID_NAMESPACE);
}

/**
 * The media type of a captions file, from its URL's extension: the database holds the URL only.
 * Null for an extension not listed, whose transcript is left out (a `podcast:transcript` must
 * name its type). The types are those the Podcasting 2.0 namespace lists.
 */
const CAPTION_TYPES: Readonly<Record<string, string>> = {
  vtt: 'text/vtt',
  srt: 'application/x-subrip',
  json: 'application/json',
  html: 'text/html',
  htm: 'text/html',
  txt: 'text/plain',
};

export function captionsType(url: string): string | null {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return null;
  }
  const dot = path.lastIndexOf('.');
  if (dot < 0 || dot < path.lastIndexOf('/')) return null;
  return CAPTION_TYPES[path.slice(dot + 1).toLowerCase()] ?? null;
}

/** The channel's language: the podcast's own, else the site's. */
export function podcastLanguage(podcast: PodcastConfig | null, siteLanguage: string): string {
  return podcast?.language ?? siteLanguage;
}

/**
 * The channel's iTunes tags that come from the configuration alone: the owner, the artwork
 * (`image`, '' for none), the category, explicit and the type. An archive page carries these and
 * no more, so that a validator reading its items' iTunes tags finds the channel an iTunes feed
 * must have, while the page still changes only with its items or the site's settings.
 */
export function itunesSiteTags(podcast: PodcastConfig, image: string): string {
  const [category, subcategory] = podcast.category.split(' > ');
  let out = `<itunes:owner>${xmlLeaf('itunes:name', podcast.owner.name)}${xmlLeaf('itunes:email', podcast.owner.email)}</itunes:owner>`;
  if (image !== '') out += `<itunes:image href="${xmlAttr(image)}"/>`;
  return (
    out +
    (subcategory === undefined
      ? `<itunes:category text="${xmlAttr(category!)}"/>`
      : `<itunes:category text="${xmlAttr(category!)}"><itunes:category text="${xmlAttr(subcategory)}"/></itunes:category>`) +
    `<itunes:explicit>${podcast.explicit ? 'true' : 'false'}</itunes:explicit>` +
    // Each upload stands alone; apps show the newest first.
    '<itunes:type>episodic</itunes:type>'
  );
}

/** Apple reads at most this many characters of `itunes:author` (and of the owner's name, which the configuration holds to it). */
const MAX_AUTHOR_CHARS = 255;

/** The channel's podcast tags, for the feed at `feedUrl` of `user`; `image` is the artwork ('' for none). */
export function podcastChannel(podcast: PodcastConfig, user: Pick<UserView, 'username' | 'displayName'>, feedUrl: string, image: string): string {
  let out =
    xmlLeaf('itunes:author', truncate(blank(user.displayName) ? user.username : xmlChars(user.displayName), MAX_AUTHOR_CHARS)) +
    itunesSiteTags(podcast, image) +
    `<podcast:guid>${podcastGuid(feedUrl)}</podcast:guid>` +
    '<podcast:medium>video</podcast:medium>';
  if (podcast.locked) out += xmlLeaf('podcast:locked', 'yes', ` owner="${xmlAttr(podcast.owner.email)}"`);
  return out;
}

/** Caption formats with times: `rel="captions"` tells the apps to show them as closed captions, whatever their type. */
const TIMED_CAPTIONS = new Set(['text/vtt', 'application/x-subrip']);

/**
 * An item's podcast tags: duration when known (a duration of 0 is not known: the sitemap leaves it
 * out too), the thumbnail as its artwork, and its captions as a transcript.
 */
export function podcastItem(video: VideoView): string {
  const seconds = video.durationSeconds;
  let out = seconds === null || seconds < 1 ? '' : `<itunes:duration>${numberText(seconds)}</itunes:duration>`;
  out += `<itunes:image href="${xmlAttr(video.thumbnailUrl)}"/><itunes:episodeType>full</itunes:episodeType>`;
  const type = video.captionsUrl === null ? null : captionsType(video.captionsUrl);
  if (type !== null) {
    const rel = TIMED_CAPTIONS.has(type) ? ' rel="captions"' : '';
    out += `<podcast:transcript url="${xmlAttr(video.captionsUrl!)}" type="${type}"${rel}/>`;
  }
  return out;
}
