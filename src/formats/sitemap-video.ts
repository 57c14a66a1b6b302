import type { SiteContext, VideoFormat } from './format.js';
import type { VideoView } from '../model/views.js';
import { rfc3339 } from '../render/dates.js';
import type { XmlElement } from '../render/xml-element.js';

/**
 * The video sitemap extension (Google's `http://www.google.com/schemas/sitemap-video/1.1`): each
 * published video's own page (`pages.video`) is listed with one `<video:video>` describing the
 * video, so a search engine learns about the video itself and not only about its documents. The
 * entries stand in the sitemap beside the documents of the same video, in the part of its id on a
 * site split by id, so an edit rewrites only the part that lists it.
 */

export const SITEMAP_VIDEO_NS = 'http://www.google.com/schemas/sitemap-video/1.1';

/** Google reads at most this many characters of a description. */
export const MAX_DESCRIPTION_CHARS = 2048;
/** The durations Google takes, in seconds; any other is left out. */
export const DURATION_RANGE = { min: 1, max: 28_800 } as const;
/** Google reads at most this many characters of a title. */
const MAX_TITLE_CHARS = 100;
/** Google reads at most this many characters of an uploader's name. */
const MAX_UPLOADER_CHARS = 255;

/** The `<url>` of a video's page with its `<video:video>`; the page's date is that of the video's documents. */
export interface VideoEntry {
  loc: string;
  lastmod: string | null;
  video: VideoView;
}

/**
 * The entry for a video, dated by the last change of its documents' bytes (`dates`: files under
 * out/ to when their bytes last changed; null when the sitemap carries no dates).
 */
export function videoEntry(video: VideoView, site: SiteContext, dates: ReadonlyMap<string, Date> | null): VideoEntry {
  let lastmod: string | null = null;
  if (dates !== null) {
    let latest: Date | null = null;
    for (const format of site.formats) {
      if (format.scope !== 'video') continue;
      const changed = dates.get(site.paths.file(format as VideoFormat, video.publicId));
      if (changed !== undefined && (latest === null || changed > latest)) latest = changed;
    }
    lastmod = rfc3339(latest ?? site.now);
  }
  return { loc: site.paths.videoPage(video.publicId), lastmod, video };
}

/**
 * Fills `<video:video>` in the order of Google's schema: thumbnail, title (cut to 100 characters),
 * description, the file
 * and the player (at least one of them: an entry with neither is not written, see `describable`),
 * duration, publication date, uploader. The player is the embed page when the site has one and it
 * is not the listed page itself.
 */
export function buildVideoElement(element: XmlElement, entry: VideoEntry, site: SiteContext): void {
  const { video } = entry;
  element.leaf('video:thumbnail_loc', video.thumbnailUrl);
  element.leaf('video:title', truncate(video.title, MAX_TITLE_CHARS));
  element.leaf('video:description', descriptionOf(video));
  const content = contentLoc(video, entry.loc);
  if (content !== null) element.leaf('video:content_loc', content);
  const player = playerLoc(video, entry.loc, site);
  if (player !== null) element.leaf('video:player_loc', player);
  const seconds = video.durationSeconds;
  if (seconds !== null && seconds >= DURATION_RANGE.min && seconds <= DURATION_RANGE.max) element.leaf('video:duration', seconds);
  element.leaf('video:publication_date', rfc3339(video.createdAt));
  element.leaf('video:uploader', truncate(video.uploader.displayName || video.uploader.username, MAX_UPLOADER_CHARS), {
    info: site.paths.userPage(video.uploader.username),
  });
}

/** Whether the entry can carry `<video:video>`: Google needs the file or a player, other than the page itself. */
export function describable(entry: VideoEntry, site: SiteContext): boolean {
  return contentLoc(entry.video, entry.loc) !== null || playerLoc(entry.video, entry.loc, site) !== null;
}

/** An upper bound of the bytes `<video:video>` takes once escaped (every character escaped to at most 6 bytes). */
export function videoElementBytes(entry: VideoEntry, site: SiteContext): number {
  const { video } = entry;
  const texts = [video.thumbnailUrl, video.title, descriptionOf(video), video.fileUrl, site.paths.userPage(video.uploader.username), video.uploader.displayName];
  let bytes = 700 + 2 * entry.loc.length * 6;
  for (const text of texts) bytes += Buffer.byteLength(text) * 6;
  return bytes;
}

/** The description Google reads: the title when there is none, cut to 2,048 characters on a character boundary. */
function descriptionOf(video: VideoView): string {
  const text = video.description.trim() === '' ? video.title : video.description;
  return truncate(text, MAX_DESCRIPTION_CHARS);
}

/** At most `max` characters (code points, so no surrogate pair is split). */
function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const points = Array.from(text);
  return points.length <= max ? text : points.slice(0, max).join('');
}

function contentLoc(video: VideoView, loc: string): string | null {
  return /^https?:\/\//i.test(video.fileUrl) && video.fileUrl !== loc ? video.fileUrl : null;
}

/** The page that plays the video, when the site has one (a format marked `player`, the embed page) and it is not the listed page. */
function playerLoc(video: VideoView, loc: string, site: SiteContext): string | null {
  const player = site.formats.find((f): f is VideoFormat => f.scope === 'video' && f.player === true);
  if (player === undefined) return null;
  const url = site.paths.url(player, video.publicId);
  return url === loc ? null : url;
}
