import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { buildInMemory, createDemoDb, createTestDb, insertUser, insertVideo, testConfig } from '../helpers/site-fixture.js';
import { jing, SCHEMAS, xmllintDtd, xmllintSchema, xpath } from '../helpers/validators.js';

describe('site-wide files', () => {
  it('validates sitemap, opensearch and crossdomain of the demo site against their schemas', () => {
    const f = createDemoDb();
    const { writer } = buildInMemory(f.file, { only: new Set(['sitemap', 'robots', 'opensearch', 'crossdomain']) });
    expect([...writer.files.keys()].sort()).toEqual(['crossdomain.xml', 'opensearch.xml', 'robots.txt', 'sitemap.xml']);
    expect(xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), { sitemap: writer.text('sitemap.xml') })).toMatchObject({ ok: true });
    expect(jing(join(SCHEMAS, 'opensearch-1.1-description.rnc'), { os: writer.text('opensearch.xml') })).toEqual({ ok: true, output: '' });
    expect(xmllintDtd(join(SCHEMAS, 'cross-domain-policy.dtd'), { cd: writer.text('crossdomain.xml') })).toEqual({ ok: true, output: '' });
  });

  it('lists every published document and nothing private in the sitemap', () => {
    const { db, file } = createTestDb();
    const a = insertUser(db, { username: 'ann' });
    insertUser(db, { username: 'sus', state: 'suspended' });
    insertUser(db, { username: 'zoë' });
    insertVideo(db, a.id, { public_id: 'pub' });
    insertVideo(db, a.id, { public_id: 'hidden-one', visibility: 'private' });
    const sitemap = buildInMemory(file, { only: new Set(['sitemap']) }).writer.text('sitemap.xml');
    const locs = [...sitemap.matchAll(/<loc>([^<]*)<\/loc>/g)].map((m) => m[1]);
    expect(locs).toContain('https://videos.example.org/ann/rss/');
    expect(locs).toContain('https://videos.example.org/ann/atom/');
    expect(locs).toContain('https://videos.example.org/zo%C3%AB/rss/');
    expect(locs.join('\n')).not.toMatch(/sus|hidden-one/);
  });

  it('allows no other domain by default and the configured ones otherwise', () => {
    const { db, file } = createTestDb();
    insertUser(db);
    const closed = buildInMemory(file, { only: new Set(['crossdomain']) }).writer.text('crossdomain.xml');
    expect(closed).not.toContain('allow-access-from');
    expect(closed).toContain('permitted-cross-domain-policies="master-only"');
    const config = testConfig({ crossDomain: { allowAccessFrom: ['*.partner.example', 'cdn.example.com'], permittedCrossDomainPolicies: 'none' } });
    const open = buildInMemory(file, { only: new Set(['crossdomain']), config }).writer.text('crossdomain.xml');
    expect(xmllintDtd(join(SCHEMAS, 'cross-domain-policy.dtd'), { open })).toEqual({ ok: true, output: '' });
    expect(open).toContain('<allow-access-from domain="*.partner.example" secure="true"/>');
    expect(open).toContain('permitted-cross-domain-policies="none"');
  });

  it('writes the OpenSearch Image only with its height, width and type, as the W3C feed validator requires', () => {
    const { db, file } = createTestDb();
    insertUser(db, { username: 'ann' });
    const logo = { logoUrl: 'https://videos.example.org/static/logo.png' };
    const image = (config: Parameters<typeof testConfig>[0]) => {
      const os = buildInMemory(file, { config: testConfig(config), only: new Set(['opensearch']) }).writer.text('opensearch.xml');
      expect(jing(join(SCHEMAS, 'opensearch-1.1-description.rnc'), { os })).toEqual({ ok: true, output: '' });
      const at = (what: string) => xpath(os, `string(/*[local-name()='OpenSearchDescription']/*[local-name()='Image']${what})`);
      return { count: xpath(os, "count(//*[local-name()='Image'])"), url: at(''), height: at('/@height'), width: at('/@width'), type: at('/@type') };
    };
    // The logo's size and type unknown (the default): no Image rather than one the validator refuses.
    expect(image(logo).count).toBe('0');
    expect(image({ ...logo, logoWidth: 64, logoHeight: 32, logoType: 'image/png' })).toEqual({
      count: '1',
      url: 'https://videos.example.org/static/logo.png',
      height: '32',
      width: '64',
      type: 'image/png',
    });
    expect(image({ logoUrl: '', logoWidth: null, logoHeight: null, logoType: null }).count).toBe('0');
    // Given in part, or without a logo, the configuration is refused, naming the settings.
    expect(() => testConfig({ ...logo, logoWidth: 64 })).toThrow('logoWidth/logoHeight/logoType go together: set all three, or none (null)');
    expect(() => testConfig({ logoUrl: '', logoWidth: 64, logoHeight: 32, logoType: 'image/png' })).toThrow('logoUrl must be set when logoWidth, logoHeight and logoType are');
    expect(() => testConfig({ ...logo, logoWidth: 64, logoHeight: 32, logoType: 'png' })).toThrow('logoType must be an image media type such as image/png, not "png"');
    expect(() => testConfig({ ...logo, logoWidth: 0, logoHeight: 32, logoType: 'image/png' })).toThrow('logoWidth must be from 1 to 10000, not 0');
  });

  it('follows a base URL with a path, and cuts the OpenSearch short name to 16 characters', () => {
    const { db, file } = createTestDb();
    insertUser(db, { username: 'ann' });
    const config = testConfig({ baseUrl: 'https://example.org/videos', siteName: 'A very long site name indeed', robots: { disallow: ['/private/'] } });
    const { writer } = buildInMemory(file, { config });
    expect(writer.text('robots.txt')).toContain('Sitemap: https://example.org/videos/sitemap.xml');
    expect(writer.text('robots.txt')).toContain('Disallow: /videos/private/');
    expect(writer.text('robots.txt')).toMatch(/^# Usage terms/);
    expect(writer.text('sitemap.xml')).toContain('<loc>https://example.org/videos/ann/rss/</loc>');
    const os = writer.text('opensearch.xml');
    expect(jing(join(SCHEMAS, 'opensearch-1.1-description.rnc'), { os })).toEqual({ ok: true, output: '' });
    expect(os).toContain('<ShortName>A very long site</ShortName>');
    expect(os).toContain('template="https://example.org/videos/search?q={searchTerms}"');
    expect(writer.text('ann/rss/index.rss')).toContain('<link>https://example.org/videos/ann/</link>');
  });
});
