import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { PodcastConfig } from '../../src/config/site-config.js';
import { APPLE_PODCAST_CATEGORIES, W3C_VALIDATOR_LACKS } from '../helpers/apple-podcast-categories.js';
import { checkRssFeed, type RuleFinding } from '../helpers/feed-validator-rules.js';
import { buildInMemory, createDemoDb, createTestDb, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';

/**
 * Podcast feeds held to the W3C feed validator's rules for RSS 2.0 and the iTunes tags
 * (test/helpers/feed-validator-rules.ts), the validator itself being out of reach of the tests.
 */

const PODCAST: PodcastConfig = {
  category: 'Society & Culture > Documentary',
  explicit: false,
  owner: { name: 'Example Videos', email: 'podcasts@example.org' },
  language: null,
  locked: true,
  image: 'https://videos.example.org/static/podcast.png',
};

/** What a feed with every rule broken once is, written by hand. */
const BROKEN = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:media="http://search.yahoo.com/mrss/">
<channel><title>T</title><link>/relative</link><language>xx</language><pubDate>Mon, 02 Jan 2024 10:00:00 GMT</pubDate>
<itunes:author>${'a'.repeat(256)}</itunes:author><itunes:owner><itunes:name>N</itunes:name></itunes:owner>
<itunes:image href="https://localhost/a.jpg"/><itunes:image href="https://example.org/b.jpg"/>
<itunes:category text="Arts"><itunes:category text="Documentary"/></itunes:category><itunes:category text="Podcasting"/>
<itunes:category text="Religion &amp; Spirituality"><itunes:category text="Religion"/></itunes:category>
<itunes:explicit>yes</itunes:explicit><itunes:type>weekly</itunes:type>
<image><url>https://example.org/logo.svg</url><title>Other</title><link>https://example.org/</link></image>
<atom:link rel="not a rel" href="https://example.org/x"/>
<item><title>A &lt;/i&gt;</title><link>https://example.org/a</link><pubDate>Tue, 30 Feb 2024 10:00:00 GMT</pubDate>
<enclosure url="https://example.org/a.flv" length="-1" type="video"/><guid isPermaLink="yes">tag:example.org,2024:a</guid>
<media:content url="https://example.org/a.flv" fileSize="0" medium="film"/><media:thumbnail url="https://example.org/a.jpg" width="0"/>
<itunes:duration>1:75</itunes:duration><itunes:episodeType>clip</itunes:episodeType><itunes:explicit> true </itunes:explicit></item>
<item><description><![CDATA[<p onclick="x()"><a href="/b">B</a><script>x()</script></p>]]></description><guid isPermaLink="false">tag:example.org,2024:a</guid><guid isPermaLink="false">tag:example.org,2024:a</guid></item>
<item><title>C</title></item>
</channel></rss>`;

function errors(findings: RuleFinding[]): RuleFinding[] {
  return findings.filter((f) => f.level === 'error');
}

function rulesOf(findings: RuleFinding[], level: RuleFinding['level']): string[] {
  return [...new Set(findings.filter((f) => f.level === level).map((f) => f.rule))].sort();
}

describe("the W3C feed validator's rules (test/helpers/feed-validator-rules.ts)", () => {
  it('finds each broken rule of a feed written to break them', () => {
    const findings = checkRssFeed(BROKEN, Date.UTC(2026, 0, 1));
    expect(rulesOf(findings, 'error')).toEqual(
      [
        'channel without description',
        'date does not exist',
        'element repeated',
        'enclosure length is not a non-negative integer',
        'enclosure type is not a media type',
        'guid repeated in the channel',
        'isPermaLink is not true or false',
        'itunes:category not in Apple\'s list',
        'itunes:duration is not seconds, mm:ss or hh:mm:ss',
        'itunes:episodeType is not full, trailer or bonus',
        'itunes:explicit is not true or false',
        'itunes:owner without itunes:email',
        'itunes:type is not episodic or serial',
        'language is not an ISO 639 code',
        'link is not an absolute URI',
        'longer than 255 characters',
        'media:content fileSize is not a positive integer',
        'media:content medium unknown',
        'media:thumbnail width is not a positive integer',
        'not an http(s) URL with a dotted host',
        'permalink guid is not a URL',
        "subcategory of Arts not in the validator's list",
        "subcategory of Religion & Spirituality not in the validator's list",
        'weekday does not match the date',
      ].sort(),
    );
    // Both explicit values are wrong: `yes` (Apple's older word) and ` true ` (with spaces).
    expect(findings.filter((f) => f.rule === 'itunes:explicit is not true or false').map((f) => f.value)).toEqual(['yes', ' true ']);
    expect(rulesOf(findings, 'warning')).toEqual(
      [
        'atom:link rel not registered',
        'description holds a relative URL',
        'description holds a risky attribute',
        'description holds a risky element',
        'enclosure of a format Apple Podcasts does not play',
        'image url is not jpg, gif or png',
        "image link is not the channel's",
        "image title is not the channel's",
        'item without guid',
        'no atom:link rel="self"',
        'text holds markup',
      ].sort(),
    );
  });

  it('finds nothing in a feed that keeps them all', () => {
    const good = BROKEN.replace('<link>/relative</link><language>xx</language><pubDate>Mon, 02', '<link>https://example.org/</link><description>D</description><language>pt-BR</language><pubDate>Tue, 02')
      .replace(/<itunes:author>a+<\/itunes:author>/, '<itunes:author>A</itunes:author>')
      .replace('<itunes:name>N</itunes:name>', '<itunes:name>N</itunes:name><itunes:email>owner@example.org</itunes:email>')
      .replace('<itunes:image href="https://localhost/a.jpg"/>', '')
      .replace('<itunes:category text="Documentary"/></itunes:category><itunes:category text="Podcasting"/>', '<itunes:category text="Books"/></itunes:category><itunes:category text="Technology"/>')
      .replace('<itunes:category text="Religion"/>', '<itunes:category text="Judaism"/>')
      .replace('<itunes:explicit>yes</itunes:explicit><itunes:type>weekly</itunes:type>', '<itunes:explicit>false</itunes:explicit><itunes:type>serial</itunes:type><atom:link rel="self" type="application/rss+xml" href="https://example.org/rss"/>')
      .replace('<image><url>https://example.org/logo.svg</url><title>Other</title>', '<image><url>https://example.org/logo.png</url><title>T</title>')
      .replace('Tue, 30 Feb 2024', 'Thu, 29 Feb 2024')
      .replace('rel="not a rel"', 'rel="related"')
      .replace('A &lt;/i&gt;', 'A')
      .replace('<p onclick="x()"><a href="/b">B</a><script>x()</script></p>', '<p><a href="https://example.org/b">B</a></p>')
      .replace('a.flv" length="-1" type="video"', 'a.m4v" length="0" type="video/x-m4v"')
      .replace('isPermaLink="yes">tag:example.org,2024:a', 'isPermaLink="true">https://example.org/a')
      .replace('a.flv" fileSize="0" medium="film"', 'a.m4v" fileSize="1" medium="video"')
      .replace('width="0"', 'width="1"')
      .replace('1:75', '1:15:00')
      .replace('>clip<', '>bonus<')
      .replace('> true </itunes:explicit>', '>TRUE</itunes:explicit>')
      .replace(/<guid isPermaLink="false">tag:example.org,2024:a<\/guid><guid/, '<guid')
      .replace('<title>C</title>', '<title>C</title><guid>https://example.org/c</guid>');
    expect(checkRssFeed(good, Date.UTC(2026, 0, 1))).toEqual([]);
  });
});

describe('podcast feeds against the W3C feed validator rules', () => {
  const configs: Array<[string, PodcastConfig]> = [
    ['locked, a subcategory, its own artwork', PODCAST],
    ['a category alone, explicit, the site logo', { ...PODCAST, category: 'Technology', explicit: true, locked: false, image: null, language: 'pt-BR' }],
  ];

  it.each(configs)('hold every demo feed and archive page to them (%s)', (_, podcast) => {
    const { file } = createDemoDb();
    // A site's own logo: the default one, for a preview on localhost, is no URL Apple can fetch.
    const config = testConfig({ logoUrl: 'https://videos.example.org/static/logo.png', feeds: { podcast } });
    const { writer } = buildInMemory(file, { only: new Set(['rss', 'rss-archive']), config });
    const documents = [...writer.files].filter(([path]) => path.endsWith('.rss'));
    expect(documents.filter(([path]) => path.includes('/archive/')).length).toBeGreaterThan(0);
    const warnings: Array<RuleFinding & { path: string }> = [];
    for (const [path, body] of documents) {
      const findings = checkRssFeed(body.toString('utf8'));
      expect(errors(findings), path).toEqual([]);
      warnings.push(...findings.map((f) => ({ ...f, path })));
    }
    // What the demo's rows bring, not the renderer: Flash Video files (Apple Podcasts plays MPEG-4
    // and QuickTime) and mallory's name and titles, written to look like markup.
    expect(rulesOf(warnings, 'warning')).toEqual(['enclosure of a format Apple Podcasts does not play', 'text holds markup']);
    expect(new Set(warnings.filter((f) => f.rule === 'text holds markup').map((f) => f.path))).toEqual(new Set(['mallory/rss/index.rss']));
    expect(warnings.filter((f) => f.rule.startsWith('enclosure') && !f.value!.endsWith('.flv'))).toEqual([]);
  });

  it('hold the feed a small site makes, with every value the rules look at', () => {
    const { db, file } = createTestDb();
    const u = insertUser(db, { username: 'caster', display_name: 'Cass' });
    insertVideo(db, u.id, { public_id: 'long', duration_seconds: 28_800, file_url: 'https://cdn.example.org/v/long.mp4', file_type: 'video/mp4', created_at: T0 + 2 });
    insertVideo(db, u.id, { public_id: 'nosize', duration_seconds: null, file_size: null, file_url: 'https://cdn.example.org/v/n.m4v', file_type: 'video/x-m4v', created_at: T0 + 1 });
    const { writer } = buildInMemory(file, { only: new Set(['rss']), config: testConfig({ feeds: { podcast: PODCAST } }) });
    const body = writer.text('caster/rss/index.rss');
    expect(checkRssFeed(body)).toEqual([]);
    expect(body).toContain('<itunes:duration>28800</itunes:duration>');
    expect(body).toContain('<itunes:explicit>false</itunes:explicit>');
    expect(body).toContain('<itunes:category text="Society &amp; Culture"><itunes:category text="Documentary"/></itunes:category>');
  });
});

describe('the categories the configuration takes', () => {
  const schema = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../schemas/vidfeeds.config.schema.json'), 'utf8')) as {
    properties: { feeds: { properties: { podcast: { properties: { category: { enum: string[] } } } } } };
  };
  const allowed = schema.properties.feeds.properties.podcast.properties.category.enum;

  it("are Apple's list, every category alone and with each of its subcategories", () => {
    const apple = Object.entries(APPLE_PODCAST_CATEGORIES).flatMap(([category, subs]) => [category, ...subs.map((sub) => `${category} > ${sub}`)]);
    expect([...allowed].sort()).toEqual(apple.sort());
  });

  it('each make an itunes:category the validator takes, but for the one pair its list lacks', () => {
    const { db, file } = createTestDb();
    const u = insertUser(db, { username: 'caster' });
    insertVideo(db, u.id, { public_id: 'one', file_url: 'https://cdn.example.org/v/one.mp4', created_at: T0 });
    const flagged: string[] = [];
    for (const category of allowed) {
      const { writer } = buildInMemory(file, { only: new Set(['rss']), config: testConfig({ feeds: { podcast: { ...PODCAST, category } } }) });
      const findings = checkRssFeed(writer.text('caster/rss/index.rss'));
      if (findings.length > 0) flagged.push(category);
      expect(findings.every((f) => f.rule.startsWith('subcategory of')), category).toBe(true);
    }
    expect(flagged).toEqual(W3C_VALIDATOR_LACKS);
  });
});
