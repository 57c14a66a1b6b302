import type { Format, RenderedSiteFile, SiteContext, SiteFile, SiteFormat, UserFormat, VideoFormat } from './format.js';
import type { XmlElement } from '../render/xml-element.js';
import type { IdBounds, KeyedRow, SiteIndex, VideoView } from '../model/views.js';
import { rfc3339 } from '../render/dates.js';
import { FlatXmlDocument } from '../render/flat-xml-document.js';
import { NS } from '../render/xml.js';
import { buildVideoElement, describable, SITEMAP_VIDEO_NS, videoElementBytes, videoEntry } from './sitemap-video.js';

/**
 * sitemap.xml: every published document at its canonical URL (formats with `inSitemap`).
 *
 * A small site has one `sitemap.xml`: users by name, then videos by id. Past 50,000 URLs or
 * 50 MB (sitemaps.org) it becomes a sitemap index of numbered sitemaps `sitemap-1.xml`, ...
 *
 * A site whose row ids could hold more than 2,000 URLs (`oneFileUrls`: the highest id minus the
 * lowest, times the formats listed, a bound that SQL gives at once and that does not depend on
 * which rows are published) is split by row id instead: `sitemap-users-FROM-TO.xml` lists the users whose id is
 * in FROM..TO, a range of `partUrls / user formats` ids, `sitemap-videos-FROM-TO.xml` likewise the
 * videos, and `sitemap.xml` is the index of the parts that list something. A part depends only on
 * the owners in its range, so a build that changed a few owners rewrites the parts that hold them
 * and keeps the others (`index.changes`): what a change costs does not grow with the site.
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

export interface SitemapLimits {
  /** URLs in one file at most (sitemaps.org: 50,000). */
  maxUrls: number;
  /** Bytes in one file at most, uncompressed (sitemaps.org: 50 MB). */
  maxBytes: number;
  /**
   * URLs a part split by id holds at most. Every change to an owner rewrites the part that lists
   * it (its lastmod moved), reading each of its owners' rows and dates again, so this sets what
   * `watch` pays per change (docs/performance.md, "Figures behind the code").
   */
  partUrls: number;
  /** Parts a sitemap index lists at most (sitemaps.org: 50,000), half of them for each kind. */
  maxParts: number;
  /**
   * URLs a site's ids may hold for it to keep one `sitemap.xml` (and no more than `maxUrls`).
   * That file is rendered whole whenever a build adds, removes or moves a URL in it, some 10 µs a
   * URL: past this many, parts by id keep a change's cost to its part's.
   */
  oneFileUrls: number;
}

export const SITEMAP_LIMITS: SitemapLimits = { maxUrls: MAX_URLS_PER_SITEMAP, maxBytes: MAX_BYTES_PER_SITEMAP, partUrls: 500, maxParts: MAX_URLS_PER_SITEMAP, oneFileUrls: 2_000 };

/** One `<url>`: its location, and when its document last changed when that is known; a video's page also describes the video. */
export interface SitemapEntry {
  loc: string;
  lastmod: string | null;
  video?: VideoView;
}

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
  for (const video of index.videoViewsById?.(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER) ?? []) yield videoEntry(video, site, videoDates);
}

/** Every URL the sitemap lists, in its order. */
export function* sitemapUrls(index: SiteIndex, site: SiteContext): Generator<string> {
  for (const entry of sitemapEntries(index, site)) yield entry.loc;
}

/**
 * Bytes one `<url>` entry takes once escaped: `&` becomes `&amp;`, `<`/`>` `&lt;`/`&gt;` (a URL
 * from site-paths holds none of them but `&`, from a configured page template). An upper bound.
 */
function entryBytes(entry: SitemapEntry, site: SiteContext): number {
  const url = entry.loc;
  const video = entry.video === undefined ? 0 : videoElementBytes({ ...entry, video: entry.video }, site);
  let escaped = 0;
  for (let i = url.indexOf('&'); i >= 0; i = url.indexOf('&', i + 1)) escaped += 4;
  for (const c of ['<', '>']) for (let i = url.indexOf(c); i >= 0; i = url.indexOf(c, i + 1)) escaped += 3;
  const lastmod = entry.lastmod === null ? 0 : entry.lastmod.length + '<lastmod></lastmod>'.length;
  return Buffer.byteLength(url) + escaped + lastmod + video + '<url><loc></loc></url>'.length;
}

/** The root of every urlset: the sitemaps.org namespace, and Google's video extension for the videos' pages. */
const URLSET_ATTRS = { xmlns: NS.sitemap, 'xmlns:video': SITEMAP_VIDEO_NS };

/** Bytes of a urlset besides its entries: the declaration, the root element, the final newline. */
const URLSET_WRAPPER_BYTES =
  Buffer.byteLength(new FlatXmlDocument('urlset', URLSET_ATTRS, 'url', ['loc']).entry('x').end()) - Buffer.byteLength('<url><loc>x</loc></url>');

/**
 * An empty urlset whose entries are written as they are added, so a part is never held as a tree:
 * every entry with its `lastmod` when the build knows when documents changed, else none has one.
 */
class Urlset {
  private readonly withDates: FlatXmlDocument;
  private readonly plain: FlatXmlDocument;
  private dated: boolean | null = null;

  constructor(private readonly site: SiteContext) {
    this.withDates = new FlatXmlDocument('urlset', URLSET_ATTRS, 'url', ['loc', 'lastmod'], site.xmlEngine);
    this.plain = new FlatXmlDocument('urlset', URLSET_ATTRS, 'url', ['loc'], site.xmlEngine);
  }

  get length(): number {
    return this.dated === true ? this.withDates.length : this.plain.length;
  }

  entry(entry: SitemapEntry): this {
    this.dated ??= entry.lastmod !== null;
    const { video } = entry;
    const site = this.site;
    const child =
      video === undefined || !describable({ ...entry, video }, site)
        ? undefined
        : { name: 'video:video', build: (element: XmlElement) => buildVideoElement(element, { ...entry, video }, site) };
    if (this.dated) this.withDates.entryWith([entry.loc, entry.lastmod ?? ''], child);
    else this.plain.entryWith([entry.loc], child);
    return this;
  }

  end(): string {
    return this.dated === true ? this.withDates.end() : this.plain.end();
  }
}

function urlset(site: SiteContext): Urlset {
  return new Urlset(site);
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

export type OwnerKind = 'users' | 'videos';

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

function listedFormats(formats: readonly Format[], scope: 'user' | 'video'): Array<UserFormat | VideoFormat> {
  return formats.filter((f): f is UserFormat | VideoFormat => f.scope === scope && f.inSitemap);
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

/**
 * `sitemap-users-FROM-TO.xml`, the part of the K-th range of `width` ids. Ids below zero are
 * written with their sign: `sitemap-users--62--1.xml`.
 */
function rangeFile(kind: OwnerKind, k: number, width: number): string {
  return `sitemap-${kind}-${k * width}-${(k + 1) * width - 1}.xml`;
}

/** A part of either layout: `sitemap-users-FROM-TO.xml`, or `sitemap-users-K.xml` of earlier versions. */
const KIND_PART = /^sitemap-(users|videos)-(-?\d+)(?:-(-?\d+))?\.xml$/;

/**
 * The ranges of this width that each kind has on disk, or null for a kind with a part of another
 * layout (the width moved, or parts of earlier versions): that kind's parts are all rendered again.
 */
function partsOnDisk(files: Iterable<string>, widths: Record<OwnerKind, number>): Record<OwnerKind, Set<number> | null> {
  const onDisk: Record<OwnerKind, Set<number> | null> = { users: new Set(), videos: new Set() };
  for (const file of files) {
    const match = KIND_PART.exec(file);
    if (match === null) continue;
    const kind = match[1] as OwnerKind;
    const [from, to, width] = [Number(match[2]), Number(match[3]), widths[kind]];
    const ofThisWidth = match[3] !== undefined && to - from + 1 === width && from % width === 0;
    if (!ofThisWidth) onDisk[kind] = null;
    else onDisk[kind]?.add(from / width);
  }
  return onDisk;
}

/**
 * The URLs of one owner's listed documents, leaving out those that failed in this build, with
 * their lastmod from `dates` (the owner's part's, by file under out/; null: no lastmod).
 */
function ownerUrls(index: SiteIndex, site: SiteContext, kind: OwnerKind, key: string, dates: ReadonlyMap<string, Date> | null): SitemapEntry[] {
  const failed = (format: string) => index.documentFailed?.(format, key) ?? false;
  const changed = (format: UserFormat | VideoFormat): string | null => {
    if (dates === null) return null;
    // A listed document is recorded before the site files are rendered; the build's clock stands
    // in only for a record that has no time.
    return rfc3339(dates.get(site.paths.file(format, key)) ?? site.now);
  };
  return listedFormats(site.formats, kind === 'users' ? 'user' : 'video')
    .filter((f) => !failed(f.name))
    .map((f) => ({ loc: site.paths.url(f, key), lastmod: changed(f) }));
}

/** One part of a site split by id, or null when its rows list nothing. */
function rangePart(file: string, urls: Iterable<SitemapEntry>, limits: SitemapLimits, site: SiteContext): RenderedSiteFile | null {
  const part = urlset(site);
  let bytes = URLSET_WRAPPER_BYTES;
  for (const url of urls) {
    part.entry(url);
    bytes += entryBytes(url, site);
  }
  if (part.length === 0) return null;
  if (part.length > limits.maxUrls || bytes > limits.maxBytes) {
    throw new Error(`${file} would hold ${part.length} URLs in ${bytes} bytes, over the sitemaps.org limits (URLs of over 10 KB?)`);
  }
  return { file, body: part.end() };
}

/**
 * The parts of a site split by id, then the index. With `index.changes` and parts of the same
 * split on disk, only the parts holding a changed owner are rendered again; the others are kept
 * (`unchanged`), and a part whose owners all went is not written, so the build prunes it.
 */
function* renderByIdRange(index: SiteIndex, site: SiteContext, limits: SitemapLimits, widths: Record<OwnerKind, number>): Generator<SiteFile> {
  const listed: string[] = [];
  const changes = index.changes;
  const onDisk = partsOnDisk(changes?.siteFilesOnDisk ?? [], widths);
  for (const kind of ['users', 'videos'] as const) {
    if (listedFormats(site.formats, kind === 'users' ? 'user' : 'video').length === 0) continue;
    const width = widths[kind];
    const rows = (from: number, to: number): Iterable<KeyedRow> => (kind === 'users' ? index.usersById!(from, to) : index.videosById!(from, to));
    const render = (k: number, owners: Iterable<KeyedRow>) => {
      const file = rangeFile(kind, k, width);
      const [from, to] = [k * width, (k + 1) * width - 1];
      const dates = index.lastModifiedIn?.(kind, from, to) ?? null;
      const videos = kind === 'videos' ? new Map([...(index.videoViewsById?.(from, to) ?? [])].map((v) => [v.id, v])) : null;
      return rangePart(file, (function* () {
        for (const owner of owners) {
          yield* ownerUrls(index, site, kind, owner.key, dates);
          const video = videos?.get(owner.id);
          if (video !== undefined) yield videoEntry(video, site, dates);
        }
      })(), limits, site);
    };
    const changed = changes?.[kind];
    const kept = onDisk[kind];
    // No part of this layout on disk (the last build made one sitemap.xml, or no such owner was
    // listed, or the width moved): every range is rendered.
    if (changed === undefined || changed === 'all' || kept === null || kept.size === 0) {
      // Every row of the kind, by id, cut where the range changes.
      let k: number | null = null;
      let group: KeyedRow[] = [];
      const flush = () => {
        const part = k === null ? null : render(k, group);
        if (part !== null) listed.push(part.file);
        group = [];
        return part;
      };
      for (const row of rows(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)) {
        const rowK = Math.floor(row.id / width);
        if (rowK !== k) {
          const part = flush();
          if (part !== null) yield part;
          k = rowK;
        }
        group.push(row);
      }
      const last = flush();
      if (last !== null) yield last;
      continue;
    }
    const again = new Set([...changed].map((id) => Math.floor(id / width)));
    for (const k of [...new Set([...kept, ...again])].sort((a, b) => a - b)) {
      if (!again.has(k)) {
        const file = rangeFile(kind, k, width);
        listed.push(file);
        yield { file, unchanged: true };
        continue;
      }
      const part = render(k, rows(k * width, (k + 1) * width - 1));
      if (part !== null) {
        listed.push(part.file);
        yield part;
      }
    }
  }
  // The widths keep the ranges within the index's limit; this holds it should they not.
  if (listed.length > limits.maxParts) throw new Error(`the sitemap index would list ${listed.length} parts, over the sitemaps.org limit of ${limits.maxParts}`);
  const sitemapIndex = new FlatXmlDocument('sitemapindex', { xmlns: NS.sitemap }, 'sitemap', ['loc'], site.xmlEngine);
  for (const file of listed) sitemapIndex.entry(site.paths.siteUrl(file));
  yield { file: 'sitemap.xml', body: sitemapIndex.end() };
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
