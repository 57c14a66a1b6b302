import { describe, expect, it } from 'vitest';
import { createSiteContext } from '../../src/pipeline/site-context.js';
import { FORMATS } from '../../src/formats/registry.js';
import { MAX_URLS_PER_SITEMAP, renderSitemaps } from '../../src/formats/sitemap.js';
import { testConfig } from '../helpers/site-fixture.js';
import { SCHEMAS, xmllintSchema, xpath } from '../helpers/validators.js';
import { join } from 'node:path';

/** sitemaps.org: at most 50,000 URLs and 52,428,800 bytes per file; past that, an index of parts. */

const site = createSiteContext(testConfig(), FORMATS, new Date(Date.UTC(2026, 0, 1)));

function* urls(count: number, shape = (i: number) => `https://videos.example.org/user${i}/rss/`): Generator<string> {
  for (let i = 0; i < count; i++) yield shape(i);
}

function locs(document: string): string[] {
  return [...document.matchAll(/<loc>([^<]*)<\/loc>/g)].map((m) => m[1]!.replaceAll('&amp;', '&'));
}

describe('sitemap split', () => {
  it('makes an index of numbered sitemaps past 50,000 URLs, all valid against the sitemaps.org schemas', () => {
    const count = 2 * MAX_URLS_PER_SITEMAP + 7;
    const files = [...renderSitemaps(urls(count), site)];
    expect(files.map((f) => f.file)).toEqual(['sitemap-1.xml', 'sitemap-2.xml', 'sitemap-3.xml', 'sitemap.xml']);
    const index = files.at(-1)!.body;
    const parts = Object.fromEntries(files.slice(0, -1).map((f) => [f.file, f.body]));

    expect(xmllintSchema(join(SCHEMAS, 'siteindex.xsd'), { index }).ok).toBe(true);
    const validation = xmllintSchema(join(SCHEMAS, 'sitemap.xsd'), parts);
    expect(validation.ok, validation.output.slice(0, 2000)).toBe(true);
    // An independent reader of the index finds every part at its URL.
    expect(xpath(index, 'count(//*[local-name()="sitemap"])')).toBe('3');
    expect(xpath(index, 'string(//*[local-name()="sitemap"][3]/*[local-name()="loc"])')).toBe('https://videos.example.org/sitemap-3.xml');

    const listed = Object.values(parts).map(locs);
    expect(listed.map((l) => l.length)).toEqual([50_000, 50_000, 7]);
    expect(listed.flat()).toEqual([...urls(count)]);
  });

  it('keeps one sitemap.xml (a urlset, not an index) at exactly 50,000 URLs', () => {
    const files = [...renderSitemaps(urls(MAX_URLS_PER_SITEMAP), site)];
    expect(files.map((f) => f.file)).toEqual(['sitemap.xml']);
    expect(xmllintSchema(join(SCHEMAS, 'sitemap.xsd'), { sitemap: files[0]!.body }).ok).toBe(true);
  });

  it('splits by bytes too: every file within the limit, each part as full as the limit allows', () => {
    const maxBytes = 4000;
    // URLs with ampersands, escaped to &amp; in the file, and multi-byte characters, so that the
    // split must count escaped UTF-8 bytes, not characters.
    const shape = (i: number) => `https://videos.example.org/search?q=${'é'.repeat(i % 13)}&page=${i}&x=${'&'.repeat(i % 3)}`;
    const all = [...urls(300, shape)];
    const files = [...renderSitemaps(all, site, MAX_URLS_PER_SITEMAP, maxBytes)];
    const parts = files.slice(0, -1);
    expect(parts.length).toBeGreaterThan(5);
    expect(files.at(-1)!.file).toBe('sitemap.xml');
    let next = 0;
    for (const part of parts) {
      const size = Buffer.byteLength(part.body);
      expect(size, part.file).toBeLessThanOrEqual(maxBytes);
      next += locs(part.body).length;
      if (next < all.length) {
        // The next URL would not have fitted: its entry, escaped, is what the part lacks.
        const entry = `<url><loc>${all[next]!.replaceAll('&', '&amp;')}</loc></url>`;
        expect(size + Buffer.byteLength(entry), part.file).toBeGreaterThan(maxBytes);
      }
    }
    expect(next).toBe(all.length);
    const validation = xmllintSchema(join(SCHEMAS, 'sitemap.xsd'), Object.fromEntries(parts.map((p) => [p.file, p.body])));
    expect(validation.ok, validation.output.slice(0, 2000)).toBe(true);
    expect(xmllintSchema(join(SCHEMAS, 'siteindex.xsd'), { index: files.at(-1)!.body }).ok).toBe(true);
  });
});
