import Database from 'better-sqlite3';
import { parseFeed } from 'podcast-partytime';
import { v5 as uuidV5 } from 'uuid';
import { describe, expect, it } from 'vitest';
import type { PodcastConfig } from '../../src/config/site-config.js';
import { validateConfig } from '../../src/config/load-config.js';
import { buildInMemory, createTestDb, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';
import { feedparser, xmllintWellFormed } from '../helpers/validators.js';

/**
 * Podcast-grade RSS (`feeds.podcast`): read by Podcast Index's own parser (podcast-partytime) and
 * by Python's feedparser, each item held to the database rows it comes from.
 */

const PODCAST: PodcastConfig = {
  category: 'Society & Culture > Documentary',
  explicit: false,
  owner: { name: 'Example Videos', email: 'podcasts@example.org' },
  language: 'pt-BR',
  locked: true,
  image: 'https://videos.example.org/static/podcast.jpg',
};

/** The Podcasting 2.0 namespace's UUID for `podcast:guid`, written here as the namespace's document gives it. */
const PODCAST_NAMESPACE = 'ead4c236-bf58-58c6-a2c6-a6b28d128cb6';

interface Row {
  public_id: string;
  title: string;
  file_url: string;
  file_size: number | null;
  file_type: string;
  duration_seconds: number | null;
  thumbnail_url: string;
  captions_url: string | null;
}

/** A user's public videos as the database holds them, newest first. */
function publicRows(file: string, username: string): Row[] {
  const db = new Database(file, { readonly: true });
  try {
    return db
      .prepare(
        `SELECT v.public_id, v.title, v.file_url, v.file_size, v.file_type, v.duration_seconds, v.thumbnail_url, v.captions_url
         FROM videos v JOIN users u ON u.id = v.user_id WHERE u.username = ? AND v.visibility = 'public' ORDER BY v.created_at DESC, v.id DESC`,
      )
      .all(username) as Row[];
  } finally {
    db.close();
  }
}

const TYPES: Record<string, string> = { vtt: 'text/vtt', srt: 'application/x-subrip' };

function site() {
  const { db, file } = createTestDb();
  // Fixed ids: the feed without podcast tags is compared with a snapshot.
  const u = insertUser(db, { id: 1, username: 'caster', display_name: 'Cass <Caster> & Co' });
  insertVideo(db, u.id, { id: 11, public_id: 'withvtt', captions_url: 'https://cdn.example.org/c/1.vtt', duration_seconds: 3725, created_at: T0 + 50 });
  insertVideo(db, u.id, { id: 12, public_id: 'withsrt', captions_url: 'https://cdn.example.org/c/2.SRT?sig=a&b=c', file_type: 'video/mp4', created_at: T0 + 40 });
  insertVideo(db, u.id, { id: 13, public_id: 'nocaptions', duration_seconds: null, file_size: null, created_at: T0 + 30 });
  insertVideo(db, u.id, { id: 14, public_id: 'oddcaptions', captions_url: 'https://cdn.example.org/c/3.sub', created_at: T0 + 20 });
  insertVideo(db, u.id, { id: 15, public_id: 'secret', title: 'Secret episode', visibility: 'private', captions_url: 'https://cdn.example.org/c/s.vtt', created_at: T0 + 60 });
  return { db, file };
}

describe('podcast-grade RSS (feeds.podcast)', () => {
  it('is read by podcast-partytime with every item, enclosure, duration, transcript and guid equal to the database', () => {
    const { file } = site();
    const { writer } = buildInMemory(file, { only: new Set(['rss']), config: testConfig({ feeds: { podcast: PODCAST } }) });
    const body = writer.text('caster/rss/index.rss');
    expect(xmllintWellFormed({ body }).output).toBe('');
    expect(body).not.toContain('Secret episode');
    const feed = parseFeed(body, { allowMissingGuid: false });
    expect(feed).not.toBeNull();
    // Computed here from the feed's URL with the uuid package, as the namespace specifies.
    expect(feed!.guid).toBe(uuidV5('videos.example.org/caster/rss', PODCAST_NAMESPACE));
    expect(feed!.medium).toBe('video');
    expect(feed!.locked).toBe(true);
    expect(feed!.podcastOwner).toBe('podcasts@example.org');
    expect(feed!.owner).toEqual({ name: 'Example Videos', email: 'podcasts@example.org' });
    expect(feed!.author).toBe('Cass <Caster> & Co');
    expect(feed!.itunesImage).toBe('https://videos.example.org/static/podcast.jpg');
    // partytime keeps categories as its own lower-case words.
    expect(feed!.categories).toEqual(['society', 'culture', 'documentary']);
    expect(feed!.explicit).toBe(false);
    expect(feed!.itunesType).toBe('episodic');
    expect(feed!.language).toBe('pt-BR');
    const rows = publicRows(file, 'caster');
    expect(rows.map((r) => r.public_id)).toEqual(['withvtt', 'withsrt', 'nocaptions', 'oddcaptions']);
    expect(feed!.items).toHaveLength(rows.length);
    for (const [i, row] of rows.entries()) {
      const item = feed!.items[i]!;
      expect(item.title).toBe(row.title);
      expect(item.guid).toBe(`https://videos.example.org/${row.public_id}/embed/`);
      expect(item.enclosure).toEqual({ url: row.file_url, length: row.file_size ?? 0, type: row.file_type });
      // partytime reads a missing duration as 0.
      expect(item.duration).toBe(row.duration_seconds ?? 0);
      expect(item.itunesImage).toBe(row.thumbnail_url);
      expect(item.itunesEpisodeType).toBe('full');
      const extension = row.captions_url === null ? null : /\.(\w+)(?:\?|$)/.exec(row.captions_url)![1]!.toLowerCase();
      const type = extension === null ? undefined : TYPES[extension];
      // A captions file of a type no podcast app knows has no transcript; the others have theirs.
      expect(item.podcastTranscripts, row.public_id).toEqual(type === undefined ? undefined : [{ url: row.captions_url, type: type === 'application/x-subrip' ? 'application/srt' : type, language: 'pt-BR', rel: 'captions' }]);
    }
  });

  it('is read by feedparser with the same items, enclosures, durations, guid and iTunes values', () => {
    const { file } = site();
    const { writer } = buildInMemory(file, { only: new Set(['rss']), config: testConfig({ feeds: { podcast: { ...PODCAST, category: 'Technology', locked: false, image: null, explicit: true } } }) });
    const body = writer.text('caster/rss/index.rss');
    expect(body).not.toContain('podcast:locked');
    const parsed = feedparser({ body }).body!;
    expect(parsed.bozo, String(parsed.bozo_exception)).toBe(false);
    // feedparser 6.0.10 reads only the older `yes` as explicit; Apple's `true` it leaves unread (partytime reads it above).
    expect(body).toContain('<itunes:explicit>true</itunes:explicit>');
    expect(parsed.feed.tags).toEqual([expect.objectContaining({ term: 'Technology', scheme: 'http://www.itunes.com/' })]);
    expect(parsed.feed.publisher_detail).toMatchObject({ name: 'Example Videos', email: 'podcasts@example.org' });
    // Without an image of its own the podcast shows the site logo.
    expect((parsed.feed.image as { href: string }).href).toBe(testConfig().logoUrl);
    const guid = uuidV5('videos.example.org/caster/rss', PODCAST_NAMESPACE);
    expect(body).toContain(`<podcast:guid>${guid}</podcast:guid>`);
    const rows = publicRows(file, 'caster');
    expect(parsed.entries).toHaveLength(rows.length);
    for (const [i, row] of rows.entries()) {
      const entry = parsed.entries[i]!;
      expect(entry.id).toBe(`https://videos.example.org/${row.public_id}/embed/`);
      const enclosures = (entry.links as Array<Record<string, string>>).filter((l) => l.rel === 'enclosure');
      expect(enclosures).toEqual([{ href: row.file_url, length: String(row.file_size ?? 0), type: row.file_type, rel: 'enclosure' }]);
      expect(entry.itunes_duration).toBe(row.duration_seconds === null ? undefined : String(row.duration_seconds));
      expect((entry.image as { href: string }).href).toBe(row.thumbnail_url);
    }
  });

  it('holds the author to 255 characters, leaves out a zero duration, and marks only timed captions as captions', () => {
    const { db, file } = createTestDb();
    // 300 characters ending in a flag: cut to 255 on a character Apple counts, never inside the flag.
    const long = 'N'.repeat(254) + '\u{1F1EF}\u{1F1F5}' + 'x'.repeat(44);
    const u = insertUser(db, { id: 1, username: 'longname', display_name: long });
    insertVideo(db, u.id, { id: 21, public_id: 'zero', duration_seconds: 0, captions_url: 'https://cdn.example.org/c/z.txt', created_at: T0 + 10 });
    insertVideo(db, u.id, { id: 22, public_id: 'timed', duration_seconds: 61, captions_url: 'https://cdn.example.org/c/t.vtt', created_at: T0 + 5 });
    const { writer } = buildInMemory(file, { only: new Set(['rss']), config: testConfig({ feeds: { podcast: PODCAST } }) });
    const body = writer.text('longname/rss/index.rss');
    const feed = parseFeed(body, { allowMissingGuid: false })!;
    expect(feed.author).toBe('N'.repeat(254));
    const [zero, timed] = feed.items;
    expect(body.match(/<itunes:duration>/g)).toHaveLength(1);
    expect(timed!.duration).toBe(61);
    expect(zero!.podcastTranscripts).toEqual([{ url: 'https://cdn.example.org/c/z.txt', type: 'text/plain', language: 'pt-BR' }]);
    expect(timed!.podcastTranscripts).toEqual([{ url: 'https://cdn.example.org/c/t.vtt', type: 'text/vtt', language: 'pt-BR', rel: 'captions' }]);
  });

  it('leaves the feed as it was without feeds.podcast', async () => {
    const { file } = site();
    const { writer } = buildInMemory(file, { only: new Set(['rss']) });
    const body = writer.text('caster/rss/index.rss');
    expect(body).not.toMatch(/itunes|podcast/);
    // Made by the code before podcast tags existed.
    await expect(body).toMatchFileSnapshot('__snapshots__/rss-caster.rss');
  });
});

describe('the feeds.podcast setting', () => {
  const problems = (podcast: unknown): string[] => {
    try {
      validateConfig({ feeds: { podcast } } as never, 'test');
    } catch (error) {
      return (error as { problems: Array<{ setting: string; problem: string }> }).problems.map((p) => `${p.setting}: ${p.problem}`);
    }
    return [];
  };

  it('takes Apple categories alone or with their subcategory, and null for none', () => {
    expect(problems(null)).toEqual([]);
    expect(problems(PODCAST)).toEqual([]);
    expect(problems({ category: 'Technology', explicit: true, owner: { name: 'n', email: 'a@b.c' } })).toEqual([]);
  });

  it('names each problem: a missing value, a misspelt category, a bad address, an unknown key', () => {
    expect(problems({ category: 'Technology', explicit: true })).toEqual(['feeds.podcast: must set owner']);
    const bad = problems({ category: 'Tecnology', explicit: 'no', owner: { name: '', email: 'nobody' }, lockd: true });
    expect(bad).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^feeds\.podcast\.category: must be one of the 110 values the schema lists \(docs\/configuration\.md\), not "Tecnology"; did you mean "Technology"\?$/),
        'feeds.podcast.explicit: must be true or false, not "no"',
        'feeds.podcast.owner.name: must not be empty',
        'feeds.podcast.owner.email: must be an e-mail address, not "nobody"',
        'feeds.podcast.lockd: is not a known setting; did you mean feeds.podcast.locked?',
      ]),
    );
    expect(problems({ ...PODCAST, image: 'ftp://example.org/a.jpg' })).toEqual(['feeds.podcast.image: must use http or https, not ftp:']);
  });
});
