import { describe, expect, it } from 'vitest';
import { FORMATS } from '../../src/formats/registry.js';
import { routesOf, type KeyedFormat } from '../../src/hosting/routes.js';
import { SitePaths } from '../../src/paths/site-paths.js';
import {
  checkPlaces,
  filePattern,
  keyedFile,
  keyedUrlPaths,
  keyProblem,
  matchFile,
  matchRoute,
  splitUrlPath,
  urlPattern,
  type KeyedPlace,
} from '../../src/paths/url-scheme.js';
import { testConfig } from '../helpers/site-fixture.js';

/** The URL scheme (src/paths/url-scheme.ts): key and format to file and URL, and back. */

const routes = routesOf(FORMATS);
// The keyed documents a server answers for (the head snippet file is none).
const keyed = FORMATS.filter((f): f is KeyedFormat => f.scope !== 'site' && f.served !== false);

describe('the URL scheme', () => {
  it('takes every keyed document from its URL to its file and back, for awkward keys too', () => {
    const paths = new SitePaths('https://example.org/vi deos', testConfig().pages, FORMATS);
    for (const key of ['alice', 'zoë', 'a b', 'x%2Fy', 'نور', '🎬']) {
      for (const format of keyed) {
        // A paged document's pages: the first, another, and ones of many digits. A page is numbered
        // by a row id, up to 2^53 - 1 (docs/database.md): 11 digits as ids past 10^10 give, and 16.
        for (const page of format.paged === undefined ? [undefined] : [0, 7, 123456789, 10_000_000_207, Number.MAX_SAFE_INTEGER]) {
          const file = keyedFile(format, key, page);
          expect(file).toBe(page === undefined ? `${key}/${format.dir}/${format.file}` : `${key}/${format.dir}/${format.paged}/${page}/${format.file}`);
          // The public URL, as a server receives its path, leads back to the same document and file.
          const url = new URL(paths.url(format, key, page));
          const segments = splitUrlPath(url.pathname, paths.basePath);
          const match = { kind: 'keyed', format, key, file, ...(page === undefined ? {} : { page }) };
          expect(matchRoute(routes, segments!), `${format.name} of ${key}`).toEqual(match);
          // And the file leads back to its document, and to its URL.
          expect(matchFile(routes, file)).toEqual(match);
          expect(paths.urlOfFile(file)).toBe(paths.url(format, key, page));
        }
      }
    }
  });

  it('numbers the pages of a paged document one way only', () => {
    const archive = keyed.find((f) => f.name === 'rss-archive')!;
    expect(keyedUrlPaths(archive, ':key', 3)).toEqual([':key/rss/archive/3/', ':key/rss/archive/3']);
    expect(matchRoute(routes, ['alice', 'rss', 'archive', '3'])).toMatchObject({ file: 'alice/rss/archive/3/page.rss', page: 3 });
    expect(matchRoute(routes, ['alice', 'rss', 'archive', '10000000482'])).toMatchObject({ file: 'alice/rss/archive/10000000482/page.rss', page: 10_000_000_482 });
    expect(matchFile(routes, 'alice/atom/archive/9007199254740991/page.atom')).toMatchObject({ page: Number.MAX_SAFE_INTEGER });
    // Past 2^53 - 1 a number no longer reads back as itself (9007199254740993 would read as
    // ...992): no row id is that large, so no page is, and such a URL names none.
    for (const page of ['03', '-1', '+1', '1e3', 'x', '', '9007199254740992', '9999999999999999', '12345678901234567']) {
      expect(matchRoute(routes, ['alice', 'rss', 'archive', page, '']), page).toBeNull();
      expect(matchFile(routes, `alice/rss/archive/${page}/page.rss`), page).toBeNull();
    }
    expect(matchRoute(routes, ['alice', 'rss', 'archive', '3', 'page.rss'])).toBeNull();
    expect(matchRoute(routes, ['alice', 'rss', 'archive', ''])).toBeNull();
    expect(matchFile(routes, 'alice/rss/archive/03/page.rss')).toBeNull();
    expect(matchFile(routes, 'alice/rss/archive/3/index.rss')).toBeNull();
    expect(() => keyedFile(archive, 'alice')).toThrow(/numbered/);
  });

  it('answers a directory index with and without its final slash, and nothing else', () => {
    const rss = keyed.find((f) => f.name === 'rss')! as KeyedPlace;
    expect(keyedUrlPaths(rss, ':key')).toEqual([':key/rss/', ':key/rss']);
    expect(matchRoute(routes, ['alice', 'rss'])).toMatchObject({ file: 'alice/rss/index.rss' });
    expect(matchRoute(routes, ['alice', 'rss', 'index.rss'])).toBeNull();
    const xml = keyed.find((f) => f.urlName === 'xml')!;
    expect(keyedUrlPaths(xml, 'v1')).toEqual(['v1/oembed/xml']);
  });

  it('publishes a key only by the one rule, and refuses the same keys in URLs', () => {
    const site = FORMATS.filter((f) => f.scope === 'site');
    for (const bad of ['', '.', '..', '.hidden', 'a/b', 'a\\b', ' pad', 'robots.txt', 'SITEMAP.XML', 'sitemap-2.xml', 'sitemap-users-3.xml', 'sitemap-users-71-141.xml', 'Sitemap-Videos--500--1.xml', 'Sitemap-Videos--1.xml', 'robots.txt.gz', 'a\u202Eb']) {
      expect(keyProblem(bad, site), JSON.stringify(bad)).not.toBeNull();
      if (!bad.includes('/') && bad !== '' && bad !== '.' && bad !== '..') expect(matchRoute(routes, [bad, 'rss', '']), JSON.stringify(bad)).toBeNull();
    }
    expect(keyProblem('alice', site)).toBeNull();
    expect(new SitePaths('https://example.org', testConfig().pages, FORMATS).problem('robots.txt')).toBe(keyProblem('robots.txt', site));
  });

  it('writes the patterns vidfeeds formats prints from the same functions', () => {
    const rss = FORMATS.find((f) => f.name === 'rss')!;
    const sitemap = FORMATS.find((f) => f.name === 'sitemap')!;
    expect([urlPattern(rss), filePattern(rss)]).toEqual(['/<user>/rss/', '<user>/rss/index.rss']);
    expect([urlPattern(sitemap), filePattern(sitemap)]).toEqual(['/sitemap.xml', 'sitemap.xml']);
  });

  it('refuses a table where two documents claim one file or URL, naming both', () => {
    expect(() => checkPlaces(FORMATS)).not.toThrow();
    const rss = FORMATS.find((f) => f.name === 'rss')!;
    expect(() => checkPlaces([...FORMATS, { ...rss, name: 'rss-copy' }])).toThrow(/rss-copy and rss both claim file <key>\/rss\/index.rss/);
  });
});
