import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { HttpResult } from './http.js';
import { xmllintWellFormed } from './validators.js';
import { spawnSync } from 'node:child_process';

/**
 * The URL table (docs/formats.md, `vidfeeds formats`), written out here on purpose: the servers
 * are generated from the format table in src/, and this independent copy is what they are
 * checked against.
 */
export const URL_TABLE: ReadonlyArray<{ url: string; file: string; type: string; optional?: true }> = [
  { url: '/<user>/openrecommender/', file: '<user>/openrecommender/index.xml', type: 'application/xml; charset=utf-8' },
  { url: '/<user>/foaf/', file: '<user>/foaf/index.rdf', type: 'application/rdf+xml; charset=utf-8' },
  { url: '/<user>/hcard/', file: '<user>/hcard/index.html', type: 'text/html; charset=utf-8' },
  { url: '/<user>/xspf/', file: '<user>/xspf/index.xspf', type: 'application/xspf+xml; charset=utf-8' },
  { url: '/<user>/apml/', file: '<user>/apml/index.apml', type: 'application/xml+apml; charset=utf-8' },
  { url: '/<user>/opml/', file: '<user>/opml/index.opml', type: 'text/x-opml; charset=utf-8' },
  { url: '/<user>/rss/', file: '<user>/rss/index.rss', type: 'application/rss+xml; charset=utf-8' },
  { url: '/<user>/atom/', file: '<user>/atom/index.atom', type: 'application/atom+xml; charset=utf-8' },
  // RFC 5005 archive pages, N the page's number: only for users with more uploads (groups) than the feed holds.
  { url: '/<user>/rss/archive/<N>/', file: '<user>/rss/archive/<N>/page.rss', type: 'application/rss+xml; charset=utf-8' },
  { url: '/<user>/atom/archive/<N>/', file: '<user>/atom/archive/<N>/page.atom', type: 'application/atom+xml; charset=utf-8' },
  { url: '/<video>/oembed/', file: '<video>/oembed/index.json', type: 'application/json; charset=utf-8' },
  { url: '/<video>/oembed/json', file: '<video>/oembed/json', type: 'application/json; charset=utf-8' },
  { url: '/<video>/oembed/xml', file: '<video>/oembed/xml', type: 'text/xml; charset=utf-8' },
  { url: '/<video>/oembed/html', file: '<video>/oembed/html', type: 'text/html; charset=utf-8' },
  { url: '/<video>/embed/', file: '<video>/embed/index.html', type: 'text/html; charset=utf-8' },
  { url: '/opensearch.xml', file: 'opensearch.xml', type: 'application/opensearchdescription+xml; charset=utf-8' },
  { url: '/sitemap.xml', file: 'sitemap.xml', type: 'application/xml; charset=utf-8' },
  { url: '/robots.txt', file: 'robots.txt', type: 'text/plain; charset=utf-8' },
  { url: '/crossdomain.xml', file: 'crossdomain.xml', type: 'text/x-cross-domain-policy' },
  // Written only when the configuration has an IndexNow key.
  { url: '/indexnow-key.txt', file: 'indexnow-key.txt', type: 'text/plain; charset=utf-8', optional: true },
];

export interface ServedUrl {
  /** Request target below the base path, percent-encoded. */
  target: string;
  /** File under the tree whose bytes the answer must be. */
  file: string;
  type: string;
}

/** An archive page: the user, the feed it belongs to, its number. */
export interface ArchivePageOf {
  user: string;
  feed: 'rss' | 'atom';
  page: number;
}

/**
 * Every URL form of the table for the given users and videos: directory URLs with and without
 * their final slash, and the oEmbed endpoint with `?format=json` and `?format=xml`; the archive
 * pages of `archives`, each a page of one feed of one user.
 */
export function servedUrls(users: readonly string[], videos: readonly string[], archives: ReadonlyArray<ArchivePageOf> = []): ServedUrl[] {
  const out: ServedUrl[] = [];
  for (const row of URL_TABLE) {
    if (row.optional) continue;
    const paged = row.url.includes('<N>');
    const pages = archives.filter((a) => row.url.startsWith(`/<user>/${a.feed}/`));
    const keys = paged ? pages.map((a) => a.user) : row.url.includes('<user>') ? users : row.url.includes('<video>') ? videos : [''];
    for (const [i, key] of keys.entries()) {
      const fill = (text: string, encode: boolean) =>
        text.replace(/<user>|<video>/, encode ? encodeURIComponent(key) : key).replace('<N>', paged ? String(pages[i]!.page) : '<N>');
      const target = fill(row.url, true);
      const file = fill(row.file, false);
      out.push({ target, file, type: row.type });
      if (target.endsWith('/') && target !== '/') out.push({ target: target.slice(0, -1), file, type: row.type });
      if (row.url === '/<video>/oembed/') {
        out.push({ target: `${target}?format=json`, file, type: row.type });
        out.push({ target: `${target}?format=xml`, file: fill('<video>/oembed/xml', false), type: 'text/xml; charset=utf-8' });
      }
    }
  }
  return out;
}

/** Paths no server may answer with a file, below the base path. */
export const REFUSED_PATHS: readonly string[] = [
  '/',
  '/.secret',
  '/.vidfeeds-staging/x',
  '/.vidfeeds-build.json',
  '/.vidfeeds-build.shard-2-of-8.json',
  '/alice/.secret',
  '/alice',
  '/alice/',
  '/alice/rss/index.rss',
  '/alice/rss/x',
  '/alice/rss//',
  '/alice//rss/',
  '//alice/rss/',
  '/alice/./rss/',
  '/x/../alice/rss/',
  '/..%2falice/rss/',
  '/%2e%2e/alice/rss/',
  '/.%2e/alice/rss/',
  '/alice%2frss/',
  '/alice%2Frss/',
  '/alice%5crss/',
  '/%00/rss/',
  '/carol/rss/',
  '/nobody-at-all/rss/',
  '/robots.txt/',
  '/sitemap-99.xml',
  '/alice/rss/%2e%2e/%2e%2e/robots.txt',
  '/alice/rss/archive/',
  '/alice/rss/archive/00/',
  '/alice/rss/archive/-1/',
  '/alice/rss/archive/x/',
  '/alice/rss/archive/0/page.rss',
  '/alice/atom/archive/0/x',
];

/** Checks an answer against its row: status, exact Content-Type, the file's bytes, and a parse by an independent consumer. */
export function expectServed(answer: HttpResult, url: ServedUrl, root: string, where: string): void {
  const label = `${where} ${url.target}`;
  expect(answer.status, label).toBe(200);
  expect(answer.headers['content-type'], label).toBe(url.type);
  expect(answer.headers.location, label).toBeUndefined();
  const expected = readFileSync(join(root, url.file));
  expect(answer.headers['content-encoding'], label).toBeUndefined();
  expect(answer.body.equals(expected), `${label}: the bytes of ${url.file}`).toBe(true);
}

/** Parses every distinct body with a consumer that knows its type: xmllint (XML, HTML), JSON.parse. */
export function expectBodiesParse(urls: readonly ServedUrl[], root: string): void {
  const xml: Record<string, string> = {};
  const html: string[] = [];
  for (const url of urls) {
    const body = readFileSync(join(root, url.file), 'utf8');
    const bare = url.type.split(';')[0]!;
    if (bare === 'application/json') expect(() => JSON.parse(body), url.file).not.toThrow();
    else if (bare === 'text/html') html.push(join(root, url.file));
    else if (bare === 'text/plain') expect(body, url.file).toMatch(/^Sitemap: https?:\/\//m);
    else xml[url.file] = body;
  }
  if (Object.keys(xml).length > 0) expect(xmllintWellFormed(xml).output).toBe('');
  for (const file of new Set(html)) {
    expect(existsSync(file)).toBe(true);
    const result = spawnSync('xmllint', ['--html', '--noout', '--nonet', file], { encoding: 'utf8' });
    // libxml2's HTML parser reports what it cannot read; it knows no HTML5 elements (<video>, <track>).
    const problems = `${result.stdout}${result.stderr}`.split('\n').filter((l) => /error/.test(l) && !/Tag (video|source|track) invalid/.test(l));
    expect(problems, file).toEqual([]);
  }
}
