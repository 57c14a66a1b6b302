import type { Format, RenderedSiteFile, SiteContext, SiteFile, SiteFormat, UserFormat, VideoFormat } from './format.js';
import type { IdBounds, KeyedRow, SiteIndex } from '../model/views.js';
import { FlatXmlDocument, NS } from '../render/xml.js';

/**
 * sitemap.xml: every published document at its canonical URL (formats with `inSitemap`).
 *
 * A small site has one `sitemap.xml`: users by name, then videos by id. Past 50,000 URLs or
 * 50 MB (sitemaps.org) it becomes a sitemap index of numbered sitemaps `sitemap-1.xml`, ...
 *
 * A site whose row ids could hold more than 50,000 URLs (the highest id minus the lowest, times
 * the formats listed: a bound that SQL gives at once and that does not depend on which rows are
 * published) is split by row id instead: `sitemap-users-K.xml` lists the users whose id is in
 * the K-th range of `partUrls / user formats` ids, `sitemap-videos-K.xml` likewise the videos,
 * and `sitemap.xml` is the index of the parts that list something. A part depends only on the
 * owners in its range, so a build that changed a few owners rewrites the parts that hold them
 * and keeps the others (`index.changes`): what a change costs does not grow with the site.
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
   * URLs a part split by id holds at most: a 25th of the limit, so that rewriting a part for one
   * change costs little (a part of 2,000 videos reads and checks 2,000 rows), and at
   * 1 KB a URL a part stays far below the byte limit.
   */
  partUrls: number;
}

export const SITEMAP_LIMITS: SitemapLimits = { maxUrls: MAX_URLS_PER_SITEMAP, maxBytes: MAX_BYTES_PER_SITEMAP, partUrls: 2_000 };

/** Every URL the sitemap lists, in a stable order: users by name, then videos by id; never a document that failed. */
export function* sitemapUrls(index: SiteIndex, site: SiteContext): Generator<string> {
  for (const name of index.usernames()) yield* ownerUrls(index, site, 'users', name);
  for (const id of index.videoIds()) yield* ownerUrls(index, site, 'videos', id);
}

/**
 * Bytes one `<url>` entry takes once escaped: `&` becomes `&amp;`, `<`/`>` `&lt;`/`&gt;` (a URL
 * from site-paths holds none of them but `&`, from a configured page template). An upper bound.
 */
function entryBytes(url: string): number {
  let escaped = 0;
  for (let i = url.indexOf('&'); i >= 0; i = url.indexOf('&', i + 1)) escaped += 4;
  for (const c of ['<', '>']) for (let i = url.indexOf(c); i >= 0; i = url.indexOf(c, i + 1)) escaped += 3;
  return Buffer.byteLength(url) + escaped + '<url><loc></loc></url>'.length;
}

/** Bytes of a urlset besides its entries: the declaration, the root element, the final newline. */
const URLSET_WRAPPER_BYTES = Buffer.byteLength(urlset().entry('x').end()) - entryBytes('x');

/** An empty urlset: entries are written as they are added, so a part is never held as a tree. */
function urlset(): FlatXmlDocument {
  return new FlatXmlDocument('urlset', { xmlns: NS.sitemap }, 'url', ['loc']);
}

/**
 * The sitemap files for `urls`: one `sitemap.xml`, or numbered parts of at most `maxUrls` URLs and
 * `maxBytes` bytes each and `sitemap.xml` as their index. Parts are yielded as they fill, the index
 * last, so no more than one part is in memory, and that one as text.
 */
export function* renderSitemaps(urls: Iterable<string>, site: SiteContext, maxUrls = MAX_URLS_PER_SITEMAP, maxBytes = MAX_BYTES_PER_SITEMAP): Generator<RenderedSiteFile> {
  let parts = 0;
  let part = urlset();
  let bytes = URLSET_WRAPPER_BYTES;
  for (const url of urls) {
    const size = entryBytes(url);
    if (part.length === maxUrls || (part.length > 0 && bytes + size > maxBytes)) {
      // More than one part: this one becomes a numbered sitemap, written now to keep memory flat.
      const body = part.end();
      part = urlset();
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
  const index = new FlatXmlDocument('sitemapindex', { xmlns: NS.sitemap }, 'sitemap', ['loc']);
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
  const perOwner = { users: listedFormats(formats, 'user').length, videos: listedFormats(formats, 'video').length };
  const span = (b: { min: number; max: number } | null) => (b === null ? 0 : b.max - b.min + 1);
  if (span(bounds.users) * perOwner.users + span(bounds.videos) * perOwner.videos <= limits.maxUrls) return null;
  const width = (formats: number) => Math.max(1, Math.floor(limits.partUrls / Math.max(1, formats)));
  return { users: width(perOwner.users), videos: width(perOwner.videos) };
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
  return widths === null ? 'sitemap.xml' : rangeFile(kind, Math.floor(id / widths[kind]));
}

/** `sitemap-users-K.xml`: K may be negative (ids below zero), written `sitemap-users--K.xml`. */
function rangeFile(kind: OwnerKind, k: number): string {
  return `sitemap-${kind}-${k}.xml`;
}

const RANGE_FILE = /^sitemap-(users|videos)-(-?\d+)\.xml$/;

/** The URLs of one owner's listed documents, leaving out those that failed in this build. */
function ownerUrls(index: SiteIndex, site: SiteContext, kind: OwnerKind, key: string): string[] {
  const failed = (format: string) => index.documentFailed?.(format, key) ?? false;
  return listedFormats(site.formats, kind === 'users' ? 'user' : 'video').filter((f) => !failed(f.name)).map((f) => site.paths.url(f, key));
}

/** One part of a site split by id, or null when its rows list nothing. */
function rangePart(file: string, urls: Iterable<string>, limits: SitemapLimits): RenderedSiteFile | null {
  const part = urlset();
  let bytes = URLSET_WRAPPER_BYTES;
  for (const url of urls) {
    part.entry(url);
    bytes += entryBytes(url);
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
  const onDisk = new Map<OwnerKind, Set<number>>([['users', new Set()], ['videos', new Set()]]);
  for (const file of changes?.siteFilesOnDisk ?? []) {
    const match = RANGE_FILE.exec(file);
    if (match !== null) onDisk.get(match[1] as OwnerKind)!.add(Number(match[2]));
  }
  // Parts on disk are of this split only if the last build split by id: otherwise render all.
  const splitOnDisk = onDisk.get('users')!.size + onDisk.get('videos')!.size > 0;
  for (const kind of ['users', 'videos'] as const) {
    if (listedFormats(site.formats, kind === 'users' ? 'user' : 'video').length === 0) continue;
    const width = widths[kind];
    const rows = (from: number, to: number): Iterable<KeyedRow> => (kind === 'users' ? index.usersById!(from, to) : index.videosById!(from, to));
    const render = (k: number, owners: Iterable<KeyedRow>) => {
      const file = rangeFile(kind, k);
      return rangePart(file, (function* () {
        for (const owner of owners) yield* ownerUrls(index, site, kind, owner.key);
      })(), limits);
    };
    const changed = changes?.[kind];
    if (changed === undefined || changed === 'all' || !splitOnDisk) {
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
    for (const k of [...new Set([...onDisk.get(kind)!, ...again])].sort((a, b) => a - b)) {
      if (!again.has(k)) {
        listed.push(rangeFile(kind, k));
        yield { file: rangeFile(kind, k), unchanged: true };
        continue;
      }
      const part = render(k, rows(k * width, (k + 1) * width - 1));
      if (part !== null) {
        listed.push(part.file);
        yield part;
      }
    }
  }
  // An index lists 50,000 sitemaps at most: only ids spread thousands apart could need more.
  if (listed.length > limits.maxUrls) throw new Error(`the sitemap index would list ${listed.length} parts, over the sitemaps.org limit of ${limits.maxUrls}: are the row ids spread thousands apart?`);
  const sitemapIndex = new FlatXmlDocument('sitemapindex', { xmlns: NS.sitemap }, 'sitemap', ['loc']);
  for (const file of listed) sitemapIndex.entry(site.paths.siteUrl(file));
  yield { file: 'sitemap.xml', body: sitemapIndex.end() };
}

/** The sitemap format with these limits (tests use small ones to split small sites). */
export function sitemapFormat(limits: SitemapLimits = SITEMAP_LIMITS): SiteFormat & { limits: SitemapLimits } {
  if (!(limits.partUrls >= 1 && limits.partUrls <= limits.maxUrls)) throw new Error(`sitemap parts of ${limits.partUrls} URLs: must be 1 to ${limits.maxUrls}`);
  return {
    name: 'sitemap',
    scope: 'site',
    file: 'sitemap.xml',
    alsoWrites: /^sitemap-(\d+|(users|videos)--?\d+)\.xml$/,
    mediaType: 'application/xml; charset=utf-8',
    inSitemap: false,
    summary: 'sitemaps.org sitemap of every document (an index of parts past 50,000 URLs or 50 MB)',
    limits,
    render(index, site) {
      const widths = idRanges(index, site, limits);
      return widths === null
        ? renderSitemaps(sitemapUrls(index, site), site, limits.maxUrls, limits.maxBytes)
        : renderByIdRange(index, site, limits, widths);
    },
  };
}

export const sitemap = sitemapFormat();
