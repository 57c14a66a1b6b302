import { describe, expect, it } from 'vitest';
import type { SiteContext } from '../../src/formats/format.js';
import { FORMATS } from '../../src/formats/registry.js';
import { planArchivePages } from '../../src/formats/archive-places.js';
import { rssArchive } from '../../src/formats/archives.js';
import { captionsType, PODCAST_NS, podcastGuid } from '../../src/formats/podcast-tags.js';
import { itemDescription, rss } from '../../src/formats/rss.js';
import type { UserBundle, VideoView } from '../../src/model/views.js';
import { createSiteContext, SAMPLE_VIDEO } from '../../src/pipeline/render/site-context.js';
import { rfc822 } from '../../src/render/dates.js';
import { htmlText } from '../../src/render/xml-text.js';
import { NS, xmlDocument } from '../../src/render/xml.js';
import type { XmlEngine } from '../../src/render/xml-engine.js';
import { buildInMemory, createDemoDb, createTestDb, insertRow, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';
import { checkRssFeed } from '../helpers/feed-validator-rules.js';
import { MARKUP_TEXTS as TEXTS, randomChoices, wellFormed } from '../helpers/random-markup.js';
import { feedparser, xmllintWellFormed, xpath } from '../helpers/validators.js';

describe('RSS 2.0 feed of latest uploads', () => {
  it('lists the 20 newest public uploads, newest first, as feedparser reads them', () => {
    const { db, file } = createTestDb();
    const u = insertUser(db, { username: 'uploader' });
    for (let i = 0; i < 25; i++) insertVideo(db, u.id, { public_id: `clip${i}`, title: `Clip ${i}`, created_at: T0 + i * 1000 });
    insertVideo(db, u.id, { public_id: 'secret', title: 'Secret clip', visibility: 'private', created_at: T0 + 99_999 });
    const { writer } = buildInMemory(file, { only: new Set(['rss']) });
    const body = writer.text('uploader/rss/index.rss');
    const feed = feedparser({ rss: body }).rss!;
    expect(feed.bozo).toBe(false);
    expect(feed.version).toBe('rss20');
    expect(feed.entries.map((e) => e.title)).toEqual(Array.from({ length: 20 }, (_, i) => `Clip ${24 - i}`));
    expect(body).not.toContain('Secret clip');
    expect(feed.entries[0]!.link).toBe('https://videos.example.org/clip24/embed/');
    expect(feed.entries[0]!.author).toBe('uploader');
    expect(feed.feed.link).toBe('https://videos.example.org/uploader/');
  });

  it('carries the seed item description and Media RSS', () => {
    const { db, file } = createTestDb();
    const u = insertUser(db, { username: 'tagger' });
    const v = insertVideo(db, u.id, { public_id: 'tagged', description: 'Plain words', duration_seconds: 125, created_at: T0 });
    insertRow(db, 'tags', { id: 1, name: 'cats' });
    insertRow(db, 'video_tags', { video_id: v.id, tag_id: 1 });
    const { writer } = buildInMemory(file, { only: new Set(['rss']) });
    const entry = feedparser({ rss: writer.text('tagger/rss/index.rss') }).rss!.entries[0]!;
    const html = entry.summary as string;
    expect(html).toContain(`src="https://cdn.example.org/t/${v.id}.jpg"`);
    expect(html).toContain('Plain words');
    expect(html).toContain('Added by <a href="https://videos.example.org/tagger/">tagger</a>');
    expect(html).toContain('<a href="https://videos.example.org/tags/cats/" rel="tag">cats</a>');
    expect(html).toContain('Date: 2024-01-01');
    const media = entry.media_content as Array<Record<string, string>>;
    expect(media[0]).toMatchObject({ url: 'https://cdn.example.org/v/' + v.id + '.flv', duration: '125', medium: 'video' });
    expect((entry.media_thumbnail as Array<Record<string, string>>)[0]!.url).toBe(`https://cdn.example.org/t/${v.id}.jpg`);
    const enclosure = (entry.links as Array<Record<string, string>>).find((l) => l.rel === 'enclosure');
    expect(enclosure).toMatchObject({ length: '123456', type: 'video/x-flv', href: `https://cdn.example.org/v/${v.id}.flv` });
  });

  it('gives every item its enclosure, length="0" where the size is unknown (RSS Best Practices Profile)', () => {
    const { db, file } = createTestDb();
    const u = insertUser(db, { username: 'sizes' });
    const known = insertVideo(db, u.id, { public_id: 'known', created_at: T0 + 2 });
    const unknown = insertVideo(db, u.id, { public_id: 'unknown', file_size: null, created_at: T0 + 1 });
    const { writer } = buildInMemory(file, { only: new Set(['rss']) });
    const entries = feedparser({ rss: writer.text('sizes/rss/index.rss') }).rss!.entries;
    const enclosures = entries.map((e) => (e.links as Array<Record<string, string>>).find((l) => l.rel === 'enclosure'));
    expect(enclosures).toEqual([
      expect.objectContaining({ length: '123456', href: `https://cdn.example.org/v/${known.id}.flv` }),
      expect.objectContaining({ length: '0', href: `https://cdn.example.org/v/${unknown.id}.flv` }),
    ]);
  });

  it('leaves out a title blank once XML can carry it, and the item keeps its description', () => {
    const { db, file } = createTestDb();
    const u = insertUser(db, { username: 'blank' });
    // U+0007 is removed (XML 1.0 cannot carry it), which leaves nothing; the others are whitespace.
    for (const [i, title] of ['\u0007', ' \u0001\t', '', 'Titled'].entries()) insertVideo(db, u.id, { public_id: `b${i}`, title, created_at: T0 + i });
    const { writer } = buildInMemory(file, { only: new Set(['rss']) });
    const body = writer.text('blank/rss/index.rss');
    // Newest first: only the last upload has a title, in the item and as media:title.
    const items = body.split('<item>').slice(1);
    expect(items.map((item) => [...item.matchAll(/<(?:media:)?title[ >/][^<]*/g)].map((m) => m[0]))).toEqual([
      ['<title>Titled', '<media:title type="plain">Titled'],
      [],
      [],
      [],
    ]);
    expect(checkRssFeed(body)).toEqual([]);
    const entries = feedparser({ rss: body }).rss!.entries;
    expect(entries.map((e) => (e.summary as string).includes('About video'))).toEqual([true, true, true, true]);
  });

  it('titles the feed by the username when the display name is blank once XML can carry it, as the Atom feed and itunes:author do', () => {
    const { db, file } = createTestDb();
    // U+0007 is removed (XML 1.0 cannot carry it), which leaves nothing; the others are whitespace.
    const names = { bell: '\u0007', spaces: '   ', mixed: ' \u0001\t', named: 'Ann Named' };
    for (const [username, display_name] of Object.entries(names)) {
      const u = insertUser(db, { username, display_name });
      insertVideo(db, u.id, { public_id: `v-${username}`, created_at: T0 });
    }
    const podcast = { category: 'Technology', explicit: false, owner: { name: 'O', email: 'o@example.org' }, language: null, locked: false, image: null };
    const config = testConfig({ logoUrl: 'https://videos.example.org/logo.png', feeds: { podcast } });
    const { writer } = buildInMemory(file, { only: new Set(['rss', 'atom']), config });
    for (const username of Object.keys(names)) {
      const shown = username === 'named' ? 'Ann Named' : username;
      const rssBody = writer.text(`${username}/rss/index.rss`);
      const [feed, atomFeed] = Object.values(feedparser({ rss: rssBody, atom: writer.text(`${username}/atom/index.atom`) }));
      expect(feed!.bozo, username).toBe(false);
      expect(feed!.feed.title, username).toBe(`${config.siteName}: latest videos of ${shown}`);
      // The channel's image carries the same title.
      expect(xpath(rssBody, 'string(/rss/channel/image/title)'), username).toBe(`${config.siteName}: latest videos of ${shown}`);
      const itunesAuthor = `string(/rss/channel/*[local-name()='author' and namespace-uri()='${PODCAST_NS.itunes}'])`;
      expect(xpath(rssBody, itunesAuthor), `${username}: itunes:author`).toBe(shown);
      expect(atomFeed!.feed.title, `${username}: Atom`).toBe(`${config.siteName}: groups of ${shown}`);
      expect(checkRssFeed(rssBody).filter((problem) => problem.level === 'error'), username).toEqual([]);
    }
  });

  it('keeps hostile text readable and well-formed in every demo feed', () => {
    const { file } = createDemoDb();
    const { writer } = buildInMemory(file, { only: new Set(['rss']) });
    const feeds = Object.fromEntries([...writer.files].map(([path, body]) => [path, body.toString('utf8')]));
    expect(Object.keys(feeds).length).toBeGreaterThan(30);
    expect(xmllintWellFormed(feeds).output).toBe('');
    const parsed = feedparser(feeds);
    for (const [path, feed] of Object.entries(parsed)) expect(feed.bozo, `${path}: ${feed.bozo_exception}`).toBe(false);
    const mallory = parsed['mallory/rss/index.rss']!;
    const titles = mallory.entries.map((e) => e.title as string);
    expect(titles.some((t) => t.includes('<script>alert("x")</script>') && t.includes(']]>'))).toBe(true);
  });
});

/**
 * rss.ts writes the feed as markup (for speed). It used to make it with xmlDocument's calls, which
 * stay here as the oracle: the two must agree to the byte on any feed, hostile text, missing
 * values and odd configuration included; every eighth feed also with what xmlbuilder2 itself
 * writes of those calls.
 */
function oracle({ user, uploads, archived }: UserBundle, site: SiteContext, engine: XmlEngine = 'fast'): string {
  const podcast = site.config.feeds.podcast;
  const namespaces = podcast === null ? {} : { 'xmlns:itunes': PODCAST_NS.itunes, 'xmlns:podcast': PODCAST_NS.podcast };
  return xmlDocument('rss', { version: '2.0', 'xmlns:media': NS.media, 'xmlns:dc': NS.dc, 'xmlns:atom': NS.atom, ...namespaces }, (root) => {
    const channel = root.el('channel');
    // A display name blank once XML can carry it gives way to the username.
    const blankName = user.displayName.replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '').trim() === '';
    const title = `${site.config.siteName}: latest videos of ${blankName ? user.username : user.displayName}`;
    const link = site.paths.userPage(user.username);
    channel
      .leaf('title', title)
      .leaf('link', link)
      .leaf('description', `The latest videos ${htmlText(user.username)} uploaded to ${htmlText(site.config.siteName)}.`)
      .leaf('language', podcast?.language ?? site.config.language)
      .leaf('copyright', site.config.copyright);
    if (uploads.length > 0) channel.leaf('pubDate', rfc822(uploads[0]!.createdAt));
    channel.leaf('generator', site.generator.name);
    channel.el('atom:link', { rel: 'self', type: 'application/rss+xml', href: site.paths.url(rss, user.username) });
    const newest = planArchivePages(archived.uploads).at(-1);
    if (newest !== undefined) channel.el('atom:link', { rel: 'prev-archive', href: site.paths.url(rssArchive, user.username, newest.number) });
    if (site.config.logoUrl !== '') channel.el('image').leaf('url', site.config.logoUrl).leaf('title', title).leaf('link', link);
    if (podcast !== null) {
      // The display name when it is not blank once XML can carry it, cut to Apple's 255 characters (no grapheme here is longer than one).
      const shown = user.displayName.replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '');
      channel.leaf('itunes:author', Array.from(shown.trim() === '' ? user.username : shown).slice(0, 255).join(''));
      channel.el('itunes:owner').leaf('itunes:name', podcast.owner.name).leaf('itunes:email', podcast.owner.email);
      const image = podcast.image ?? site.config.logoUrl;
      if (image !== '') channel.el('itunes:image', { href: image });
      const [category, subcategory] = podcast.category.split(' > ');
      const outer = channel.el('itunes:category', { text: category! });
      if (subcategory !== undefined) outer.el('itunes:category', { text: subcategory });
      channel.leaf('itunes:explicit', String(podcast.explicit)).leaf('itunes:type', 'episodic');
      channel.leaf('podcast:guid', podcastGuid(site.paths.url(rss, user.username))).leaf('podcast:medium', 'video');
      if (podcast.locked) channel.leaf('podcast:locked', 'yes', { owner: podcast.owner.email });
    }
    for (const video of uploads) {
      const page = site.paths.videoPage(video.publicId);
      const item = channel.el('item');
      // A title blank once XML can carry it is left out (RSS 2.0 wants a title or a description).
      const titled = video.title.replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '').trim() !== '';
      if (titled) item.leaf('title', video.title);
      item.leaf('link', page).cdata('description', itemDescription(video, site, page));
      item.leaf('dc:creator', video.uploader.username);
      if (video.category !== null) item.leaf('category', video.category);
      item.el('enclosure', { url: video.fileUrl, length: video.fileSize ?? 0, type: video.fileType });
      item.leaf('guid', page, { isPermaLink: 'true' }).leaf('pubDate', rfc822(video.createdAt));
      item.el('media:content', {
        url: video.fileUrl,
        type: video.fileType,
        medium: 'video',
        fileSize: video.fileSize,
        duration: video.durationSeconds,
        width: video.width,
        height: video.height,
      });
      item.el('media:thumbnail', { url: video.thumbnailUrl, width: video.thumbnailWidth, height: video.thumbnailHeight });
      if (titled) item.leaf('media:title', video.title, { type: 'plain' });
      if (video.tags.length > 0) item.leaf('media:keywords', video.tags.join(', '));
      if (podcast !== null) {
        if (video.durationSeconds !== null && video.durationSeconds > 0) item.leaf('itunes:duration', String(video.durationSeconds));
        item.el('itunes:image', { href: video.thumbnailUrl });
        item.leaf('itunes:episodeType', 'full');
        const type = video.captionsUrl === null ? null : captionsType(video.captionsUrl);
        // Only timed captions (WebVTT, SubRip) are marked as closed captions.
        if (type !== null) item.el('podcast:transcript', { url: video.captionsUrl!, type, ...(type === 'text/vtt' || type === 'application/x-subrip' ? { rel: 'captions' } : {}) });
      }
    }
  }, { engine });
}

describe('RSS written as markup', () => {
  it('is byte for byte the document xmlDocument makes of the same calls, on 400 random feeds', () => {
    const { random, pick, maybe } = randomChoices(7);
    const sites = [
      createSiteContext(testConfig(), FORMATS, new Date(0)),
      createSiteContext(testConfig({ siteName: 'Site <&> "q" &amp;', copyright: '<c> & "d" ]]>', logoUrl: 'https://example.org/l.png?a=1&b="2"' }), FORMATS, new Date(0)),
      // Another site's tag links for the same tag lists (rss.ts keeps tag markup per site).
      createSiteContext(testConfig({ baseUrl: 'https://other.example.net/sub' }), FORMATS, new Date(0)),
      // Podcast tags, with hostile owner text, a subcategory, the lock, and their own language and artwork.
      createSiteContext(
        testConfig({
          feeds: { podcast: { category: 'Arts > Fashion & Beauty', explicit: true, owner: { name: 'Owner <&> "q" ]]>', email: 'a&b@example.org' }, language: 'pt-BR', locked: true, image: 'https://example.org/a.jpg?x=1&y="2"' } },
        }),
        FORMATS,
        new Date(0),
      ),
      createSiteContext(testConfig({ feeds: { podcast: { category: 'Technology', explicit: false, owner: { name: 'O', email: 'o@example.org' }, language: null, locked: false, image: null } } }), FORMATS, new Date(0)),
    ];
    // A reader hands out one array per combination of tags (rss.ts keeps their markup by array):
    // a few shared lists, met on every site, besides fresh ones.
    const sharedTags = [Object.freeze(['cats', 'b']), Object.freeze([TEXTS[0]!.replace(/[\uD800-\uDFFF]/g, '') || 'tag']), Object.freeze(['b'])];
    for (let n = 0; n < 400; n++) {
      const site = sites[n % sites.length]!;
      const uploads: VideoView[] = Array.from({ length: Math.floor(random() * 4) }, (_, i) => ({
        ...SAMPLE_VIDEO,
        publicId: wellFormed(`${pick(TEXTS)}${i}`),
        title: pick(TEXTS),
        description: pick(TEXTS),
        fileUrl: pick(['https://example.org/f.flv', 'https://example.org/f?a=1&b=<2>"', '']),
        fileType: pick(TEXTS),
        fileSize: maybe(Math.floor(random() * 1e9)),
        durationSeconds: maybe(random() < 0.1 ? 0 : Math.floor(random() * 1e4)),
        width: maybe(640),
        height: maybe(480),
        thumbnailUrl: pick(['https://example.org/t.jpg', 'https://example.org/t?x="1"&y=<2>']),
        captionsUrl: pick([null, 'https://example.org/c.vtt', 'https://example.org/c.SRT?a=1&b="2"', 'https://example.org/c.xyz', 'https://example.org/c.txt']),
        category: maybe(pick(TEXTS)),
        tags: random() < 0.3 ? [] : random() < 0.5 ? pick(sharedTags) : [wellFormed(pick(TEXTS)) || 'tag', 'b'],
        uploader: { ...SAMPLE_VIDEO.uploader, username: wellFormed(pick(TEXTS)) || 'u' },
        createdAt: new Date(Math.floor(random() * 4e12)),
      }));
      const user = { username: wellFormed(pick(TEXTS)) || 'someone', displayName: pick(TEXTS) };
      const archived = { uploads: Array.from({ length: pick([0, 0, 1, 100, 101, 2345]) }, (_, i) => i + 1), groups: [] };
      const bundle = { user, uploads, archived } as unknown as UserBundle;
      const markup = rss.render(bundle, site);
      expect(markup, `feed ${n}`).toBe(oracle(bundle, site));
      if (n % 8 === 0) {
        // And what xmlbuilder2 itself writes of the same calls.
        expect(markup, `feed ${n}, builder`).toBe(oracle(bundle, site, 'builder'));
      }
    }
  });
});
