import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { DEFAULT_CONFIG } from '../../src/config/config-schema.js';
import { migrate, MIGRATIONS } from '../../src/db/migrations.js';
import { RECOMMENDATION_LIMITS, submitRecommendation, validateRecommendation, type SubmitPolicy } from '../../src/db/submit-recommendation.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { createTestDb, insertRow, insertUser, T0 } from '../helpers/site-fixture.js';
import { cleanUpAfterTest, useTempDir } from '../helpers/temp-dir.js';

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

describe('submitRecommendation', () => {
  function fixture() {
    const f = createTestDb();
    return f;
  }
  const input = { title: 'New one', image: GOOD.image, link: GOOD.link, description: 'Nice', duration: '03:25' };
  const policy = (changes: Partial<SubmitPolicy> = {}): SubmitPolicy => ({ ...structuredClone(DEFAULT_CONFIG.recommendationSubmit), ...changes });
  const count = (db: Database.Database) => (db.prepare('SELECT count(*) AS n FROM recommendations').get() as { n: number }).n;
  const at = (seconds: number) => new Date((T0 + seconds) * 1000);
  const listed = (db: Database.Database, id: number) => new SiteReader(db, readLimits(8)).userBundle(id, new Set(['recommendations'])).recommendations.map((r) => r.title);
  const link = (n: number) => `https://video.example.org/watch?v=${n}`;

  it('holds a submission as pending by default: stored with its address, in no list', () => {
    const { db } = fixture();
    const u = insertUser(db, { username: 'alice' });
    insertRow(db, 'recommendations', { user_id: u.id, title: 'Old one', link: link(0), image: GOOD.image, created_at: T0 });
    const result = submitRecommendation(db, { username: 'alice', input, submitter: '192.0.2.7', now: at(3600) }, policy());
    expect(result).toMatchObject({ status: 'stored', published: false });
    const id = (result as { id: number }).id;
    expect(db.prepare('SELECT user_id, title, link, image, description, duration_seconds, is_public, status, submitter_address, created_at, reviewed_at FROM recommendations WHERE id = ?').get(id)).toEqual({
      user_id: u.id, title: 'New one', link: GOOD.link, image: GOOD.image, description: 'Nice', duration_seconds: 205,
      is_public: 1, status: 'pending', submitter_address: '192.0.2.7', created_at: T0 + 3600, reviewed_at: null,
    });
    expect(listed(db, u.id)).toEqual(['Old one']);
  });

  it('publishes at once when the configuration says so, listed first', () => {
    const { db } = fixture();
    const u = insertUser(db, { username: 'alice' });
    insertRow(db, 'recommendations', { user_id: u.id, title: 'Old one', link: link(0), image: GOOD.image, created_at: T0 });
    const result = submitRecommendation(db, { username: 'alice', input, submitter: null, now: at(3600) }, policy({ publishAtOnce: true }));
    expect(result).toMatchObject({ status: 'stored', published: true });
    expect(db.prepare('SELECT status, reviewed_at FROM recommendations WHERE id = ?').get((result as { id: number }).id)).toEqual({ status: 'approved', reviewed_at: T0 + 3600 });
    expect(listed(db, u.id)).toEqual(['New one', 'Old one']);
  });

  it('refuses unknown and unpublished users, and names that cannot be paths, storing nothing', () => {
    const { db } = fixture();
    insertUser(db, { username: 'carol', state: 'suspended' });
    insertUser(db, { username: 'dave', state: 'deleted' });
    insertUser(db, { username: 'robots.txt' });
    insertUser(db, { username: '..' });
    for (const name of ['nobody-here', 'carol', 'dave', 'robots.txt', '..', '']) {
      expect(submitRecommendation(db, { username: name, input, submitter: null, now: at(0) }, policy()), name).toEqual({ status: 'unknown-user' });
    }
    expect(count(db)).toBe(0);
  });

  it('refuses invalid input with a reason that repeats nothing of it', () => {
    const { db } = fixture();
    insertUser(db, { username: 'alice' });
    const result = submitRecommendation(db, { username: 'alice', input: { ...input, link: 'javascript:<script>alert(1)</script>' }, submitter: null, now: at(0) }, policy());
    expect(result).toMatchObject({ status: 'invalid', field: 'link', reason: 'link must use http or https' });
    expect((result as { message: string }).message).toContain('javascript:');
    expect(count(db)).toBe(0);
  });

  it('refuses a link the user already has, whatever its status, and not the same link for another user', () => {
    const { db } = fixture();
    insertUser(db, { username: 'alice' });
    insertUser(db, { username: 'bob' });
    const first = submitRecommendation(db, { username: 'alice', input, submitter: null, now: at(0) }, policy());
    const id = (first as { id: number }).id;
    expect(submitRecommendation(db, { username: 'alice', input: { ...input, title: 'Again' }, submitter: null, now: at(1) }, policy())).toEqual({ status: 'duplicate', id });
    db.prepare(`UPDATE recommendations SET status = 'rejected' WHERE id = ?`).run(id);
    expect(submitRecommendation(db, { username: 'alice', input, submitter: '192.0.2.1', now: at(2) }, policy())).toEqual({ status: 'duplicate', id });
    expect(submitRecommendation(db, { username: 'bob', input, submitter: null, now: at(3) }, policy())).toMatchObject({ status: 'stored' });
    expect(count(db)).toBe(2);
  });

  it('limits the rate per client address, with the exact wait, and not the command line', () => {
    const { db } = fixture();
    insertUser(db, { username: 'alice' });
    insertUser(db, { username: 'bob' });
    const p = policy({ perClient: { limit: 3, windowSeconds: 600, maxPending: 100 } });
    const send = (n: number, seconds: number, submitter: string | null = '198.51.100.9', username = n % 2 === 0 ? 'alice' : 'bob') =>
      submitRecommendation(db, { username, input: { ...input, link: link(n) }, submitter, now: at(seconds) }, p);
    expect(send(1, 0).status).toBe('stored');
    expect(send(2, 100).status).toBe('stored');
    expect(send(3, 200).status).toBe('stored');
    // The first leaves the window at 600: from 300 that is 300 seconds.
    expect(send(4, 300)).toEqual({ status: 'limited', scope: 'client', kind: 'rate', retryAfterSeconds: 300, message: expect.stringContaining('3 recommendations in 600 seconds') });
    expect(send(5, 300, '198.51.100.10').status).toBe('stored');
    expect(send(6, 300, null).status).toBe('stored');
    expect(send(7, 599).status).toBe('limited');
    expect(send(8, 600).status).toBe('stored');
    expect(count(db)).toBe(6);
  });

  it('caps the pending items per client address and per user', () => {
    const { db } = fixture();
    insertUser(db, { username: 'alice' });
    insertUser(db, { username: 'bob' });
    const p = policy({
      perClient: { limit: 1000, windowSeconds: 60, maxPending: 2 },
      perUser: { limit: 1000, windowSeconds: 60, maxPending: 3 },
    });
    const send = (n: number, submitter: string | null, username: string) =>
      submitRecommendation(db, { username, input: { ...input, link: link(n) }, submitter, now: at(n) }, p);
    expect(send(1, '192.0.2.1', 'alice').status).toBe('stored');
    expect(send(2, '192.0.2.1', 'bob').status).toBe('stored');
    expect(send(3, '192.0.2.1', 'bob')).toMatchObject({ status: 'limited', scope: 'client', kind: 'pending', retryAfterSeconds: 60 });
    expect(send(4, '192.0.2.2', 'alice').status).toBe('stored');
    expect(send(5, null, 'alice').status).toBe('stored');
    expect(send(6, '192.0.2.3', 'alice')).toMatchObject({ status: 'limited', scope: 'user', kind: 'pending' });
    // Moderation frees the room.
    db.prepare(`UPDATE recommendations SET status = 'approved' WHERE link = ?`).run(link(1));
    expect(send(7, '192.0.2.3', 'alice').status).toBe('stored');
    expect(send(8, '192.0.2.1', 'bob').status).toBe('stored');
  });

  it('limits the rate per user, whoever sends', () => {
    const { db } = fixture();
    insertUser(db, { username: 'alice' });
    const p = policy({ perUser: { limit: 2, windowSeconds: 3600, maxPending: 100 } });
    const send = (n: number, submitter: string | null) =>
      submitRecommendation(db, { username: 'alice', input: { ...input, link: link(n) }, submitter, now: at(n * 10) }, p);
    expect(send(1, '192.0.2.1').status).toBe('stored');
    expect(send(2, null).status).toBe('stored');
    expect(send(3, '192.0.2.3')).toMatchObject({ status: 'limited', scope: 'user', kind: 'rate', retryAfterSeconds: 3600 + 10 - 30 });
    expect(count(db)).toBe(2);
  });

  it('keeps link and image to the allowed hosts when the site names them', () => {
    const { db } = fixture();
    insertUser(db, { username: 'alice' });
    const p = policy({ allowedHosts: ['videos.example.org', '*.cdn.example.org'] });
    const send = (fields: Record<string, string>) =>
      submitRecommendation(db, { username: 'alice', input: { ...input, image: 'https://img.cdn.example.org/i.jpg', ...fields }, submitter: null, now: at(0) }, p);
    expect(send({ link: 'https://evil.example.net/x' })).toMatchObject({ status: 'invalid', field: 'link' });
    expect(send({ link: 'https://videos.example.org.evil.net/x' })).toMatchObject({ status: 'invalid', field: 'link' });
    expect(send({ link: 'https://cdn.example.org/x' })).toMatchObject({ status: 'invalid', field: 'link' });
    expect(send({ link: 'https://VIDEOS.example.org/x', image: 'https://evil.example.net/i.jpg' })).toMatchObject({ status: 'invalid', field: 'image' });
    expect(send({ link: 'https://VIDEOS.example.org/x' })).toMatchObject({ status: 'stored' });
    expect(count(db)).toBe(1);
  });
});

describe('migration 3', () => {
  it('keeps the recommendations stored before it published', () => {
    const dir = useTempDir('vidfeeds-m3-');
    const file = join(dir, 'site.sqlite');
    const db = new Database(file);
    cleanUpAfterTest(() => db.close());
    db.exec(MIGRATIONS[0]!);
    db.exec(MIGRATIONS[1]!);
    db.pragma('user_version = 2');
    const u = insertUser(db, { username: 'alice' });
    insertRow(db, 'recommendations', { user_id: u.id, title: 'From before', link: GOOD.link, image: GOOD.image, created_at: T0 });
    migrate(db, file);
    expect(db.prepare('SELECT status, submitter_address, reviewed_at FROM recommendations').all()).toEqual([
      { status: 'approved', submitter_address: null, reviewed_at: null },
    ]);
    expect(new SiteReader(db, readLimits(8)).userBundle(u.id, new Set(['recommendations'])).recommendations.map((r) => r.title)).toEqual(['From before']);
    // Refused by migration 4's type trigger before migration 3's CHECK is reached.
    expect(() => db.prepare(`UPDATE recommendations SET status = 'spam'`).run()).toThrow(/recommendations\.status: expected one of|CHECK/);
  });
});
