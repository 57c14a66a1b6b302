import type { SiteContext, SiteFile, SiteFormat } from './format.js';
import type { SiteIndex } from '../model/views.js';
import { FlatXmlDocument, NS } from '../render/xml.js';

/**
 * sitemap.xml: every published document at its canonical URL (formats with `inSitemap`). Past
 * 50,000 URLs or 50 MB (sitemaps.org), `sitemap.xml` becomes a sitemap index of numbered
 * sitemaps `sitemap-1.xml`, `sitemap-2.xml`, ...
 */

export const MAX_URLS_PER_SITEMAP = 50_000;
/** The sitemaps.org limit for one file, uncompressed: 52,428,800 bytes, the wrapper included. */
export const MAX_BYTES_PER_SITEMAP = 50 * 1024 * 1024;

/** Every URL the sitemap lists, in a stable order: users by name, then videos by id; never a document that failed. */
export function* sitemapUrls(index: SiteIndex, site: SiteContext): Generator<string> {
  const userFormats = site.formats.filter((f) => f.scope === 'user' && f.inSitemap);
  const videoFormats = site.formats.filter((f) => f.scope === 'video' && f.inSitemap);
  const failed = (format: string, key: string) => index.documentFailed?.(format, key) ?? false;
  for (const name of index.usernames()) {
    for (const f of userFormats) if (f.scope === 'user' && !failed(f.name, name)) yield site.paths.url(f, name);
  }
  for (const id of index.videoIds()) {
    for (const f of videoFormats) if (f.scope === 'video' && !failed(f.name, id)) yield site.paths.url(f, id);
  }
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
export function* renderSitemaps(urls: Iterable<string>, site: SiteContext, maxUrls = MAX_URLS_PER_SITEMAP, maxBytes = MAX_BYTES_PER_SITEMAP): Generator<SiteFile> {
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

export const sitemap: SiteFormat = {
  name: 'sitemap',
  scope: 'site',
  file: 'sitemap.xml',
  alsoWrites: /^sitemap-\d+\.xml$/,
  mediaType: 'application/xml; charset=utf-8',
  inSitemap: false,
  summary: 'sitemaps.org sitemap of every document (an index of numbered sitemaps past 50,000 URLs or 50 MB)',
  render: (index, site) => renderSitemaps(sitemapUrls(index, site), site),
};
