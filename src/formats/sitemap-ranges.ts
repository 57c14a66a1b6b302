import type { RenderedSiteFile, SiteContext, SiteFile } from './format.js';
import type { KeyedRow, ShownEntries, SiteIndex, VideoView } from '../model/views.js';
import { FlatXmlDocument } from '../render/flat-xml-document.js';
import { NS } from '../render/xml.js';
import { entryBytes, listedFormats, ownerUrls, urlset, URLSET_WRAPPER_BYTES, type OwnerKind, type SitemapEntry, type SitemapLimits, type Urlset } from './sitemap-entries.js';
import { documentHash } from '../render/document-hash.js';
import { OWNER_FIELDS, type KeptPart } from './sitemap-parts.js';
import { videoEntry } from './sitemap-video.js';

/**
 * The sitemap of a large site, split by row id (sitemap.ts says when and why): the parts
 * `sitemap-users-FROM-TO.xml` and `sitemap-videos-FROM-TO.xml`, each listing the owners whose id
 * is in its range, and the index of the parts that list something.
 */

/**
 * `sitemap-users-FROM-TO.xml`, the part of the K-th range of `width` ids. Ids below zero are
 * written with their sign: `sitemap-users--62--1.xml`.
 */
export function rangeFile(kind: OwnerKind, k: number, width: number): string {
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

/** The sitemaps.org limits, checked for one part. */
function checkPart(file: string, urls: number, bytes: number, limits: SitemapLimits): void {
  if (urls > limits.maxUrls || bytes > limits.maxBytes) {
    throw new Error(`${file} would hold ${urls} URLs in ${bytes} bytes, over the sitemaps.org limits (URLs of over 10 KB?)`);
  }
}

/** One part of a site split by id, or null when its rows list nothing (the tree path: no markup per entry). */
function rangePart(file: string, urls: Iterable<SitemapEntry>, limits: SitemapLimits, site: SiteContext): RenderedSiteFile | null {
  const part = urlset(site);
  let bytes = URLSET_WRAPPER_BYTES;
  for (const url of urls) {
    part.entry(url);
    bytes += entryBytes(url, site);
  }
  if (part.length === 0) return null;
  checkPart(file, part.length, bytes, limits);
  return { file, body: part.end() };
}

/**
 * What a part's owners read besides their rows: their documents' change times (null: no
 * `lastmod`), the videos' views, and what their entries showed when it last changed.
 */
interface PartReads {
  dates: ReadonlyMap<string, Date> | null;
  videos: ReadonlyMap<number, VideoView> | null;
  shown: ShownEntries | null;
}

/** One owner's entries in a part being made: their markup, how many, an upper bound of their bytes. */
interface OwnerMarkup {
  id: number;
  markup: string;
  urls: number;
  bytes: number;
}

/**
 * A part made of its owners' entries (by id): the file, or null when they list nothing, and the
 * part's layout, for a later build of the process to splice (`keep`: else none is made).
 */
function assemble(file: string, dated: boolean, owners: readonly OwnerMarkup[], urlset: Urlset, limits: SitemapLimits, keep: boolean): { rendered: RenderedSiteFile | null; kept: KeptPart | null } {
  let urls = 0;
  let bytes = URLSET_WRAPPER_BYTES;
  for (const owner of owners) {
    urls += owner.urls;
    bytes += owner.bytes;
  }
  if (urls > 0) checkPart(file, urls, bytes, limits);
  const body = urlset.around(owners.map((owner) => owner.markup));
  const rendered = urls === 0 ? null : { file, body };
  if (!keep) return { rendered, kept: null };
  const layout = new Float64Array(owners.length * OWNER_FIELDS);
  let at = urlset.opening().length;
  owners.forEach((owner, i) => {
    layout.set([owner.id, at, owner.markup.length, owner.urls, owner.bytes], i * OWNER_FIELDS);
    at += owner.markup.length;
  });
  return { rendered, kept: { hash: documentHash(Buffer.from(body)), dated, owners: layout } };
}

/**
 * The parts of one kind of owner split by id: what a part reads and how its owners' entries are
 * made, whole or spliced into a part kept from this process's last build (sitemap-parts.ts).
 */
class RangeParts {
  private readonly urlset: Urlset;
  private readonly dated: boolean;

  constructor(
    private readonly index: SiteIndex,
    private readonly site: SiteContext,
    private readonly kind: OwnerKind,
    readonly width: number,
    private readonly limits: SitemapLimits,
  ) {
    this.urlset = urlset(site);
    this.dated = index.lastModifiedIn !== undefined;
  }

  file(k: number): string {
    return rangeFile(this.kind, k, this.width);
  }

  rows(from: number, to: number): Iterable<KeyedRow> {
    return this.kind === 'users' ? this.index.usersById!(from, to) : this.index.videosById!(from, to);
  }

  /** The K-th part rendered whole from these owners (its rows, by id); kept for the next build when `keep`. */
  render(k: number, owners: Iterable<KeyedRow>, keep: boolean): RenderedSiteFile | null {
    const file = this.file(k);
    const [from, to] = [k * this.width, (k + 1) * this.width - 1];
    const reads = this.reads(from, to);
    // Written through xmlbuilder2 (`xmlEngine: 'builder'`), entries have no markup of their own.
    if (!this.urlset.fast) return rangePart(file, this.everyEntry(owners, reads), this.limits, this.site);
    const marked: OwnerMarkup[] = [];
    for (const owner of owners) {
      const entries = this.marked(owner.id, this.entriesOf(owner, reads));
      if (entries.urls > 0) marked.push(entries);
    }
    const cache = keep ? this.site.sitemapParts : undefined;
    const { rendered, kept } = assemble(file, this.dated, marked, this.urlset, this.limits, cache !== undefined);
    if (cache !== undefined && kept !== null) {
      cache.counts.whole++;
      cache.keep(file, kept);
    }
    return rendered;
  }

  /**
   * The K-th part again after `changed` (its owners the build's changes name): spliced into its
   * file when this process rendered it last and the file holds those bytes, as the build state
   * records them; else rendered whole.
   */
  again(k: number, changed: readonly number[]): RenderedSiteFile | null {
    const file = this.file(k);
    const cache = this.site.sitemapParts;
    const kept = cache?.take(file);
    const onDisk = kept === undefined ? null : (this.index.changes?.recorded?.(file) ?? null);
    if (cache === undefined || kept === undefined || onDisk === null || kept.dated !== this.dated || !kept.hash.equals(onDisk.hash)) {
      return this.render(k, this.rows(k * this.width, (k + 1) * this.width - 1), true);
    }
    const moved = new Map<number, OwnerMarkup | null>();
    for (const id of changed) {
      const [owner] = this.rows(id, id);
      const entries = owner === undefined ? null : this.marked(id, this.entriesOf(owner, this.reads(id, id)));
      moved.set(id, entries !== null && entries.urls > 0 ? entries : null);
    }
    const owners: OwnerMarkup[] = [];
    const layout = kept.owners;
    for (let i = 0; i < layout.length; i += OWNER_FIELDS) {
      const id = layout[i]!;
      if (moved.has(id)) continue;
      const at = layout[i + 1]!;
      owners.push({ id, markup: onDisk.text.slice(at, at + layout[i + 2]!), urls: layout[i + 3]!, bytes: layout[i + 4]! });
    }
    for (const entries of moved.values()) if (entries !== null) owners.push(entries);
    const { rendered, kept: again } = assemble(file, this.dated, owners.sort((a, b) => a.id - b.id), this.urlset, this.limits, true);
    cache.counts.spliced++;
    cache.keep(file, again!);
    return rendered;
  }

  /** What the owners with `from <= id <= to` read besides their rows (PartReads). */
  private reads(from: number, to: number): PartReads {
    const dates = this.index.lastModifiedIn?.(this.kind, from, to) ?? null;
    const videos = this.kind === 'videos' ? new Map([...(this.index.videoViewsById?.(from, to) ?? [])].map((v) => [v.id, v])) : null;
    const shown = this.kind === 'videos' ? (this.index.shownEntriesIn?.(from, to) ?? null) : null;
    return { dates, videos, shown };
  }

  private *everyEntry(owners: Iterable<KeyedRow>, reads: PartReads): Generator<SitemapEntry> {
    for (const owner of owners) yield* this.entriesOf(owner, reads);
  }

  /** An owner's entries: its documents' URLs, then a video's own page. */
  private entriesOf(owner: KeyedRow, reads: PartReads): SitemapEntry[] {
    const entries = ownerUrls(this.index, this.site, this.kind, owner.key, reads.dates);
    const video = reads.videos?.get(owner.id);
    if (video !== undefined) entries.push(videoEntry(video, this.site, reads.dates, reads.shown));
    return entries;
  }

  private marked(id: number, entries: readonly SitemapEntry[]): OwnerMarkup {
    let markup = '';
    let bytes = 0;
    for (const entry of entries) {
      markup += this.urlset.markupOf(entry, this.dated);
      bytes += entryBytes(entry, this.site);
    }
    return { id, markup, urls: entries.length, bytes };
  }
}

/**
 * The parts of a site split by id, then the index. With `index.changes` and parts of the same
 * split on disk, only the parts holding a changed owner are rendered again (spliced when this
 * process kept them, `RangeParts.again`); the others are kept (`unchanged`), and a part whose
 * owners all went is not written, so the build prunes it.
 */
export function* renderByIdRange(index: SiteIndex, site: SiteContext, limits: SitemapLimits, widths: Record<OwnerKind, number>): Generator<SiteFile> {
  const listed: string[] = [];
  const changes = index.changes;
  const onDisk = partsOnDisk(changes?.siteFilesOnDisk ?? [], widths);
  for (const kind of ['users', 'videos'] as const) {
    if (listedFormats(site.formats, kind === 'users' ? 'user' : 'video').length === 0) continue;
    const parts = new RangeParts(index, site, kind, widths[kind], limits);
    const width = parts.width;
    const changed = changes?.[kind];
    const kept = onDisk[kind];
    // No part of this layout on disk (the last build made one sitemap.xml, or no such owner was
    // listed, or the width moved): every range is rendered.
    if (changed === undefined || changed === 'all' || kept === null || kept.size === 0) {
      // Every row of the kind, by id, cut where the range changes.
      let k: number | null = null;
      let group: KeyedRow[] = [];
      const flush = () => {
        const part = k === null ? null : parts.render(k, group, false);
        if (part !== null) listed.push(part.file);
        group = [];
        return part;
      };
      for (const row of parts.rows(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)) {
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
    const again = new Map<number, number[]>();
    for (const id of changed) {
      const k = Math.floor(id / width);
      again.set(k, [...(again.get(k) ?? []), id]);
    }
    for (const k of [...new Set([...kept, ...again.keys()])].sort((a, b) => a - b)) {
      const ids = again.get(k);
      if (ids === undefined) {
        const file = parts.file(k);
        listed.push(file);
        yield { file, unchanged: true };
        continue;
      }
      const part = parts.again(k, ids);
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
