import type { SiteContext, VideoFormat } from './format.js';
import type { ShownEntries, VideoView } from '../model/views.js';
import { rfc3339 } from '../render/dates.js';
import { documentHash } from '../render/document-hash.js';
import type { XmlElement } from '../render/xml-element.js';
import { xmlChars } from '../render/xml-text.js';
import { truncate } from '../render/truncate.js';

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
/**
 * The longest URL a sitemap may carry (sitemaps.org, and the extension's schema for every URL of
 * `<video:video>`). A longer stored URL cannot be cut: the entry goes without it, and without
 * `<video:video>` when it is the thumbnail, which Google requires.
 */
export const MAX_URL_CHARS = 2048;

const listable = (url: string) => url.length <= MAX_URL_CHARS;

/** The `<url>` of a video's page with its `<video:video>`; the page's date is that of the video's documents, or of the entry's own change. */
export interface VideoEntry {
  loc: string;
  lastmod: string | null;
  video: VideoView;
}

/**
 * The entry for a video, dated by the last change of its documents' bytes (`dates`: files under
 * out/ to when their bytes last changed; null when the sitemap carries no dates) or of what the
 * entry itself shows, whichever is later. The entry shows the description and the duration, which
 * none of the video's documents does (the RSS item is the uploader's document): dated by its
 * documents alone, an edit of them rewrote the entry under its old `lastmod`, and a crawler that
 * trusts it would not read the page again. `shown` keeps a hash of what each entry shows and when
 * it changed (in the build state), so a full build and an incremental one date it alike.
 */
export function videoEntry(video: VideoView, site: SiteContext, dates: ReadonlyMap<string, Date> | null, shown: ShownEntries | null = null): VideoEntry {
  const entry: VideoEntry = { loc: site.paths.videoPage(video.publicId), lastmod: null, video };
  if (dates === null) return entry;
  let latest: Date | null = null;
  for (const format of site.formats) {
    if (format.scope !== 'video') continue;
    const changed = dates.get(site.paths.file(format as VideoFormat, video.publicId));
    if (changed !== undefined && (latest === null || changed > latest)) latest = changed;
  }
  const changed = shown?.changed(video.id, shownHash(entry, site)) ?? null;
  if (changed !== null && (latest === null || changed > latest)) latest = changed;
  entry.lastmod = rfc3339(latest ?? site.now);
  return entry;
}

/**
 * A hash of everything the entry shows but its date: its page, and its `<video:video>` when it has
 * one, joined by NUL (which no text of it holds: xmlChars removes it, URLs encode it). Made for
 * every video of every part a build renders: a string costs less than JSON of the fields.
 */
function shownHash(entry: VideoEntry, site: SiteContext): Buffer {
  let shown = entry.loc;
  if (describable(entry, site)) {
    for (const [name, text, attrs] of videoFields(entry, site)) {
      shown += `\u0000${name}\u0000${text}`;
      if (attrs !== undefined) for (const [attr, value] of Object.entries(attrs)) shown += `\u0000${attr}=${value}`;
    }
  }
  return documentHash(Buffer.from(shown));
}

/** One child of `<video:video>`: its name, its text, its attributes. */
type VideoField = [name: string, text: string | number, attrs?: Record<string, string>];

/**
 * Fills `<video:video>` in the order of Google's schema: thumbnail, title (cut to 100 characters),
 * description, the file
 * and the player (at least one of them: an entry with neither is not written, see `describable`),
 * duration, publication date, uploader. The player is the embed page when the site has one and it
 * is not the listed page itself.
 */
export function buildVideoElement(element: XmlElement, entry: VideoEntry, site: SiteContext): void {
  for (const [name, text, attrs] of videoFields(entry, site)) element.leaf(name, text, attrs);
}

/** The children of `<video:video>`, in order (buildVideoElement): written, and hashed to date the entry (videoEntry). */
function videoFields(entry: VideoEntry, site: SiteContext): VideoField[] {
  const { video } = entry;
  const texts = videoTexts(video);
  const fields: VideoField[] = [
    ['video:thumbnail_loc', video.thumbnailUrl],
    ['video:title', texts.title],
    ['video:description', texts.description],
  ];
  const content = contentLoc(video, entry.loc);
  if (content !== null) fields.push(['video:content_loc', content]);
  const player = playerLoc(video, entry.loc, site);
  if (player !== null) fields.push(['video:player_loc', player]);
  const seconds = video.durationSeconds;
  if (seconds !== null && seconds >= DURATION_RANGE.min && seconds <= DURATION_RANGE.max) fields.push(['video:duration', seconds]);
  fields.push(['video:publication_date', rfc3339(video.createdAt)]);
  const info = site.paths.userPage(video.uploader.username);
  fields.push(['video:uploader', texts.uploader, listable(info) ? { info } : undefined]);
  return fields;
}

/**
 * Whether the entry can carry `<video:video>`: Google needs a title that is not blank, and the
 * file or a player other than the page itself.
 */
export function describable(entry: VideoEntry, site: SiteContext): boolean {
  if (videoTexts(entry.video).title.trim() === '' || !listable(entry.video.thumbnailUrl)) return false;
  return contentLoc(entry.video, entry.loc) !== null || playerLoc(entry.video, entry.loc, site) !== null;
}

/** An upper bound of the bytes `<video:video>` takes once escaped (every character escaped to at most 6 bytes). */
export function videoElementBytes(entry: VideoEntry, site: SiteContext): number {
  const { video } = entry;
  const { title, description, uploader } = videoTexts(video);
  const texts = [video.thumbnailUrl, title, description, video.fileUrl, site.paths.userPage(video.uploader.username), uploader];
  let bytes = 700 + 2 * entry.loc.length * 6;
  for (const text of texts) bytes += Buffer.byteLength(text) * 6;
  return bytes;
}

/**
 * The texts of `<video:video>` as they stand in it: without the characters XML cannot carry, cut
 * to what Google reads. The description is the title's when it has none; the uploader is the user
 * name when the display name is blank.
 */
function videoTexts(video: VideoView): { title: string; description: string; uploader: string } {
  const title = truncate(xmlChars(video.title), MAX_TITLE_CHARS);
  const description = xmlChars(video.description);
  const displayName = xmlChars(video.uploader.displayName);
  return {
    title,
    description: truncate(description.trim() === '' ? title : description, MAX_DESCRIPTION_CHARS),
    uploader: truncate(displayName.trim() === '' ? video.uploader.username : displayName, MAX_UPLOADER_CHARS),
  };
}

function contentLoc(video: VideoView, loc: string): string | null {
  return /^https?:\/\//i.test(video.fileUrl) && video.fileUrl !== loc && listable(video.fileUrl) ? video.fileUrl : null;
}

/** The page that plays the video, when the site has one (a format marked `player`, the embed page) and it is not the listed page. */
function playerLoc(video: VideoView, loc: string, site: SiteContext): string | null {
  const player = site.formats.find((f): f is VideoFormat => f.scope === 'video' && f.player === true);
  if (player === undefined) return null;
  const url = site.paths.url(player, video.publicId);
  return url === loc || !listable(url) ? null : url;
}
