import type { Format, RenderedSiteFile, SiteContext, SiteFormat } from './format.js';
import type { IdBounds, SiteIndex } from '../model/views.js';
import { FlatXmlDocument } from '../render/flat-xml-document.js';
import { NS } from '../render/xml.js';
import { entryBytes, listedFormats, ownerUrls, urlset, URLSET_WRAPPER_BYTES, type OwnerKind, type SitemapEntry, type SitemapLimits } from './sitemap-entries.js';
import { rangeFile, renderByIdRange } from './sitemap-ranges.js';
import { videoEntry } from './sitemap-video.js';

export type { OwnerKind, SitemapEntry, SitemapLimits } from './sitemap-entries.js';

/**
 * sitemap.xml: every published document at its canonical URL (formats with `inSitemap`).
 *
 * A small site has one `sitemap.xml`: users by name, then videos by id. Past 50,000 URLs or
 * 50 MB (sitemaps.org) it becomes a sitemap index of numbered sitemaps `sitemap-1.xml`, ...
 *
 * A site whose row ids could hold more than 2,000 URLs (`oneFileUrls`: the highest id minus the
 * lowest, times the formats listed, a bound that SQL gives at once and that does not depend on
 * which rows are published) is split by row id instead (sitemap-ranges.ts): `sitemap-users-FROM-TO.xml` lists the users whose id is
 * in FROM..TO, a range of `partUrls / user formats` ids, `sitemap-videos-FROM-TO.xml` likewise the
 * videos, and `sitemap.xml` is the index of the parts that list something. A part depends only on
 * the owners in its range, so a build that changed a few owners rewrites the parts that hold them
 * and keeps the others (`index.changes`): what a change costs does not grow with the site.
 *
 * A process that builds again and again (`watch`) keeps the layout of the parts it rendered
 * (`site.sitemapParts`, sitemap-parts.ts): a part it must rewrite is spliced, the changed owners'
 * entries rendered and the others' taken from its file, when the file holds the bytes the layout
 * was made from and the build state records (`RangeParts.again` in sitemap-ranges.ts).
 *
 * Ids spread far apart would need more parts than an index may list; the ranges then double in
 * width until they fit (`rangeWidth`). Each part's name carries its range, so parts of another
 * width are never mistaken for this build's: they are all rendered again, and the old ones pruned.
 *
 * Every published video's own page (`pages.video`) is listed too, with a `<video:video>` that
 * describes it (sitemap-video.ts), after the video's documents and in the same part.
 *
 * Each URL carries its `<lastmod>` when the build knows it (`index.lastModifiedIn`, from the build
 * state, read once per part): the time the document's bytes last changed, never the time of the build, so a crawler
 * that trusts it re-reads exactly what changed.
 */

export const MAX_URLS_PER_SITEMAP = 50_000;
/** The sitemaps.org limit for one file, uncompressed: 52,428,800 bytes, the wrapper included. */
export const MAX_BYTES_PER_SITEMAP = 50 * 1024 * 1024;

export const SITEMAP_LIMITS: SitemapLimits = { maxUrls: MAX_URLS_PER_SITEMAP, maxBytes: MAX_BYTES_PER_SITEMAP, partUrls: 500, maxParts: MAX_URLS_PER_SITEMAP, oneFileUrls: 2_000 };

/**
 * Every URL the sitemap lists, in a stable order: users by name, then videos by id; never a
 * document that failed. A site in one file lists at most 50,000 URLs: their dates are read at once.
 */
export function* sitemapEntries(index: SiteIndex, site: SiteContext): Generator<SitemapEntry> {
  const all = (kind: OwnerKind) => index.lastModifiedIn?.(kind, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER) ?? null;
  const userDates = all('users');
  for (const name of index.usernames()) yield* ownerUrls(index, site, 'users', name, userDates);
  if (listedFormats(site.formats, 'video').length === 0) return;
  const videoDates = all('videos');
  for (const id of index.videoIds()) yield* ownerUrls(index, site, 'videos', id, videoDates);
  const shown = index.shownEntriesIn?.(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER) ?? null;
  for (const video of index.videoViewsById?.(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER) ?? []) yield videoEntry(video, site, videoDates, shown);
}

/** Every URL the sitemap lists, in its order. */
export function* sitemapUrls(index: SiteIndex, site: SiteContext): Generator<string> {
  for (const entry of sitemapEntries(index, site)) yield entry.loc;
}

/**
 * The sitemap files for `urls`: one `sitemap.xml`, or numbered parts of at most `maxUrls` URLs and
 * `maxBytes` bytes each and `sitemap.xml` as their index. Parts are yielded as they fill, the index
 * last, so no more than one part is in memory, and that one as text.
 */
export function* renderSitemaps(urls: Iterable<SitemapEntry | string>, site: SiteContext, maxUrls = MAX_URLS_PER_SITEMAP, maxBytes = MAX_BYTES_PER_SITEMAP): Generator<RenderedSiteFile> {
  let parts = 0;
  let part = urlset(site);
  let bytes = URLSET_WRAPPER_BYTES;
  for (const given of urls) {
    const url = typeof given === 'string' ? { loc: given, lastmod: null } : given;
    const size = entryBytes(url, site);
    if (part.length === maxUrls || (part.length > 0 && bytes + size > maxBytes)) {
      // More than one part: this one becomes a numbered sitemap, written now to keep memory flat.
      const body = part.end();
      part = urlset(site);
      bytes = URLSET_WRAPPER_BYTES;
      yield { file: partFile(++parts), body };
    }
    part.entry(url);
    bytes += size;
  }
  if (parts === 0) {
    yield { file: 'sitemap.xml', body: part.end() };
    return;
  }
  if (part.length > 0) yield { file: partFile(++parts), body: part.end() };
  const index = new FlatXmlDocument('sitemapindex', { xmlns: NS.sitemap }, 'sitemap', ['loc'], site.xmlEngine);
  for (let n = 1; n <= parts; n++) index.entry(site.paths.siteUrl(partFile(n)));
  yield { file: 'sitemap.xml', body: index.end() };
}

function partFile(n: number): string {
  return `sitemap-${n}.xml`;
}

/** Ids per part of each kind, or null when the site is small enough for one file (see the top). */
function idRanges(index: SiteIndex, site: SiteContext, limits: SitemapLimits): Record<OwnerKind, number> | null {
  if (index.idBounds === undefined || index.usersById === undefined || index.videosById === undefined) return null;
  return sitemapLayout(index.idBounds(), site.formats, limits);
}

/** Ids per part of each kind for a site of these id bounds and formats, or null for one file. */
function sitemapLayout(bounds: { users: IdBounds | null; videos: IdBounds | null }, formats: readonly Format[], limits: SitemapLimits): Record<OwnerKind, number> | null {
  // A video's own page is listed beside its documents.
  const videoFormats = listedFormats(formats, 'video').length;
  const perOwner = { users: listedFormats(formats, 'user').length, videos: videoFormats === 0 ? 0 : videoFormats + 1 };
  const span = (b: { min: number; max: number } | null) => (b === null ? 0 : b.max - b.min + 1);
  if (span(bounds.users) * perOwner.users + span(bounds.videos) * perOwner.videos <= Math.min(limits.oneFileUrls, limits.maxUrls)) return null;
  return {
    users: rangeWidth(span(bounds.users), perOwner.users, limits),
    videos: rangeWidth(span(bounds.videos), perOwner.videos, limits),
  };
}

/**
 * Ids per part of a kind: `partUrls` URLs' worth of owners, doubled until the ids' span fits in
 * half the index (one range more for the alignment). Doubling, not fitting exactly, keeps the
 * width, and so every part, the same while a site grows, until its span has doubled. A part never
 * spans more owners than one sitemap may list URLs for; past that (ids spread over hundreds of
 * millions) only the parts that list something count against the index's limit.
 */
export function rangeWidth(span: number, formats: number, limits: SitemapLimits): number {
  const widest = Math.max(1, Math.floor(limits.maxUrls / Math.max(1, formats)));
  let width = Math.min(widest, Math.max(1, Math.floor(limits.partUrls / Math.max(1, formats))));
  while (width < widest && Math.ceil(span / width) + 1 > Math.floor(limits.maxParts / 2)) width = Math.min(widest, width * 2);
  return width;
}

/**
 * The file that lists an owner of this id: `sitemap.xml` on a small site, else its id range's part
 * (for the freshness bench, which polls it).
 */
export function sitemapFileOf(
  kind: OwnerKind,
  id: number,
  bounds: { users: IdBounds | null; videos: IdBounds | null },
  formats: readonly Format[],
  limits: SitemapLimits = SITEMAP_LIMITS,
): string {
  const widths = sitemapLayout(bounds, formats, limits);
  return widths === null ? 'sitemap.xml' : rangeFile(kind, Math.floor(id / widths[kind]), widths[kind]);
}

/** The sitemap format with these limits (tests use small ones to split small sites). */
export function sitemapFormat(limits: SitemapLimits = SITEMAP_LIMITS): SiteFormat & { limits: SitemapLimits } {
  if (!(limits.partUrls >= 1 && limits.partUrls <= limits.maxUrls)) throw new Error(`sitemap parts of ${limits.partUrls} URLs: must be 1 to ${limits.maxUrls}`);
  if (!(limits.maxParts >= 4)) throw new Error(`a sitemap index of ${limits.maxParts} parts: must be 4 or more`);
  return {
    name: 'sitemap',
    scope: 'site',
    file: 'sitemap.xml',
    // `sitemap-users-K.xml`, the single-number parts of earlier versions, stays the sitemap's
    // name too: such a file is a site file to prune, and a user may not take its name.
    alsoWrites: /^sitemap-(\d+|(users|videos)--?\d+(--?\d+)?)\.xml$/,
    mediaType: 'application/xml; charset=utf-8',
    inSitemap: false,
    summary: 'sitemaps.org sitemap of every document (an index of parts by id past 2,000 URLs)',
    cacheClass: 'site',
    limits,
    render(index, site) {
      const widths = idRanges(index, site, limits);
      return widths === null
        ? renderSitemaps(sitemapEntries(index, site), site, limits.maxUrls, limits.maxBytes)
        : renderByIdRange(index, site, limits, widths);
    },
  };
}

export const sitemap = sitemapFormat();
