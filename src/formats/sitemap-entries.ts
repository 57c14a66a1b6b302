import type { Format, SiteContext, UserFormat, VideoFormat } from './format.js';
import type { SiteIndex, VideoView } from '../model/views.js';
import { rfc3339 } from '../render/dates.js';
import { FlatXmlDocument, type EntryChild } from '../render/flat-xml-document.js';
import type { XmlElement } from '../render/xml-element.js';
import { NS } from '../render/xml.js';
import { buildVideoElement, describable, SITEMAP_VIDEO_NS, videoElementBytes } from './sitemap-video.js';

/**
 * What every sitemap file is made of (sitemap.ts): its limits, the `<url>` entries of an owner's
 * documents, and the urlset that holds them, for the sitemap in one file and for the parts of a
 * sitemap split by id (sitemap-ranges.ts) alike.
 */

export interface SitemapLimits {
  /** URLs in one file at most (sitemaps.org: 50,000). */
  maxUrls: number;
  /** Bytes in one file at most, uncompressed (sitemaps.org: 50 MB). */
  maxBytes: number;
  /**
   * URLs a part split by id holds at most. Every change to an owner rewrites the part that lists
   * it (its lastmod moved), reading each of its owners' rows and dates again, or, in a watch that
   * rendered the part before, reading the part's file to splice the owner in (sitemap-parts.ts):
   * this sets what a change costs beside its own documents (docs/performance.md, "Figures
   * behind the code"), and the size of the object a deploy sends for it.
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

/** One `<url>`: its location, and when its document last changed when that is known; a video's page also describes the video. */
export interface SitemapEntry {
  loc: string;
  lastmod: string | null;
  video?: VideoView;
}

export type OwnerKind = 'users' | 'videos';

export function listedFormats(formats: readonly Format[], scope: 'user' | 'video'): Array<UserFormat | VideoFormat> {
  return formats.filter((f): f is UserFormat | VideoFormat => f.scope === scope && f.inSitemap);
}

/**
 * The URLs of one owner's listed documents, leaving out those that failed in this build, with
 * their lastmod from `dates` (the owner's part's, by file under out/; null: no lastmod).
 */
export function ownerUrls(index: SiteIndex, site: SiteContext, kind: OwnerKind, key: string, dates: ReadonlyMap<string, Date> | null): SitemapEntry[] {
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

/**
 * Bytes one `<url>` entry takes once escaped: `&` becomes `&amp;`, `<`/`>` `&lt;`/`&gt;` (a URL
 * from site-paths holds none of them but `&`, from a configured page template). An upper bound.
 */
export function entryBytes(entry: SitemapEntry, site: SiteContext): number {
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
export const URLSET_WRAPPER_BYTES =
  Buffer.byteLength(new FlatXmlDocument('urlset', URLSET_ATTRS, 'url', ['loc']).entry('x').end()) - Buffer.byteLength('<url><loc>x</loc></url>');

/**
 * An empty urlset whose entries are written as they are added, so a part is never held as a tree:
 * every entry with its `lastmod` when the build knows when documents changed, else none has one.
 */
export class Urlset {
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
    const child = this.videoChild(entry);
    if (this.dated) this.withDates.entryWith([entry.loc, entry.lastmod ?? ''], child);
    else this.plain.entryWith([entry.loc], child);
    return this;
  }

  end(): string {
    return this.dated === true ? this.withDates.end() : this.plain.end();
  }

  /** Whether entries have markup of their own (`markupOf`), which a part kept between builds needs. */
  get fast(): boolean {
    return this.plain.takesFastPath && this.withDates.takesFastPath;
  }

  /** One entry's markup, dated as the part is (`dated`); on the fast path only. */
  markupOf(entry: SitemapEntry, dated: boolean): string {
    return (dated ? this.withDates : this.plain).markup(dated ? [entry.loc, entry.lastmod ?? ''] : [entry.loc], this.videoChild(entry));
  }

  /** The urlset holding these entries' markup. */
  around(markup: readonly string[]): string {
    return this.plain.around(markup);
  }

  /** What comes before the first entry in a urlset that has entries. */
  opening(): string {
    return this.plain.opening();
  }

  private videoChild(entry: SitemapEntry): EntryChild | undefined {
    const { video } = entry;
    const site = this.site;
    return video === undefined || !describable({ ...entry, video }, site)
      ? undefined
      : { name: 'video:video', build: (element: XmlElement) => buildVideoElement(element, { ...entry, video }, site) };
  }
}

export function urlset(site: SiteContext): Urlset {
  return new Urlset(site);
}
