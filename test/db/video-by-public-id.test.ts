import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { createTestDb, insertUser, insertVideo } from '../helpers/site-fixture.js';
import { cleanUpAfterTest } from '../helpers/temp-dir.js';

describe('SiteReader.videoByPublicId (what vidfeeds serve answers oEmbed requests with)', () => {
  it('tells published (200), private (401) and missing (404) apart, revealing nothing of inactive users', () => {
    const { db, file } = createTestDb();
    const active = insertUser(db, { username: 'active' });
    const suspended = insertUser(db, { username: 'suspended', state: 'suspended' });
    const deleted = insertUser(db, { username: 'deleted', state: 'deleted' });
    insertVideo(db, active.id, { public_id: 'public', title: 'Public one' });
    insertVideo(db, active.id, { public_id: 'private', visibility: 'private' });
    insertVideo(db, suspended.id, { public_id: 'of-suspended' });
    insertVideo(db, suspended.id, { public_id: 'private-of-suspended', visibility: 'private' });
    insertVideo(db, deleted.id, { public_id: 'of-deleted' });
    insertVideo(db, active.id, { public_id: 'bad-file', file_url: 'javascript:alert(1)' });
    insertVideo(db, active.id, { public_id: 'bad-thumb', thumbnail_url: '/relative.jpg' });
    insertVideo(db, active.id, { public_id: 'a/b' });
    insertVideo(db, active.id, { public_id: '..' });

    const readOnly = new Database(file, { readonly: true });
    cleanUpAfterTest(() => readOnly.close());
    const reader = new SiteReader(readOnly, readLimits(8));
    const status = (id: string) => reader.videoByPublicId(id).status;
    const found = reader.videoByPublicId('public');
    expect(found.status).toBe('published');
    expect(found.status === 'published' && found.video).toMatchObject({ publicId: 'public', title: 'Public one', uploader: { username: 'active' } });
    expect(status('private')).toBe('private');
    for (const id of ['of-suspended', 'private-of-suspended', 'of-deleted', 'bad-file', 'bad-thumb', 'a/b', '..', 'unknown', '', 'PUBLIC']) {
      expect(reader.videoByPublicId(id), id).toEqual({ status: 'missing' });
    }
  });
});
