import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { RECOMMENDATION_LIMITS, storeRecommendation, validateRecommendation, type NewRecommendation } from '../../src/db/recommendations.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { createTestDb, insertRow, insertUser, T0 } from '../helpers/site-fixture.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!();
});

const GOOD = { title: 'A fine video', image: 'https://img.example.org/t.jpg', link: 'https://video.example.org/watch?v=1&t=2' };

function problem(input: Parameters<typeof validateRecommendation>[0]): { field: string; message: string } {
  const result = validateRecommendation(input);
  if (result.ok) throw new Error(`accepted ${JSON.stringify(input)}`);
  return { field: result.field, message: result.message };
}

describe('validateRecommendation', () => {
  it('accepts the required fields, trims them, normalises the URLs and reads mm:ss or seconds', () => {
    expect(validateRecommendation({ ...GOOD, title: '  A fine video \n', description: ' Line one\nLine two\tend ', duration: '03:25' })).toEqual({
      ok: true,
      value: { ...GOOD, description: 'Line one\nLine two\tend', durationSeconds: 205 },
    });
    expect(validateRecommendation({ ...GOOD, duration: '205' })).toMatchObject({ ok: true, value: { durationSeconds: 205 } });
    expect(validateRecommendation({ ...GOOD, duration: '125:07' })).toMatchObject({ ok: true, value: { durationSeconds: 7507 } });
    expect(validateRecommendation({ ...GOOD, duration: '' })).toMatchObject({ ok: true, value: { durationSeconds: null, description: '' } });
    expect(validateRecommendation({ ...GOOD, link: 'HTTPS://Video.Example.org/a b'.replace(' ', '%20') })).toMatchObject({
      ok: true,
      value: { link: 'https://video.example.org/a%20b' },
    });
    expect(validateRecommendation({ ...GOOD, title: '🎬 مريم ‮ok' })).toMatchObject({ ok: true });
  });

  it('requires title, image and link, each with a clear message naming the field', () => {
    expect(problem({ image: GOOD.image, link: GOOD.link })).toEqual({ field: 'title', message: 'title is required' });
    expect(problem({ ...GOOD, title: '   ' })).toEqual({ field: 'title', message: 'title is required' });
    expect(problem({ title: GOOD.title, link: GOOD.link })).toEqual({ field: 'image', message: 'image is required' });
    expect(problem({ title: GOOD.title, image: GOOD.image })).toEqual({ field: 'link', message: 'link is required' });
  });

  it('accepts only absolute http(s) URLs without credentials', () => {
    for (const bad of ['javascript:alert(1)', 'data:image/png;base64,AAAA', 'ftp://example.org/x', '/relative/path', 'example.org/x', 'http://', 'https://user:pw@example.org/', 'https://exa mple.org/']) {
      expect(problem({ ...GOOD, link: bad }).field, bad).toBe('link');
      expect(problem({ ...GOOD, image: bad }).field, bad).toBe('image');
    }
    expect(problem({ ...GOOD, link: 'javascript:alert(1)' }).message).toBe('link must use http or https, not javascript: ("javascript:alert(1)")');
  });

  it('refuses control characters, allowing only line breaks and tabs in the description', () => {
    for (const c of ['\u0000', '\u0007', '\u001b', '\u007f', '\u0085', '\ufffe', '\ud800']) {
      expect(problem({ ...GOOD, title: `a${c}b` }).field, JSON.stringify(c)).toBe('title');
      expect(problem({ ...GOOD, description: `a${c}b` }).field, JSON.stringify(c)).toBe('description');
    }
    expect(problem({ ...GOOD, title: 'two\nlines' }).field).toBe('title');
    expect(problem({ ...GOOD, link: `${GOOD.link}\u0000` }).field).toBe('link');
  });

  it('enforces the length limits, counting characters, not bytes', () => {
    expect(validateRecommendation({ ...GOOD, title: '🎬'.repeat(RECOMMENDATION_LIMITS.title) }).ok).toBe(true);
    expect(problem({ ...GOOD, title: 'x'.repeat(RECOMMENDATION_LIMITS.title + 1) })).toEqual({
      field: 'title',
      message: `title is ${RECOMMENDATION_LIMITS.title + 1} characters long; at most ${RECOMMENDATION_LIMITS.title} are allowed`,
    });
    expect(validateRecommendation({ ...GOOD, description: 'd'.repeat(RECOMMENDATION_LIMITS.description) }).ok).toBe(true);
    expect(problem({ ...GOOD, description: 'd'.repeat(RECOMMENDATION_LIMITS.description + 1) }).field).toBe('description');
    expect(problem({ ...GOOD, link: `https://example.org/${'p'.repeat(RECOMMENDATION_LIMITS.url)}` }).field).toBe('link');
    expect(problem({ ...GOOD, description: 'x'.repeat(200_000) }).field).toBe('description');
  });

  it('reads durations as mm:ss or whole seconds, up to 100 hours', () => {
    for (const bad of ['3:60', '1:2', '-5', '1.5', 'abc', '1:02:03', '12 s']) {
      expect(problem({ ...GOOD, duration: bad }).field, bad).toBe('duration');
    }
    expect(validateRecommendation({ ...GOOD, duration: String(RECOMMENDATION_LIMITS.durationSeconds) }).ok).toBe(true);
    expect(problem({ ...GOOD, duration: String(RECOMMENDATION_LIMITS.durationSeconds + 1) }).field).toBe('duration');
  });
});

describe('storeRecommendation', () => {
  function fixture() {
    const f = createTestDb();
    cleanups.push(f.cleanup);
    return f;
  }
  const value: NewRecommendation = { title: 'New one', image: GOOD.image, link: GOOD.link, description: 'Nice', durationSeconds: 205 };
  const count = (db: Database.Database) => (db.prepare('SELECT count(*) AS n FROM recommendations').get() as { n: number }).n;

  it('stores a public recommendation dated now, which the reader then lists first', () => {
    const { db } = fixture();
    const u = insertUser(db, { username: 'alice' });
    insertRow(db, 'recommendations', { user_id: u.id, title: 'Old one', link: GOOD.link, image: GOOD.image, created_at: T0 });
    const now = new Date((T0 + 3600) * 1000);
    const result = storeRecommendation(db, 'alice', value, now);
    expect(result).toMatchObject({ status: 'stored' });
    const id = (result as { id: number }).id;
    expect(db.prepare('SELECT user_id, title, link, image, description, duration_seconds, is_public, created_at FROM recommendations WHERE id = ?').get(id)).toEqual({
      user_id: u.id,
      title: 'New one',
      link: GOOD.link,
      image: GOOD.image,
      description: 'Nice',
      duration_seconds: 205,
      is_public: 1,
      created_at: T0 + 3600,
    });
    const listed = new SiteReader(db, 8).userBundle(u.id, new Set(['recommendations'])).recommendations;
    expect(listed.map((r) => r.title)).toEqual(['New one', 'Old one']);
  });

  it('refuses unknown and unpublished users, and names that cannot be paths, storing nothing', () => {
    const { db } = fixture();
    insertUser(db, { username: 'carol', state: 'suspended' });
    insertUser(db, { username: 'dave', state: 'deleted' });
    insertUser(db, { username: 'robots.txt' });
    insertUser(db, { username: '..' });
    for (const name of ['nobody-here', 'carol', 'dave', 'robots.txt', '..', '']) {
      expect(storeRecommendation(db, name, value, new Date()), name).toEqual({ status: 'unknown-user' });
    }
    expect(count(db)).toBe(0);
  });
});
