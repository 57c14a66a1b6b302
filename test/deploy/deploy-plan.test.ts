import { describe, expect, it } from 'vitest';
import { DOCUMENT_RANKS, ownedDocumentOf, planDocuments, SITE_RANKS } from '../../src/deploy/deploy-plan.js';
import type { Format, SiteFormat } from '../../src/formats/format.js';
import { FORMATS } from '../../src/formats/registry.js';
import { robots } from '../../src/formats/robots.js';
import type { Manifest } from '../../src/hosting/manifest.js';
import { routesOf } from '../../src/hosting/routes.js';

/**
 * The upload order a deploy plans, from the format descriptors alone: video documents, then user
 * documents (whose feeds and archive pages list videos), then the plain site files, the sitemap's parts, its index, and last the site files whose
 * descriptor says `deployLast` (robots.txt, which names the sitemap). The store is exercised in
 * deploy-s3.test.ts; this is the order itself, over a manifest written by hand.
 */

function manifestOf(files: readonly string[]): Manifest {
  const entry = (file: string) => ({ file, contentType: 'text/plain', cacheControl: 'no-cache', size: 1, sha256: '0', md5: '0', keys: [file], compressed: [] });
  return { generator: 'test', basePath: '', files: files.map(entry) };
}

const FILES = ['robots.txt', 'sitemap.xml', 'sitemap-users-0-9.xml', 'opensearch.xml', 'alice/rss/index.rss', '42/oembed/index.json'];

function ranks(formats: readonly Format[], files: readonly string[] = FILES): Record<string, number> {
  const documents = planDocuments(manifestOf(files), routesOf(formats), '', undefined);
  return Object.fromEntries(documents.map((d) => [d.file, d.rank]));
}

describe('the deploy plan', () => {
  it("ranks a video's documents, a user's, plain site files, sitemap parts, the sitemap index, then robots.txt", () => {
    expect(ranks(FORMATS)).toEqual({
      '42/oembed/index.json': DOCUMENT_RANKS.video,
      'alice/rss/index.rss': DOCUMENT_RANKS.user,
      'opensearch.xml': SITE_RANKS.plain,
      'sitemap-users-0-9.xml': SITE_RANKS.parts,
      'sitemap.xml': SITE_RANKS.index,
      'robots.txt': SITE_RANKS.last,
    });
  });

  it('puts last the site formats marked deployLast, whatever their name, and no other', () => {
    const humans: SiteFormat = { ...robots, name: 'humans', file: 'humans.txt', summary: 'humans.txt naming the sitemap' };
    const plainRobots: SiteFormat = { ...robots, deployLast: undefined };
    const table = [...FORMATS.filter((f) => f !== robots), humans, plainRobots];
    expect(ranks(table, [...FILES, 'humans.txt'])).toMatchObject({ 'humans.txt': SITE_RANKS.last, 'robots.txt': SITE_RANKS.plain });
  });

  it('publishes archive pages of every number a row id can give, and knows their objects as its own', () => {
    // A page is numbered by a row id, up to 2^53 - 1 (docs/database.md): 11 and 16 digits.
    const pages = ['alice/rss/archive/0/page.rss', 'alice/rss/archive/10000000207/page.rss', 'alice/atom/archive/9007199254740991/page.atom'];
    const documents = planDocuments(manifestOf(pages), routesOf(FORMATS), 'site/', undefined);
    expect(documents.map((d) => [d.file, d.format, d.rank])).toEqual([
      [pages[0], 'rss-archive', DOCUMENT_RANKS.user],
      [pages[1], 'rss-archive', DOCUMENT_RANKS.user],
      [pages[2], 'atom-archive', DOCUMENT_RANKS.user],
    ]);
    // A page's object, once uploaded, is the deploy's to replace or delete.
    expect(ownedDocumentOf(routesOf(FORMATS), 'site/', 'site/alice/rss/archive/10000000207/', undefined)).toBe(pages[1]);
    expect(ownedDocumentOf(routesOf(FORMATS), 'site/', 'site/alice/atom/archive/9007199254740991', undefined)).toBe(pages[2]);
  });
});
