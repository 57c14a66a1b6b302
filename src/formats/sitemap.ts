import type { SiteFile, SiteFormat } from './format.js';
import type { SiteContext } from '../model/site-context.js';
import type { SiteIndex } from '../model/views.js';
import { NS, XmlDocument } from '../render/xml.js';

/**
 * sitemap.xml: every published document at its canonical URL (formats with `inSitemap`). Past
 * 50,000 URLs or 50 MB (sitemaps.org), `sitemap.xml` becomes a sitemap index of numbered
 * sitemaps `sitemap-1.xml`, `sitemap-2.xml`, ...
 */

export const MAX_URLS_PER_SITEMAP = 50_000;
/** The sitemaps.org limit for one file, uncompressed: 52,428,800 bytes, the wrapper included. */
export const MAX_BYTES_PER_SITEMAP = 50 * 1024 * 1024;

/** Every URL the sitemap lists, in a stable order: users by name, then videos by id. */
export function* sitemapUrls(index: SiteIndex, site: SiteContext): Generator<string> {
  const userFormats = site.formats.filter((f) => f.scope === 'user' && f.inSitemap);
  const videoFormats = site.formats.filter((f) => f.scope === 'video' && f.inSitemap);
  for (const name of index.usernames()) for (const f of userFormats) if (f.scope === 'user') yield site.paths.url(f, name);
  for (const id of index.videoIds()) for (const f of videoFormats) if (f.scope === 'video') yield site.paths.url(f, id);
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
const URLSET_WRAPPER_BYTES = Buffer.byteLength(urlset(['x'])) - entryBytes('x');

function urlset(urls: string[]): string {
  const doc = new XmlDocument('urlset', { xmlns: NS.sitemap });
  for (const url of urls) doc.root.el('url').leaf('loc', url);
  return doc.end();
}

/**
 * The sitemap files for `urls`: one `sitemap.xml`, or numbered parts of at most `maxUrls` URLs and
 * `maxBytes` bytes each and `sitemap.xml` as their index. Parts are yielded as they fill, the index
 * last, so no more than one part is in memory.
 */
export function* renderSitemaps(urls: Iterable<string>, site: SiteContext, maxUrls = MAX_URLS_PER_SITEMAP, maxBytes = MAX_BYTES_PER_SITEMAP): Generator<SiteFile> {
  const parts: string[] = [];
  let batch: string[] = [];
  let bytes = URLSET_WRAPPER_BYTES;
  for (const url of urls) {
    const size = entryBytes(url);
    if (batch.length === maxUrls || (batch.length > 0 && bytes + size > maxBytes)) {
      // More than one part: the batch becomes a numbered sitemap, written now to keep memory flat.
      parts.push(`sitemap-${parts.length + 1}.xml`);
      yield { file: parts[parts.length - 1]!, body: urlset(batch) };
      batch = [];
      bytes = URLSET_WRAPPER_BYTES;
    }
    batch.push(url);
    bytes += size;
  }
  if (parts.length === 0) {
    yield { file: 'sitemap.xml', body: urlset(batch) };
    return;
  }
  if (batch.length > 0) {
    parts.push(`sitemap-${parts.length + 1}.xml`);
    yield { file: parts[parts.length - 1]!, body: urlset(batch) };
  }
  const index = new XmlDocument('sitemapindex', { xmlns: NS.sitemap });
  for (const part of parts) index.root.el('sitemap').leaf('loc', site.paths.siteUrl(part));
  yield { file: 'sitemap.xml', body: index.end() };
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
