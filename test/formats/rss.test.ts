import { describe, expect, it } from 'vitest';
import { buildInMemory, createDemoDb, createTestDb, insertRow, insertUser, insertVideo, T0 } from '../helpers/site-fixture.js';
import { feedparser, xmllintWellFormed } from '../helpers/validators.js';

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
    expect(feed.entries[0]!.link).toBe('https://videos.example.org/clip24/');
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
